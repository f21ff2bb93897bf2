{
  "targets": [
    {
      "target_name": "lectern_native",
      "sources": ["native/addon.cc", "native/resample.cc", "native/features.cc", "native/dtw.cc", "native/blend.cc"],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")"],
      "defines": ["NAPI_VERSION=8", "NODE_ADDON_API_DISABLE_CPP_EXCEPTIONS"],
      "cflags_cc": ["-O3", "-std=c++17", "-fno-exceptions", "-fno-math-errno", "-ffp-contract=off"],
      "cflags_cc!": ["-fno-exceptions", "-std=gnu++17"]
    },
    {
      "target_name": "lectern-espeak",
      "type": "executable",
      "sources": ["native/espeak/lectern_espeak.c"],
      "cflags": ["-O2", "-Wall"],
      "libraries": ["-lespeak-ng"]
    }
  ]
}
