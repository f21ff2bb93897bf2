// Steady mains hum (50 or 60 Hz and its harmonics) taken out of a clip before the refinement
// reads its energy (round 42). Hum raises the floor of every pause: a word then no longer rises
// 20 dB over the pause before it and its edges stay at the HMM's (bench/align-levels, rows
// `hum`). The decoders are not the cause: fed the hummed audio and refined on the clean one,
// hand tuning keeps its figures (README, *Mains hum*).
//
// The hum is fitted where the clip is quiet and subtracted as a tone: a notch filter rings
// across word edges (notches at 60 Hz's first ten harmonics moved clean hand tuning's starts
// 22.8 -> 29.6 ms), and a tone fitted on the speech as well takes the speech's own harmonics
// into the pauses (hand tuning 22.8 -> 44.3 ms with 50 Hz's first ten). Fitted on the pauses
// alone, a clip with no hum is left as it is.

/** Goertzel power of a tone at f (Hz) over x. */
function tonePower(x: Float32Array, rate: number, f: number): number {
  const c = 2 * Math.cos((2 * Math.PI * f) / rate);
  let s1 = 0;
  let s2 = 0;
  for (let i = 0; i < x.length; i++) {
    const s0 = x[i]! + c * s1 - s2;
    s2 = s1;
    s1 = s0;
  }
  return s1 * s1 + s2 * s2 - c * s1 * s2;
}

export interface HumRemoval {
  /** The clip: with the hum subtracted where it was found, else the input itself. */
  samples: Float32Array;
  /** The mains frequency found (Hz; 0: none looked for, the clip too short or with no pauses). */
  f0: number;
  /** The harmonics subtracted (1: the fundamental); empty where nothing was. */
  harmonics: number[];
  /** How far the median quiet frame fell (dB; 0 where nothing was subtracted). */
  gainDb: number;
}

const FRAME_S = 0.025;
/** Quiet frames: within this of the 10th percentile frame energy (ln power; 6 dB). */
const QUIET_SPAN = Math.log(10) * 0.6;
/** The share of the quiet frames' energy the first three harmonics must hold before they are fitted at all. */
const MIN_SHARE = 0.2;
/** Subtracted only where the median quiet frame falls by this much (dB). */
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

/** The median ln energy of the given frames. */
function medianOf(x: Float32Array, n: number, frames: number[]): number {
  const all = frameLogEnergy(x, n);
  const es = Float64Array.from(frames, (f) => all[f]!).sort();
  return es[Math.floor(es.length / 2)] ?? 0;
}

/**
 * The clip with steady mains hum subtracted, where subtracting it lowers the clip's quiet
 * frames by MIN_GAIN_DB or more; otherwise the clip itself.
 */
export function withoutHum(x: Float32Array, rate: number): HumRemoval {
  const none: HumRemoval = { samples: x, f0: 0, harmonics: [], gainDb: 0 };
  const n = Math.round(FRAME_S * rate);
  const e = frameLogEnergy(x, n);
  if (e.length < 20) return none;
  const p10 = Float64Array.from(e).sort()[Math.floor(e.length * 0.1)]!;
  const quiet: number[] = [];
  for (let f = 0; f < e.length; f++) if (e[f]! <= p10 + QUIET_SPAN) quiet.push(f);
  // the clip with all but its quiet frames zeroed: the hum's phase runs on through the words
  const span = new Float32Array(Math.min(x.length, rate * SEARCH_S));
  let quietEnergy = 0;
  let quietSamples = 0;
  for (const f of quiet) {
    if ((f + 1) * n > span.length) break;
    span.set(x.subarray(f * n, (f + 1) * n), f * n);
    for (let i = f * n; i < (f + 1) * n; i++) quietEnergy += x[i]! * x[i]!;
    quietSamples += n;
  }
  if (quietSamples < 0.2 * rate || quietEnergy <= 0) return none;
  const comb = (f: number) => tonePower(span, rate, f) + tonePower(span, rate, 3 * f);
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
  if (den < 0) f0 += (h * 0.5 * (pm - pp)) / den;
  // a steady tone of amplitude A over q quiet samples has Goertzel power (A q / 2)^2 and energy
  // q A^2 / 2: 2 P / (q E) is the share of the quiet energy it holds (noise: about 2 / q)
  let share = 0;
  for (let k = 1; k <= 3; k++) share += (2 * tonePower(span, rate, k * f0)) / (quietSamples * quietEnergy);
  if (share < MIN_SHARE) return { ...none, f0 };
  const before = medianOf(x, n, quiet);
  const harmonics: number[] = [];
  for (let k = 1; k * f0 <= Math.min(MAX_HZ, rate / 2 - 50); k++) harmonics.push(k);
  const kept: number[] = [];
  // the first three first: a clip with none of them worth subtracting has no hum worth the rest
  let y = subtractFromQuiet(x, rate, f0, harmonics.slice(0, 3), quiet, n, kept);
  if (!kept.length) return { ...none, f0 };
  y = subtractFromQuiet(y, rate, f0, harmonics.slice(3), quiet, n, kept);
  const gainDb = ((before - medianOf(y, n, quiet)) * 10) / Math.log(10);
  return gainDb >= MIN_GAIN_DB ? { samples: y, f0, harmonics: kept, gainDb } : { ...none, f0 };
}

/**
 * Subtracts tones at k*f0 whose complex amplitudes are fitted, per Hann window of FIT_S (50 %
 * overlap), on the quiet frames only; a window with too little quiet takes its nearest
 * fitted neighbour's amplitude. A harmonic that takes under 2 % of the quiet frames' energy is left.
 */
function subtractFromQuiet(x: Float32Array, rate: number, f0: number, ks: number[], quiet: number[], frameN: number, kept: number[]): Float32Array {
  const len = x.length;
  const mask = new Uint8Array(len);
  for (const f of quiet) mask.fill(1, f * frameN, (f + 1) * frameN);
  const W = Math.min(len, Math.round(FIT_S * rate));
  const hop = Math.max(1, Math.floor(W / 2));
  const starts: number[] = [];
  for (let a = 0; a + W <= len; a += hop) starts.push(a);
  if (starts.at(-1)! + W < len) starts.push(len - W);
  const single = starts.length === 1;
  const y = Float32Array.from(x);
  const hann = new Float64Array(W);
  for (let i = 0; i < W; i++) hann[i] = single ? 1 : 0.5 - 0.5 * Math.cos((2 * Math.PI * (i + 0.5)) / W);
  const est = new Float64Array(len);
  const wsum = new Float64Array(len);
  for (let j = 0; j < starts.length; j++) for (let i = 0; i < W; i++) wsum[starts[j]! + i] += hann[i]!;
  const fa = new Float64Array(starts.length);
  const fb = new Float64Array(starts.length);
  const ok = new Uint8Array(starts.length);
  for (const k of ks) {
    const w = (2 * Math.PI * k * f0) / rate;
    const cw = Math.cos(w);
    const sw = Math.sin(w);
    let any = false;
    for (let j = 0; j < starts.length; j++) {
      const s = starts[j]!;
      let c = Math.cos(w * s);
      let sn = Math.sin(w * s);
      let cc = 0, ss = 0, cs = 0, xc = 0, xs = 0, wq = 0, wt = 0;
      for (let i = 0; i < W; i++) {
        const h = hann[i]!;
        wt += h;
        if (mask[s + i] === 1) {
          const v = y[s + i]!;
          cc += h * c * c;
          ss += h * sn * sn;
          cs += h * c * sn;
          xc += h * v * c;
          xs += h * v * sn;
          wq += h;
        }
        const c2 = c * cw - sn * sw;
        sn = sn * cw + c * sw;
        c = c2;
      }
      const det = cc * ss - cs * cs;
      ok[j] = wq >= 0.15 * wt && det > 1e-12 ? 1 : 0;
      if (ok[j]) (fa[j] = (xc * ss - xs * cs) / det), (fb[j] = (xs * cc - xc * cs) / det), (any = true);
    }
    if (!any) continue;
    est.fill(0);
    for (let j = 0; j < starts.length; j++) {
      let m = j;
      for (let d = 1; !ok[m]; d++) m = j - d >= 0 && ok[j - d] ? j - d : j + d < starts.length && ok[j + d] ? j + d : m;
      const a = fa[m]!, b = fb[m]!;
      const s = starts[j]!;
      let c = Math.cos(w * s);
      let sn = Math.sin(w * s);
      for (let i = 0; i < W; i++) {
        est[s + i] += hann[i]! * (a * c + b * sn);
        const c2 = c * cw - sn * sw;
        sn = sn * cw + c * sw;
        c = c2;
      }
    }
    let before = 0, after = 0;
    for (let i = 0; i < len; i++) {
      const t = est[i]! / wsum[i]!;
      est[i] = t;
      if (mask[i] === 1) {
        const v = y[i]!;
        before += v * v;
        after += (v - t) * (v - t);
      }
    }
    if (after > 0.98 * before) continue;
    kept.push(k);
    for (let i = 0; i < len; i++) y[i] = y[i]! - est[i]!;
  }
  return y;
}
