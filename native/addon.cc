// Lectern's native addon: N-API bindings for the hot loops in kernels.h. Arguments are
// validated and options resolved in src/native/index.ts; this layer checks only the
// types it dereferences, so a wrong call is a JavaScript error, never a crash.
#include <napi.h>

#include <cstring>
#include <vector>

#include "kernels.h"

namespace {

// Bumped when the JavaScript-facing signatures change (checked by src/native/index.ts).
constexpr int kAbiVersion = 2;

Napi::Value fail(const Napi::Env& env, const char* msg) {
  Napi::TypeError::New(env, msg).ThrowAsJavaScriptException();
  return env.Undefined();
}

bool isTyped(const Napi::Value& v, napi_typedarray_type t) {
  return v.IsTypedArray() && v.As<Napi::TypedArray>().TypedArrayType() == t;
}

bool numbers(const Napi::CallbackInfo& info, size_t from, size_t to) {
  for (size_t i = from; i < to; i++)
    if (!info[i].IsNumber()) return false;
  return true;
}

double num(const Napi::CallbackInfo& info, size_t i) { return info[i].As<Napi::Number>().DoubleValue(); }
size_t sz(const Napi::CallbackInfo& info, size_t i) { return size_t(info[i].As<Napi::Number>().Int64Value()); }

// resample(input, fromRate, toRate, outLen, beta, rolloff, zeroCrossings)
Napi::Value Resample(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!isTyped(info[0], napi_float32_array) || !numbers(info, 1, 7)) return fail(env, "resample: bad arguments");
  auto in = info[0].As<Napi::Float32Array>();
  size_t outLen = sz(info, 3);
  auto out = Napi::Float32Array::New(env, outLen);
  lectern::resample(in.Data(), in.ElementLength(), info[1].As<Napi::Number>().Int64Value(),
                    info[2].As<Napi::Number>().Int64Value(), out.Data(), outLen, num(info, 4), num(info, 5), num(info, 6));
  return out;
}

// logMel(samples, sampleRate, frames, frameLen, hop, nfft, nMels, fMin, fMax, preEmphasis, nCoeffs)
Napi::Value LogMel(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!isTyped(info[0], napi_float32_array) || !numbers(info, 1, 11)) return fail(env, "logMel: bad arguments");
  auto x = info[0].As<Napi::Float32Array>();
  lectern::FeatureParams p{num(info, 1), sz(info, 2), sz(info, 3), sz(info, 4), sz(info, 5), sz(info, 6),
                           sz(info, 10), num(info, 7), num(info, 8), num(info, 9)};
  if (p.nfft < 2 || (p.nfft & (p.nfft - 1)) || p.frameLen > p.nfft || p.hop == 0 || p.nMels == 0)
    return fail(env, "logMel: inconsistent framing");
  auto out = Napi::Float32Array::New(env, p.frames * (p.nCoeffs ? p.nCoeffs : p.nMels));
  lectern::logMel(x.Data(), x.ElementLength(), p, out.Data());
  return out;
}

// frameEnergy(samples, frames, frameLen, hop)
Napi::Value FrameEnergy(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!isTyped(info[0], napi_float32_array) || !numbers(info, 1, 4)) return fail(env, "frameEnergy: bad arguments");
  auto x = info[0].As<Napi::Float32Array>();
  size_t frames = sz(info, 1);
  auto out = Napi::Float32Array::New(env, frames);
  lectern::frameEnergy(x.Data(), x.ElementLength(), frames, sz(info, 2), sz(info, 3), out.Data());
  return out;
}

// dtw(a, b, dims, lo, hi, cells) -> { path, cost }
Napi::Value Dtw(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!isTyped(info[0], napi_float32_array) || !isTyped(info[1], napi_float32_array) || !info[2].IsNumber() ||
      !isTyped(info[3], napi_int32_array) || !isTyped(info[4], napi_int32_array) || !info[5].IsNumber())
    return fail(env, "dtw: bad arguments");
  auto a = info[0].As<Napi::Float32Array>();
  auto b = info[1].As<Napi::Float32Array>();
  size_t dims = sz(info, 2);
  auto lo = info[3].As<Napi::Int32Array>();
  auto hi = info[4].As<Napi::Int32Array>();
  if (dims == 0) return fail(env, "dtw: dims must be positive");
  size_t n = a.ElementLength() / dims, m = b.ElementLength() / dims;
  if (n == 0 || m == 0 || lo.ElementLength() != n || hi.ElementLength() != n) return fail(env, "dtw: window rows do not match");
  size_t cells = 0;
  for (size_t i = 0; i < n; i++) {
    if (lo[i] < 0 || hi[i] < lo[i] || size_t(hi[i]) >= m) return fail(env, "dtw: window out of range");
    cells += size_t(hi[i] - lo[i] + 1);
  }
  if (cells != sz(info, 5)) return fail(env, "dtw: cell count mismatch");
  std::vector<int32_t> path;
  double cost = lectern::dtw(a.Data(), n, b.Data(), m, dims, lo.Data(), hi.Data(), cells, path);
  auto p = Napi::Int32Array::New(env, path.size());
  std::memcpy(p.Data(), path.data(), path.size() * sizeof(int32_t));
  auto res = Napi::Object::New(env);
  res.Set("path", p);
  res.Set("cost", Napi::Number::New(env, cost));
  return res;
}

// blendRgba(dst, src, mask, pixels)
Napi::Value BlendRgba(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!isTyped(info[0], napi_uint8_array) || !isTyped(info[1], napi_uint8_array) || !info[3].IsNumber())
    return fail(env, "blendRgba: bad arguments");
  auto dst = info[0].As<Napi::Uint8Array>();
  auto src = info[1].As<Napi::Uint8Array>();
  size_t px = sz(info, 3);
  if (dst.ElementLength() != px * 4 || src.ElementLength() != px * 4) return fail(env, "blendRgba: frame sizes");
  if (isTyped(info[2], napi_uint8_array)) {
    auto mask = info[2].As<Napi::Uint8Array>();
    if (mask.ElementLength() != px) return fail(env, "blendRgba: mask size");
    lectern::blendU8(dst.Data(), src.Data(), mask.Data(), px);
  } else if (isTyped(info[2], napi_float32_array)) {
    auto mask = info[2].As<Napi::Float32Array>();
    if (mask.ElementLength() != px) return fail(env, "blendRgba: mask size");
    lectern::blendF32(dst.Data(), src.Data(), mask.Data(), px);
  } else {
    return fail(env, "blendRgba: mask must be Uint8Array or Float32Array");
  }
  return env.Undefined();
}

// featherMask(width, height, cx, cy, rx, ry, feather)
Napi::Value FeatherMask(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!numbers(info, 0, 7)) return fail(env, "featherMask: bad arguments");
  size_t w = sz(info, 0), h = sz(info, 1);
  auto out = Napi::Float32Array::New(env, w * h);
  lectern::featherMask(w, h, num(info, 2), num(info, 3), num(info, 4), num(info, 5), num(info, 6), out.Data());
  return out;
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("abiVersion", Napi::Number::New(env, kAbiVersion));
  exports.Set("resample", Napi::Function::New(env, Resample, "resample"));
  exports.Set("logMel", Napi::Function::New(env, LogMel, "logMel"));
  exports.Set("frameEnergy", Napi::Function::New(env, FrameEnergy, "frameEnergy"));
  exports.Set("dtw", Napi::Function::New(env, Dtw, "dtw"));
  exports.Set("blendRgba", Napi::Function::New(env, BlendRgba, "blendRgba"));
  exports.Set("featherMask", Napi::Function::New(env, FeatherMask, "featherMask"));
  return exports;
}

}  // namespace

NODE_API_MODULE(lectern_native, Init)
