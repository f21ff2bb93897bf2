// Reverberation: how long a recording's room rings, and its late reverberation taken out for the
// long-recording recogniser (round 43). A lecture hall or a bare room heard from a few metres
// smears each word into the next; the recogniser, which locates a recording in its book, then
// hears other words, and a read-along of a reverberant reading was refused as "not a reading of
// this text" (bench/align-levels, rows `reverb`: 10 of 13 clips at RT60 1 s, direct-to-reverberant
// ratio 0 dB). The word timings themselves are still aligned on the audio as recorded: suppressed
// audio moved the aligners' boundaries more than the room did.

import { fft } from '../../native/reference.ts';

/** Analysis bands (Hz) whose free decays give the reverberation time: where speech holds most energy, under a telephone's 3.7 kHz. */
const BANDS = [300, 500, 800, 1200, 1800, 2600, 3600];
/** Frames: 32 ms (at 16 kHz; the next power of two elsewhere), every 10 ms. */
const HOP_S = 0.01;
/** Band power averaged over this many frames either side before decays are looked for (a reverberant tail's power is noise-like). */
const SMOOTH = 2;
/** A free decay: band energy falling in every frame for at least this many frames. */
const MIN_DECAY_FRAMES = 10;
/** Only the part of a decay this far (dB) over the band's 10th-percentile frame is fitted (under it, noise bends the slope). */
const FIT_OVER_FLOOR_DB = 10;
/** The reverberation time is this percentile of the decays' own (the fastest decays are the room's; speech dies away slower). */
const PERCENTILE = 0.2;
/** Fewer decays than this say nothing (a clip of a few words). */
const MIN_DECAYS = 20;

export interface ReverbTime {
  /** Estimated RT60 (s; 0: too few decays to tell). Low for a long room (a 1 s room reads about 0.65, a dry recording 0.15–0.35): the fastest decays are taken. */
  rt60: number;
  /** Free decays found. */
  decays: number;
}

/** Radix-2 frame length for `rate`: about 32 ms. */
const frameLength = (rate: number) => {
  let n = 1;
  while (n < 0.032 * rate) n <<= 1;
  return n;
};

/**
 * The room's reverberation time, blind: in each band, the stretches where the energy falls frame
 * after frame (free decays, after a sound stops) are fitted with a line; each slope is a decay
 * time, and the room's is a low percentile of them, since nothing in the recording dies away
 * faster than the room lets it.
 */
export function reverbTime(x: Float32Array, rate: number): ReverbTime {
  const N = frameLength(rate);
  const hop = Math.round(HOP_S * rate);
  const frames = Math.max(0, Math.floor((x.length - N) / hop));
  const bands = BANDS.length - 1;
  const power = Array.from({ length: bands }, () => new Float64Array(frames));
  const win = new Float64Array(N);
  for (let i = 0; i < N; i++) win[i] = 0.5 - 0.5 * Math.cos((2 * Math.PI * i) / N);
  const re = new Float64Array(N), im = new Float64Array(N);
  const bins = BANDS.map((f) => Math.round((f * N) / rate));
  for (let t = 0; t < frames; t++) {
    for (let i = 0; i < N; i++) (re[i] = x[t * hop + i]! * win[i]!), (im[i] = 0);
    fft(re, im);
    for (let b = 0; b < bands; b++) {
      let s = 0;
      for (let k = bins[b]!; k < bins[b + 1]!; k++) s += re[k]! * re[k]! + im[k]! * im[k]!;
      power[b]![t] = s;
    }
  }
  const times: number[] = [];
  for (const p of power) {
    const level = new Float64Array(frames);
    for (let t = 0; t < frames; t++) {
      let s = 0, c = 0;
      for (let d = -SMOOTH; d <= SMOOTH; d++) if (t + d >= 0 && t + d < frames) (s += p[t + d]!), c++;
      level[t] = 10 * Math.log10(s / c + 1e-20);
    }
    const floor = Float64Array.from(level).sort()[Math.floor(frames * 0.1)] ?? 0;
    for (let t = 0; t < frames - 1; ) {
      let u = t;
      while (u + 1 < frames && level[u + 1]! < level[u]!) u++;
      let e = u;
      while (e > t && level[e]! < floor + FIT_OVER_FLOOR_DB) e--;
      const n = e - t + 1;
      if (n >= MIN_DECAY_FRAMES) {
        let sx = 0, sy = 0, sxx = 0, sxy = 0;
        for (let i = 0; i < n; i++) (sx += i), (sy += level[t + i]!), (sxx += i * i), (sxy += i * level[t + i]!);
        const slope = (n * sxy - sx * sy) / (n * sxx - sx * sx);
        if (slope < 0) times.push((60 / -slope) * HOP_S);
      }
      t = u + 1;
    }
  }
  if (times.length < MIN_DECAYS) return { rt60: 0, decays: times.length };
  times.sort((a, b) => a - b);
  return { rt60: times[Math.floor(times.length * PERCENTILE)]!, decays: times.length };
}

/** Late reverberation is what arrives this long after the direct sound (s). */
const LATE_S = 0.05;
/**
 * Each bin's power is smoothed over frames (recursively, this much of the frame before; Habets'
 * estimator) before the late part is taken from it and set against it: a reverberant tail's power
 * is noise-like from frame to frame, and unsmoothed the subtraction took 3.8 dB of a noise burst's
 * tail in a 1 s room. The messy book in rooms of 0.6 s at 0 dB (seeds 11, 12): 83.0 and 76.3 % of
 * its spoken words matched with it, 48.6 % and refused without (round 43).
 */
const SMOOTHING = 0.5;
/** Frames the smoothing runs before a block's first (0.5^40: what came before them no longer counts). */
const SETTLE_FRAMES = 40;
/** The most a frequency bin is lowered (amplitude; -20 dB): deeper gains leave "musical" noise the recogniser hears as sounds. */
const MIN_GAIN = 0.1;

/**
 * How much context withoutLateReverb reads before `from` (one frame, the late reverberation's
 * delay and the smoothing's settling) and after `to` (samples; this many, for both). A block processed with this much on each
 * side gives the samples the whole recording processed at once would.
 */
export const lateReverbMargin = (rate: number) => frameLength(rate) + Math.round(LATE_S * rate) + (SETTLE_FRAMES + 1) * (frameLength(rate) / 2);

/**
 * Samples [from, to) of `x` (whose first sample is sample `offset` of the recording) with the
 * room's late reverberation suppressed (Lebart, Boucher and Denbigh 2001): in each frequency bin
 * the late part's power is the power heard LATE_S before, decayed as a room of `rt60` decays in
 * that time, and is subtracted (a gain per bin, at least MIN_GAIN). Frames lie on a grid fixed
 * by the recording's own sample count, so blocks of one recording join without seams where
 * `x` holds lateReverbMargin samples either side of them (or the recording's ends).
 */
export function withoutLateReverb(x: Float32Array, rate: number, rt60: number, offset = 0, from = 0, to = x.length): Float32Array {
  const N = frameLength(rate);
  const hop = N / 2;
  // sqrt-Hann analysis and synthesis windows at 50 % overlap sum to one
  const win = new Float64Array(N);
  for (let i = 0; i < N; i++) win[i] = Math.sqrt(0.5 - 0.5 * Math.cos((2 * Math.PI * i) / N));
  const lateFrames = Math.max(1, Math.round((LATE_S * rate) / hop));
  const decay = Math.exp((-2 * 3 * Math.log(10) * lateFrames * hop) / (rt60 * rate));
  const bins = N / 2 + 1;
  // frames (absolute index j starts at sample j·hop) that overlap [from, to), and lateFrames before them
  const first = Math.floor((offset + from - N) / hop) + 1 - lateFrames - SETTLE_FRAMES;
  const last = Math.floor((offset + to - 1) / hop);
  const past: Float64Array[] = [];
  const out = new Float64Array(to - from);
  const re = new Float64Array(N), im = new Float64Array(N);
  for (let j = first; j <= last; j++) {
    const s0 = j * hop - offset;
    for (let i = 0; i < N; i++) {
      const k = s0 + i;
      re[i] = k >= 0 && k < x.length ? x[k]! * win[i]! : 0;
      im[i] = 0;
    }
    fft(re, im);
    const p = new Float64Array(bins);
    const prev = past.at(-1);
    for (let k = 0; k < bins; k++) p[k] = re[k]! * re[k]! + im[k]! * im[k]!;
    if (prev) for (let k = 0; k < bins; k++) p[k] = SMOOTHING * prev[k]! + (1 - SMOOTHING) * p[k]!;
    past.push(p);
    const late = past.length > lateFrames ? past.shift()! : null;
    if (j < first + lateFrames + SETTLE_FRAMES) continue;
    for (let k = 0; k < bins; k++) {
      const g = late && p[k]! > 0 ? Math.sqrt(Math.max(1 - (decay * late[k]!) / p[k]!, MIN_GAIN * MIN_GAIN)) : 1;
      re[k] = re[k]! * g;
      im[k] = im[k]! * g;
      if (k > 0 && k < N / 2) (re[N - k] = re[N - k]! * g), (im[N - k] = im[N - k]! * g);
    }
    // the inverse transform: conjugate, forward, conjugate, 1/N (the output is real)
    for (let i = 0; i < N; i++) im[i] = -im[i]!;
    fft(re, im);
    for (let i = 0; i < N; i++) {
      const k = s0 + i - from;
      if (k >= 0 && k < out.length) out[k] = out[k]! + (re[i]! / N) * win[i]!;
    }
  }
  return Float32Array.from(out);
}
