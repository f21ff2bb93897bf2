// Real room tone for the noise benches (round 36): the labelled pauses of PolyglotDB's test
// recording (test/fixtures/speech/polyglotdb-acoustic-corpus.wav, a noisy microphone in a
// room), 50 ms in from each word, joined (5.5 s), and a clip with it added at a given level
// under the clip's speech.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import * as native from '../src/native/index.ts';
import { decodeWav } from '../src/media/wav.ts';
import { loadHandReferences } from '../test/fixtures/alignment/hand/references.ts';

const RATE = 16000;
let tone: { samples: Float32Array; power: number } | null = null;

/** The room's tone at 16 kHz and its mean power. */
export function roomTone(): { samples: Float32Array; power: number } {
  if (tone) return tone;
  const ref = loadHandReferences('noisy').find((r) => r.audio === 'polyglotdb-acoustic-corpus.wav')!;
  const clip = decodeWav(readFileSync(path.join(import.meta.dirname, '..', 'test', 'fixtures', 'speech', ref.audio))).samples;
  const parts: Float32Array[] = [];
  let prevEnd = 0;
  for (const w of [...ref.words, { start: clip.length / RATE + 0.05, end: 0 }]) {
    const a = prevEnd + 0.05, b = w.start - 0.05;
    if (b - a > 0.2) parts.push(clip.subarray(Math.round(a * RATE), Math.round(b * RATE)));
    prevEnd = w.end;
  }
  const samples = new Float32Array(parts.reduce((s, p) => s + p.length, 0));
  let at = 0;
  for (const p of parts) (samples.set(p, at), (at += p.length));
  let power = 0;
  for (const v of samples) power += v * v;
  return (tone = { samples, power: power / samples.length });
}

/**
 * `x` (16 kHz) with the room's tone added `db` under its speech's loud frames (the
 * 95th-percentile 25 ms frame), looped from an offset fixed by `seed`.
 */
export function withRoomTone(x: Float32Array, db: number, seed: number): Float32Array {
  const { samples: noise, power } = roomTone();
  const energy = native.frameEnergy(x, RATE, { frameMs: 25, hopMs: 10 });
  const sorted = Float32Array.from(energy).sort();
  // a frame's energy is ln of its sum of squares over 25 ms (400 samples)
  const loud = Math.exp(sorted[Math.floor(0.95 * (sorted.length - 1))]!) / 400;
  const gain = Math.sqrt(loud / 10 ** (db / 10) / power);
  const y = new Float32Array(x.length);
  let k = seed % noise.length;
  for (let i = 0; i < x.length; i++) (y[i] = x[i]! + gain * noise[k]!), (k = (k + 1) % noise.length);
  return y;
}
