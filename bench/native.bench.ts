// Native addon vs the TypeScript reference on an hour of real speech (the fixture clips
// concatenated): MFCC of the hour, banded DTW over the hour's frames (single pass, and the
// coarse+fine passes a multi-pass aligner runs), and 22.05→16 kHz resampling.
// The target is a speed-up of at least 5× for MFCC and DTW.
// Run: node --import tsx bench/native.bench.ts [minutes=60]
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { Bench } from 'tinybench';
import { decodeWav } from '../src/media/wav.ts';
import * as N from '../src/native/index.ts';
import * as R from '../src/native/reference.ts';
import { sized } from './quick.ts';

type Impl = typeof N | typeof R;
const minutes = sized(Number(process.argv[2] ?? 60), 0.1);
const RATE = 16000;

const dir = path.join(import.meta.dirname, '..', 'test', 'fixtures', 'speech');
// The 16 kHz fixture clips (others, such as parselmouth-north-wind.wav, are at their own rate).
const clips = readdirSync(dir)
  .filter((f) => f.endsWith('.wav'))
  .map((f) => readFileSync(path.join(dir, f)))
  .filter((buf) => buf.readUInt32LE(24) === RATE)
  .map((buf) => decodeWav(buf).samples);
const audio = new Float32Array(minutes * 60 * RATE);
for (let off = 0, k = 0; off < audio.length; k++) {
  const c = clips[k % clips.length]!.subarray(0, audio.length - off);
  audio.set(c, off);
  off += c.length;
}
// The same speech 3% slower (what DTW aligns against: a different speaker rate).
const slower = N.resample(audio, RATE, Math.round(RATE * 1.03));
const fa = N.mfcc(audio, RATE);
const fb = N.mfcc(slower, RATE);

/** Mean of every `k` frames: the coarse pass's features. */
function pool(f: { frames: number; dims: number; data: Float32Array }, k: number): Float32Array {
  const frames = Math.ceil(f.frames / k);
  const out = new Float32Array(frames * f.dims);
  for (let i = 0; i < f.frames; i++) {
    for (let d = 0; d < f.dims; d++) out[Math.floor(i / k) * f.dims + d]! += f.data[i * f.dims + d]! / k;
  }
  return out;
}
const K = 4;
const ca = pool(fa, K);
const cb = pool(fb, K);

function multiPass(impl: Impl): number {
  const coarse = impl.dtwBanded(ca, cb, fa.dims, 100);
  // fine centre: for each fine row, the coarse path's column (first match) scaled back up
  const rowCol = new Int32Array(ca.length / fa.dims).fill(-1);
  for (let p = 0; p < coarse.path.length; p += 2) if (rowCol[coarse.path[p]!] === -1) rowCol[coarse.path[p]!] = coarse.path[p + 1]!;
  const centre = Int32Array.from({ length: fa.frames }, (_, i) => rowCol[Math.floor(i / K)]! * K + (i % K));
  return impl.dtwBanded(fa.data, fb.data, fa.dims, { centre, radius: 20 }).cost;
}

const resampleInput = N.resample(audio.subarray(0, Math.min(audio.length, 10 * 60 * RATE)), RATE, 22050);

const cases: { name: string; run: (impl: Impl) => unknown }[] = [
  { name: `MFCC, ${minutes} min of 16 kHz speech (${fa.frames} frames)`, run: (impl) => impl.mfcc(audio, RATE) },
  { name: `DTW single pass ${fa.frames}×${fb.frames}, radius 100`, run: (impl) => impl.dtwBanded(fa.data, fb.data, fa.dims, 100) },
  { name: `DTW multi-pass: ${K}× coarse r100 + fine r20`, run: multiPass },
  { name: `resample 22050→16000, ${(resampleInput.length / 22050 / 60).toFixed(0)} min`, run: (impl) => impl.resample(resampleInput, 22050, 16000) },
];

// JIT warm-up on small inputs, so the long runs below need no warm-up iterations.
for (const impl of [N, R]) {
  impl.mfcc(audio.subarray(0, RATE * 10), RATE);
  impl.dtwBanded(fa.data.subarray(0, 13 * 2000), fb.data.subarray(0, 13 * 2000), 13, 50);
  impl.resample(resampleInput.subarray(0, 22050 * 10), 22050, 16000);
}

const bench = new Bench({ iterations: sized(2, 1), time: 0, warmup: false });
for (const c of cases) {
  bench.add(`${c.name} | ts reference (baseline)`, () => void c.run(R));
  bench.add(`${c.name} | native addon`, () => void c.run(N));
}
await bench.run();
const med = (name: string) => bench.tasks.find((t) => t.name === name)!.result!.latency.p50!;
console.log(`native addon vs TypeScript reference (median of ${sized(2, 1)} runs each, ${minutes} min of speech)`);
for (const c of cases) {
  const ref = med(`${c.name} | ts reference (baseline)`);
  const nat = med(`${c.name} | native addon`);
  console.log(`${c.name.padEnd(58)} ts ${(ref / 1000).toFixed(2).padStart(7)} s   native ${(nat / 1000).toFixed(2).padStart(6)} s   speed-up ${(ref / nat).toFixed(1)}x`);
}
