// Signatures shared by the native addon (src/native/index.ts) and the TypeScript
// reference (src/native/reference.ts), plus the argument handling both use, so the
// two differ only in the hot loops.

/** Frame features, row-major: frame f's vector is data[f*dims .. (f+1)*dims). */
export interface Features {
  frames: number;
  dims: number;
  data: Float32Array;
}

/**
 * Framing: frame f covers samples [f*hop, f*hop + frameLen) where
 * frameLen = round(sampleRate*frameMs/1000) and hop = round(sampleRate*hopMs/1000);
 * the signal is zero-padded at the end so every sample lies in some frame:
 * frames = n === 0 ? 0 : 1 + ceil(max(0, n - frameLen) / hop).
 * The centre of frame f is at (f*hop + frameLen/2) / sampleRate seconds.
 */
export interface FeatureOptions {
  frameMs?: number; // 25
  hopMs?: number; // 10
  nMels?: number; // 40
  nCoeffs?: number; // 13 (c0 included)
  fMin?: number; // 20 Hz
  fMax?: number; // sampleRate / 2
  preEmphasis?: number; // 0.97; 0 turns it off
}

export interface ResolvedFeatureOptions {
  frameLen: number;
  hop: number;
  nfft: number;
  nMels: number;
  nCoeffs: number;
  fMin: number;
  fMax: number;
  preEmphasis: number;
}

/** Sakoe–Chiba radius around the length-scaled diagonal, or around an explicit per-row centre. */
export type DtwBand = number | { centre?: Int32Array; radius: number };

export interface DtwResult {
  /** (i, j) pairs flattened, from (0, 0) to (n-1, m-1), monotone, steps (1,0) (0,1) (1,1). */
  path: Int32Array;
  /** Accumulated Euclidean frame distance along the path. */
  cost: number;
}

export interface Ellipse {
  cx: number;
  cy: number;
  rx: number;
  ry: number;
}

export interface NativeFunctions {
  resample(input: Float32Array, fromRate: number, toRate: number, filter?: ResampleFilter): Float32Array;
  melSpectrogram(samples: Float32Array, sampleRate: number, opts?: FeatureOptions): Features;
  mfcc(samples: Float32Array, sampleRate: number, opts?: FeatureOptions): Features;
  frameEnergy(samples: Float32Array, sampleRate: number, opts?: FeatureOptions): Float32Array;
  dtwBanded(a: Float32Array, b: Float32Array, dims: number, band: DtwBand): DtwResult;
  blendRgba(dst: Uint8Array, src: Uint8Array, mask: Uint8Array | Float32Array, width: number, height: number): void;
  featherMask(width: number, height: number, ellipse: Ellipse, feather: number): Float32Array;
}

function positive(name: string, v: number, integer = false): number {
  if (!Number.isFinite(v) || v <= 0 || (integer && !Number.isInteger(v))) {
    throw new RangeError(`${name} must be a positive ${integer ? 'integer' : 'number'}, got ${v}`);
  }
  return v;
}

export function resolveFeatureOptions(sampleRate: number, opts: FeatureOptions = {}): ResolvedFeatureOptions {
  positive('sampleRate', sampleRate);
  const frameLen = Math.round((sampleRate * positive('frameMs', opts.frameMs ?? 25)) / 1000);
  const hop = Math.round((sampleRate * positive('hopMs', opts.hopMs ?? 10)) / 1000);
  if (frameLen < 2 || hop < 1) throw new RangeError(`frame of ${frameLen} samples / hop of ${hop} is too short at ${sampleRate} Hz`);
  let nfft = 1;
  while (nfft < frameLen) nfft *= 2;
  const nMels = positive('nMels', opts.nMels ?? 40, true);
  const nCoeffs = positive('nCoeffs', opts.nCoeffs ?? 13, true);
  if (nCoeffs > nMels) throw new RangeError(`nCoeffs (${nCoeffs}) must not exceed nMels (${nMels})`);
  const fMin = opts.fMin ?? 20;
  const fMax = opts.fMax ?? sampleRate / 2;
  if (!(fMin >= 0 && fMax > fMin && fMax <= sampleRate / 2)) {
    throw new RangeError(`need 0 <= fMin < fMax <= sampleRate/2, got fMin=${fMin} fMax=${fMax}`);
  }
  const preEmphasis = opts.preEmphasis ?? 0.97;
  if (!(preEmphasis >= 0 && preEmphasis < 1)) throw new RangeError(`preEmphasis must be in [0, 1), got ${preEmphasis}`);
  return { frameLen, hop, nfft, nMels, nCoeffs, fMin, fMax, preEmphasis };
}

export function frameCount(n: number, frameLen: number, hop: number): number {
  return n === 0 ? 0 : 1 + Math.ceil(Math.max(0, n - frameLen) / hop);
}

/**
 * Per-row column windows [lo[i], hi[i]] of the band, made monotone and connected so a
 * path from (0,0) to (n-1,m-1) always exists even when an explicit centre line jumps:
 * lo and hi are non-decreasing, lo[0] = 0, hi[n-1] = m-1, lo[i] <= hi[i-1] + 1.
 */
export function bandWindows(n: number, m: number, band: DtwBand): { lo: Int32Array; hi: Int32Array; cells: number } {
  const radius = typeof band === 'number' ? band : band?.radius;
  if (!Number.isInteger(radius) || (radius as number) < 0) throw new RangeError(`DTW band radius must be a non-negative integer, got ${radius}`);
  const r = radius as number;
  const centre = typeof band === 'number' ? undefined : band.centre;
  if (centre && centre.length !== n) throw new RangeError(`DTW band centre has ${centre.length} rows, expected ${n}`);
  const lo = new Int32Array(n);
  const hi = new Int32Array(n);
  const slope = n > 1 ? (m - 1) / (n - 1) : 0;
  for (let i = 0; i < n; i++) {
    const c = centre ? Math.min(m - 1, Math.max(0, centre[i]!)) : Math.round(i * slope);
    lo[i] = Math.max(0, c - r);
    hi[i] = Math.min(m - 1, c + r);
  }
  lo[0] = 0;
  hi[n - 1] = m - 1;
  for (let i = n - 2; i >= 0; i--) if (lo[i]! > lo[i + 1]!) lo[i] = lo[i + 1]!;
  for (let i = 1; i < n; i++) if (hi[i]! < hi[i - 1]!) hi[i] = hi[i - 1]!;
  let cells = hi[0]! - lo[0]! + 1;
  for (let i = 1; i < n; i++) {
    if (lo[i]! > hi[i - 1]! + 1) lo[i] = hi[i - 1]! + 1;
    cells += hi[i]! - lo[i]! + 1;
  }
  return { lo, hi, cells };
}

export function checkDtwArgs(a: Float32Array, b: Float32Array, dims: number): { n: number; m: number } {
  if (!(a instanceof Float32Array) || !(b instanceof Float32Array)) throw new TypeError('dtwBanded: a and b must be Float32Array');
  positive('dims', dims, true);
  if (a.length % dims !== 0 || b.length % dims !== 0) throw new RangeError(`dtwBanded: lengths ${a.length}, ${b.length} are not multiples of dims ${dims}`);
  const n = a.length / dims;
  const m = b.length / dims;
  if (n === 0 || m === 0) throw new RangeError('dtwBanded: both sequences need at least one frame');
  return { n, m };
}

export function checkResampleArgs(input: Float32Array, fromRate: number, toRate: number): void {
  if (!(input instanceof Float32Array)) throw new TypeError('resample: input must be a Float32Array');
  positive('fromRate', fromRate, true);
  positive('toRate', toRate, true);
}

export function checkBlendArgs(dst: Uint8Array, src: Uint8Array, mask: Uint8Array | Float32Array, width: number, height: number): void {
  positive('width', width, true);
  positive('height', height, true);
  const px = width * height;
  if (!(dst instanceof Uint8Array) || !(src instanceof Uint8Array)) throw new TypeError('blendRgba: dst and src must be Uint8Array (RGBA)');
  if (dst.length !== px * 4 || src.length !== px * 4) throw new RangeError(`blendRgba: dst/src must be ${px * 4} bytes for ${width}x${height} RGBA`);
  if (!(mask instanceof Uint8Array || mask instanceof Float32Array)) throw new TypeError('blendRgba: mask must be Uint8Array (0..255) or Float32Array (0..1)');
  if (mask.length !== px) throw new RangeError(`blendRgba: mask must have ${px} entries, got ${mask.length}`);
}

export function checkFeatherArgs(width: number, height: number, e: Ellipse, feather: number): void {
  positive('width', width, true);
  positive('height', height, true);
  positive('ellipse.rx', e.rx);
  positive('ellipse.ry', e.ry);
  if (!Number.isFinite(e.cx) || !Number.isFinite(e.cy)) throw new RangeError('featherMask: ellipse centre must be finite');
  if (!Number.isFinite(feather) || feather < 0) throw new RangeError(`featherMask: feather must be >= 0, got ${feather}`);
}

/**
 * Resampling filter: Kaiser-windowed sinc, beta 8.6 (about -86 dB stop band), 32 zero
 * crossings each side at the lower rate (transition band about 0.16 of the lower Nyquist),
 * cutoff at 0.91 of the lower Nyquist so the stop band starts just below it: for
 * 22050→16000 the passband is flat to about 6.6 kHz and nothing above 7.9 kHz aliases.
 * Rates are reduced by their gcd to L/M; output sample k sits at input position k*M/L,
 * whose fractional phase is one of L, so taps are tabulated per phase when L*taps is small.
 */
export const RESAMPLE = { beta: 8.6, rolloff: 0.91, zeroCrossings: 32 } as const;

/** The filter's shape; the default is RESAMPLE. Fewer zero crossings: a wider transition band, proportionally less work. */
export interface ResampleFilter {
  beta?: number;
  rolloff?: number;
  zeroCrossings?: number;
}

export function resampleFilter(f: ResampleFilter | undefined): { beta: number; rolloff: number; zeroCrossings: number } {
  const r = { ...RESAMPLE, ...f };
  if (!(r.zeroCrossings >= 2 && r.zeroCrossings <= 64)) throw new RangeError(`resample: zeroCrossings must be 2..64, got ${r.zeroCrossings}`);
  if (!(r.rolloff > 0 && r.rolloff <= 1)) throw new RangeError(`resample: rolloff must be in (0, 1], got ${r.rolloff}`);
  if (!(r.beta >= 0)) throw new RangeError(`resample: beta must be >= 0, got ${r.beta}`);
  return r;
}

export function gcd(a: number, b: number): number {
  while (b) [a, b] = [b, a % b];
  return a;
}

export function resampledLength(n: number, fromRate: number, toRate: number): number {
  return Math.ceil((n * toRate) / fromRate);
}
