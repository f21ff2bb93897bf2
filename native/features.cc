// Log-mel / MFCC features: pre-emphasis, periodic Hann window, power spectrum through a
// real FFT (one half-size complex FFT), sparse triangular HTK-mel filters, natural log,
// orthonormal DCT-II. Same definitions as src/native/reference.ts.
#include <algorithm>
#include <cmath>
#include <complex>
#include <vector>

#include "kernels.h"

namespace lectern {

using cd = std::complex<double>;

namespace {

// Power spectrum of a real frame of length n (a power of two) via an n/2-point complex FFT.
class RealFft {
 public:
  explicit RealFft(size_t n) : n_(n), h_(n / 2), rev_(h_), tw_(h_ / 2 + 1), post_(h_ + 1), z_(h_) {
    for (size_t i = 0, j = 0; i < h_; i++) {
      rev_[i] = j;
      size_t bit = h_ >> 1;
      for (; bit && (j & bit); bit >>= 1) j ^= bit;
      j |= bit;
    }
    for (size_t k = 0; k < tw_.size(); k++) tw_[k] = std::polar(1.0, -2 * M_PI * double(k) / double(h_));
    for (size_t k = 0; k <= h_; k++) post_[k] = std::polar(1.0, -2 * M_PI * double(k) / double(n_));
  }

  // x: n real samples; power: n/2 + 1 bins.
  void power(const double* x, double* power) {
    for (size_t i = 0; i < h_; i++) z_[rev_[i]] = cd(x[2 * i], x[2 * i + 1]);
    for (size_t len = 2; len <= h_; len <<= 1) {
      size_t half = len >> 1, step = h_ / len;
      for (size_t i = 0; i < h_; i += len) {
        for (size_t k = 0; k < half; k++) {
          cd w = tw_[k * step];
          cd& a = z_[i + k];
          cd& b = z_[i + k + half];
          cd t(b.real() * w.real() - b.imag() * w.imag(), b.real() * w.imag() + b.imag() * w.real());
          b = a - t;
          a += t;
        }
      }
    }
    for (size_t k = 0; k <= h_; k++) {
      cd zk = z_[k % h_], zc = std::conj(z_[(h_ - k) % h_]);
      cd e = (zk + zc) * 0.5;
      cd d = zk - zc;
      cd o(d.imag() * 0.5, -d.real() * 0.5);  // (zk - zc) / 2i
      cd w = post_[k];
      double re = e.real() + w.real() * o.real() - w.imag() * o.imag();
      double im = e.imag() + w.real() * o.imag() + w.imag() * o.real();
      power[k] = re * re + im * im;
    }
  }

 private:
  size_t n_, h_;
  std::vector<size_t> rev_;
  std::vector<cd> tw_, post_, z_;
};

double mel(double f) { return 2595 * std::log10(1 + f / 700); }
double invMel(double m) { return 700 * (std::pow(10.0, m / 2595) - 1); }

struct Filter {
  size_t first;
  std::vector<double> w;
};

std::vector<Filter> filterbank(const FeatureParams& p) {
  size_t bins = p.nfft / 2 + 1;
  std::vector<double> edges(p.nMels + 2);
  double lo = mel(p.fMin), hi = mel(p.fMax);
  for (size_t q = 0; q < edges.size(); q++) edges[q] = invMel(lo + (hi - lo) * double(q) / double(p.nMels + 1));
  std::vector<Filter> fb(p.nMels);
  for (size_t b = 0; b < p.nMels; b++) {
    double f0 = edges[b], f1 = edges[b + 1], f2 = edges[b + 2];
    std::vector<double> w(bins, 0);
    size_t first = bins, last = 0;
    for (size_t k = 0; k < bins; k++) {
      double f = double(k) * p.sampleRate / double(p.nfft);
      double v = 0;
      if (f > f0 && f < f1) v = (f - f0) / (f1 - f0);
      else if (f >= f1 && f < f2) v = (f2 - f) / (f2 - f1);
      if (v > 0) {
        w[k] = v;
        first = std::min(first, k);
        last = k;
      }
    }
    if (first <= last) fb[b] = {first, std::vector<double>(w.begin() + first, w.begin() + last + 1)};
    else fb[b] = {0, {}};
  }
  return fb;
}

}  // namespace

void logMel(const float* x, size_t n, const FeatureParams& p, float* out) {
  const size_t bins = p.nfft / 2 + 1, dims = p.nCoeffs ? p.nCoeffs : p.nMels;
  std::vector<Filter> fb = filterbank(p);
  std::vector<double> win(p.frameLen), frame(p.nfft), power(bins), lm(p.nMels);
  for (size_t i = 0; i < p.frameLen; i++) win[i] = 0.5 - 0.5 * std::cos(2 * M_PI * double(i) / double(p.frameLen));
  std::vector<double> dct(p.nCoeffs * p.nMels);
  for (size_t k = 0; k < p.nCoeffs; k++)
    for (size_t b = 0; b < p.nMels; b++)
      dct[k * p.nMels + b] = std::cos(M_PI * double(k) * (double(b) + 0.5) / double(p.nMels)) *
                             std::sqrt(2.0 / double(p.nMels)) * (k == 0 ? M_SQRT1_2 : 1.0);
  RealFft fft(p.nfft);
  for (size_t f = 0; f < p.frames; f++) {
    std::fill(frame.begin(), frame.end(), 0.0);
    size_t start = f * p.hop;
    size_t len = start < n ? std::min(p.frameLen, n - start) : 0;
    for (size_t i = 0; i < len; i++) {
      size_t t = start + i;
      double y = double(x[t]) - (t > 0 ? p.preEmphasis * double(x[t - 1]) : 0.0);
      frame[i] = y * win[i];
    }
    fft.power(frame.data(), power.data());
    for (size_t b = 0; b < p.nMels; b++) {
      const Filter& flt = fb[b];
      double e = 0;
      for (size_t k = 0; k < flt.w.size(); k++) e += flt.w[k] * power[flt.first + k];
      lm[b] = std::log(std::max(e, 1e-10));
    }
    float* o = out + f * dims;
    if (!p.nCoeffs) {
      for (size_t b = 0; b < p.nMels; b++) o[b] = float(lm[b]);
    } else {
      for (size_t k = 0; k < p.nCoeffs; k++) {
        const double* row = &dct[k * p.nMels];
        double s = 0;
        for (size_t b = 0; b < p.nMels; b++) s += row[b] * lm[b];
        o[k] = float(s);
      }
    }
  }
}

void frameEnergy(const float* x, size_t n, size_t frames, size_t frameLen, size_t hop, float* out) {
  for (size_t f = 0; f < frames; f++) {
    double e = 0;
    size_t end = std::min(n, f * hop + frameLen);
    for (size_t t = f * hop; t < end; t++) e += double(x[t]) * double(x[t]);
    out[f] = float(std::log(std::max(e, 1e-10)));
  }
}

}  // namespace lectern
