// Band-limited resampling: Kaiser-windowed sinc, polyphase table when it is small.
#include <cmath>
#include <numeric>
#include <vector>

#include "kernels.h"

namespace lectern {

static double besselI0(double x) {
  double sum = 1, term = 1, q = x * x / 4;
  for (int k = 1; k < 64; k++) {
    term *= q / (double(k) * k);
    sum += term;
    if (term < sum * 1e-17) break;
  }
  return sum;
}

// Taps for one fractional output phase, normalised to unit DC gain (as in the reference).
static void taps(double* out, double frac, double fc, double halfWidth, int64_t K, double beta, double i0Beta) {
  double sum = 0;
  for (int64_t t = 0; t < 2 * K; t++) {
    double d = frac + double(K - 1 - t), h = 0;
    if (std::fabs(d) < halfWidth) {
      double x = fc * d;
      double sinc = x == 0 ? 1 : std::sin(M_PI * x) / (M_PI * x);
      double r = d / halfWidth;
      h = fc * sinc * (besselI0(beta * std::sqrt(1 - r * r)) / i0Beta);
    }
    out[t] = h;
    sum += h;
  }
  for (int64_t t = 0; t < 2 * K; t++) out[t] /= sum;
}

void resample(const float* in, size_t n, int64_t fromRate, int64_t toRate, float* out, size_t outLen,
              double beta, double rolloff, double zeroCrossings) {
  int64_t g = std::gcd(fromRate, toRate);
  int64_t L = toRate / g, M = fromRate / g;
  double fc = rolloff * std::min(1.0, double(L) / double(M));
  double halfWidth = zeroCrossings / fc;
  int64_t K = int64_t(std::ceil(halfWidth)), T = 2 * K;
  double i0Beta = besselI0(beta);
  bool tabulate = L <= int64_t(outLen) && L * T <= (int64_t(1) << 22);
  std::vector<double> table(tabulate ? L * T : T);
  if (tabulate)
    for (int64_t p = 0; p < L; p++) taps(&table[p * T], double(p) / double(L), fc, halfWidth, K, beta, i0Beta);
  const int64_t nn = int64_t(n);
  for (size_t k = 0; k < outLen; k++) {
    int64_t pos = int64_t(k) * M, base = pos / L, p = pos - base * L;
    const double* h;
    if (tabulate) {
      h = &table[p * T];
    } else {
      taps(table.data(), double(p) / double(L), fc, halfWidth, K, beta, i0Beta);
      h = table.data();
    }
    int64_t first = base - K + 1;
    double acc = 0;
    if (first >= 0 && first + T <= nn) {
      const float* x = in + first;
      for (int64_t t = 0; t < T; t++) acc += double(x[t]) * h[t];
    } else {
      for (int64_t t = 0; t < T; t++) {
        int64_t j = first + t;
        if (j >= 0 && j < nn) acc += double(in[j]) * h[t];
      }
    }
    out[k] = float(acc);
  }
}

}  // namespace lectern
