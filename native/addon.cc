// Lectern's native addon: the hot loops JavaScript does slowly.
#include <napi.h>

static Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("abiVersion", Napi::Number::New(env, 1));
  return exports;
}

NODE_API_MODULE(lectern_native, Init)
