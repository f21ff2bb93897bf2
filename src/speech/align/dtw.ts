// The `dtw` aligner: synthesize the source text with eSpeak NG (whose word events give
// exact word boundaries in the synthetic audio), compare MFCCs of both signals with banded
// DTW, and carry the synthetic boundaries across the path onto the real audio. Any eSpeak
// language, no model. Coarse-to-fine: a pass over heavily decimated frames with a wide
// band finds the global path, then finer passes search only a narrow band around it, so
// work and memory grow linearly with the audio (an hour of speech is ~360k frames).
import { availableParallelism } from 'node:os';
import * as nativeAddon from '../../native/index.ts';
import * as reference from '../../native/reference.ts';
import type { DtwBand, DtwResult, FeatureOptions, Features } from '../../native/types.ts';
import { EspeakProcess, buildVoiceTable, voiceForLanguage, wordTimingsFromEvents, type VoiceTable } from '../tts/espeak.ts';
import { SpeechInputError, type Aligner, type WordTiming } from '../types.ts';
import { tokenizeWords, type WordToken } from '../words.ts';

const RATE = 16000;
/** Leading cepstra left out of the distance; c0 (loudness) helps find pauses once normalised. */
const SKIP = 0;
const HOP_S = 0.01;
const FEATURES: FeatureOptions = { frameMs: 25, hopMs: 10, nMels: 40, nCoeffs: 13 };
/** Text per eSpeak request: long enough to keep the helper busy, short enough to bound memory. */
const CHUNK_CHARS = 2000;

interface Native {
  resample(input: Float32Array, fromRate: number, toRate: number): Float32Array;
  mfcc(samples: Float32Array, sampleRate: number, opts?: FeatureOptions): Features;
  frameEnergy(samples: Float32Array, sampleRate: number, opts?: FeatureOptions): Float32Array;
  dtwBanded(a: Float32Array, b: Float32Array, dims: number, band: DtwBand): DtwResult;
}

export interface DtwAlignerOptions {
  /** Helper processes synthesizing in parallel (default: cores, at most 4). */
  processes?: number;
  /** eSpeak rate (wpm) for the reference; closer to the reader's pace means a straighter path. */
  rate?: number;
  /** Use the TypeScript reference of the native functions (tests, or when the addon is missing). */
  useReference?: boolean;
}

/** Per-frame features with each dimension normalised (mean 0, variance 1), so loudness and channel differences between TTS and a microphone cancel out. */
function normalise(f: Features): { data: Float32Array; dims: number; frames: number } {
  const dims = f.dims - SKIP;
  const out = new Float32Array(f.frames * dims);
  for (let d = 0; d < dims; d++) {
    let sum = 0;
    let sq = 0;
    for (let i = 0; i < f.frames; i++) {
      const v = f.data[i * f.dims + d + SKIP]!;
      sum += v;
      sq += v * v;
    }
    const mean = sum / Math.max(1, f.frames);
    const sd = Math.sqrt(Math.max(1e-9, sq / Math.max(1, f.frames) - mean * mean));
    for (let i = 0; i < f.frames; i++) out[i * dims + d] = (f.data[i * f.dims + d + SKIP]! - mean) / sd;
  }
  return { data: out, dims, frames: f.frames };
}

function decimate(data: Float32Array, frames: number, dims: number, factor: number): { data: Float32Array; frames: number } {
  if (factor === 1) return { data, frames };
  const n = Math.ceil(frames / factor);
  const out = new Float32Array(n * dims);
  for (let i = 0; i < n; i++) {
    const a = i * factor;
    const b = Math.min(frames, a + factor);
    for (let d = 0; d < dims; d++) {
      let s = 0;
      for (let k = a; k < b; k++) s += data[k * dims + d]!;
      out[i * dims + d] = s / (b - a);
    }
  }
  return { data: out, frames: n };
}

/** Mean column per row of a DTW path. */
function rowCentres(path: Int32Array, rows: number): Float64Array {
  const sum = new Float64Array(rows);
  const cnt = new Float64Array(rows);
  for (let k = 0; k < path.length; k += 2) {
    sum[path[k]!]! += path[k + 1]!;
    cnt[path[k]!]! += 1;
  }
  for (let i = 0; i < rows; i++) sum[i] = sum[i]! / Math.max(1, cnt[i]!);
  return sum;
}

/** Frames [first, last] louder than the threshold, with a margin; the whole range when none are. */
function speechRange(energy: Float32Array, threshold: number, margin: number): [number, number] {
  let a = 0;
  while (a < energy.length && energy[a]! < threshold) a++;
  let b = energy.length - 1;
  while (b > a && energy[b]! < threshold) b--;
  if (a >= energy.length) return [0, energy.length - 1];
  return [Math.max(0, a - margin), Math.min(energy.length - 1, b + margin)];
}

function percentile(values: Float32Array, p: number): number {
  const s = Float32Array.from(values).sort();
  return s[Math.min(s.length - 1, Math.max(0, Math.floor(p * (s.length - 1))))] ?? 0;
}

/** Splits the tokens into runs of at most ~CHUNK_CHARS, preferring sentence ends. */
function chunkTokens(tokens: WordToken[]): WordToken[][] {
  const out: WordToken[][] = [];
  let cur: WordToken[] = [];
  let chars = 0;
  for (const t of tokens) {
    cur.push(t);
    chars += t.word.length + 1;
    const sentenceEnd = /[.!?…]["'”’)\]]*$/u.test(t.word);
    if ((chars >= CHUNK_CHARS && sentenceEnd) || chars >= CHUNK_CHARS * 1.5) {
      out.push(cur);
      cur = [];
      chars = 0;
    }
  }
  if (cur.length) out.push(cur);
  return out;
}

export async function createDtwAligner(opts: DtwAlignerOptions = {}): Promise<Aligner & { close(): Promise<void> }> {
  const native: Native = opts.useReference ? reference : nativeAddon;
  if (!opts.useReference) nativeAddon.loadNative(); // a clear error now rather than mid-job
  const count = Math.max(1, opts.processes ?? Math.min(4, availableParallelism()));
  const procs = Array.from({ length: count }, () => new EspeakProcess());
  let table: VoiceTable;
  try {
    table = buildVoiceTable(await procs[0]!.voices());
  } catch (err) {
    await Promise.all(procs.map((p) => p.close()));
    throw err;
  }
  const rate = opts.rate ?? 175;

  /** Reference features for the whole text, and each token's [start, end) in reference frames. */
  async function synthesizeReference(text: string, tokens: WordToken[], voice: string) {
    const chunks = chunkTokens(tokens);
    const parts: { feats: Features; energy: Float32Array; bounds: [number, number][] }[] = new Array(chunks.length);
    let next = 0;
    await Promise.all(
      procs.map(async (proc) => {
        for (let c = next++; c < chunks.length; c = next++) {
          const toks = chunks[c]!;
          const chunkText = text.slice(toks[0]!.start, toks[toks.length - 1]!.end);
          const syn = await proc.synth(voice, chunkText, rate);
          const f32 = new Float32Array(syn.pcm.length);
          for (let i = 0; i < f32.length; i++) f32[i] = syn.pcm[i]! / 32768;
          const pcm16k = native.resample(f32, syn.sampleRate, RATE);
          const { words } = wordTimingsFromEvents(chunkText, syn);
          parts[c] = {
            feats: native.mfcc(pcm16k, RATE, FEATURES),
            energy: native.frameEnergy(pcm16k, RATE, FEATURES),
            bounds: words.map((w) => [Math.round(w.start / HOP_S), Math.round(w.end / HOP_S)]),
          };
        }
      }),
    );
    const frames = parts.reduce((s, p) => s + p.feats.frames, 0);
    const dims = parts[0]!.feats.dims;
    const data = new Float32Array(frames * dims);
    const energy = new Float32Array(frames);
    const bounds: [number, number][] = [];
    let off = 0;
    for (const p of parts) {
      data.set(p.feats.data, off * dims);
      energy.set(p.energy, off);
      for (const [s, e] of p.bounds) bounds.push([s + off, e + off]);
      off += p.feats.frames;
    }
    return { feats: { frames, dims, data } as Features, energy, bounds };
  }

  return {
    name: 'dtw',
    async align(samples: Float32Array, sampleRate: number, text: string, language: string): Promise<WordTiming[]> {
      const tokens = tokenizeWords(text);
      if (tokens.length === 0) return [];
      if (samples.length === 0) throw new SpeechInputError('cannot align text to empty audio');
      const voice = voiceForLanguage(table, language);
      const ref = await synthesizeReference(text, tokens, voice);
      const real16k = sampleRate === RATE ? samples : native.resample(samples, sampleRate, RATE);
      const realFeats = native.mfcc(real16k, RATE, FEATURES);
      const realEnergy = native.frameEnergy(real16k, RATE, FEATURES);

      // Leading and trailing silence of either signal would only stretch the path's ends.
      const realFloor = percentile(realEnergy, 0.1);
      const realLoud = percentile(realEnergy, 0.95);
      const realThr = realFloor + 0.15 * (realLoud - realFloor);
      const refThr = (() => {
        const f = percentile(ref.energy, 0.1), l = percentile(ref.energy, 0.95);
        return f + 0.35 * (l - f);
      })();
      const [r0, r1] = speechRange(realEnergy, realThr, 5);
      const [s0, s1] = speechRange(ref.energy, refThr, 5);

      const a = normalise(ref.feats);
      const b = normalise(realFeats);
      const dims = a.dims;
      const aSub = a.data.subarray(s0 * dims, (s1 + 1) * dims);
      const bSub = b.data.subarray(r0 * dims, (r1 + 1) * dims);
      const n = s1 - s0 + 1;
      const m = r1 - r0 + 1;

      // Coarse to fine: each level's path, upsampled, centres the next level's band.
      const levels = [32, 8, 2, 1].filter((d, i) => i === 0 || Math.ceil(Math.max(n, m) / d) > 0);
      let centres: Float64Array | null = null;
      let prevFactor = 0;
      let path: Int32Array = new Int32Array(0);
      for (const factor of levels) {
        const A = decimate(aSub, n, dims, factor);
        const B = decimate(bSub, m, dims, factor);
        let band: DtwBand;
        if (!centres) {
          // the first pass only knows the overall tempo: a wide band around the diagonal
          band = Math.min(Math.max(8, Math.ceil(0.12 * Math.max(A.frames, B.frames))), 3000);
        } else {
          const c = new Int32Array(A.frames);
          const ratio = factor / prevFactor;
          for (let i = 0; i < A.frames; i++) {
            const x = (i + 0.5) * ratio - 0.5;
            const lo = Math.max(0, Math.min(centres.length - 1, Math.floor(x)));
            const hi = Math.min(centres.length - 1, lo + 1);
            const t = Math.max(0, Math.min(1, x - lo));
            const col = centres[lo]! * (1 - t) + centres[hi]! * t;
            c[i] = Math.round((col + 0.5) / ratio - 0.5);
          }
          band = { centre: c, radius: Math.ceil(3 / ratio) + 6 };
        }
        const res = native.dtwBanded(A.data, B.data, dims, band);
        path = res.path;
        centres = rowCentres(path, A.frames);
        prevFactor = factor;
      }

      // first and last real frame matched to each reference frame
      const first = new Int32Array(n).fill(-1);
      const last = new Int32Array(n).fill(-1);
      for (let k = 0; k < path.length; k += 2) {
        const i = path[k]!, j = path[k + 1]!;
        if (first[i]! < 0) first[i] = j;
        last[i] = j;
      }
      const toReal = (refFrame: number, edge: 'start' | 'end'): number => {
        const i = Math.max(0, Math.min(n - 1, refFrame - s0));
        return r0 + (edge === 'start' ? first[i]! : last[i]! + 1);
      };

      const totalFrames = realEnergy.length;
      const words: WordTiming[] = [];
      let prevEnd = 0;
      tokens.forEach((tok, k) => {
        const [rs, re] = ref.bounds[k]!;
        let s = toReal(rs, 'start');
        let e = re > rs ? toReal(re - 1, 'end') : s;
        s = Math.max(s, prevEnd);
        // every word keeps at least one frame, even where the path squeezes it to nothing
        s = Math.min(s, totalFrames - 1);
        e = Math.min(Math.max(e, s + 1), totalFrames);
        // A pause the reader made but eSpeak did not lands inside a neighbouring word:
        // trim quiet frames off both edges (never below a few frames of sound).
        const minFrames = 3;
        while (e - s > minFrames && realEnergy[s]! < realThr) s++;
        while (e - s > minFrames && realEnergy[e - 1]! < realThr) e--;
        words.push({ word: tok.word, start: s * HOP_S, end: e * HOP_S });
        prevEnd = e;
      });
      return words;
    },
    async close() {
      await Promise.all(procs.map((p) => p.close()));
    },
  } as Aligner & { close(): Promise<void> };
}
