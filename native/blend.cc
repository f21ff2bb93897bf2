// Per-pixel RGBA blending with a mask, and a feathered ellipse mask for mouth compositing.
#include <algorithm>
#include <cmath>

#include "kernels.h"

namespace lectern {

void blendU8(uint8_t* dst, const uint8_t* src, const uint8_t* mask, size_t pixels) {
  for (size_t p = 0; p < pixels; p++) {
    const uint32_t m = mask[p], im = 255 - m;
    for (size_t c = 0; c < 4; c++) {
      size_t q = p * 4 + c;
      dst[q] = uint8_t((dst[q] * im + src[q] * m + 127) / 255);
    }
  }
}

void blendF32(uint8_t* dst, const uint8_t* src, const float* mask, size_t pixels) {
  for (size_t p = 0; p < pixels; p++) {
    const double al = std::min(1.0, std::max(0.0, double(mask[p])));
    for (size_t c = 0; c < 4; c++) {
      size_t q = p * 4 + c;
      double d = dst[q];
      dst[q] = uint8_t(std::floor(d + (double(src[q]) - d) * al + 0.5));
    }
  }
}

void featherMask(size_t width, size_t height, double cx, double cy, double rx, double ry, double feather, float* out) {
  for (size_t y = 0; y < height; y++) {
    for (size_t x = 0; x < width; x++) {
      double dx = double(x) + 0.5 - cx, dy = double(y) + 0.5 - cy;
      double rho = std::sqrt((dx / rx) * (dx / rx) + (dy / ry) * (dy / ry));
      double dist = std::sqrt(dx * dx + dy * dy);
      double inside = rho == 0 ? std::min(rx, ry) : dist / rho - dist;
      double al;
      if (feather == 0) {
        al = rho < 1 ? 1 : 0;
      } else {
        double t = std::min(1.0, std::max(0.0, inside / feather));
        al = t * t * (3 - 2 * t);
      }
      out[y * width + x] = float(al);
    }
  }
}

}  // namespace lectern
