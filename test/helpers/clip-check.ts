// Does an audio clip hold a given word? The clip is cut from the book's audio with ffmpeg and
// matched back (MFCC + DTW, the features the dtw aligner uses) against eSpeak renderings of
// the word and of its neighbours in the text: the clip must be closest to its own word. A
// clip shifted by even one word is closest to the neighbour instead, so the check fails.
import { ffmpeg } from '../../src/media/ffmpeg.ts';
import { dtwBanded, mfcc, resample } from '../../src/native/index.ts';
import type { Speech } from '../../src/speech/local.ts';

const RATE = 16000;

export async function cutClip(audioFile: string, begin: number, end: number): Promise<Float32Array> {
  const { stdout } = await ffmpeg(['-ss', begin.toFixed(3), '-t', (end - begin).toFixed(3), '-i', audioFile, '-ac', '1', '-ar', String(RATE), '-f', 'f32le', 'pipe:1']);
  const copy = new Uint8Array(stdout.byteLength);
  copy.set(stdout);
  return new Float32Array(copy.buffer, 0, Math.floor(copy.byteLength / 4));
}

/** The sounding part: 10 ms windows louder than 3 % of the loudest, with 30 ms kept around. */
function trim(x: Float32Array): Float32Array {
  const win = RATE / 100;
  const rms: number[] = [];
  for (let i = 0; i + win <= x.length; i += win) {
    let s = 0;
    for (let j = i; j < i + win; j++) s += x[j]! * x[j]!;
    rms.push(Math.sqrt(s / win));
  }
  const peak = Math.max(...rms, 1e-9);
  const loud = rms.map((r, i) => (r > peak * 0.03 ? i : -1)).filter((i) => i >= 0);
  if (!loud.length) return x;
  const a = Math.max(0, (loud[0]! - 3) * win);
  const b = Math.min(x.length, (loud[loud.length - 1]! + 4) * win);
  return x.subarray(a, b);
}

/** MFCCs without c0, mean-normalised per coefficient (MP3 vs. raw synthesis, loudness). */
function features(x: Float32Array): { data: Float32Array; frames: number; dims: number } {
  const f = mfcc(trim(x), RATE, { frameMs: 25, hopMs: 10, nMels: 40, nCoeffs: 13 });
  const dims = f.dims - 1;
  const data = new Float32Array(f.frames * dims);
  for (let d = 0; d < dims; d++) {
    let mean = 0;
    for (let t = 0; t < f.frames; t++) mean += f.data[t * f.dims + d + 1]!;
    mean /= Math.max(1, f.frames);
    for (let t = 0; t < f.frames; t++) data[t * dims + d] = f.data[t * f.dims + d + 1]! - mean;
  }
  return { data, frames: f.frames, dims };
}

function distance(a: ReturnType<typeof features>, b: ReturnType<typeof features>): number {
  if (a.frames < 2 || b.frames < 2) return Infinity;
  const r = dtwBanded(a.data, b.data, a.dims, Math.max(a.frames, b.frames));
  return r.cost / (a.frames + b.frames);
}

/** Distances from the clip to each candidate word's eSpeak rendering (lower: more alike). */
export async function clipDistances(speech: Speech, clip: Float32Array, candidates: string[], language = 'en-US'): Promise<number[]> {
  const c = features(clip);
  const out: number[] = [];
  for (const word of candidates) {
    const s = await speech.synthesize({ text: word, language });
    out.push(distance(c, features(s.sampleRate === RATE ? s.samples : resample(s.samples, s.sampleRate, RATE))));
  }
  return out;
}
