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

double dtw(const float* a, size_t n, const float* b, size_t m, size_t dims, const int32_t* lo, const int32_t* hi,
           size_t cells, std::vector<int32_t>& path) {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<uint8_t> dirs(cells);
  std::vector<size_t> rowStart(n);
  std::vector<double> prevRow(m, inf), curRow(m, inf);
  double* prev = prevRow.data();
  double* cur = curRow.data();
  size_t pos = 0;
  for (size_t i = 0; i < n; i++) {
    rowStart[i] = pos;
    const int64_t l = lo[i], h = hi[i];
    const int64_t pl = i > 0 ? lo[i - 1] : 1, ph = i > 0 ? hi[i - 1] : 0;
    const float* ai = a + i * dims;
    for (int64_t j = l; j <= h; j++) {
      const float* bj = b + size_t(j) * dims;
      double d = 0;
      for (size_t k = 0; k < dims; k++) {
        double x = double(ai[k]) - double(bj[k]);
        d += x * x;
      }
      d = std::sqrt(d);
      double best = inf;
      uint8_t dir = DIAG;
      if (i == 0 && j == 0) {
        best = 0;
      } else {
        if (j - 1 >= pl && j - 1 <= ph) best = prev[j - 1];
        if (j >= pl && j <= ph && prev[j] < best) best = prev[j], dir = UP;
        if (j > l && cur[j - 1] < best) best = cur[j - 1], dir = LEFT;
      }
      cur[j] = best + d;
      dirs[pos++] = dir;
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
