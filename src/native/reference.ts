// Plain TypeScript reference implementations of the native addon's functions:
// straightforward code the addon is tested against (same outputs within a tolerance)
// and benchmarked against. Semantics are documented in ./types.ts.
import {
  resampleFilter,
  bandWindows,
  checkBlendArgs,
  checkDtwArgs,
  checkFeatherArgs,
  checkResampleArgs,
  frameCount,
  gcd,
  resampledLength,
  resolveFeatureOptions,
  type DtwBand,
  type ResampleFilter,
  type DtwResult,
  type Ellipse,
  type FeatureOptions,
  type Features,
  type ResolvedFeatureOptions,
} from './types.ts';

export type { DtwBand, DtwResult, Ellipse, FeatureOptions, Features } from './types.ts';

// ---------- resampling ----------

function besselI0(x: number): number {
  let sum = 1;
  let term = 1;
  const q = (x * x) / 4;
  for (let k = 1; k < 64; k++) {
    term *= q / (k * k);
    sum += term;
    if (term < sum * 1e-17) break;
  }
  return sum;
}

/** Windowed-sinc taps for one output phase `frac` (0..1), normalised to unit DC gain. */
function resampleTaps(out: Float64Array, frac: number, fc: number, halfWidth: number, K: number, i0Beta: number, beta: number): void {
  let sum = 0;
  for (let t = 0; t < 2 * K; t++) {
    // tap t multiplies input sample base - K + 1 + t, at distance d from the output position
    const d = frac + K - 1 - t;
    let h = 0;
    if (Math.abs(d) < halfWidth) {
      const x = fc * d;
      const sinc = x === 0 ? 1 : Math.sin(Math.PI * x) / (Math.PI * x);
      const r = d / halfWidth;
      h = fc * sinc * (besselI0(beta * Math.sqrt(1 - r * r)) / i0Beta);
    }
    out[t] = h;
    sum += h;
  }
  for (let t = 0; t < 2 * K; t++) out[t]! /= sum;
}

export function resample(input: Float32Array, fromRate: number, toRate: number, filter?: ResampleFilter): Float32Array {
  checkResampleArgs(input, fromRate, toRate);
  const RESAMPLE = resampleFilter(filter);
  if (fromRate === toRate) return input.slice();
  const g = gcd(fromRate, toRate);
  const L = toRate / g;
  const M = fromRate / g;
  const fc = RESAMPLE.rolloff * Math.min(1, L / M);
  const halfWidth = RESAMPLE.zeroCrossings / fc;
  const K = Math.ceil(halfWidth);
  const taps = 2 * K;
  const i0Beta = besselI0(RESAMPLE.beta);
  const n = input.length;
  const outLen = resampledLength(n, fromRate, toRate);
  const out = new Float32Array(outLen);
  const tabulate = L <= outLen && L * taps <= 1 << 22;
  const table = new Float64Array(tabulate ? L * taps : taps);
  if (tabulate) for (let p = 0; p < L; p++) resampleTaps(table.subarray(p * taps, (p + 1) * taps), p / L, fc, halfWidth, K, i0Beta, RESAMPLE.beta);
  for (let k = 0; k < outLen; k++) {
    const pos = k * M;
    const base = Math.floor(pos / L);
    const p = pos - base * L;
    let off = 0;
    if (tabulate) off = p * taps;
    else resampleTaps(table, p / L, fc, halfWidth, K, i0Beta, RESAMPLE.beta);
    const first = base - K + 1;
    let acc = 0;
    for (let t = 0; t < taps; t++) {
      const j = first + t;
      if (j >= 0 && j < n) acc += input[j]! * table[off + t]!;
    }
    out[k] = acc;
  }
  return out;
}

// ---------- features ----------

const mel = (f: number) => 2595 * Math.log10(1 + f / 700);
const invMel = (m: number) => 700 * (10 ** (m / 2595) - 1);

/** Triangular HTK-mel filters over FFT bins 0..nfft/2, dense (nMels × bins). */
function melFilterbank(sampleRate: number, o: ResolvedFeatureOptions): Float64Array {
  const bins = o.nfft / 2 + 1;
  const fb = new Float64Array(o.nMels * bins);
  const lo = mel(o.fMin);
  const hi = mel(o.fMax);
  const edges = new Float64Array(o.nMels + 2);
  for (let q = 0; q < o.nMels + 2; q++) edges[q] = invMel(lo + ((hi - lo) * q) / (o.nMels + 1));
  for (let b = 0; b < o.nMels; b++) {
    const f0 = edges[b]!, f1 = edges[b + 1]!, f2 = edges[b + 2]!;
    for (let k = 0; k < bins; k++) {
      const f = (k * sampleRate) / o.nfft;
      let w = 0;
      if (f > f0 && f < f1) w = (f - f0) / (f1 - f0);
      else if (f >= f1 && f < f2) w = (f2 - f) / (f2 - f1);
      fb[b * bins + k] = w;
    }
  }
  return fb;
}

/** In-place iterative radix-2 complex FFT (length a power of two). */
export function fft(re: Float64Array, im: Float64Array): void {
  const n = re.length;
  for (let i = 1, j = 0; i < n; i++) {
    let bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) {
      let t = re[i]!; re[i] = re[j]!; re[j] = t;
      t = im[i]!; im[i] = im[j]!; im[j] = t;
    }
  }
  for (let len = 2; len <= n; len <<= 1) {
    const ang = (-2 * Math.PI) / len;
    const half = len >> 1;
    for (let i = 0; i < n; i += len) {
      for (let k = 0; k < half; k++) {
        const wr = Math.cos(ang * k), wi = Math.sin(ang * k);
        const a = i + k, b = a + half;
        const xr = re[b]! * wr - im[b]! * wi;
        const xi = re[b]! * wi + im[b]! * wr;
        re[b] = re[a]! - xr; im[b] = im[a]! - xi;
        re[a]! += xr; im[a]! += xi;
      }
    }
  }
}

function logMel(samples: Float32Array, sampleRate: number, o: ResolvedFeatureOptions): Features {
  const n = samples.length;
  const frames = frameCount(n, o.frameLen, o.hop);
  const bins = o.nfft / 2 + 1;
  const fb = melFilterbank(sampleRate, o);
  const win = new Float64Array(o.frameLen);
  for (let i = 0; i < o.frameLen; i++) win[i] = 0.5 - 0.5 * Math.cos((2 * Math.PI * i) / o.frameLen);
  const re = new Float64Array(o.nfft);
  const im = new Float64Array(o.nfft);
  const power = new Float64Array(bins);
  const data = new Float32Array(frames * o.nMels);
  for (let f = 0; f < frames; f++) {
    re.fill(0);
    im.fill(0);
    const start = f * o.hop;
    for (let i = 0; i < o.frameLen; i++) {
      const t = start + i;
      if (t >= n) break;
      const y = samples[t]! - (t > 0 ? o.preEmphasis * samples[t - 1]! : 0);
      re[i] = y * win[i]!;
    }
    fft(re, im);
    for (let k = 0; k < bins; k++) power[k] = re[k]! * re[k]! + im[k]! * im[k]!;
    for (let b = 0; b < o.nMels; b++) {
      let e = 0;
      for (let k = 0; k < bins; k++) e += fb[b * bins + k]! * power[k]!;
      data[f * o.nMels + b] = Math.log(Math.max(e, 1e-10));
    }
  }
  return { frames, dims: o.nMels, data };
}

/** Log-mel energies (natural log, floor 1e-10), frames × nMels. */
export function melSpectrogram(samples: Float32Array, sampleRate: number, opts?: FeatureOptions): Features {
  return logMel(samples, sampleRate, resolveFeatureOptions(sampleRate, opts));
}

/** MFCCs: orthonormal DCT-II of the log-mel energies, first nCoeffs (c0 included). */
export function mfcc(samples: Float32Array, sampleRate: number, opts?: FeatureOptions): Features {
  const o = resolveFeatureOptions(sampleRate, opts);
  const lm = logMel(samples, sampleRate, o);
  const N = o.nMels;
  const data = new Float32Array(lm.frames * o.nCoeffs);
  for (let f = 0; f < lm.frames; f++) {
    for (let k = 0; k < o.nCoeffs; k++) {
      let s = 0;
      for (let b = 0; b < N; b++) s += lm.data[f * N + b]! * Math.cos((Math.PI * k * (b + 0.5)) / N);
      data[f * o.nCoeffs + k] = s * Math.sqrt(2 / N) * (k === 0 ? Math.SQRT1_2 : 1);
    }
  }
  return { frames: lm.frames, dims: o.nCoeffs, data };
}

/** Natural log of each frame's energy (sum of squared raw samples, floor 1e-10), same framing. */
export function frameEnergy(samples: Float32Array, sampleRate: number, opts?: FeatureOptions): Float32Array {
  const o = resolveFeatureOptions(sampleRate, opts);
  const n = samples.length;
  const frames = frameCount(n, o.frameLen, o.hop);
  const out = new Float32Array(frames);
  for (let f = 0; f < frames; f++) {
    let e = 0;
    const end = Math.min(n, f * o.hop + o.frameLen);
    for (let t = f * o.hop; t < end; t++) e += samples[t]! * samples[t]!;
    out[f] = Math.log(Math.max(e, 1e-10));
  }
  return out;
}

// ---------- DTW ----------

const DIAG = 0, UP = 1, LEFT = 2;

/**
 * Banded DTW, Euclidean frame distance, steps (1,1) (1,0) (0,1) each adding the
 * distance of the cell entered; ties prefer diagonal, then up, then left.
 * Memory: one direction byte per band cell plus two cost rows.
 */
export function dtwBanded(a: Float32Array, b: Float32Array, dims: number, band: DtwBand): DtwResult {
  const { n, m } = checkDtwArgs(a, b, dims);
  const { lo, hi, cells } = bandWindows(n, m, band);
  const dirs = new Uint8Array(cells);
  const rowStart = new Int32Array(n);
  let prev = new Float64Array(m);
  let cur = new Float64Array(m);
  prev.fill(Infinity);
  let pos = 0;
  for (let i = 0; i < n; i++) {
    rowStart[i] = pos;
    const l = lo[i]!, h = hi[i]!;
    const pl = i > 0 ? lo[i - 1]! : 1, ph = i > 0 ? hi[i - 1]! : 0;
    for (let j = l; j <= h; j++) {
      let d = 0;
      for (let k = 0; k < dims; k++) {
        const x = a[i * dims + k]! - b[j * dims + k]!;
        d += x * x;
      }
      d = Math.sqrt(d);
      let best = Infinity, dir = DIAG;
      if (i === 0 && j === 0) best = 0;
      else {
        if (j - 1 >= pl && j - 1 <= ph) best = prev[j - 1]!;
        if (j >= pl && j <= ph && prev[j]! < best) { best = prev[j]!; dir = UP; }
        if (j > l && cur[j - 1]! < best) { best = cur[j - 1]!; dir = LEFT; }
      }
      cur[j] = best + d;
      dirs[pos++] = dir;
    }
    [prev, cur] = [cur, prev];
  }
  const cost = prev[m - 1]!;
  const rev: number[] = [];
  let i = n - 1, j = m - 1;
  for (;;) {
    rev.push(j, i);
    if (i === 0 && j === 0) break;
    const dir = dirs[rowStart[i]! + j - lo[i]!]!;
    if (dir === DIAG) { i--; j--; } else if (dir === UP) i--; else j--;
  }
  const path = new Int32Array(rev.length);
  for (let k = 0; k < rev.length; k++) path[k] = rev[rev.length - 1 - k]!;
  return { path, cost };
}

// ---------- image blending ----------

/** dst = dst·(1−α) + src·α per RGBA channel, rounded; α = mask/255 (Uint8Array) or clamp(mask, 0, 1). */
export function blendRgba(dst: Uint8Array, src: Uint8Array, mask: Uint8Array | Float32Array, width: number, height: number): void {
  checkBlendArgs(dst, src, mask, width, height);
  const px = width * height;
  if (mask instanceof Uint8Array) {
    for (let p = 0; p < px; p++) {
      const m = mask[p]!;
      for (let c = 0; c < 4; c++) {
        const q = p * 4 + c;
        dst[q] = Math.floor((dst[q]! * (255 - m) + src[q]! * m + 127) / 255);
      }
    }
  } else {
    for (let p = 0; p < px; p++) {
      const al = Math.min(1, Math.max(0, mask[p]!));
      for (let c = 0; c < 4; c++) {
        const q = p * 4 + c;
        dst[q] = Math.floor(dst[q]! + (src[q]! - dst[q]!) * al + 0.5);
      }
    }
  }
}

/** α = 1 deep inside the ellipse, smoothstep down to 0 over `feather` pixels before its edge. */
export function featherMask(width: number, height: number, e: Ellipse, feather: number): Float32Array {
  checkFeatherArgs(width, height, e, feather);
  const out = new Float32Array(width * height);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const dx = x + 0.5 - e.cx, dy = y + 0.5 - e.cy;
      const rho = Math.sqrt((dx / e.rx) ** 2 + (dy / e.ry) ** 2);
      const dist = Math.sqrt(dx * dx + dy * dy);
      // distance to the edge along the ray from the centre
      const inside = rho === 0 ? Math.min(e.rx, e.ry) : dist / rho - dist;
      let al: number;
      if (feather === 0) al = rho < 1 ? 1 : 0;
      else {
        const t = Math.min(1, Math.max(0, inside / feather));
        al = t * t * (3 - 2 * t);
      }
      out[y * width + x] = al;
    }
  }
  return out;
}
