// Pure C++ kernels behind the addon (no N-API here); semantics match src/native/reference.ts.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace lectern {

// Kaiser-windowed-sinc resampling; see RESAMPLE in src/native/types.ts.
void resample(const float* in, size_t n, int64_t fromRate, int64_t toRate, float* out, size_t outLen,
              double beta, double rolloff, double zeroCrossings);

struct FeatureParams {
  double sampleRate;
  size_t frames, frameLen, hop, nfft, nMels, nCoeffs;  // nCoeffs 0: log-mel only
  double fMin, fMax, preEmphasis;
};
// out: frames * (nCoeffs ? nCoeffs : nMels)
void logMel(const float* x, size_t n, const FeatureParams& p, float* out);
void frameEnergy(const float* x, size_t n, size_t frames, size_t frameLen, size_t hop, float* out);

// Banded DTW over per-row windows [lo[i], hi[i]] (already monotone and connected).
// Returns the path as flattened (i, j) pairs from (0,0) and the accumulated cost.
double dtw(const float* a, size_t n, const float* b, size_t m, size_t dims, const int32_t* lo, const int32_t* hi,
           size_t cells, std::vector<int32_t>& path);

void blendU8(uint8_t* dst, const uint8_t* src, const uint8_t* mask, size_t pixels);
void blendF32(uint8_t* dst, const uint8_t* src, const float* mask, size_t pixels);
void featherMask(size_t width, size_t height, double cx, double cy, double rx, double ry, double feather, float* out);

}  // namespace lectern
