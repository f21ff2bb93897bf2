// Where in the book is this stretch of audio? PocketSphinx (Debian's pocketsphinx_batch)
// decodes windows of the decoded files with the book's own language model: English with
// Debian's en-us acoustic model, French with the fr-fr model bundled in soundswallower. Only
// the words and their times are used, as anchors between audio and text; the word timings of
// the output come from the per-segment aligner.
import fs from 'node:fs';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { runTool, ToolMissingError } from '../../../media/ffmpeg.ts';
import { pocketsphinxModelFiles } from '../../asr/pocketsphinx.ts';
import { MissingModelError, SpeechInputError } from '../../types.ts';
import { borrowedModel, installedAcousticModels, primaryLanguage, type AcousticModel } from '../acoustic-models.ts';
import { arpaTrigram, dictionaryText, readDictionary } from './book-lm.ts';
import { borrowedDictionary } from './borrowed.ts';
import { yearReading } from '../../spoken-forms.ts';
import { pcmSamples, RATE, readHeardPcm, type DecodedFile } from './audio.ts';
import { detectorEnergy } from '../refine.ts';
import { frameEnergy, mfcc } from '../../../native/index.ts';
import { recognizerScorer, type RecognizerScorer } from './pocketsphinx-scorer.ts';

export interface AudioWindow {
  file: number;
  /** Seconds. */
  start: number;
  end: number;
}

export interface HeardWord {
  word: string;
  /** Seconds from the start of the file. */
  start: number;
  end: number;
}

/**
 * Search settings measured on read speech with a book model (`-ds 3` frame skipping,
 * narrow HMM/word limits, no second pass): 0.04 s of CPU per second of audio against 0.26 s
 * with the defaults, and the book's sentences still come out word for word where the
 * speech is clear, which is all anchoring needs.
 */
const FAST_SEARCH = ['-fwdflat', 'no', '-bestpath', 'no', '-ds', '3', '-topn', '2', '-maxhmmpf', '1500', '-maxwpf', '5', '-pl_window', '5'];
/** Seconds decoded on each side of a window for context; only words centred inside the window are kept. */
const CONTEXT = 1;
/** Windows per pocketsphinx_batch run: progress and stop requests are seen between runs. */
const WINDOWS_PER_RUN = 30;
/** Seconds of a run's first window heard once before the run, to adapt the recogniser (see recognize); of the narrator's speech before an utterance (`narrator`). */
export const WARM_UP = 5;
const FILLER = /^(<.*>|\[.*\]|\+\+.*\+\+)$/;

export interface BookRecognizerOptions {
  workDir: string;
  /** The book's language (BCP 47; default en): picks the acoustic model and dictionary. */
  language?: string;
  /** The book's words, spoken form (see spokenWords), in reading order; '' breaks an n-gram run (sentence ends, unknown words). */
  sentences: string[][];
  modelDir?: string;
  processes?: number;
  /** Pronunciations to take the book's words from (default: read from the model's dictionary; islands pass the book-wide recogniser's). */
  dictionary?: Map<string, string[]>;
  /** pocketsphinx_batch's acoustic scorer (default simd: the same output in less CPU; see pocketsphinx-scorer.ts). */
  scorer?: RecognizerScorer;
  /**
   * The cepstral mean: `live` (default), carried from utterance to utterance of a run (see
   * withCmn); `utterance`, each utterance's own, for audio whose speech is a small part of
   * what is heard before it (see the islands of a file that matched nothing, recording.ts).
   */
  cmn?: 'live' | 'utterance';
  /** speechStretches reads the energy as recorded even where an offset or the level masks the speech (refine.ts detectorEnergy; round 40 and before): the benches' baseline. */
  energyAsRecorded?: boolean;
}

export interface BookRecognizer {
  /** The words of the book the dictionary knows (the rest can only be aligned, never recognised). */
  readonly known: Set<string>;
  /** Their pronunciations (a smaller recogniser over part of the book takes its own from these). */
  readonly dictionary: Map<string, string[]>;
  /**
   * Heard words of each window, in order. `narrator`: speech already matched to the book (the
   * reader's voice and room). Where the audio heard before an utterance was something else
   * (another voice, music, noise: ANOTHER_VOICE from the narrator's cepstral mean) and the
   * utterance lies nearer the narrator's mean than that audio's, that speech is heard again first,
   * so the live mean the utterance is heard with is the narrator's, not the one the other audio
   * left (see withCmn; the islands beside runs, recording.ts).
   */
  recognize(files: DecodedFile[], windows: AudioWindow[], opts: { signal?: AbortSignal; onWindows?: (done: number) => void; stop?: () => Promise<void>; narrator?: AudioWindow }): Promise<HeardWord[][]>;
}

/**
 * Windows (in order) cut into runs of pocketsphinx_batch: at most about WINDOWS_PER_RUN
 * each, a multiple of `processes` of them, of equal seconds, so that no process is left to
 * decode the last run alone (94 windows as 30+30+30+4 on 2 processes took 17.6 s wall where
 * 4 × 23.5 take 13.6 s; a pass of 30 windows ran on one process).
 */
export function balancedBatches(windows: AudioWindow[], processes: number): number[][] {
  if (!windows.length) return [];
  const runs = Math.ceil(Math.max(processes, windows.length / WINDOWS_PER_RUN) / processes) * processes;
  const count = Math.min(windows.length, runs);
  const total = windows.reduce((s, w) => s + w.end - w.start, 0);
  const batches: number[][] = [[]];
  let acc = 0;
  windows.forEach((w, i) => {
    // a window goes to the next run once this run holds its share of the seconds (and windows remain for the runs left)
    const share = (total * batches.length) / count;
    if (batches[batches.length - 1]!.length && acc + (w.end - w.start) / 2 > share && batches.length < count && windows.length - i >= count - batches.length) batches.push([]);
    batches[batches.length - 1]!.push(i);
    acc += w.end - w.start;
  });
  return batches;
}

/** The acoustic model, dictionary and front-end settings pocketsphinx_batch recognises a language with. */
export interface RecognizerModel {
  hmm: string;
  dict: string;
  /** Arguments besides -hmm and -dict: what the model folder does not say in a feat.params of its own. */
  args: string[];
}

/** Languages a recogniser model of their own is installed for (primary subtags); others borrow one (borrowed.ts). */
export function recognizerLanguages(): string[] {
  return [...(fs.existsSync(pocketsphinxModelFiles().dict) ? ['en'] : []), ...(frenchModel() ? ['fr'] : [])];
}

const frenchModel = () => installedAcousticModels().find((m) => m.language === 'fr') ?? null;

/** Whether a language is heard with another language's model and a dictionary made by eSpeak (bookDictionary). */
export const borrowsModel = (language: string): boolean => !['en', 'fr'].includes(primaryLanguage(language));

/**
 * English: Debian's 16 kHz en-us model, the one the locate settings were measured with.
 * French: soundswallower's fr-fr model (8 kHz features, 130–3700 Hz, from 16 kHz audio as the
 * hmm aligner reads it). Its folder has soundswallower's feat_params.json, which
 * pocketsphinx_batch does not read, so its settings go on the command line.
 * Any other language: the borrowed model (borrowed.ts), with the dictionary bookDictionary makes.
 */
export function recognizerModel(language = 'en', modelDir?: string): RecognizerModel {
  const lang = primaryLanguage(language);
  if (lang === 'en') {
    const files = pocketsphinxModelFiles(modelDir);
    for (const f of [files.hmm, files.dict]) {
      if (!fs.existsSync(f)) throw new MissingModelError(`PocketSphinx English model file ${f} is missing (install the Debian package pocketsphinx-en-us)`);
    }
    return { hmm: files.hmm, dict: files.dict, args: [] };
  }
  const m = lang === 'fr' ? frenchModel() : borrowedModel();
  if (!m) throw new MissingModelError(`the recogniser model for "${language}" (${lang === 'fr' ? 'fr-fr' : 'en-us, which languages without a model borrow'}, bundled in the soundswallower npm package) is missing: run npm install`);
  // a Debian model folder holds feat.params and noisedict, which the program reads by itself
  if (fs.existsSync(path.join(m.dir, 'feat.params'))) return { hmm: m.dir, dict: m.dict, args: [] };
  const feat = Object.entries(m.featParams).flatMap(([k, v]) => [`-${k}`, v === true ? 'yes' : v === false ? 'no' : String(v)]);
  return { hmm: m.dir, dict: m.dict, args: ['-fdict', m.noiseDict, ...feat] };
}

/**
 * The pronunciations a book's recogniser takes its words from. A language's own model
 * (English, French): its dictionary's, and eSpeak NG's for the book words it lacks (names,
 * numbers, coined words, the letters of a URL), in the model's phones (borrowed.ts), so
 * that those are heard too (until round 13 a word outside CMUdict broke the book's n-grams
 * and was never heard: README, long recordings). A borrowing language: eSpeak NG's for every word.
 */
export async function bookDictionary(words: Iterable<string>, language: string, modelDir?: string): Promise<Map<string, string[]>> {
  if (!borrowsModel(language)) {
    const wanted = new Set(words);
    const own = readDictionary(recognizerModel(language, modelDir).dict, wanted);
    const missing = [...wanted].filter((w) => !own.has(w));
    const model = primaryLanguage(language) === 'fr' ? frenchModel() : null;
    return addEspeakPronunciations(own, missing, language, model ?? { phoneSet: 'arpabet' });
  }
  const m = borrowedModel();
  if (!m) throw new MissingModelError(`no acoustic model to hear "${language}" with (soundswallower's models are missing: run npm install)`);
  return addEspeakPronunciations(new Map(), [...new Set(words)], language, m);
}

/**
 * eSpeak's pronunciations of `pronounce` added to `dict`, and for a year beside eSpeak's reading
 * of it as a count, the year as narrators read it ("eighteen ninety-four"; German
 * "achtzehnhundert…"): the recogniser hears either (the aligner, which sees the text around,
 * already takes the year reading where the words around say it is one: spoken-forms.ts). One
 * eSpeak pass pronounces the words and the years' parts.
 */
async function addEspeakPronunciations(dict: Map<string, string[]>, pronounce: string[], language: string, model: Pick<AcousticModel, 'phoneSet'>): Promise<Map<string, string[]>> {
  const years = pronounce.flatMap((w) => {
    const said = yearReading(w, language);
    return said ? [{ w, parts: said.split(' ') }] : [];
  });
  const espeak = await borrowedDictionary(new Set([...pronounce, ...years.flatMap((y) => y.parts)]), language, model);
  for (const w of pronounce) {
    const p = espeak.get(w);
    if (p) dict.set(w, p);
  }
  for (const { w, parts } of years) {
    const prons = parts.map((p) => espeak.get(p)?.[0]);
    if (prons.some((p) => !p)) continue;
    const pron = prons.join(' ');
    const have = dict.get(w) ?? [];
    if (!have.includes(pron)) dict.set(w, [...have, pron]);
  }
  return dict;
}

export function createBookRecognizer(words: Iterable<string>, opts: BookRecognizerOptions): BookRecognizer {
  const model = recognizerModel(opts.language, opts.modelDir);
  const ownMean = opts.cmn === 'utterance';
  const files = withCmn(model, opts.workDir, ownMean ? 'batch' : 'live');
  const wanted = new Set(words);
  const given = opts.dictionary;
  if (!given && borrowsModel(opts.language ?? 'en')) throw new Error(`a recogniser for "${opts.language}" needs the dictionary bookDictionary makes`);
  const dict = given ? new Map([...wanted].flatMap((w) => (given.has(w) ? [[w, given.get(w)!] as const] : []))) : readDictionary(files.dict, wanted);
  const known = new Set(dict.keys());
  const lmFile = path.join(opts.workDir, 'book.lm');
  const dictFile = path.join(opts.workDir, 'book.dic');
  const runs: string[][] = [];
  for (const s of opts.sentences) {
    let cur: string[] = [];
    for (const w of s) {
      if (known.has(w)) cur.push(w);
      else if (cur.length) (runs.push(cur), (cur = []));
    }
    if (cur.length) runs.push(cur);
  }
  fs.writeFileSync(lmFile, arpaTrigram(runs));
  fs.writeFileSync(dictFile, dictionaryText(dict));
  const processes = Math.max(1, opts.processes ?? availableParallelism());
  let runId = 0;

  return {
    known,
    dictionary: dict,
    async recognize(decoded, windows, { signal, onWindows, stop, narrator }) {
      const out: HeardWord[][] = windows.map(() => []);
      const batches = balancedBatches(windows, processes);
      let next = 0;
      let done = 0;
      const worker = async () => {
        for (let b = next++; b < batches.length; b = next++) {
          await stop?.();
          // one pocketsphinx_batch run: each stretch of sound in a window with its context is an
          // utterance of its own, from its own file, so every word's time is counted from a known start
          const id = runId++;
          const utterances: { name: string; pcm: Buffer; slot?: { w: number; from: number } }[] = [];
          if (!ownMean) {
            // warm-up: the run's first window's first seconds once before it, its words dropped
            // (no slot). The cepstral mean is live, carried from utterance to utterance of a run
            // (see withCmn), and starts from a default; without this the first window of every
            // run is heard worse (measured with pocketsphinx_continuous on the small messy book:
            // 78 of 93 spoken words timed with two cold runs, against 86 with one)
            const win = windows[batches[b]![0]!]!;
            utterances.push({ name: `run${id}-warm`, pcm: readHeardPcm(decoded[win.file]!, win.start, Math.min(win.end, win.start + WARM_UP)) });
          }
          // the narrator's speech, its cepstral mean and that of the audio heard last (see `narrator`;
          // a warm-up of the window's own first seconds does not help a sentence after music there)
          const voice = narrator && !ownMean ? readHeardPcm(decoded[narrator.file]!, narrator.start, Math.min(narrator.end, narrator.start + WARM_UP)) : null;
          const means = voice && { narrator: cepstralMean(voice), last: cepstralMean(utterances[0]!.pcm) };
          for (const w of batches[b]!) {
            const win = windows[w]!;
            const file = decoded[win.file]!;
            const from = Math.max(0, win.start - CONTEXT), to = Math.min(file.duration, win.end + CONTEXT);
            const pcm = readHeardPcm(file, from, to);
            speechStretches(pcm, opts.energyAsRecorded).forEach(([a, z], c) => {
              const u = pcm.subarray(2 * Math.round(a * RATE), 2 * Math.round(z * RATE));
              if (voice && means) {
                const mean = cepstralMean(u);
                if (distance(means.last, means.narrator) > ANOTHER_VOICE && distance(mean, means.narrator) < distance(mean, means.last)) utterances.push({ name: `run${id}-${w}-${c}-narrator`, pcm: voice });
                means.last = mean;
              }
              utterances.push({ name: `run${id}-${w}-${c}`, pcm: u, slot: { w, from: from + a } });
            });
          }
          if (!utterances.some((u) => u.slot)) {
            onWindows?.((done += batches[b]!.length));
            continue;
          }
          const ctl = path.join(opts.workDir, `run${id}.ctl`), hypseg = path.join(opts.workDir, `run${id}.hypseg`);
          try {
            for (const u of utterances) fs.writeFileSync(path.join(opts.workDir, `${u.name}.raw`), u.pcm);
            fs.writeFileSync(ctl, utterances.map((u) => u.name).join('\n') + '\n');
            await runTool(
              'pocketsphinx_batch',
              ['-adcin', 'yes', '-cepdir', opts.workDir, '-cepext', '.raw', '-ctl', ctl, '-hypseg', hypseg, '-samprate', String(RATE), '-remove_silence', 'no', '-hmm', files.hmm, '-lm', lmFile, '-dict', dictFile, '-logfn', '/dev/null', ...files.args, ...FAST_SEARCH],
              { signal, what: 'pocketsphinx_batch (Debian package pocketsphinx)', env: recognizerScorer(opts.scorer).env },
            ).catch((e) => {
              if (e instanceof ToolMissingError) throw new MissingModelError(e.message);
              throw e;
            });
            const heard = segmentedWords(fs.readFileSync(hypseg, 'utf8'));
            for (const u of utterances) {
              if (!u.slot) continue;
              const win = windows[u.slot.w]!;
              for (const h of heard.get(u.name) ?? []) {
                const start = u.slot.from + h.start, end = u.slot.from + h.end;
                const m = (start + end) / 2;
                if (m >= win.start && m < win.end) out[u.slot.w]!.push({ word: h.word, start, end });
              }
            }
          } finally {
            for (const f of [ctl, hypseg, ...utterances.map((u) => path.join(opts.workDir, `${u.name}.raw`))]) fs.rmSync(f, { force: true });
          }
          done += batches[b]!.length;
          onWindows?.(done);
        }
      };
      await Promise.all(Array.from({ length: Math.min(processes, batches.length) }, worker));
      return out;
    },
  };
}

/** The mean of an utterance's (s16le at RATE) cepstra c1-c12 over its frames: where its voice, room and channel put it, which the recogniser's cepstral mean takes out. */
export function cepstralMean(pcm: Buffer): Float32Array {
  const { frames, dims, data } = mfcc(pcmSamples(pcm), RATE);
  const mean = new Float32Array(dims - 1);
  for (let t = 0; t < frames; t++) for (let d = 1; d < dims; d++) mean[d - 1]! += data[t * dims + d]! / frames;
  return mean;
}

const distance = (a: Float32Array, b: Float32Array) => Math.hypot(...a.map((x, i) => x - b[i]!));

/**
 * A cepstral mean this far from the narrator's is another voice, music or noise, not the
 * narrator (distance of cepstralMean). Measured on the test speech: one LibriVox reader's clips
 * 1.6-4.8 apart, that reader and jfk 10-11.6, the telephone preface 19-21, music 16-18. Below it
 * the live mean is the narrator's already, and hearing the narrator again before an utterance
 * only moved it at random (Italian bench, seeds 13 and 29: 32 fewer words timed without this
 * bound, which heard the narrator before 77 of seed 13's 188 island utterances).
 */
const ANOTHER_VOICE = 8;

/** Frames of the voice detector (10 ms, as the decoder's). */
const VAD_FRAME = 0.01;
/** Energy this far over the window's floor is sound (ln power: 10 dB). */
const VAD_OVER_FLOOR = Math.log(10);
/** A pause this long ends an utterance; sound kept before and after one (the decoder's own detector: 0.2 s and 0.5 s). */
const VAD_PAUSE = 0.5;
const VAD_BEFORE = 0.2;
const VAD_AFTER = 0.3;
/** Less sound than this is a click, not an utterance. */
const VAD_MIN_SOUND = 0.1;

/**
 * The utterances of a window's audio (s16le at RATE), in seconds: its sound, split at pauses.
 * PocketSphinx's own voice detector does this inside pocketsphinx_continuous, but reported some
 * utterances seconds late; and decoding a window whole puts words in its pauses (room tone,
 * jfk's crowd heard as "it", "that": its chapter's first sentence was lost to that). So the
 * pauses are found here, and each stretch of sound is an utterance with a known start.
 */
export function speechStretches(pcm: Buffer, energyAsRecorded = false): [number, number][] {
  const hop = Math.round(VAD_FRAME * RATE);
  const n = Math.floor(pcm.length / 2 / hop);
  if (!n) return [];
  // whole frames only, back to back
  const samples = pcmSamples(pcm, n * hop);
  // the energy as it is, or without the DC offset where that masks the speech (detectorEnergy)
  const { energy, floor } = detectorEnergy(samples, RATE, hop, (s) => frameEnergy(s, RATE, { frameMs: 1000 * VAD_FRAME, hopMs: 1000 * VAD_FRAME }), 0.05, energyAsRecorded);
  const thr = floor + VAD_OVER_FLOOR;
  const out: [number, number][] = [];
  let start = -1, last = -1, sound = 0;
  const close = () => {
    if (start >= 0 && sound * VAD_FRAME >= VAD_MIN_SOUND) out.push([Math.max(0, start * VAD_FRAME - VAD_BEFORE), Math.min(n * VAD_FRAME, (last + 1) * VAD_FRAME + VAD_AFTER)]);
    (start = -1), (sound = 0);
  };
  for (let f = 0; f < n; f++) {
    if (energy[f]! <= thr) continue;
    if (start >= 0 && (f - last) * VAD_FRAME >= VAD_PAUSE) close();
    if (start < 0) start = f;
    last = f;
    sound++;
  }
  close();
  return out;
}

/**
 * The words of each utterance in pocketsphinx_batch's `-hypseg` output: one line per utterance,
 * "name S scale T score A acoustic L language", then "frame acoustic language word" per segment
 * and the utterance's end frame; 10 ms frames counted from the utterance's start (with
 * `-remove_silence no`: by default the front end drops the frames it takes for silence and every
 * later time comes early by each pause before it). A word ends where the next segment starts;
 * fillers (<s>, <sil>, [noise]) mark time and are dropped, as are alternates' marks ("the(2)").
 */
export function segmentedWords(hypseg: string): Map<string, HeardWord[]> {
  const out = new Map<string, HeardWord[]>();
  for (const line of hypseg.split('\n')) {
    const f = line.trim().split(/\s+/);
    if (f.length < 10 || f[1] !== 'S') continue;
    const words: HeardWord[] = [];
    for (let i = 9; i + 4 < f.length; i += 4) {
      const word = f[i + 3]!.replace(/\(\d+\)$/, '');
      if (!FILLER.test(word)) words.push({ word, start: Number(f[i]) / 100, end: Number(f[i + 4]) / 100 });
    }
    out.set(f[0]!, words);
  }
  return out;
}

/**
 * The model with its cepstral mean as asked: `live`, carried from utterance to utterance of a run
 * as pocketsphinx_continuous had it, or `batch`, each utterance's own. Each utterance normalised
 * by its own mean (the models' own setting, `batch` or `current`) heard short ones worse: the
 * tests' small books fell from 174 to 160 of 178 spoken French words and from 114 to 94 of 132
 * Russian ones; so `batch` is only for the islands of a file that matched nothing (recording.ts).
 * A Debian model folder's feat.params (`-cmn batch`) wins over the command line, so a copy of it
 * saying the mode asked for is passed with -featparams.
 */
function withCmn(m: RecognizerModel, dir: string, mode: 'live' | 'batch'): RecognizerModel {
  const at = m.args.indexOf('-cmn');
  if (at >= 0) return { ...m, args: m.args.map((a, i) => (i === at + 1 ? mode : a)) };
  const params = path.join(m.hmm, 'feat.params');
  if (!fs.existsSync(params)) return { ...m, args: [...m.args, '-cmn', mode] };
  const copy = path.join(dir, 'feat.params');
  fs.writeFileSync(copy, fs.readFileSync(params, 'utf8').replace(/^-cmn\s+\S+/m, `-cmn ${mode}`));
  return { ...m, args: [...m.args, '-featparams', copy] };
}
