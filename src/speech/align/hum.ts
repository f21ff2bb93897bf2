// Steady mains hum (50 or 60 Hz and its harmonics) taken out of a clip before the aligners read
// it (round 42: hmm before it decodes and refines, dtw before its features and energy). Hum
// raises the floor of every pause: a word then no longer rises 20 dB over the pause before it and
// its edges stay at the HMM's, and the 8 kHz model decoding alone moves edges too
// (bench/align-levels, rows `hum` and `buzz`; README, *Mains hum*).
//
// The hum is fitted where the clip is quiet and subtracted as a tone: a notch filter rings
// across word edges (notches at 60 Hz's first ten harmonics moved clean hand tuning's starts
// 22.8 -> 29.6 ms), and a tone fitted on the speech as well takes the speech's own harmonics
// into the pauses (hand tuning 22.8 -> 44.3 ms with 50 Hz's first ten). Fitted on the pauses
// alone, and kept only where it lowers the clip's floor, a clip with no hum is left as it is.

export interface HumRemoval {
  /** The clip: with the hum subtracted where it was found, else the input itself. */
  samples: Float32Array;
  /** The mains frequency found (Hz; 0: none looked for, the clip too short or with no pauses). */
  f0: number;
  /** The harmonics subtracted (1: the fundamental); empty where nothing was. */
  harmonics: number[];
  /** How far the clip's floor fell (its 5th percentile frame, dB; 0 where nothing was subtracted). */
  gainDb: number;
}

const FRAME_S = 0.025;
/** Quiet frames: within this of the 10th percentile frame energy (ln power; 6 dB). */
const QUIET_SPAN = Math.log(10) * 0.6;
/** The share of the quiet frames' energy the first three harmonics must hold before they are fitted at all. */
const MIN_SHARE = 0.2;
/** Subtracted only where the clip's floor (its 5th percentile frame, as the refinement reads it: refine.ts noiseFloor) falls by this much (dB). */
const MIN_GAIN_DB = 3;
/** Harmonics up to this frequency (Hz). */
const MAX_HZ = 1000;
/** The window each harmonic's amplitude and phase are fitted in (s; 50 % overlap). */
const FIT_S = 1;
/** The stretch the mains frequency is looked for in (s). */
const SEARCH_S = 10;

/** ln energy of each FRAME_S frame. */
function frameLogEnergy(x: Float32Array, n: number): Float64Array {
  const nf = Math.floor(x.length / n);
  const e = new Float64Array(nf);
  for (let f = 0; f < nf; f++) {
    let s = 0;
    for (let i = f * n; i < (f + 1) * n; i++) s += x[i]! * x[i]!;
    e[f] = Math.log(s / n + 1e-12);
  }
  return e;
}

/**
 * The clip with steady mains hum subtracted, where subtracting it lowers the clip's floor (the
 * 5th percentile of its frames' energy) by MIN_GAIN_DB or more; otherwise the clip itself.
 */
export function withoutHum(x: Float32Array, rate: number): HumRemoval {
  const none: HumRemoval = { samples: x, f0: 0, harmonics: [], gainDb: 0 };
  const n = Math.round(FRAME_S * rate);
  const e = frameLogEnergy(x, n);
  if (e.length < 20) return none;
  const p10 = Float64Array.from(e).sort()[Math.floor(e.length * 0.1)]!;
  const isQuiet = new Uint8Array(e.length);
  for (let f = 0; f < e.length; f++) isQuiet[f] = e[f]! <= p10 + QUIET_SPAN ? 1 : 0;
  // the mains frequency, from the quiet frames of the first SEARCH_S (the words left out, the
  // hum's phase running on through them)
  const search: number[] = [];
  let quietEnergy = 0;
  for (let f = 0; f < Math.min(e.length, Math.floor((SEARCH_S * rate) / n)); f++) {
    if (!isQuiet[f]) continue;
    search.push(f);
    for (let i = f * n; i < (f + 1) * n; i++) quietEnergy += x[i]! * x[i]!;
  }
  const quietSamples = search.length * n;
  if (quietSamples < 0.2 * rate || quietEnergy <= 0) return none;
  const power = (f: number) => tonePower(x, rate, f, search, n);
  const comb = (f: number) => power(f) + power(3 * f);
  const base = comb(50) + comb(49.9) + comb(50.1) >= comb(60) + comb(59.9) + comb(60.1) ? 50 : 60;
  let f0 = base;
  let top = -1;
  for (let d = -0.3; d <= 0.3001; d += 0.05) {
    const p = comb(base + d);
    if (p > top) (top = p), (f0 = base + d);
  }
  const h = 0.025;
  const [pm, p0, pp] = [comb(f0 - h), comb(f0), comb(f0 + h)];
  const den = pm - 2 * p0 + pp;
  if (den < 0) f0 += Math.max(-h, Math.min(h, (h * 0.5 * (pm - pp)) / den));
  // a steady tone of amplitude A over q samples has power (A q / 2)^2 and energy q A^2 / 2:
  // 2 P / (q E) is the share of the quiet energy it holds (noise: about 2 / q)
  let share = 0;
  for (let k = 1; k <= 3; k++) share += (2 * power(k * f0)) / (quietSamples * quietEnergy);
  if (share < MIN_SHARE) return { ...none, f0 };

  // each harmonic fitted and judged on the quiet frames alone; the whole clip is rebuilt only
  // for a subtraction that is kept
  const fit = new QuietFit(x, rate, f0, isQuiet, n);
  const kept: Harmonic[] = [];
  const last = Math.floor(Math.min(MAX_HZ, rate / 2 - 50) / f0);
  // the first three first: a clip with none of them worth subtracting has no hum worth the rest
  for (let k = 1; k <= last && (k <= 3 || kept.length > 0); k++) {
    const harmonic = fit.harmonic(k);
    if (harmonic) kept.push(harmonic);
  }
  if (!kept.length) return { ...none, f0 };
  // the floor after, from the residual: the quiet frames less the hum, the others as they were
  // (they can only lie lower than that, so this errs toward keeping the clip as it is)
  const p5 = (v: Float64Array) => v.sort()[Math.floor(v.length * 0.05)]!;
  const gainDb = ((p5(Float64Array.from(e)) - p5(frameLogEnergy(fit.residual, n))) * 10) / Math.log(10);
  if (gainDb < MIN_GAIN_DB) return { ...none, f0 };
  return { samples: fit.subtract(kept), f0, harmonics: kept.map((k) => k.k), gainDb };
}

/** |sum of x e^(-i w t)|^2 over the given frames (samples at their own times). */
function tonePower(x: Float32Array, rate: number, f: number, frames: number[], n: number): number {
  const w = (2 * Math.PI * f) / rate;
  const cw = Math.cos(w);
  const sw = Math.sin(w);
  let re = 0;
  let im = 0;
  for (const fr of frames) {
    const i0 = fr * n;
    let c = Math.cos(w * i0);
    let s = Math.sin(w * i0);
    for (let i = i0; i < i0 + n; i++) {
      const v = x[i]!;
      re += v * c;
      im += v * s;
      const c2 = c * cw - s * sw;
      s = s * cw + c * sw;
      c = c2;
    }
  }
  return re * re + im * im;
}

/** One harmonic's fit: its frequency (rad/sample) and a cosine and sine amplitude per window. */
interface Harmonic {
  k: number;
  w: number;
  a: Float64Array;
  b: Float64Array;
}

/**
 * Tones at k·f0 fitted by least squares on the quiet frames, per Hann window of FIT_S (50 %
 * overlap; a clip under two windows long is one window, weighted flat, as Hann windows would
 * weigh its pauses, at its ends, near zero). A window with under 15 % of its weight quiet takes
 * its nearest fitted neighbour's amplitudes. `residual` holds the clip less the harmonics kept
 * so far, on the quiet frames.
 */
class QuietFit {
  readonly residual: Float32Array;
  private readonly starts: number[] = [];
  private readonly hann: Float64Array;
  private readonly hannSum: number;
  private readonly est: Float64Array;
  private readonly weight: Float64Array;

  constructor(
    private readonly x: Float32Array,
    private readonly rate: number,
    private readonly f0: number,
    private readonly isQuiet: Uint8Array,
    private readonly n: number,
  ) {
    const len = x.length;
    const full = Math.round(FIT_S * rate);
    const W = len < 2 * full ? len : full;
    for (let s = 0; s + W <= len; s += Math.floor(W / 2)) this.starts.push(s);
    if (this.starts.at(-1)! + W < len) this.starts.push(len - W);
    this.hann = new Float64Array(W);
    for (let i = 0; i < W; i++) this.hann[i] = W === len ? 1 : 0.5 - 0.5 * Math.cos((2 * Math.PI * (i + 0.5)) / W);
    this.hannSum = this.hann.reduce((t, v) => t + v, 0);
    this.residual = Float32Array.from(x);
    this.est = new Float64Array(len);
    this.weight = new Float64Array(len);
  }

  /** Fits harmonic k to the residual; kept (and taken out of the residual) where it takes 2 % or more of the quiet frames' energy. */
  harmonic(k: number): Harmonic | null {
    const { residual: r, isQuiet, n, hann, starts } = this;
    const W = hann.length;
    const w = (2 * Math.PI * k * this.f0) / this.rate;
    const cw = Math.cos(w);
    const sw = Math.sin(w);
    const a = new Float64Array(starts.length);
    const b = new Float64Array(starts.length);
    const ok = new Uint8Array(starts.length);
    starts.forEach((s, j) => {
      let cc = 0, ss = 0, cs = 0, xc = 0, xs = 0, wq = 0;
      for (let f = Math.floor(s / n); f * n < s + W && f < isQuiet.length; f++) {
        if (!isQuiet[f]) continue;
        const i0 = Math.max(s, f * n);
        const i1 = Math.min(s + W, (f + 1) * n);
        let c = Math.cos(w * i0);
        let sn = Math.sin(w * i0);
        for (let i = i0; i < i1; i++) {
          const h = hann[i - s]!;
          const v = r[i]!;
          cc += h * c * c;
          ss += h * sn * sn;
          cs += h * c * sn;
          xc += h * v * c;
          xs += h * v * sn;
          wq += h;
          const c2 = c * cw - sn * sw;
          sn = sn * cw + c * sw;
          c = c2;
        }
      }
      const det = cc * ss - cs * cs;
      if (wq >= 0.15 * this.hannSum && det > 1e-12) (a[j] = (xc * ss - xs * cs) / det), (b[j] = (xs * cc - xc * cs) / det), (ok[j] = 1);
    });
    if (!ok.some((v) => v)) return null;
    for (let j = 0; j < starts.length; j++) {
      if (ok[j]) continue;
      for (let d = 1; ; d++) {
        const m = ok[j - d] ? j - d : ok[j + d] ? j + d : -1;
        if (m >= 0) {
          (a[j] = a[m]!), (b[j] = b[m]!);
          break;
        }
      }
    }
    const harmonic: Harmonic = { k, w, a, b };
    // judged on the quiet frames: the fitted tone there, against the residual
    this.build(harmonic, true);
    let before = 0;
    let after = 0;
    for (let f = 0; f < isQuiet.length; f++) {
      if (!isQuiet[f]) continue;
      for (let i = f * n; i < (f + 1) * n; i++) {
        const v = r[i]!;
        before += v * v;
        after += (v - this.est[i]!) * (v - this.est[i]!);
      }
    }
    if (after > 0.98 * before) return null;
    for (let f = 0; f < isQuiet.length; f++) if (isQuiet[f]) for (let i = f * n; i < (f + 1) * n; i++) r[i] = r[i]! - this.est[i]!;
    return harmonic;
  }

  /** The clip less the given harmonics, every sample. */
  subtract(harmonics: Harmonic[]): Float32Array {
    const out = Float32Array.from(this.x);
    for (const h of harmonics) {
      this.build(h, false);
      for (let i = 0; i < out.length; i++) out[i] = out[i]! - this.est[i]!;
    }
    return out;
  }

  /** Writes the harmonic's tone into `est`, over the quiet frames or every sample: the windows' tones, Hann-weighted and normalised. */
  private build(hm: Harmonic, quietOnly: boolean): void {
    const { n, hann, starts, est, weight, isQuiet } = this;
    const W = hann.length;
    const len = est.length;
    const cw = Math.cos(hm.w);
    const sw = Math.sin(hm.w);
    est.fill(0);
    weight.fill(0);
    starts.forEach((s, j) => {
      const aj = hm.a[j]!;
      const bj = hm.b[j]!;
      for (let f = Math.floor(s / n); f * n < s + W; f++) {
        if (quietOnly && !isQuiet[f]) continue;
        const i0 = Math.max(s, f * n);
        const i1 = Math.min(s + W, (f + 1) * n, len);
        let c = Math.cos(hm.w * i0);
        let sn = Math.sin(hm.w * i0);
        for (let i = i0; i < i1; i++) {
          const h = hann[i - s]!;
          est[i] += h * (aj * c + bj * sn);
          weight[i] += h;
          const c2 = c * cw - sn * sw;
          sn = sn * cw + c * sw;
          c = c2;
        }
      }
    });
    for (let i = 0; i < len; i++) if (weight[i]! > 0) est[i] = est[i]! / weight[i]!;
  }
}
