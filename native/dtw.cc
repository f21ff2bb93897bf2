// Banded DTW: Euclidean frame distance, steps (1,1) (1,0) (0,1), ties prefer diagonal,
// then up, then left (as src/native/reference.ts). One direction byte per band cell and
// two cost rows, so memory is O(n·band + m), never O(n·m).
#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "kernels.h"

namespace lectern {

enum : uint8_t { DIAG = 0, UP = 1, LEFT = 2 };

// Euclidean distances from frame ai to columns [l, h] of the transposed b. Built for AVX2
// too and picked at load time; the per-element operation order is the same in every build.
__attribute__((target_clones("avx2", "default")))
static void rowDistances(const float* ai, const float* bt, size_t m, size_t dims, int64_t l, int64_t h, double* dd) {
  for (int64_t j = l; j <= h; j++) dd[j] = 0;
  for (size_t k = 0; k < dims; k++) {
    const double ak = ai[k];
    const float* bk = bt + k * m;
    for (int64_t j = l; j <= h; j++) {
      double x = ak - double(bk[j]);
      dd[j] += x * x;
    }
  }
  for (int64_t j = l; j <= h; j++) dd[j] = std::sqrt(dd[j]);
}

double dtw(const float* a, size_t n, const float* b, size_t m, size_t dims, const int32_t* lo, const int32_t* hi,
           size_t cells, std::vector<int32_t>& path) {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<uint8_t> dirs(cells);
  std::vector<size_t> rowStart(n);
  std::vector<double> prevRow(m, inf), curRow(m, inf);
  double* prev = prevRow.data();
  double* cur = curRow.data();
  // b transposed (dims × m) so a row's distances vectorise across j while each one still
  // sums its dimensions in order 0..dims-1, bit-identical to the reference.
  std::vector<float> bt(dims * m);
  for (size_t j = 0; j < m; j++)
    for (size_t k = 0; k < dims; k++) bt[k * m + j] = b[j * dims + k];
  std::vector<double> dist(m);
  size_t pos = 0;
  for (size_t i = 0; i < n; i++) {
    rowStart[i] = pos;
    const int64_t l = lo[i], h = hi[i];
    const int64_t pl = i > 0 ? lo[i - 1] : 0, ph = i > 0 ? hi[i - 1] : 0;
    const float* ai = a + i * dims;
    double* dd = dist.data();
    rowDistances(ai, bt.data(), m, dims, l, h, dd);
    if (i == 0) {
      double acc = 0;
      for (int64_t j = l; j <= h; j++) {
        acc += dd[j];
        cur[j] = acc;
        dirs[pos++] = j == 0 ? DIAG : LEFT;
      }
    } else {
      // Cells of the previous row outside its window read as unreachable; windows are
      // monotone, so only the cell left of it and those right of it can be touched.
      if (l == pl && l > 0) prev[l - 1] = inf;
      for (int64_t j = ph + 1; j <= h; j++) prev[j] = inf;
      double left = inf;
      for (int64_t j = l; j <= h; j++) {
        double best = j > 0 ? prev[j - 1] : inf, up = prev[j];
        uint8_t dir = DIAG;
        if (up < best) best = up, dir = UP;
        if (left < best) best = left, dir = LEFT;
        left = best + dd[j];
        cur[j] = left;
        dirs[pos++] = dir;
      }
    }
    std::swap(prev, cur);
  }
  const double cost = prev[m - 1];
  path.clear();
  path.reserve(2 * (n + m));
  int64_t i = int64_t(n) - 1, j = int64_t(m) - 1;
  for (;;) {
    path.push_back(int32_t(j));
    path.push_back(int32_t(i));
    if (i == 0 && j == 0) break;
    uint8_t dir = dirs[rowStart[i] + size_t(j - lo[i])];
    if (dir == DIAG) i--, j--;
    else if (dir == UP) i--;
    else j--;
  }
  std::reverse(path.begin(), path.end());  // (j,i) pairs reversed read as (i,j) from the start
  return cost;
}

}  // namespace lectern
