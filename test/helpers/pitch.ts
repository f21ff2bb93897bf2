// Speech measurements for tests of the `process` backend: median fundamental frequency (YIN,
// de Cheveigné & Kawahara 2002 — a different method from the test adapter's autocorrelation,
// so a shared mistake cannot make the check pass) and the speaking rate.
import { decodeAudio } from '../../src/media/ffmpeg.ts';

const RATE = 16000;

export interface SpeechMeasure {
  /** Median F0 of voiced frames, Hz (null when nothing is voiced). */
  f0: number | null;
  voicedFrames: number;
  /** First to last frame above 2 % of the loudest frame's energy, seconds. */
  speechSeconds: number;
}

export async function measureSpeech(audio: Buffer | string): Promise<SpeechMeasure> {
  return measureSamples(await decodeAudio(audio, RATE));
}

export function measureSamples(x: Float32Array, sr = RATE, fmin = 60, fmax = 450): SpeechMeasure {
  const n = Math.round(0.04 * sr);
  const hop = Math.round(0.01 * sr);
  const tauMax = Math.ceil(sr / fmin);
  const tauMin = Math.floor(sr / fmax);
  const starts: number[] = [];
  for (let s = 0; s + n + tauMax < x.length; s += hop) starts.push(s);
  const energy = starts.map((s) => {
    let e = 0;
    for (let i = s; i < s + n; i++) e += x[i]! * x[i]!;
    return e;
  });
  const max = Math.max(0, ...energy);
  if (max === 0) return { f0: null, voicedFrames: 0, speechSeconds: 0 };
  const loud = starts.filter((_, k) => energy[k]! >= max * 0.02);
  const speechSeconds = loud.length ? (loud[loud.length - 1]! - loud[0]! + n) / sr : 0;
  const d = new Float64Array(tauMax + 1);
  const f0s: number[] = [];
  starts.forEach((s, k) => {
    if (energy[k]! < max * 0.02) return;
    for (let tau = 1; tau <= tauMax; tau++) {
      let sum = 0;
      for (let i = s; i < s + n; i++) {
        const diff = x[i]! - x[i + tau]!;
        sum += diff * diff;
      }
      d[tau] = sum;
    }
    // cumulative mean normalised difference; the first dip under 0.15, walked to its bottom
    let running = 0;
    let tau = -1;
    const cmnd = new Float64Array(tauMax + 1);
    cmnd[0] = 1;
    for (let t = 1; t <= tauMax; t++) {
      running += d[t]!;
      cmnd[t] = running > 0 ? (d[t]! * t) / running : 1;
    }
    for (let t = tauMin; t < tauMax; t++) {
      if (cmnd[t]! < 0.15) {
        while (t + 1 < tauMax && cmnd[t + 1]! < cmnd[t]!) t++;
        tau = t;
        break;
      }
    }
    if (tau < 0) return;
    const a = cmnd[tau - 1]!;
    const b = cmnd[tau]!;
    const c = cmnd[tau + 1]!;
    const den = a - 2 * b + c;
    f0s.push(sr / (tau + (den !== 0 ? (0.5 * (a - c)) / den : 0)));
  });
  f0s.sort((p, q) => p - q);
  return { f0: f0s.length ? f0s[Math.floor(f0s.length / 2)]! : null, voicedFrames: f0s.length, speechSeconds };
}

/** Semitones between two frequencies (12 per octave). */
export function semitones(a: number, b: number): number {
  return 12 * Math.log2(a / b);
}
