// The `dtw` aligner: synthesize the source text with eSpeak NG (whose word events give
// exact word boundaries in the synthetic audio), compare MFCCs of both signals with banded
// DTW, and carry the synthetic boundaries across the path onto the real audio. Any eSpeak
// language, no model. Coarse-to-fine: a pass over heavily decimated frames with a wide
// band finds the global path, then finer passes search only a narrow band around it, so
// work and memory grow linearly with the audio (an hour of speech is ~360k frames).
import { availableParallelism } from 'node:os';
import * as nativeAddon from '../../native/index.ts';
import * as reference from '../../native/reference.ts';
import type { DtwBand, DtwResult, FeatureOptions, Features, ResampleFilter } from '../../native/types.ts';
import { EspeakProcess, buildVoiceTable, voiceForLanguage, wordTimingsFromEvents, type VoiceTable } from '../tts/espeak.ts';
import { SpeechInputError, type AlignOptions, type Aligner, type WordTiming } from '../types.ts';
import { tokenizeWords, type WordToken } from '../words.ts';
import { splitMergedWords } from '../merged-words.ts';
import { withoutHum } from './hum.ts';
import { detectorEnergy, noiseFloor } from './refine.ts';

export { splitMergedWords };

const RATE = 16000;
/** Filter for the eSpeak reference (22.05 kHz → 16 kHz): see where it is used. */
const REFERENCE_RESAMPLE = { zeroCrossings: 16 } as const;
/** Leading cepstra left out of the distance; c0 (loudness) helps find pauses once normalised. */
const SKIP = 0;
const HOP_S = 0.01;
const FEATURES: FeatureOptions = { frameMs: 25, hopMs: 10, nMels: 40, nCoeffs: 13 };
/** Text per eSpeak request: long enough to keep the helper busy, short enough to bound memory. */
const CHUNK_CHARS = 2000;
/** Quiet: frame energy below the clip's floor (2nd percentile) + 10 dB (in nats). */
const QUIET_OVER_FLOOR = Math.log(10);
/** Frames: a quiet run the mapped gap falls in; a run long enough to be a pause; how far to look for one. */
const MIN_GAP = 4, MIN_PAUSE = 15, PAUSE_REACH = 20;
/** Fewest frames a word is trimmed down to. */
const MIN_WORD = 3;
/** |ln(real/eSpeak sounding time)| above which the reference is synthesized again at the reader's pace. */
const RATE_TOLERANCE = 0.1;
/** Frames of a long pause kept at each end for DTW. */
const PAUSE_KEEP = 6;
/** Band cells (one byte each in the addon) the first, widest pass may use. */
const FIRST_PASS_CELLS = 64_000_000;
const SOUND_RUN = 3;
/** A word's edges end where its energy is this far (nats) below the word's peak. */
const EDGE_DROP = Math.log(10) * 3;
/** Frame f covers [f·10, f·10 + 25) ms; its energy speaks for the middle, which is where an edge lies. */
const EDGE_S = 0.0;

interface Native {
  resample(input: Float32Array, fromRate: number, toRate: number, filter?: ResampleFilter): Float32Array;
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
  /** Called with each stage's wall time (ms) per align() call: where an hour's time goes. */
  onStage?: (stage: string, ms: number) => void;
  /**
   * Read the recording's energy as recorded even where its DC offset or level masks the speech
   * (refine.ts detectorEnergy; round 40 and before): the level bench's baseline.
   */
  energyAsRecorded?: boolean;
  /** Read the features and the energy from the audio without its mains hum (hum.ts; default true since round 42; false: round 41, the level bench's baseline). */
  removeHum?: boolean;
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

/**
 * Frame indices (relative to `from`) kept when every quiet run longer than PAUSE_KEEP·2
 * frames in [from, to] is cut down to PAUSE_KEEP frames at each end.
 */
function collapsePauses(energy: Float32Array, from: number, to: number, quiet: number): Int32Array {
  const keep: number[] = [];
  for (let f = from; f <= to; ) {
    if (energy[f]! >= quiet) {
      keep.push(f - from);
      f++;
      continue;
    }
    let g = f;
    while (g <= to && energy[g]! < quiet) g++;
    for (let k = f; k < g; k++) if (g - f <= 2 * PAUSE_KEEP || k < f + PAUSE_KEEP || k >= g - PAUSE_KEEP) keep.push(k - from);
    f = g;
  }
  return Int32Array.from(keep);
}

function gather(data: Float32Array, dims: number, from: number, keep: Int32Array): Float32Array {
  const out = new Float32Array(keep.length * dims);
  for (let i = 0; i < keep.length; i++) out.set(data.subarray((from + keep[i]!) * dims, (from + keep[i]! + 1) * dims), i * dims);
  return out;
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
  // speech is 50 ms of loud frames in a row: a click before the first word is not its start
  const loud = (f: number, dir: 1 | -1) => {
    for (let q = 0; q < 5; q++) if (!(energy[f + dir * q]! >= threshold)) return false;
    return true;
  };
  let a = 0;
  while (a < energy.length && !loud(a, 1)) a++;
  let b = energy.length - 1;
  while (b > a && !loud(b, -1)) b--;
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
type Stage = (name: string) => void;

/** What synthesizing a reference needs: the native functions, the eSpeak helpers, the stage timer. */
interface ReferenceEngine {
  native: Native;
  procs: EspeakProcess[];
  onStage?: (stage: string, ms: number) => void;
}

/** Features and frame energies of one signal; a reference also has each word's [start, end) in frames. */
interface Signal {
  feats: Features;
  energy: Float32Array;
}
interface Reference extends Signal {
  bounds: [number, number][];
}
/** The reader's audio: its features, the feature options both signals use, and its quiet threshold. */
interface RealSignal extends Signal {
  feat: FeatureOptions;
  quiet: number;
  /** The digital-silence line its floors are read with (detectorEnergy). */
  digitalSilence: number;
}

/** One signal's speech span with long pauses cut: first frame, last frame, the kept frames (relative to `from`) and their features. */
interface Span {
  from: number;
  to: number;
  keep: Int32Array;
  data: Float32Array;
}
/** Both signals ready for DTW: normalised features of the kept frames of each speech span. */
interface Spans {
  dims: number;
  ref: Span;
  real: Span;
}

/** Calls `onStage` with the time since the previous call (or since creation). */
function stageTimer(onStage: DtwAlignerOptions['onStage']): Stage {
  let mark = performance.now();
  return (name) => {
    const now = performance.now();
    onStage?.(name, now - mark);
    mark = now;
  };
}

/** The reader's audio at 16 kHz: features, energies, and the quiet threshold (floor + 10 dB). `sourceRate`: see AlignOptions. */
function realFeatures(native: Native, samples: Float32Array, sampleRate: number, sourceRate = sampleRate, asRecorded = false, removeHum = true): RealSignal {
  const resampled = sampleRate === RATE ? samples : native.resample(samples, sampleRate, RATE);
  const real16k = removeHum ? withoutHum(resampled, RATE).samples : resampled;
  // Both signals' mel bands stop at the band's edge (the input's Nyquist, or its source's when
  // it was resampled up: AlignOptions.sourceRate): bands that are empty in
  // narrow-band audio (8 kHz telephone, old recordings) but full in eSpeak's would
  // dominate the distance.
  const feat: FeatureOptions = { ...FEATURES, fMax: Math.min(RATE, sampleRate, sourceRate) / 2 };
  const feats = native.mfcc(real16k, RATE, feat);
  // the floor of a recording leaves its digital silence out (inserted in editing): see noiseFloor;
  // and the energy is read without the DC offset where that masks the speech (detectorEnergy)
  const { energy, floor, digitalSilence } = detectorEnergy(real16k, RATE, Math.round((feat.frameMs! * RATE) / 1000), (s) => native.frameEnergy(s, RATE, feat), 0.02, asRecorded);
  return { feats, energy, feat, quiet: floor + QUIET_OVER_FLOOR, digitalSilence };
}

/** eSpeak audio for one chunk of tokens: its features, energies and word bounds in frames. */
async function synthesizeChunk(engine: ReferenceEngine, proc: EspeakProcess, chunkText: string, voice: string, rate: number, feat: FeatureOptions): Promise<Reference> {
  const { native } = engine;
  const syn = await proc.synth(voice, chunkText, rate);
  const f32 = new Float32Array(syn.pcm.length);
  for (let i = 0; i < f32.length; i++) f32[i] = syn.pcm[i]! / 32768;
  // (computing features straight from 22.05 kHz with mel bands capped at 8 kHz skips
  // this resampling, the largest cost of an hour, but measured 1.4 ms worse MAE)
  const t0 = performance.now();
  // 16 zero crossings, not the default 32: features are capped at 8 kHz and the reference is synthetic, so the
  // wider transition band changes nothing measurable, and this resampling was the largest cost of an hour.
  const pcm = native.resample(f32, syn.sampleRate, RATE, REFERENCE_RESAMPLE);
  const { words, phonemes } = wordTimingsFromEvents(chunkText, syn);
  splitMergedWords(words, phonemes);
  const part: Reference = {
    feats: native.mfcc(pcm, RATE, feat),
    energy: native.frameEnergy(pcm, RATE, feat),
    bounds: words.map((w) => [Math.round(w.start / HOP_S), Math.round(w.end / HOP_S)]),
  };
  // main-thread share of the reference stage (the rest is waiting on the helpers)
  engine.onStage?.('reference resampling + features (main thread, within espeak reference)', performance.now() - t0);
  return part;
}

/** The chunks' references one after another, word bounds shifted to the joined frames. */
function joinReferences(parts: Reference[]): Reference {
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

/** Reference features for the whole text, and each token's [start, end) in reference frames; the helpers share the chunks. */
async function synthesizeReference(engine: ReferenceEngine, text: string, tokens: WordToken[], voice: string, rate: number, feat: FeatureOptions): Promise<Reference> {
  const chunks = chunkTokens(tokens);
  const parts: Reference[] = new Array(chunks.length);
  let next = 0;
  await Promise.all(
    engine.procs.map(async (proc) => {
      for (let c = next++; c < chunks.length; c = next++) {
        const toks = chunks[c]!;
        parts[c] = await synthesizeChunk(engine, proc, text.slice(toks[0]!.start, toks[toks.length - 1]!.end), voice, rate, feat);
      }
    }),
  );
  return joinReferences(parts);
}

/** Frames at or above the threshold. */
function soundingFrames(energy: Float32Array, threshold: number): number {
  return energy.reduce((c, v) => c + (v >= threshold ? 1 : 0), 0);
}

/**
 * eSpeak at the reader's pace makes a straighter path. The pace: the reader's sounding
 * (not pause) time against eSpeak's for the same text, eSpeak's measured on a sample
 * (the first chunk, the whole text when short) and scaled by characters. The sample is
 * the reference when it is the whole text and the pace is close enough.
 */
async function synthesizeAtReadersPace(engine: ReferenceEngine, text: string, tokens: WordToken[], voice: string, rate: number, real: RealSignal, stage: Stage): Promise<Reference> {
  const chunks = chunkTokens(tokens);
  const sampleTokens = chunks.length === 1 ? tokens : chunks[0]!;
  const sample = await synthesizeReference(engine, text, sampleTokens, voice, rate, real.feat);
  const chars = (t: WordToken[]) => t[t.length - 1]!.end - t[0]!.start;
  const predicted = (soundingFrames(sample.energy, percentile(sample.energy, 0.02) + QUIET_OVER_FLOOR) * chars(tokens)) / chars(sampleTokens);
  const pace = soundingFrames(real.energy, real.quiet) / Math.max(1, predicted);
  stage('espeak sample');
  const paced = Math.abs(Math.log(pace)) > RATE_TOLERANCE ? Math.round(Math.min(450, Math.max(80, rate / pace))) : rate;
  const ref = sampleTokens === tokens && paced === rate ? sample : await synthesizeReference(engine, text, tokens, voice, paced, real.feat);
  stage('espeak reference');
  return ref;
}

/** An energy threshold `share` of the way from the signal's floor (default its 10th percentile) to its loud level (95th). */
function loudnessThreshold(energy: Float32Array, share: number, floor = percentile(energy, 0.1)): number {
  const loud = percentile(energy, 0.95);
  return floor + share * (loud - floor);
}

/**
 * eSpeak's word events count a sentence's closing pause into its last word: cut each
 * reference word to its sound, so the pause maps onto the reader's pause, not into a word.
 */
function trimReferenceWordsToSound(ref: Reference, quiet: number): void {
  for (const bd of ref.bounds) {
    while (bd[1] - bd[0] > 1 && ref.energy[bd[1] - 1]! < quiet) bd[1]--;
    while (bd[1] - bd[0] > 1 && ref.energy[bd[0]]! < quiet) bd[0]++;
  }
}

/**
 * Both signals' speech spans, long pauses cut. Leading and trailing silence of either signal
 * would only stretch the path's ends. Pauses are where the reader and eSpeak differ most
 * (length, and room noise against digital silence): DTW runs on both signals with every long
 * pause cut down to its edges, and the reader's pauses are put back when the boundaries are mapped.
 */
function alignableSpans(ref: Reference, real: RealSignal): Spans {
  // a recording's floor leaves its digital silence out (noiseFloor)
  const [r0, r1] = speechRange(real.energy, loudnessThreshold(real.energy, 0.15, noiseFloor(real.energy, 0.1, real.digitalSilence)), 5);
  const [s0, s1] = speechRange(ref.energy, loudnessThreshold(ref.energy, 0.35), 5);
  const a = normalise(ref.feats);
  const b = normalise(real.feats);
  const dims = a.dims;
  const refQuiet = percentile(ref.energy, 0.02) + QUIET_OVER_FLOOR;
  trimReferenceWordsToSound(ref, refQuiet);
  const refKeep = collapsePauses(ref.energy, s0, s1, refQuiet);
  const realKeep = collapsePauses(real.energy, r0, r1, real.quiet);
  return {
    dims,
    ref: { from: s0, to: s1, keep: refKeep, data: gather(a.data, dims, s0, refKeep) },
    real: { from: r0, to: r1, keep: realKeep, data: gather(b.data, dims, r0, realKeep) },
  };
}

/** A narrow band around the previous (coarser) level's path, upsampled by `ratio`. */
function bandAroundPath(centres: Float64Array, frames: number, ratio: number): DtwBand {
  const c = new Int32Array(frames);
  for (let i = 0; i < frames; i++) {
    const x = (i + 0.5) * ratio - 0.5;
    const lo = Math.max(0, Math.min(centres.length - 1, Math.floor(x)));
    const hi = Math.min(centres.length - 1, lo + 1);
    const t = Math.max(0, Math.min(1, x - lo));
    const col = centres[lo]! * (1 - t) + centres[hi]! * t;
    c[i] = Math.round((col + 0.5) / ratio - 0.5);
  }
  return { centre: c, radius: Math.ceil(3 / ratio) + 6 };
}

/**
 * The DTW path (row, column pairs) between the kept reference and real frames.
 * Coarse to fine: each level's path, upsampled, centres the next level's band.
 * The first pass runs at the finest factor whose wide band fits the cell budget: a short
 * clip is aligned at full resolution at once (a 320 ms coarse frame there is a word,
 * and a wrong coarse path cannot be repaired by narrow fine bands).
 */
function coarseToFinePath(native: Native, spans: Spans, stage: Stage): Int32Array {
  const { dims } = spans;
  const n = spans.ref.keep.length;
  const m = spans.real.keep.length;
  // the first band must hold where the reader's pauses and tempo put the path off the
  // diagonal: 20 % of the length, and at least 3 s (a few long pauses in a short clip)
  const firstBand = (f: number) => Math.min(Math.max(Math.ceil(300 / f), Math.ceil(0.2 * Math.ceil(Math.max(n, m) / f))), 3000);
  const all = [128, 32, 8, 2, 1];
  const fits = (f: number) => Math.ceil(n / f) * (2 * firstBand(f) + 1) <= FIRST_PASS_CELLS;
  const startAt = [...all.keys()].reverse().find((i) => fits(all[i]!)) ?? 0;
  let centres: Float64Array | null = null;
  let prevFactor = 0;
  let path: Int32Array = new Int32Array(0);
  for (const factor of all.slice(startAt)) {
    const A = decimate(spans.ref.data, n, dims, factor);
    const B = decimate(spans.real.data, m, dims, factor);
    // the first pass only knows the overall tempo: a wide band around the diagonal
    const band = centres ? bandAroundPath(centres, A.frames, factor / prevFactor) : firstBand(factor);
    path = native.dtwBanded(A.data, B.data, dims, band).path;
    stage(`dtw 1/${factor}`);
    centres = rowCentres(path, A.frames);
    prevFactor = factor;
  }
  return path;
}

/**
 * Each word's reference [start, end) carried across the path onto real frames, as a flat
 * monotone list [start0, end0, start1, end1, …]. A boundary between reference frames b-1
 * and b goes to the middle of where the path crosses between them: where one side's frame
 * is held over many real frames (a pause or a drawn-out sound only one signal has) this
 * splits the stretch instead of handing all of it to one word and squeezing the other to a frame.
 */
function boundariesOnRealFrames(path: Int32Array, spans: Spans, bounds: [number, number][], words: number, totalFrames: number): number[] {
  const { from: s0, to: s1, keep: refKeep } = spans.ref;
  const { from: r0, keep: realKeep } = spans.real;
  const n = refKeep.length;
  const m = realKeep.length;
  const rowMid = rowCentres(path, n);
  // original reference frame → its kept row (the last kept one at or before it)
  const rowOf = new Int32Array(s1 - s0 + 1);
  for (let i = 0, r = 0; i < rowOf.length; i++) {
    while (r + 1 < n && refKeep[r + 1]! <= i) r++;
    rowOf[i] = r;
  }
  // a (fractional) kept column → real frame; across a cut pause it interpolates, and
  // the pause snapping afterwards moves such a gap to the pause's edges
  const realAt = (x: number): number => {
    const lo = Math.max(0, Math.min(m - 1, Math.floor(x)));
    const t = x - lo;
    const next = lo + 1 < m ? realKeep[lo + 1]! : realKeep[lo]! + 1;
    return r0 + realKeep[lo]! + t * (next - realKeep[lo]!);
  };
  const toReal = (b: number): number => {
    const i = Math.max(1, Math.min(s1 - s0, b - s0));
    const ra = rowOf[i - 1]!, rb = rowOf[i]!;
    return realAt(ra === rb ? rowMid[ra]! + 0.5 : (rowMid[ra]! + rowMid[rb]!) / 2 + 0.5);
  };
  const edges: number[] = [];
  for (let k = 0; k < words; k++) {
    const [rs, re] = bounds[k]!;
    edges.push(rs - s0 <= 0 ? r0 : toReal(rs), toReal(Math.max(re, rs + 1)));
  }
  for (let k = 1; k < edges.length; k++) edges[k] = Math.max(edges[k]!, edges[k - 1]!);
  return edges.map((x) => Math.max(0, Math.min(totalFrames, Math.round(x))));
}

/** The quiet run in [lo, hi) the gap at `at` belongs to: one the gap lies in, or a long pause near it. */
function quietRunAround(energy: Float32Array, quiet: number, lo: number, hi: number, at: number): [number, number] | null {
  const silent = (f: number) => energy[f]! < quiet;
  let best: [number, number] | null = null;
  let bestDist = Infinity;
  for (let f = lo; f < hi; ) {
    if (!silent(f)) { f++; continue; }
    let g = f;
    while (g < hi && silent(g)) g++;
    const len = g - f;
    const dist = at < f ? f - at : at > g ? at - g : 0;
    if ((dist === 0 && len >= MIN_GAP) || (len >= MIN_PAUSE && dist <= PAUSE_REACH)) {
      if (dist < bestDist) (best = [f, g]), (bestDist = dist);
    }
    f = g;
  }
  return best;
}

/**
 * Pauses the reader made: a quiet run around a word gap becomes the gap, edges at the
 * speech offset/onset. The run is taken when the mapped gap lies in it, or when it is
 * long (a pause, not a stop closure) and near. `tempo`: real frames per reference frame.
 */
function snapGapsToPauses(frames: number[], real: RealSignal, bounds: [number, number][], words: number, tempo: number): void {
  const totalFrames = real.energy.length;
  // a gap may not leave either word shorter than 40 % of what eSpeak's timing predicts
  // (a sentence end mapped into a long pause must not hand the pause to the word before)
  const minLen = (k: number) => Math.max(MIN_WORD, Math.round(0.4 * (bounds[k]![1] - bounds[k]![0]) * tempo));
  for (let k = 0; k + 1 < words; k++) {
    const endK = frames[2 * k + 1]!, startNext = frames[2 * k + 2]!;
    const lo = Math.max(frames[2 * k]! + minLen(k), 0), hi = Math.min(frames[2 * k + 3]! - minLen(k + 1), totalFrames);
    if (hi <= lo) continue;
    const run = quietRunAround(real.energy, real.quiet, lo, hi, Math.round((endK + startNext) / 2));
    if (run) (frames[2 * k + 1] = run[0]), (frames[2 * k + 2] = run[1]);
  }
}

/** The longest run in [lo, hi) below the threshold. */
function longestQuiet(energy: Float32Array, lo: number, hi: number, thr: number): [number, number] | null {
  let best: [number, number] | null = null;
  for (let f = lo; f < hi; f++) {
    if (energy[f]! >= thr) continue;
    let g = f;
    while (g < hi && energy[g]! < thr) g++;
    if (!best || g - f > best[1] - best[0]) best = [f, g];
    f = g;
  }
  return best;
}

/**
 * [s, e) with quiet at the word's outer edges taken off (leading/trailing silence, a pause
 * eSpeak made and the reader did not), down to MIN_WORD frames. Sound = SOUND_RUN frames in
 * a row above `floor`, so noise blips near the threshold don't stop the trim.
 */
function trimToSound(energy: Float32Array, s: number, e: number, floor: number): [number, number] {
  const loudRun = (f: number, dir: 1 | -1) => {
    for (let q = 0; q < SOUND_RUN; q++) if (f + dir * q < 0 || f + dir * q >= energy.length || energy[f + dir * q]! < floor) return false;
    return true;
  };
  while (e - s > MIN_WORD && !loudRun(s, 1)) s++;
  while (e - s > MIN_WORD && !loudRun(e - 1, -1)) e--;
  return [s, e];
}

/**
 * The path's ends are pinned to the ends of the sound, so the first/last word also
 * takes in noise or a cut-off next phrase across a pause. Across a pause inside such a
 * word, cut it there when the side next to the other words holds at least half the
 * length eSpeak's timing predicts (sentence-final lengthening makes more unreliable).
 */
function cutOuterWordAtPause(energy: Float32Array, s: number, e: number, floor: number, expected: number, first: boolean, last: boolean): [number, number] {
  const run = longestQuiet(energy, s + MIN_WORD, e - MIN_WORD, floor);
  if (run && run[1] - run[0] >= MIN_PAUSE) {
    if (last && run[0] - s >= expected / 2) e = run[0];
    else if (first && e - run[1] >= expected / 2) s = run[1];
  }
  return [s, e];
}

/** Word timings from the mapped frames: each word at least one frame, trimmed to its sound. */
function wordsFromFrames(tokens: WordToken[], frames: number[], real: RealSignal, bounds: [number, number][], tempo: number): WordTiming[] {
  const energy = real.energy;
  const totalFrames = energy.length;
  const words: WordTiming[] = [];
  let prevEnd = 0;
  tokens.forEach((tok, k) => {
    // every word keeps at least one frame, even where the path squeezes it to nothing
    let s = Math.min(Math.max(frames[2 * k]!, prevEnd), totalFrames - 1);
    let e = Math.min(Math.max(frames[2 * k + 1]!, s + 1), totalFrames);
    // room noise far below the word's own peak is not part of it either
    let peak = -Infinity;
    for (let f = s; f < e; f++) peak = Math.max(peak, energy[f]!);
    const floor = Math.max(real.quiet, peak - EDGE_DROP);
    [s, e] = trimToSound(energy, s, e, floor);
    const first = k === 0, last = k === tokens.length - 1;
    if (first || last) {
      const [rs, re] = bounds[k]!;
      [s, e] = cutOuterWordAtPause(energy, s, e, floor, Math.max(1, re - rs) * tempo, first, last);
    }
    words.push({ word: tok.word, start: s * HOP_S + EDGE_S, end: e * HOP_S + EDGE_S });
    prevEnd = e;
  });
  return words;
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
  const engine: ReferenceEngine = { native, procs, onStage: opts.onStage };

  return {
    name: 'dtw',
    async align(samples: Float32Array, sampleRate: number, text: string, language: string, options: AlignOptions = {}): Promise<WordTiming[]> {
      const tokens = tokenizeWords(text);
      if (tokens.length === 0) return [];
      if (samples.length === 0) throw new SpeechInputError('cannot align text to empty audio');
      const voice = voiceForLanguage(table, language);
      const stage = stageTimer(opts.onStage);
      const real = realFeatures(native, samples, sampleRate, options.sourceRate, opts.energyAsRecorded, opts.removeHum);
      stage('real features');
      const ref = await synthesizeAtReadersPace(engine, text, tokens, voice, rate, real, stage);
      const spans = alignableSpans(ref, real);
      const path = coarseToFinePath(native, spans, stage);
      const frames = boundariesOnRealFrames(path, spans, ref.bounds, tokens.length, real.energy.length);
      // real frames per reference frame over the speech (pauses cut from both)
      const tempo = spans.real.keep.length / Math.max(1, spans.ref.keep.length);
      snapGapsToPauses(frames, real, ref.bounds, tokens.length, tempo);
      const words = wordsFromFrames(tokens, frames, real, ref.bounds, tempo);
      stage('boundaries');
      return words;
    },
    async close() {
      await Promise.all(procs.map((p) => p.close()));
    },
  } as Aligner & { close(): Promise<void> };
}
