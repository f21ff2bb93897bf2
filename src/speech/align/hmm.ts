// The `hmm` aligner: forced alignment with a real acoustic model (PocketSphinx HMMs run
// by soundswallower, PocketSphinx compiled to WebAssembly, in this process), against a
// grammar that admits exactly the source text with optional pauses between words (and, when
// the caller says so, sentences left out or read twice: AlignOptions); then
// the word edges are refined in the signal (see refine.ts). Words the pronouncing
// dictionary lacks are pronounced by eSpeak NG and mapped to the model's phones.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import * as nativeAddon from '../../native/index.ts';
import * as reference from '../../native/reference.ts';
import { EspeakProcess, buildVoiceTable, voiceForLanguage, type VoiceTable } from '../tts/espeak.ts';
import { MissingModelError, SpeechInputError, type AlignedWord, type Aligner, type AlignOptions, type SecondModel } from '../types.ts';
import { spokenForms } from '../spoken-forms.ts';
import { tokenizeWords } from '../words.ts';
import { borrowedModel, hmmLanguages, installedAcousticModels, modelFor, primaryLanguage, secondModelFor, type AcousticModel } from './acoustic-models.ts';
import { withoutHum } from './hum.ts';
import { ipaToPhones } from './phones.ts';
import { DEFAULT_REFINE, dynamicRange, refineBoundaries, spectralChangeOf, withoutDc, type RefineParams, type Segment } from './refine.ts';
import { soundswallowerBinary, type Scorer } from './soundswallower-wasm.ts';

const RATE = 16000;
const HOP_S = 0.01;

/** The part of soundswallower's API this module uses. */
export interface SsDecoder {
  initialize(): Promise<unknown>;
  set_config(key: string, val: string | number | boolean): boolean;
  start(): void;
  stop(): void;
  process_audio(pcm: Float32Array, noSearch?: boolean, fullUtt?: boolean): number;
  get_alignment(opts: { align_level: number }): { w?: AlignedSegment[] };
  lookup_word(word: string): string | null;
  add_words(...words: [string, string][]): void;
  set_align_text(text: string): void;
  set_grammar(jsgf: string): void;
  delete(): void;
}
interface AlignedSegment {
  t: string;
  b: number;
  d: number;
  w?: AlignedSegment[];
}
export interface SsModule {
  Decoder: new (config: Record<string, unknown>) => SsDecoder;
}

export interface HmmAlignerOptions {
  /** soundswallower's build: `simd` (default; its Gaussian scorer in WebAssembly SIMD, the same results) or `stock` (the package's own). */
  scorer?: Scorer;
  /** Use the TypeScript reference of the native functions (when the addon is missing). */
  useReference?: boolean;
  /** Skip the boundary refinement: the plain forced alignment (for the bench's comparison). */
  raw?: boolean;
  /** Refinement settings other than DEFAULT_REFINE (the bench's comparisons). */
  refine?: Partial<RefineParams>;
  /** Frames per second of the decoder (the model was trained at 100). */
  frate?: number;
  /** Decode the audio started this many ms later too, and average the boundaries (quantisation). */
  offsetsMs?: number[];
  /**
   * Extra PocketSphinx search settings for the decoder (the bench's `ideas`: silprob, fillprob, pip …).
   * Front-end settings (remove_noise, cmn …) come from the model's featParams, which soundswallower
   * reads after these: set there, they have no effect.
   */
  decoderConfig?: Record<string, number | string>;
  /** Give word segments the phones of the pronunciation the search chose (the bench's `ideas`; RefineParams.closureReachS needs them). */
  phones?: boolean;
  /** Decode with this installed acoustic model (its name, e.g. en-us-8k) whatever the audio's band (the bench's `ideas`), and with it alone. */
  model?: string;
  /** AlignOptions.secondModel for every call, whatever the call says (the benches' comparisons). */
  secondModel?: SecondModel;
  /**
   * Subtract steady mains hum from the audio before it is decoded and refined, where there is
   * enough of it (hum.ts; default true since round 42; false: round 41, the benches' baseline).
   */
  removeHum?: boolean;
}

/** One decode's word and pause segments, in seconds of the input. */
export interface DecodedUtterance {
  segments: Segment[];
}

/**
 * Pruning beams, one decode. Wide, because a forced alignment that loses its path returns
 * nothing: with PocketSphinx's recognition defaults (beam 1e-48, wbeam 7e-29) one
 * long-recording segment in three lost its path; at 1e-100 (wbeam 1e-80) two half-minute
 * pieces of the bench hour still did (telephone prompts whose text names a beep) and were
 * timed by the dtw fallback. At 1e-200 they align, for a few per cent more time, since the
 * acoustic scoring, not the search, is most of a decode's time here (a linear grammar keeps
 * few HMMs active): the hour's align phase 35.3 → 37.3 s back to back (with those two pieces
 * now decoded by hmm), the accuracy bench's 214 clips 11.8 → 12.3 s, every clip of which got
 * the same boundaries. A second decoder with narrow beams to try first would cost its memory
 * (a model per decoder) for less than that.
 */
const BEAMS = { beam: 1e-200, wbeam: 1e-200, pbeam: 1e-200 };

/**
 * Gaussians kept per codebook when scoring a frame (PocketSphinx's default is 4). Scoring is most
 * of a decode's time, and fewer kept densities end each codebook's scan sooner. Measured in one
 * session (README, round 16): the bench hour's align phase 43.8–44.2 s against 49.1–49.8 s
 * (three and two runs), with the same words matched and 29.5 against 29.8 ms on its reference
 * words; the accuracy bench's boundaries within a millisecond either way on every set (Piper
 * held-out 19.0/20.1 ms against 19.1/20.3, hand held-out 15.9/17.7 against 15.4/17.0); the
 * language books' counts within 4 words either way. 1 was faster still but lost words to the dtw
 * fallback on the Italian bench.
 */
const TOPN = 2;

/**
 * The grammar's prior probability of leaving out an optional range (a sentence the narrator may
 * have skipped) when the model is borrowed for the language (AlignOptions.borrowModel). With no
 * weight, as for a model of the language's own, the borrowed model (which matches the language's
 * sounds only roughly) found read sentences unread as readily as skipped ones: the Spanish bench's
 * three seeds left out 165, 0 and 17 read words (6 sentences). With this prior: 5, 0 and 4 (2
 * sentences), and the same 10 skipped sentences found (the skipped prompts' words timed: 4, 6, 16
 * of 57, 71, 119, against 57, 25, 31 with no skips at all). Chosen on Spanish alone: 1e-20 and
 * 1e-30 kept a 13-word false skip, 1e-35 to 1e-45 gave the same results, 1e-50 skipped nothing
 * (past the beams: the path is pruned where it leaves the sentence out); 1e-40 is the middle.
 */
const BORROWED_SKIP_PROBABILITY = 1e-40;

/**
 * Audio whose loud frames lie less than this far over its noise floor (refine.ts dynamicRange,
 * ln power: 30 dB) is decoded by a second model too where AlignOptions.secondModel is `in-noise`.
 * Chosen on the tuning sets with real room tone added (README, Alignment, round 38): `always`
 * scored best there, 30 dB kept four fifths of its gain over `never`, and clean narration, whose
 * loud frames lie 35-55 dB over its floor, stays one decode.
 */
const SECOND_MODEL_UNDER = (Math.log(10) / 10) * 30;

/** Whether to decode with the second model too; `energy`: the audio's frame energies (computed only for `in-noise`). */
function wantsSecondModel(when: SecondModel, energy: () => Float32Array): boolean {
  if (when !== 'in-noise') return when === 'always';
  return dynamicRange(energy()) < SECOND_MODEL_UNDER;
}

/** Frame energies as the refinement reads them: 25 ms frames every HOP_S, of the audio with its DC offset taken out (RefineParams.dcCutoffHz). */
function frameEnergyOf(st: HmmState, audio: Float32Array): Float32Array {
  const cutoff = st.opts.refine?.dcCutoffHz ?? DEFAULT_REFINE.dcCutoffHz;
  return st.native.frameEnergy(cutoff > 0 ? withoutDc(audio, RATE, cutoff) : audio, RATE, { frameMs: 25, hopMs: HOP_S * 1000 });
}

/** soundswallower's Emscripten glue re-throws from its own uncaughtException listener; keep Node's own handling. */
export async function loadModule(scorer: Scorer): Promise<SsModule> {
  const { binary } = soundswallowerBinary(scorer);
  const before = new Set(process.listeners('uncaughtException'));
  const log: string[] = [];
  try {
    const createModule = (await import('soundswallower')).default as unknown as (m: object) => Promise<SsModule>;
    return await createModule({ print: () => {}, printErr: (s: string) => log.push(s), ...(binary ? { wasmBinary: binary } : {}) });
  } catch (err) {
    throw new MissingModelError(`the hmm aligner cannot load soundswallower (npm package): ${(err as Error).message}`);
  } finally {
    for (const l of process.listeners('uncaughtException')) if (!before.has(l)) process.removeListener('uncaughtException', l);
  }
}

interface LoadedModel {
  model: AcousticModel;
  decoder: SsDecoder;
  /** normalised token → dictionary word (null: the token is not spoken) */
  prons: Map<string, string | null>;
  oovCount: number;
}

/** Strips quotes, brackets and clause punctuation around a token; keeps inner apostrophes, hyphens and dots. */
export function normaliseToken(word: string): string {
  return word
    .toLowerCase()
    .replace(/[’‘`´]/g, "'")
    .replace(/^[^\p{L}\p{N}']+|[^\p{L}\p{N}]+$/gu, '')
    .replace(/^'+(?=[^\p{L}\p{N}]*$)/u, '');
}

export type HmmAligner = Aligner & { close(): Promise<void>; languages(): string[]; decodeAll(samples: Float32Array, sampleRate: number, text: string, language: string, options?: AlignOptions): Promise<Decoded> };

/** What one hmm aligner holds: soundswallower, a decoder per model (loaded on first use), eSpeak for unknown words. */
interface HmmState {
  opts: HmmAlignerOptions;
  native: typeof nativeAddon | typeof reference;
  languages: string[];
  /**
   * A soundswallower instance not yet given a model (the first is made up front, so that a missing
   * package fails at creation). Each model gets an instance of its own, with its own WebAssembly
   * heap: a second model loaded into the heap of a decoder that had aligned an hour's segments
   * failed with "memory access out of bounds" in every run (the audiobook hour's per-sentence
   * baseline, round 38), and loads fine into a fresh one. soundswallower's loader writes a byte
   * past each file it copies into the heap (load_to_s3file), the likely cause.
   */
  spare: SsModule | null;
  loaded: Map<string, Promise<LoadedModel>>;
  espeak: { proc: EspeakProcess; table: Promise<VoiceTable> } | null;
}

export async function createHmmAligner(opts: HmmAlignerOptions = {}): Promise<HmmAligner> {
  const native = opts.useReference ? reference : nativeAddon;
  if (!opts.useReference) nativeAddon.loadNative();
  const languages = hmmLanguages();
  if (!languages.length) throw new MissingModelError('the hmm aligner found no acoustic model (install Debian pocketsphinx-en-us, or the soundswallower npm package)');
  const st: HmmState = { opts, native, languages, spare: await loadModule(opts.scorer ?? 'simd'), loaded: new Map(), espeak: null };
  return {
    name: 'hmm',
    languages: () => languages,
    // in every language it aligns; with a borrowed model, leaving a sentence out carries a prior (BORROWED_SKIP_PROBABILITY)
    skips: () => true,
    decodeAll: (samples, sampleRate, text, language, options) => decodeAll(st, samples, sampleRate, text, language, options),
    async align(samples: Float32Array, sampleRate: number, text: string, language: string, options?: AlignOptions): Promise<AlignedWord[]> {
      return timeWords(st, await decodeAll(st, samples, sampleRate, text, language, options));
    },
    async close() {
      for (const p of st.loaded.values()) (await p.catch(() => null))?.decoder.delete();
      st.loaded.clear();
      await st.espeak?.proc.close();
    },
  };
}

/** A decoder for one acoustic model, with the aligner's search settings. */
async function loadModel(st: HmmState, model: AcousticModel): Promise<LoadedModel> {
  // soundswallower reads its front-end settings from a JSON file
  const tmp = mkdtempSync(path.join(tmpdir(), 'lectern-hmm-'));
  try {
    const featparams = path.join(tmp, 'feat_params.json');
    writeFileSync(featparams, JSON.stringify(model.featParams));
    const ss = st.spare ?? (await loadModule(st.opts.scorer ?? 'simd'));
    st.spare = null;
    const decoder = new ss.Decoder({
      hmm: model.dir,
      featparams,
      mdef: path.join(model.dir, 'mdef'),
      tmat: path.join(model.dir, 'transition_matrices'),
      mean: path.join(model.dir, 'means'),
      var: path.join(model.dir, 'variances'),
      sendump: path.join(model.dir, 'sendump'),
      dict: model.dict,
      fdict: model.noiseDict,
      samprate: RATE,
      ...(st.opts.frate ? { frate: st.opts.frate } : {}),
      loglevel: 'FATAL',
      ...BEAMS,
      topn: TOPN,
      ...st.opts.decoderConfig,
    });
    await decoder.initialize();
    return { model, decoder, prons: new Map(), oovCount: 0 };
  } catch (err) {
    throw new MissingModelError(`the hmm aligner could not load the acoustic model ${model.name} from ${model.dir}: ${(err as Error).message}`);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

function modelLoaded(st: HmmState, model: AcousticModel): Promise<LoadedModel> {
  let p = st.loaded.get(model.name);
  if (!p) {
    p = loadModel(st, model);
    st.loaded.set(model.name, p);
    p.catch(() => st.loaded.delete(model.name));
  }
  return p;
}

/** eSpeak's reading of a text, in the model's phones. */
async function espeakPhones(st: HmmState, text: string, language: string, m: LoadedModel): Promise<string[]> {
  if (!st.espeak) {
    const proc = new EspeakProcess();
    st.espeak = { proc, table: proc.voices().then(buildVoiceTable) };
  }
  const table = await st.espeak.table;
  let voice: string;
  try {
    voice = voiceForLanguage(table, language);
  } catch {
    voice = voiceForLanguage(table, m.model.language);
  }
  const clauses = await st.espeak.proc.phonemizeClauses(voice, text);
  return ipaToPhones(clauses.map((c) => c.ipa).join(' '), m.model.phoneSet, language);
}

/** Whether the model is the language's own (else borrowed for it: AlignOptions.borrowModel). */
const ownModel = (m: LoadedModel, language: string): boolean => m.model.language === primaryLanguage(language);

/**
 * The dictionary word for a token: the dictionary's own, its parts joined, or eSpeak's
 * pronunciation added as a new word. Given its spoken form (`said`: "18 94" for a year, "3
 * dollars 50", "Chapter 4"; src/speech/spoken-forms.ts), a new word read so, with the token's
 * own reading as its alternate: eSpeak reads "1894" as "one thousand eight hundred ninety-four",
 * which a narrator does not say, and the search then gave the year the next word's sound.
 */
async function pronounce(st: HmmState, token: string, language: string, m: LoadedModel, said?: string): Promise<string | null> {
  const norm = normaliseToken(token);
  // what eSpeak reads when the dictionary has no entry: the token without quotes and brackets
  const text = token.replace(/^[\s"'“”‘’«»()[\]{},;:]+|[\s"'“”‘’«»()[\]{},;:!?]+$/gu, '');
  // a borrowed model's dictionary is of another language: every word is eSpeak's reading in its own
  const own = ownModel(m, language);
  // keyed by the written token too: every symbol ("—", "#", "&") has the same empty letters-only
  // form, and "100%" has the letters of "100"; keyed by that alone, the first one a decoder met
  // gave its reading to all the others ("#" read as "—", nothing: 1.2 s off in a narrated manual)
  const key = `${own ? norm : `${primaryLanguage(language)}:${norm}`}|${text}${said ? `=${said}` : ''}`;
  const seen = m.prons.get(key);
  if (seen !== undefined) return seen;
  if (said) {
    const parts: string[] = [];
    for (const w of said.split(' ')) {
      const dw = await pronounce(st, w, language, m);
      if (dw) parts.push(m.decoder.lookup_word(dw)!);
    }
    const asWritten = await pronounce(st, token, language, m);
    const ownPhones = asWritten ? m.decoder.lookup_word(asWritten) : null;
    const phones = parts.join(' ');
    let word = asWritten;
    if (phones && phones !== ownPhones) {
      word = addWord(m, phones);
      if (ownPhones) m.decoder.add_words([`${word}(2)`, ownPhones]);
    }
    m.prons.set(key, word);
    return word;
  }
  const d = m.decoder;
  let word: string | null = null;
  if (own && norm && d.lookup_word(norm) !== null) word = norm;
  if (own && !word && norm) {
    // hyphenated or elided compounds (ill-disposed, l'homme) whose parts are all known
    const parts = norm.split(/(?<=')|[-–]/u).filter(Boolean);
    const phones = parts.length > 1 ? parts.map((p) => d.lookup_word(p)) : [];
    if (phones.length && phones.every((p) => p !== null)) word = addWord(m, phones.join(' '));
  }
  if (!word) {
    // names, numbers, symbols, coined words: eSpeak's reading, in the model's phones
    const phones = text ? await espeakPhones(st, text, language, m) : [];
    word = phones.length ? addWord(m, phones.join(' ')) : null;
  }
  m.prons.set(key, word);
  return word;
}

function addWord(m: LoadedModel, phones: string): string {
  const word = `lectern_oov_${++m.oovCount}`;
  m.decoder.add_words([word, phones]);
  return word;
}

/** Ranges of the spoken words (inclusive) that a decode's grammar treats as the aligner's options say (AlignOptions). */
export interface GrammarRanges {
  /** May be left out as a whole. */
  optional: [number, number][];
  /** May be read more than once: an earlier reading, whole or in part, before the one that counts. */
  repeatable: [number, number][];
}

const PLAIN: GrammarRanges = { optional: [], repeatable: [] };

/** What a decode's word sequence says: per word, whether it was spoken; per heard word, whether it belongs to an earlier reading (a retake). */
export interface Reading {
  spoken: boolean[];
  retake: boolean[];
}

/**
 * One forced alignment: the model's segments (words, pauses, fillers), which words they hold
 * (false: in an optional range the search left out) and which segments are an earlier reading
 * of a repeatable range, or null when the search found no path through the text.
 */
function decode(m: LoadedModel, audio: Float32Array, words: string[], ranges: GrammarRanges = PLAIN, skipProbability?: number): { segs: AlignedSegment[]; spoken: boolean[]; retakeSeg: boolean[] } | null {
  const d = m.decoder;
  const shaped = ranges.optional.length > 0 || ranges.repeatable.length > 0;
  if (shaped) {
    try {
      d.set_grammar(textGrammar(words, ranges, skipProbability));
    } catch {
      // a dictionary word JSGF cannot hold as a token: the whole text, read once
      return decode(m, audio, words);
    }
  } else d.set_align_text(words.join(' '));
  d.start();
  d.process_audio(audio, false, true);
  d.stop();
  let segs: AlignedSegment[];
  try {
    // word level: the phone level re-aligns the utterance (as long again as the decode) and gives the same word edges
    // (NULL): the grammar's empty transitions (an optional range's edges), no time
    segs = (d.get_alignment({ align_level: 0 }).w ?? []).filter((s) => s.t !== '(NULL)');
  } catch {
    segs = []; // no path through the grammar: soundswallower returns no JSON
  }
  const heard = segs.filter((s) => !isFiller(s.t)).map((s) => s.t.replace(/\(\d+\)$/, ''));
  const reading = shaped ? readingOf(words, ranges, heard) : heard.length === words.length ? { spoken: words.map(() => true), retake: heard.map(() => false) } : null;
  if (!reading) return null;
  let h = 0;
  return { segs, spoken: reading.spoken, retakeSeg: segs.map((sg) => !isFiller(sg.t) && reading.retake[h++]!) };
}

/** A word [a, a] or a range [a, b] of the grammar, with what it allows. */
interface GrammarUnit {
  a: number;
  b: number;
  optional: boolean;
  repeatable: boolean;
}

/** The grammar's units in text order (ranges that overlap without being the same are dropped). */
function grammarUnits(n: number, ranges: GrammarRanges): GrammarUnit[] {
  const byStart = new Map<number, GrammarUnit>();
  for (const [kind, list] of [['optional', ranges.optional], ['repeatable', ranges.repeatable]] as const) {
    for (const [a, b] of list) {
      const u = byStart.get(a) ?? { a, b, optional: false, repeatable: false };
      if (u.b !== b) continue;
      u[kind] = true;
      byStart.set(a, u);
    }
  }
  const out: GrammarUnit[] = [];
  for (let i = 0; i < n; ) {
    const u = byStart.get(i);
    if (u && u.b < n) (out.push(u), (i = u.b + 1));
    else (out.push({ a: i, b: i, optional: false, repeatable: false }), i++);
  }
  return out;
}

/**
 * The text as a JSGF grammar: an optional range may be left out as a whole; a repeatable one may
 * be preceded by an earlier reading of any of its beginnings, whole or in part (a retake), so that
 * the reading that counts is the last. No weights, unless `skipProbability` is given: which path
 * the audio takes is left to the acoustics (with a model of the language's own, leaving out a
 * sentence that was read scores its sound as silence or noise, which loses by far; a retake with
 * no second reading has no audio to take). With it, leaving an optional range out has that prior
 * (a borrowed model: BORROWED_SKIP_PROBABILITY).
 */
export function textGrammar(words: string[], ranges: GrammarRanges, skipProbability?: number): string {
  const parts = grammarUnits(words.length, ranges).map((u) => {
    if (!u.optional && !u.repeatable) return words.slice(u.a, u.b + 1).join(' ');
    let retake = '';
    if (u.repeatable) for (let k = u.b; k >= u.a; k--) retake = `[ ${words[k]}${retake ? ` ${retake}` : ''} ]`;
    const body = `${retake ? `${retake} ` : ''}${words.slice(u.a, u.b + 1).join(' ')}`;
    if (!u.optional) return body;
    return skipProbability === undefined ? `[ ${body} ]` : `( /${1 - skipProbability}/ ${body} | /${skipProbability}/ <NULL> )`;
  });
  return `#JSGF V1.0;\ngrammar lectern;\npublic <text> = ${parts.join(' ')};\n`;
}

/** Which words the search's word sequence holds, and which heard words are a retake (null: it matches no path of the grammar). */
export function readingOf(words: string[], ranges: GrammarRanges, heard: string[]): Reading | null {
  const units = grammarUnits(words.length, ranges);
  const same = (a: number, len: number, j: number) => {
    if (j + len > heard.length) return false;
    for (let k = 0; k < len; k++) if (heard[j + k] !== words[a + k]) return false;
    return true;
  };
  // a unit's ways through heard[j..]: [next j, retake length, read]
  const ways = (u: GrammarUnit, j: number): [number, number, boolean][] => {
    const n = u.b - u.a + 1;
    const out: [number, number, boolean][] = [];
    for (let p = 0; p <= (u.repeatable ? n : 0); p++) if (same(u.a, p, j) && same(u.a, n, j + p)) out.push([j + p + n, p, true]);
    if (u.optional) out.push([j, 0, false]);
    return out;
  };
  // can[u][j]: units u.. match heard j..
  const can = units.map(() => new Uint8Array(heard.length + 1));
  const at = (u: number, j: number) => (u === units.length ? j === heard.length : can[u]![j] === 1);
  for (let u = units.length - 1; u >= 0; u--) for (let j = heard.length; j >= 0; j--) can[u]![j] = ways(units[u]!, j).some(([nj]) => at(u + 1, nj)) ? 1 : 0;
  if (!at(0, 0)) return null;
  const spoken = words.map(() => true);
  const retake = heard.map(() => false);
  for (let u = 0, j = 0; u < units.length; u++) {
    const [nj, p, read] = ways(units[u]!, j).find(([x]) => at(u + 1, x))!;
    if (!read) spoken.fill(false, units[u]!.a, units[u]!.b + 1);
    retake.fill(true, j, j + p);
    j = nj;
  }
  return { spoken, retake };
}

/** The text's tokens, their dictionary words, and the model's segments for each decode (one per offset). */
async function decodeAll(st: HmmState, samples: Float32Array, sampleRate: number, text: string, language: string, options: AlignOptions = {}): Promise<Decoded> {
  const tokens = tokenizeWords(text);
  if (tokens.length && samples.length === 0) throw new SpeechInputError('cannot align text to empty audio');
  // the band the audio carries: its recording's rate where it was resampled up (AlignOptions.sourceRate)
  const band = Math.min(sampleRate, options.sourceRate ?? sampleRate);
  const model = st.opts.model ? (installedAcousticModels().find((m) => m.name === st.opts.model) ?? null) : (modelFor(language, band) ?? (options.borrowModel ? borrowedModel() : null));
  if (!model) {
    throw new SpeechInputError(`the hmm aligner has no acoustic model for language "${language}" (it has: ${st.languages.join(', ')}); use the dtw or auto aligner`);
  }
  const resampled = sampleRate === RATE ? samples : st.native.resample(samples, sampleRate, RATE);
  // mains hum raises every pause's floor for the refinement, and moves the 8 kHz model's edges
  // where it decodes alone (README, *Mains hum*): out of the audio before anything reads it
  const audio = (st.opts.removeHum ?? true) ? withoutHum(resampled, RATE).samples : resampled;
  // a token read as the narration reads it where the spoken-form rules rewrite it ("in 1894," → "in 18 94,")
  const forms = spokenForms(text, language);
  const said = tokenizeWords(forms.text).map((t) => t.word);
  /** Each token's dictionary word in one model's dictionary (null: not spoken). */
  const wordsFor = async (m: LoadedModel) => {
    const out: (string | null)[] = [];
    let at = 0;
    for (const [i, t] of tokens.entries()) {
      const form = said.slice(at, (at += forms.counts[i]!)).join(' ');
      out.push(await pronounce(st, t.word, language, m, form !== t.word ? form : undefined));
    }
    return out;
  };
  const m = await modelLoaded(st, model);
  const dictWords = await wordsFor(m);
  const spoken = dictWords.filter((w): w is string => w !== null);
  // the options' token ranges as ranges of the spoken words
  let n = 0;
  const spokenIndex = dictWords.map((w) => (w === null ? -1 : n++));
  const asSpoken = (list: [number, number][] = []) =>
    list.flatMap(([a, b]): { tokens: [number, number]; spoken: [number, number] }[] => {
      const ks = spokenIndex.slice(a, b + 1).filter((k) => k >= 0);
      return ks.length ? [{ tokens: [a, b], spoken: [ks[0]!, ks.at(-1)!] }] : [];
    });
  const optional = asSpoken(options.skippable);
  const ranges: GrammarRanges = { optional: optional.map((r) => r.spoken), repeatable: asSpoken(options.repeatable).map((r) => r.spoken) };
  const shaped = ranges.optional.length > 0 || ranges.repeatable.length > 0;
  const skipProbability = ownModel(m, language) ? undefined : BORROWED_SKIP_PROBABILITY;
  const skipped = dictWords.map(() => false);
  const decodes: DecodedUtterance[] = [];
  let energy: Float32Array | undefined;
  const segmentsOf = (mm: LoadedModel, segs: AlignedSegment[], retakeSeg: boolean[], at: number): Segment[] =>
    segs.map((s, i) => {
      const pron = st.opts.phones && !isFiller(s.t) ? mm.decoder.lookup_word(s.t) : null;
      // a retake's words are sound no word of the text owns: pauses to the refinement
      return { kind: isFiller(s.t) || retakeSeg[i] ? 'pause' : 'word', start: at + s.b, end: at + s.b + s.d, ...(pron ? { phones: pron.split(' ') } : {}) };
    });
  if (spoken.length) {
    // the offsets' decodes are averaged word by word: they must hold the same words
    let first: boolean[] | null = null;
    for (const ms of shaped ? [0] : (st.opts.offsetsMs ?? [0])) {
      const skip = Math.round((ms / 1000) * RATE);
      const decoded = decode(m, skip ? audio.subarray(skip) : audio, spoken, ranges, skipProbability);
      if (!decoded) throw new SpeechInputError(`the hmm aligner found no alignment of the text to the audio (is this audio of this text, in ${language}?)`);
      first ??= decoded.spoken;
      for (const r of optional) if (!decoded.spoken[r.spoken[0]]) skipped.fill(true, r.tokens[0], r.tokens[1] + 1);
      decodes.push({ segments: segmentsOf(m, decoded.segs, decoded.retakeSeg, skip / RATE) });
    }
    const second = st.opts.model ? null : secondModelFor(model, language, band);
    if (second && first && wantsSecondModel(st.opts.secondModel ?? options.secondModel ?? 'always', () => (energy ??= frameEnergyOf(st, audio)))) {
      // the same words in the other model's dictionary, decoded from the same start; averaged
      // with the first only where it reads the text the same way (the same words, the same skips),
      // and edge by edge only where the two agree (refine.ts maxSpreadS)
      const m2 = await modelLoaded(st, second);
      const words2 = await wordsFor(m2);
      if (words2.every((w, i) => (w === null) === (dictWords[i] === null))) {
        const decoded = decode(m2, audio, words2.filter((w): w is string => w !== null), ranges, skipProbability);
        // first: the refinement reads which edges border a pause from it (the wider band's pauses)
        if (decoded && decoded.spoken.every((x, i) => x === first![i])) decodes.unshift({ segments: segmentsOf(m2, decoded.segs, decoded.retakeSeg, 0) });
      }
    }
  }
  return { tokens: tokens.map((t) => t.word), dictWords, skipped, audio, decodes, ...(energy ? { energy } : {}) };
}

/** The decodes' word edges, refined in the signal (or raw), as a timing for every token. */
function timeWords(st: HmmState, d: Decoded): AlignedWord[] {
  if (!d.tokens.length) return [];
  if (!d.decodes.length) return d.tokens.map((word) => ({ word, start: 0, end: 0 }));
  if (st.opts.raw) return wordTimings(d, rawSpans(d.decodes));
  const energy = d.energy ?? frameEnergyOf(st, d.audio);
  const change = spectralChangeOf(d.audio, RATE, st.native.melSpectrogram, (st.opts.refine?.closureReachS ?? 0) > 0);
  const spans = refineBoundaries(d.decodes, energy, HOP_S, st.opts.refine, change);
  return wordTimings(d, spans);
}

export interface Decoded {
  /** The text's tokens and the dictionary word each is aligned as (null: not spoken). */
  tokens: string[];
  dictWords: (string | null)[];
  /** Per token: in a skippable range the search left out. */
  skipped: boolean[];
  /** The audio at 16 kHz. */
  audio: Float32Array;
  decodes: DecodedUtterance[];
  /** The audio's frame energies, where choosing whether to decode twice needed them (the refinement reuses them). */
  energy?: Float32Array;
}

/** The model's word edges as they are, averaged over the decodes. */
export function rawSpans(decodes: DecodedUtterance[]): [number, number][] {
  const words = decodes.map((d) => d.segments.filter((s) => s.kind === 'word'));
  return words[0]!.map((_, i) => {
    let s = 0;
    let e = 0;
    for (const w of words) (s += w[i]!.start), (e += w[i]!.end);
    return [s / words.length, e / words.length];
  });
}

/** Spans of the spoken words → a timing for every token (unspoken ones zero-length where the word before ended), in order and inside the audio. */
export function wordTimings(d: Decoded, spans: [number, number][]): AlignedWord[] {
  const duration = d.audio.length / RATE;
  const out: AlignedWord[] = [];
  let k = 0;
  let prevEnd = 0;
  d.tokens.forEach((word, i) => {
    if (d.skipped[i]) {
      out.push({ word, start: prevEnd, end: prevEnd, skipped: true });
      return;
    }
    if (d.dictWords[i] === null) {
      // read as nothing (a lone dash): zero length where the word before ended, as the espeak backend does
      out.push({ word, start: prevEnd, end: prevEnd });
      return;
    }
    const [s, e] = spans[k++]!;
    const start = Math.min(Math.max(s, prevEnd), duration);
    const end = Math.min(Math.max(e, start), duration);
    out.push({ word, start, end });
    prevEnd = end;
  });
  return out;
}

function isFiller(t: string): boolean {
  return t === '<sil>' || t === '<s>' || t === '</s>' || t.startsWith('[') || t.startsWith('+') || t.startsWith('++');
}
