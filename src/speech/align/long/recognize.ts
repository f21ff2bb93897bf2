// Where in the book is this stretch of audio? PocketSphinx (Debian's pocketsphinx_continuous)
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
import { borrowedModel, installedAcousticModels, primaryLanguage } from '../acoustic-models.ts';
import { arpaTrigram, dictionaryText, readDictionary } from './book-lm.ts';
import { borrowedDictionary } from './borrowed.ts';
import { RATE, readPcm, type DecodedFile } from './audio.ts';

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
// (pocketsphinx_batch would read windows by frame range, but it drops silent frames before
// decoding and so reports times early by every pause; pocketsphinx_continuous keeps time)
const FAST_SEARCH = ['-fwdflat', 'no', '-bestpath', 'no', '-ds', '3', '-topn', '2', '-maxhmmpf', '1500', '-maxwpf', '5', '-pl_window', '5'];
/** Seconds decoded on each side of a window for context; only words centred inside the window are kept. */
const CONTEXT = 1;
/** Windows per pocketsphinx_batch run: progress and stop requests are seen between runs. */
const WINDOWS_PER_RUN = 30;
const SEPARATOR = Buffer.alloc(RATE * 2);
/** Seconds of a run's first window heard once before the run, to adapt the recogniser (see recognize). */
const WARM_UP = 5;
/** Seconds before its reported start that a late utterance may have begun (3.6 s seen). */
const LATE_BY = 10;
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
}

export interface BookRecognizer {
  /** The words of the book the dictionary knows (the rest can only be aligned, never recognised). */
  readonly known: Set<string>;
  /** Their pronunciations (a smaller recogniser over part of the book takes its own from these). */
  readonly dictionary: Map<string, string[]>;
  /** Heard words of each window, in order. */
  recognize(files: DecodedFile[], windows: AudioWindow[], opts: { signal?: AbortSignal; onWindows?: (done: number) => void; stop?: () => Promise<void> }): Promise<HeardWord[][]>;
}

/**
 * Windows (in order) cut into runs of pocketsphinx_continuous: at most about WINDOWS_PER_RUN
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

/** The acoustic model, dictionary and front-end settings pocketsphinx_continuous recognises a language with. */
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
 * pocketsphinx_continuous does not read, so its settings go on the command line.
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
    for (const [w, p] of await borrowedDictionary(missing, language, model ?? { phoneSet: 'arpabet' })) own.set(w, p);
    return own;
  }
  const m = borrowedModel();
  if (!m) throw new MissingModelError(`no acoustic model to hear "${language}" with (soundswallower's models are missing: run npm install)`);
  return borrowedDictionary(words, language, m);
}

export function createBookRecognizer(words: Iterable<string>, opts: BookRecognizerOptions): BookRecognizer {
  const files = recognizerModel(opts.language, opts.modelDir);
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
    async recognize(decoded, windows, { signal, onWindows, stop }) {
      const out: HeardWord[][] = windows.map(() => []);
      const batches = balancedBatches(windows, processes);
      let next = 0;
      let done = 0;
      /**
       * One pocketsphinx_continuous run over the windows `ws` as one stream: each window with its
       * context, then a second of silence so that the recogniser's voice detector closes the
       * utterance; times map back through `at`. Returns the windows whose stream held an
       * utterance reported late (see wordTimes).
       */
      const decodeStream = async (ws: number[], warmUp: boolean): Promise<Set<number>> => {
        const parts: Buffer[] = [];
        const at: { w: number; streamStart: number; from: number }[] = [];
        // the separators' stretches of the stream: silence put there, where no word can be
        const separators: [number, number][] = [];
        let t = 0;
        const append = (pcm: Buffer) => {
          parts.push(pcm, SEPARATOR);
          t += pcm.length / 2 / RATE;
          separators.push([t, (t += SEPARATOR.length / 2 / RATE)]);
        };
        if (warmUp) {
          // warm-up: the run's first window once before it, its words dropped (they map to no
          // slot). The recogniser's cepstral mean starts from a default and adapts as it hears;
          // without this the first window of every run is heard worse (measured on the small
          // messy book: 78 of 93 spoken words timed with two cold runs, against 86 with one)
          const win = windows[ws[0]!]!;
          append(readPcm(decoded[win.file]!, win.start, Math.min(win.end, win.start + WARM_UP)));
        }
        for (const w of ws) {
          const win = windows[w]!;
          const file = decoded[win.file]!;
          const from = Math.max(0, win.start - CONTEXT), to = Math.min(file.duration, win.end + CONTEXT);
          at.push({ w, streamStart: t, from });
          append(readPcm(file, from, to));
        }
        // (a file, not a pipe: the program opens its -infile by name, and Node's pipes are sockets)
        const stream = path.join(opts.workDir, `stream${runId++}.raw`);
        fs.writeFileSync(stream, Buffer.concat(parts));
        const { stdout } = await runTool(
          'pocketsphinx_continuous',
          ['-infile', stream, '-samprate', String(RATE), '-time', 'yes', '-hmm', files.hmm, '-lm', lmFile, '-dict', dictFile, '-logfn', '/dev/null', ...files.args, ...FAST_SEARCH],
          { signal, what: 'pocketsphinx_continuous (Debian package pocketsphinx)' },
        ).catch((e) => {
          if (e instanceof ToolMissingError) throw new MissingModelError(e.message);
          throw e;
        }).finally(() => fs.rmSync(stream, { force: true }));
        const slotAt = (time: number) => at.findLast((x) => x.streamStart <= time);
        const { words, late } = wordTimes(stdout.toString('utf8'), separators);
        for (const w of ws) out[w] = [];
        for (const { word, start: s0, end: e0 } of words) {
          const slot = slotAt((s0 + e0) / 2);
          if (!slot) continue;
          const win = windows[slot.w]!;
          const start = slot.from + (s0 - slot.streamStart), end = slot.from + (e0 - slot.streamStart);
          const m = (start + end) / 2;
          if (m >= win.start && m < win.end) out[slot.w]!.push({ word, start, end });
        }
        // (reported late: the window it came from can lie before the reported start)
        return new Set(late.flatMap(([s0, e0]) => at.filter((x, i) => x.streamStart < e0 && (at[i + 1]?.streamStart ?? Infinity) > s0 - LATE_BY).map((x) => x.w)));
      };
      const worker = async () => {
        for (let b = next++; b < batches.length; b = next++) {
          await stop?.();
          const late = await decodeStream(batches[b]!, true);
          // a window whose utterance came back late is heard again alone, in a run of its own
          // with no warm-up (the late reports seen followed a warm-up that ended in speech)
          for (const w of late) await decodeStream([w], false);
          done += batches[b]!.length;
          onWindows?.(done);
        }
      };
      await Promise.all(Array.from({ length: Math.min(processes, batches.length) }, worker));
      return out;
    },
  };
}

/**
 * The words of pocketsphinx_continuous's output (`-time yes`: after each utterance's text, one
 * "word start end probability" line per segment, in seconds of the input). Sometimes an
 * utterance's times run seconds late, past the start of the next one (3 times in the bench's
 * messy book, in English and French alike): its words would be placed in the wrong window,
 * even the wrong file (a chapter's last sentence heard at the start of the next file's window).
 * Such an utterance is dropped (the passes and islands hear that audio again). In the one case
 * looked into, the late utterance was the first of the two; dropping the second as well lost
 * words (French messy book: 96.8 → 95.7 % of spoken words timed, English unchanged).
 * A late utterance with none after it shows by a word inside `silent` (stretches of the input
 * that hold only the silence put between windows): the Live Systems Manual read aloud
 * (bench/narrated-book.bench.ts) had its last window's utterance reported 3.6 s late, and the
 * region's last 20 words were squeezed into the audio's last 6 s. `late` gives the reported
 * stretches of the utterances left out, so that their windows can be heard again.
 */
export function wordTimes(stdout: string, silent: [number, number][] = []): { words: HeardWord[]; late: [number, number][] } {
  const utterances: HeardWord[][] = [];
  let cur: HeardWord[] | null = null;
  for (const line of stdout.split('\n')) {
    const parts = line.trim().split(/\s+/);
    if (parts.length !== 4 || !/^\d+\.\d+$/.test(parts[1]!)) {
      // an utterance's text line opens its segments
      if (line.trim()) utterances.push((cur = []));
      continue;
    }
    if (!cur) utterances.push((cur = []));
    // frames are 10 ms; the end names the last frame; fillers (<s>, <sil>, [noise]) mark time too
    cur.push({ word: parts[0]!.replace(/\(\d+\)$/, ''), start: Number(parts[1]), end: Number(parts[2]) + 0.01 });
  }
  const spans = utterances.map((u) => (u.length ? [u[0]!.start, u.at(-1)!.end] : null));
  const overlaps = (i: number, j: number) => !!spans[i] && !!spans[j] && spans[i]![1] > spans[j]![0] + 0.05;
  const inSilence = (u: HeardWord[]) => u.some((w) => !FILLER.test(w.word) && silent.some(([a, b]) => (w.start + w.end) / 2 > a && (w.start + w.end) / 2 < b));
  const late = utterances.map((u, i) => u.length > 0 && (overlaps(i, i + 1) || inSilence(u)));
  return {
    words: utterances.flatMap((u, i) => (late[i] ? [] : u.filter((w) => !FILLER.test(w.word)))),
    late: utterances.flatMap((u, i) => (late[i] ? [[u[0]!.start, u.at(-1)!.end] as [number, number]] : [])),
  };
}
