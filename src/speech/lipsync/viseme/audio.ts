// Audio-driven mouth shapes: the provider receives only narration audio (the GPU server's
// /lipsync carries no text), so each video frame's mouth comes from the audio itself —
// opening from loudness, lip width/rounding from the spectral balance:
//   voiced + low spectral centroid (o, u, w)      → rounded (narrower, protruding)
//   high centroid (s, z, sh, f, i, e)             → spread (wider, nearly closed)
//   silence                                       → closed, relaxed
import { melSpectrogram } from '../../../native/index.ts';

export interface MouthShape {
  /** 0 (closed) … 1 (wide open jaw). */
  open: number;
  /** −1 (rounded) … +1 (spread). */
  spread: number;
}

export const AUDIO_RATE = 16000;
const N_MELS = 40;
const HOP_MS = 10;
/** Lips move ahead of the sound they make. */
const LEAD_S = 0.04;
/** Half-window for a syllable's dip-to-peak contrast, and the contrast of a full opening. */
const SYLLABLE_S = 0.12;
const SYLLABLE_DB = 15;

/** Per-frame RMS level in dB of the narration: the envelope the sync measurement uses. */
export function speechEnvelope(samples: Float32Array, sampleRate: number, fps: number, frames: number): Float32Array {
  const out = new Float32Array(frames);
  const win = Math.round(sampleRate / fps);
  for (let f = 0; f < frames; f++) {
    const a = Math.round((f * sampleRate) / fps);
    let e = 0;
    let n = 0;
    for (let i = a; i < Math.min(samples.length, a + win); i++) {
      e += samples[i]! * samples[i]!;
      n++;
    }
    out[f] = 10 * Math.log10(n ? e / n + 1e-10 : 1e-10);
  }
  return out;
}

function percentile(v: Float32Array, p: number): number {
  const s = Float32Array.from(v).sort();
  return s[Math.min(s.length - 1, Math.max(0, Math.floor(p * (s.length - 1))))]!;
}

/** One mouth shape per video frame for narration `samples` (mono, AUDIO_RATE). */
export function mouthTrack(samples: Float32Array, fps: number, frames: number): MouthShape[] {
  const mel = melSpectrogram(samples, AUDIO_RATE, { hopMs: HOP_MS, frameMs: 25, nMels: N_MELS });
  const T = mel.frames;
  const level = new Float32Array(T); // dB
  const centroid = new Float32Array(T); // mel band index, energy-weighted
  for (let t = 0; t < T; t++) {
    let sum = 0;
    let w = 0;
    for (let b = 0; b < N_MELS; b++) {
      const e = Math.exp(mel.data[t * N_MELS + b]!);
      sum += e;
      w += e * b;
    }
    level[t] = (10 * Math.log(sum + 1e-10)) / Math.LN10;
    centroid[t] = sum > 0 ? w / sum : 0;
  }
  // Loudness relative to this narration: the floor is its pauses, the top its loud vowels.
  const floor = T ? percentile(level, 0.1) : 0;
  const top = T ? percentile(level, 0.97) : 1;
  const gate = floor + 0.25 * (top - floor);
  const range = Math.max(6, top - gate);

  // Syllables: how far the level stands above the dips around it (±SYLLABLE_S).
  const half = Math.round((SYLLABLE_S * 1000) / HOP_MS);
  const localMin = new Float32Array(T);
  for (let t = 0; t < T; t++) {
    let m = Infinity;
    for (let k = Math.max(0, t - half); k <= Math.min(T - 1, t + half); k++) if (level[k]! < m) m = level[k]!;
    localMin[t] = m;
  }

  const shapes: MouthShape[] = [];
  const perFrame = 1000 / HOP_MS / fps;
  for (let f = 0; f < frames; f++) {
    const centre = (f / fps + LEAD_S) * (1000 / HOP_MS);
    const a = Math.max(0, Math.floor(centre - perFrame / 2));
    const b = Math.min(T, Math.ceil(centre + perFrame / 2));
    let lv = 0;
    let lm = 0;
    let c = 0;
    let n = 0;
    for (let t = a; t < b; t++) {
      lv += level[t]!;
      lm += localMin[t]!;
      c += centroid[t]!;
      n++;
    }
    if (!n) {
      shapes.push({ open: 0, spread: 0 });
      continue;
    }
    lv /= n;
    lm /= n;
    c /= n;
    const loud = Math.min(1, Math.max(0, (lv - gate) / range));
    const peak = Math.min(1, Math.max(0, (lv - lm) / SYLLABLE_DB));
    let open = loud > 0 ? Math.min(1, 0.45 * loud + 0.55 * peak * Math.min(1, loud * 3)) : 0;
    // Mel centroid: vowels sit low (~8–14 of 40), sibilants high (> 20).
    const bright = Math.min(1, Math.max(-1, (c - 15) / 8));
    if (bright > 0.4) open *= 1 - 0.5 * (bright - 0.4); // fricatives: teeth close together
    shapes.push({ open, spread: open > 0.05 ? bright : 0 });
  }
  // Muscles are not instantaneous: a short attack/release smoothing, then a light centred average.
  for (let f = 1; f < shapes.length; f++) {
    const prev = shapes[f - 1]!;
    const cur = shapes[f]!;
    const k = cur.open > prev.open ? 0.75 : 0.55;
    cur.open = prev.open + (cur.open - prev.open) * k;
    cur.spread = prev.spread + (cur.spread - prev.spread) * 0.6;
  }
  return shapes;
}
