// Aligns a long recording people bring (an audiobook, a lecture, their own reading; one or many
// files, any order) to the words of its book. Three steps:
//  1. locate: PocketSphinx decodes windows of the audio with a language model made from the
//     book (recognize.ts); heard trigrams chained monotonically per file give anchors
//     (anchors.ts). At first only a quarter of a long recording is decoded; every gap between
//     anchors whose duration does not fit the narrator's pace, and every stretch before, after
//     or between matched runs, is decoded in full on the next pass, so a skip, a repeat, a
//     preface, credits or music are found where they are. Then the audio beside each file's
//     runs is heard once more with a model of only the nearby free text (islands.ts).
//  2. regions: runs of anchors in step with the pace are the matched regions; the book words
//     in no region were not spoken (skipped: no time), the audio in none matched no text. A
//     region grows to its sentence's edges; a head the heard words do not place is left to the
//     per-segment aligner, as a range it may leave out.
//  3. time: each region, cut into segments of at most a few minutes at anchors, goes to the
//     per-segment aligner (a parameter: `dtw`, `hmm`, … from the aligner registry), which
//     times every word of the segment's text against the segment's audio. A sentence that one
//     file's end cuts and the next goes on with is timed once more across the two files' join
//     (cut-sentences.ts), each word given to the file it was read in.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LecternError } from '../../../core/errors.ts';
import { SpeechInputError, type AlignedWord, type Aligner, type AlignOptions } from '../../types.ts';
import { decodeRecordingFile, hearThroughRoom, RATE, readSamples, type DecodedFile, type RecordingChapter } from './audio.ts';
import { buildTextIndex, chainAnchors, DEFAULT_PACE, fitsPace, measurePace, splitRuns, type Anchor, type HeardIn, type Pace, type TextIndex } from './anchors.ts';
import { spokenWords } from './book-lm.ts';
import type { RecognizerScorer } from './pocketsphinx-scorer.ts';
import { bookDictionary, createBookRecognizer, WARM_UP, type AudioWindow, type BookRecognizer, type HeardWord } from './recognize.ts';
import { islandsToHear, type Island } from './islands.ts';
import { RECORDING_LANGUAGES, recordingLanguageSupported } from './languages.ts';
import { titleClaims } from './titles.ts';
import { cutSentences, splitAtCut } from './cut-sentences.ts';

export { probeRecordingFile, RecordingInputError } from './audio.ts';

/** Seconds of audio per recognition window. */
const WINDOW = 10;
/** First-pass stride of a long recording: a quarter of it decoded. */
const SPARSE_STRIDE = 40;
/** Recordings up to this long are decoded in full at once (cheaper than refining). */
const DENSE_UP_TO = 15 * 60;
/**
 * Files up to this long are decoded in full in the first pass of a long recording too: a short
 * chapter or intro track got only its first window, whose few words (or none) could not place it,
 * and its text was found late or not at all (README, round 17).
 */
const SHORT_FILE = 120;
/** Uncovered stretches shorter than this are not worth a window of their own. */
const MIN_WINDOW = 1.5;
/** Heard (or book) words between two anchors in continuously decoded audio that still count as one region (misrecognitions). */
const MAX_GAP_WORDS = 8;
/** A run needs this many anchor words to be a matched region rather than chance... */
const MIN_ANCHORS = 5;
/** ...or this many, right after or before a long run whose text it continues. */
const MIN_SHORT_RUN = 3;
/** An island's run must be this share of the words heard within ISLAND_CONTEXT seconds of it (islandChance). */
const ISLAND_MATCH = 0.2;
const ISLAND_CONTEXT = 3;
/**
 * Words heard between two runs beyond what the text between them holds (speechBetween) that,
 * with a share of the words heard around it under WEDGED_MATCH, make an island's run between
 * them chance (round 24).
 */
const UNEXPLAINED_WORDS = 6;
const WEDGED_MATCH = 0.22;
/** A gap between heard words that ends an utterance, and how many words an utterance may hold per word of the sentence it reads (readsItsSentence). */
const UTTERANCE_PAUSE = 0.3;
const UTTERANCE_EXTRA = 1.5;
const SENTENCE_MATCH = 0.6;
/** Anchors this much closer in time than the words between them take at the reader's pace, few of those heard: a skip (see skipped). */
const SKIP_MAX_PACE = 0.55;
/** A gap between heard words this long is the reader's pause: a region's edge grows no further. */
const EDGE_PAUSE = 0.4;
/** Pauses a region's head crosses when the heard words beyond are its own (see headByItsWords). */
const LONG_EDGE_PAUSE = 1.2;
/** A word that ends a clause: a reader may pause after it for as long as LONG_EDGE_PAUSE. */
const CLAUSE_END = /[,;:\u2013\u2014]["'\u201d\u2019)\]]*$/;
/**
 * A region grows over heard words beside it until they sound this share of the time the
 * missing words take at the pace (pauses between words are not in the heard words' own
 * durations). At 0.5 the growth stopped inside slow speech and the segment's edge cut its
 * first words (jfk's "And so…": "And" timed 0.37 s late, squeezed into 0.1 s).
 */
const GROW_NEED = 0.8;
/** Rounds of islands at most (each hears only islands not heard before). */
const ISLAND_ROUNDS = 3;
/** Seconds of pause between two heard words of one region, beyond what the text's words take. */
const MAX_PAUSE = 3;
/** How much earlier than where it was heard the per-segment aligner may put a region's first anchor, with a head it looked for (timeSegment). */
const ANCHOR_EARLY = 1;
/** How far from where they were heard the per-segment aligner may put most of a segment's anchors (anchorsAgree). */
const ANCHOR_AGREE = 1.5;
/**
 * Segments handed to the per-segment aligner are cut at anchors once they pass this length. Why 30 s: in the hour bench (auto, 2 threads, load ~2) 300 s segments took 69.8 s wall / 128 s CPU / 563 MiB at 34.2 ms MAE; 120 s 55.4 s / 99.5 s / 406 MiB / 25.1 ms; 60 s 69.1 s / 85.7 s / 334 MiB / 29.5 ms; 30 s 43.8 s / 77.2 s / 388 MiB / 25.5 ms; 15 s 44.5 s / 78.6 s / 390 MiB / 23.9 ms. A long HMM search keeps more paths alive, and the cuts at anchors (two consecutive words heard as the book has them) keep a stretch the recogniser got right from pulling its neighbours.
 */
const SEGMENT_SECONDS = 30;
/**
 * What every per-segment alignment asks of the aligner. borrowModel: a language with no acoustic
 * model of its own is timed by a borrowed one, not dtw (README, Languages). secondModel: a second
 * decode only where it pays, in noise (on an hour of clean narration it cost 40 → 54 s for 0.3 ms).
 */
const SEGMENT_ALIGN: AlignOptions = { borrowModel: true, secondModel: 'in-noise' };
/** Audio kept around a region's first and last heard word for the aligner. */
const PAD = 0.35;
/**
 * A region's last segment runs on to its file's end when that lies within this of its last anchor
 * (round 35): the recogniser hears a file's last words early or as other words (jfk's crowd noise
 * as "ask", the real "ask" at the end heard as "and"), and a last sentence's last word was cut short.
 */
const FILE_END_REACH = 1.5;
const MAX_PASSES = 4;
/**
 * Sentences of at least this many words inside a segment may be found unread by the aligner
 * (skippable ranges): a narrator who skips a sentence between two read ones leaves it no audio.
 * Shorter ones ("Yes.") sound too little like anything to tell from noise.
 */
const MIN_SKIPPABLE_WORDS = 4;
/**
 * ...or of fewer words with at least this many letters, which take as long to say: a skipped
 * "С неопределенного номера." (Russian bench, seed 11) was timed over the next prompts' audio
 * and pushed 16 read words out of their prompt.
 */
const MIN_SKIPPABLE_LETTERS = 16;
/**
 * ...and under this share of their words anchors: a sentence nobody read has next to none (the
 * messy books' skipped sentences inside segments: 0 of their words), and each optional sentence
 * costs the decode, which keeps every path within its wide beams. On the bench hour, whose
 * telephone prompts the recogniser often misses, 77 of 83 segments still hold one and the align
 * phase takes 39.0 s instead of 34.2; narrower beams for these decodes cut the real path and
 * skipped 31 read sentences there. 13 % of the read sentences had under half their words anchored.
 */
const MAX_SKIPPABLE_ANCHORED = 0.5;
/** A passage heard twice within this many seconds is a retake (a narrator's second go at a sentence), not the text's own repetition. */
const RETAKE_SECONDS = 20;
/** Heard words between two anchors, beyond the text's words between them, that make a retake of their sentences likely. */
const RETAKE_GAP_WORDS = 3;
/** Heard words past a region's last anchor still searched for a retake of its text. */
const RETAKE_HEARD = 12;
/**
 * Failure rules, from measurements (README "Bring your own narration"). Of the words the
 * recogniser hears, the share inside matched regions was 0.45 for the small messy book of the
 * tests (a third of its audio is a preface and music) and 0.000 for the same audio against
 * another text; a real audiobook with a spoken preface is near 0.9. Words heard per minute of
 * decoded audio: 150–190 on read speech, 0–92 on ten music tracks, 2 on pink noise.
 */
export const THRESHOLDS = {
  /** Below this share of heard words matched, the recording is not of this text. */
  minHeardMatched: 0.15,
  /** ...and with fewer heard words than this per minute it is not speech at all (music, noise, silence). */
  minSpeechWordsPerMinute: 110,
};

export interface TimedWord {
  /** Input file (index into the `files` option). */
  file: number;
  /** Seconds within that file. */
  start: number;
  end: number;
  /** Seconds on one timeline of the files played in the detected order. */
  globalStart: number;
  globalEnd: number;
}

export interface RecordingRegion {
  file: number;
  /** Seconds within the file. */
  start: number;
  end: number;
  /** Book words [firstWord, lastWord] (indices into `words`). */
  firstWord: number;
  lastWord: number;
}

export interface RecordingFileReport {
  index: number;
  path: string;
  duration: number;
  chapters: RecordingChapter[];
  /** Where the detected reading order puts it (0-based), and its start on the global timeline. */
  position: number;
  offset: number;
  /** Book words it covers, null when none matched. */
  firstWord: number | null;
  lastWord: number | null;
  matchedSeconds: number;
}

export interface RecordingCoverage {
  wordsTotal: number;
  wordsTimed: number;
  /** wordsTimed / wordsTotal. */
  textMatched: number;
  audioSeconds: number;
  /** Seconds of audio inside matched regions. */
  audioMatchedSeconds: number;
  /** Share of the audio that matched no text (prefaces, credits, music, pauses between chapters). */
  audioUnmatched: number;
  /** Share of the book-wide recogniser's heard words (before islands) that fall in matched regions (the failure rule). */
  heardMatched: number;
  /** Words the recogniser heard per minute of the audio it decoded (read speech: 120–180). */
  heardPerMinute: number;
  /** Share of the audio the recogniser decoded to locate the text. */
  decodedShare: number;
  /** Segments handed to the per-segment aligner. */
  segments: number;
  /**
   * Of those, segments with a piece timed by `fallbackAligner`: a segment the aligner finds no
   * path through is split at its anchors and the pieces aligned again; only pieces it still finds
   * no path through go to the fallback.
   */
  segmentsFallback: number;
  /** Seconds of audio in pieces timed by `fallbackAligner`. */
  fallbackSeconds: number;
  /** Sentences inside matched regions that the aligner found unread (their words are not timed). */
  sentencesSkipped: number;
}

export interface RecordingAlignment {
  /** One entry per book word: its time, or null when it was not found in the audio (skipped: no time). */
  words: (TimedWord | null)[];
  /** Input files in the detected reading order. */
  order: number[];
  files: RecordingFileReport[];
  regions: RecordingRegion[];
  /** Sentences inside matched regions that the per-segment aligner found unread, as book words [first, last], in book order. */
  skippedSentences: [number, number][];
  coverage: RecordingCoverage;
}

export interface RecordingProgress {
  phase: 'decode' | 'locate' | 'align';
  done: number;
  total: number;
}

export interface AlignRecordingOptions {
  /** Audio files in upload order (anything ffmpeg decodes: MP3, M4A/M4B, WAV, FLAC, OGG, …). */
  files: string[];
  /** The book's words in reading order, exactly the source tokens (e.g. sourceWords(doc).map((w) => w.word.text)). */
  words: string[];
  /**
   * Indices of the words that end a block of the document (a paragraph, heading or list item):
   * a sentence ends there whatever its punctuation (e.g. where sourceWords' block changes).
   */
  blockEnds?: number[];
  language: string;
  /** Times the words inside each matched segment (from createAligner). */
  aligner: Aligner;
  /**
   * Times a segment `aligner` finds no path through (an HMM's beam can lose a long, noisy or
   * narrow-band stretch; `dtw` always returns a path). Counted in coverage.segmentsFallback.
   * Absent: such a segment fails the alignment.
   */
  fallbackAligner?: Aligner;
  onProgress?: (p: RecordingProgress) => void;
  /** Checked between steps: resolve true to stop (→ RecordingAlignmentStopped). */
  shouldStop?: () => Promise<boolean>;
  /** Aborting kills running decoders and stops at once. */
  signal?: AbortSignal;
  /** Scratch folder for the decoded audio (default: a new one in the system temp dir, removed after). */
  workDir?: string;
  /** Recogniser processes in parallel (default: cores). */
  processes?: number;
  /** The recogniser's acoustic scorer (default simd; stock: the library's own, the benches' baseline). */
  recognizerScorer?: RecognizerScorer;
  /** The voice detector reads the energy as recorded even where an offset or the level masks the speech (BookRecognizerOptions; the benches' round-40 baseline). */
  energyAsRecorded?: boolean;
  /** The recogniser hears a file whose room rings with its late reverberation suppressed (audio.ts hearThroughRoom; default true; false: round 42, the benches' baseline). */
  suppressReverb?: boolean;
  /**
   * The files' names as the user gave them (upload names; default: the paths' base names), in
   * the order of `files`. A file that matches no text (an opening tune, credits) is placed by
   * them when they sort the matched files in their reading order (track numbers), else after its
   * upload-order predecessor.
   */
  names?: string[];
}

/** The recording cannot be aligned to this text; `reason` says why, the message says it for people. */
export class RecordingMismatchError extends SpeechInputError {
  override name = 'RecordingMismatchError';
  constructor(
    message: string,
    readonly reason: 'not-speech' | 'other-text',
    readonly coverage: Pick<RecordingCoverage, 'heardMatched' | 'textMatched'>,
  ) {
    super(message);
  }
}

export class RecordingAlignmentStopped extends LecternError {
  override name = 'RecordingAlignmentStopped';
  constructor() {
    super('CANCELLED', 'alignment stopped on request');
  }
}

interface FileState {
  decoded: DecodedFile;
  /** Decoded [start, end) windows, sorted. */
  covered: [number, number][];
  heard: HeardIn[];
  runs: Anchor[][];
}

/** A book token that ends a sentence (the recogniser's sentences also break at ; and :). */
function isSentenceEnd(word: string): boolean {
  return /[.!?…]["'”’)\]]*$/u.test(word);
}

/** The book's words as recogniser keys: each key knows its token. */
function bookKeys(words: string[], language: string): { keys: string[]; keyToken: Int32Array; sentenceEnd: Uint8Array } {
  const keys: string[] = [];
  const owner: number[] = [];
  const ends: number[] = [];
  let open = false;
  words.forEach((w, t) => {
    for (const k of spokenWords(w, language)) (keys.push(k), owner.push(t), (open = true));
    if (/[.!?;:…]["'”’)\]]*$/u.test(w) && open) (ends.push(keys.length - 1), (open = false));
  });
  const sentenceEnd = new Uint8Array(keys.length);
  for (const k of ends) sentenceEnd[k] = 1;
  return { keys, keyToken: Int32Array.from(owner), sentenceEnd };
}

/** The keys k0..k1 as sentences (runs of the recogniser's n-grams), broken where the book's sentences end. */
function sentencesIn(run: Pick<Run, 'keys' | 'sentenceEnd'>, k0: number, k1: number): string[][] {
  const out: string[][] = [];
  let cur: string[] = [];
  for (let k = k0; k <= k1; k++) {
    cur.push(run.keys[k]!);
    if (run.sentenceEnd[k]) (out.push(cur), (cur = []));
  }
  if (cur.length) out.push(cur);
  return out;
}

/** Sub-intervals of [a, b) not yet decoded, cut into windows. */
function uncovered(covered: [number, number][], a: number, b: number): [number, number][] {
  const out: [number, number][] = [];
  let x = a;
  for (const [s, e] of covered) {
    if (e <= x) continue;
    if (s >= b) break;
    if (s > x) out.push([x, Math.min(s, b)]);
    x = Math.max(x, e);
  }
  if (x < b) out.push([x, b]);
  return out.filter(([s, e]) => e - s >= MIN_WINDOW).flatMap(([s, e]) => windowsOf(s, e));
}

/** [s, e) cut into equal windows of at most WINDOW seconds. */
function windowsOf(s: number, e: number): [number, number][] {
  const n = Math.ceil((e - s) / WINDOW);
  return Array.from({ length: n }, (_, k) => [s + ((e - s) * k) / n, s + ((e - s) * (k + 1)) / n]);
}


/** What the steps of one alignment share: the options, the files as decoded, the book as recogniser keys. */
interface Run {
  opts: AlignRecordingOptions;
  files: FileState[];
  keys: string[];
  /** Token of each key. */
  keyToken: Int32Array;
  /** 1 for the last key of each sentence. */
  sentenceEnd: Uint8Array;
  /** Per book word: it ends a sentence (its punctuation) or a block of the document (AlignRecordingOptions.blockEnds). */
  endsSentence: Uint8Array;
  index: TextIndex;
  stop: () => Promise<void>;
}

/** A matched region: a run of anchors in one file, its book words claimed by no other region. */
export interface Claim {
  file: number;
  anchors: Anchor[];
  /**
   * A head its words did not find: keys key..first anchor's - 1, read somewhere after `from` or
   * not at all (the per-segment aligner decides); `grownFrom`: where the segment starts with the
   * head grown by sounding time instead, if that fits, for when the aligner's answer moves the
   * first anchor (see timeSegment).
   */
  head?: { key: number; from: number; grownFrom: number | null };
  /** Its first anchor is a head found by its words (headByItsWords): its segment may start inside the heard word before it (segmentStart). */
  headFound?: boolean;
}

/** A stretch of one file and the book tokens the per-segment aligner times in it. */
interface Segment {
  file: number;
  start: number;
  end: number;
  firstToken: number;
  lastToken: number;
  /** Where it can be cut again (between two words heard as the book has them), in time order: a piece the aligner finds no path through is split there. */
  cuts: Cut[];
  /** Per token firstToken..lastToken: 1 when a word of it is an anchor of the region. */
  anchored: Uint8Array;
  /** Per token firstToken..lastToken: where its first anchored word was heard (seconds in the file; NaN if none). */
  heardAt: Float64Array;
  /** Per token firstToken..lastToken: 1 when the recogniser heard it twice (a retake: see retakesOf). */
  retaken: Uint8Array;
  /** A head not found by its words (Claim.head), its region's first segment's first tokens. */
  head?: SegmentHead;
  /** Tokens at its start (`lead`) and end (`tail`) that its region's edge sentences hold and that may be left out (see edgeSentences). */
  lead: number;
  tail: number;
}

interface SegmentHead {
  /** Its tokens: they may be left out. */
  tokens: number;
  /** Where the segment starts without them (just before the first anchor), and that anchor's start as heard. */
  bodyStart: number;
  anchorAt: number;
  /** Where it starts with the head grown by sounding time (Claim.head.grownFrom). */
  grownStart: number | null;
}

interface Cut {
  /** Seconds in the file. */
  at: number;
  /** First book token after the cut. */
  token: number;
}

export async function alignRecording(opts: AlignRecordingOptions): Promise<RecordingAlignment> {
  await checkInput(opts);
  const { keys, keyToken, sentenceEnd } = bookKeys(opts.words, opts.language);
  checkTextLength(keys.length);
  const ownDir = !opts.workDir;
  const workDir = opts.workDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'lectern-recording-'));
  const stop = async () => {
    if (opts.signal?.aborted || (await opts.shouldStop?.())) throw new RecordingAlignmentStopped();
  };
  try {
    const decoded = await decodeFiles(opts, workDir, stop);
    const files: FileState[] = decoded.map((d) => ({ decoded: d, covered: [], heard: [], runs: [] }));
    const endsSentence = Uint8Array.from(opts.words, (w) => (isSentenceEnd(w) ? 1 : 0));
    for (const t of opts.blockEnds ?? []) if (t >= 0 && t < endsSentence.length) endsSentence[t] = 1;
    const run: Run = { opts, files, keys, keyToken, sentenceEnd, endsSentence, index: buildTextIndex(keys), stop };
    const located = await locate(run, workDir);
    await stop();
    // the failure rules judge what the book-wide recogniser heard on its own: islands are
    // heard with a model of nothing but nearby text, which finds that text in any audio
    const found = keepSentencesWhole(run, claimRegions(files));
    growToSentenceEdges(run, found, located.pace);
    const { decodedSeconds } = located;
    const { heardMatched, perMinute } = checkMatch(files, found, decodedSeconds);
    const pace = await hearIslands(run, workDir, located.pace, located.dictionary);
    const claims = keepSentencesWhole(run, claimRegions(files));
    growToSentenceEdges(run, claims, pace);
    const { order, offsets, byName } = readingOrder(files, claims, opts.names ?? opts.files.map((f) => path.basename(f)));
    // title tracks: placed by their names, matched word by word in the text between their
    // neighbours (so they leave the order as it is: there are none unless the names give it)
    const titles = titleClaims(byName, files.map((f) => f.heard), claims, run.index, pace);
    claims.push(...titles);
    growToSentenceEdges(run, claims, pace, titles);
    const segments = cutSegments(run, claims);
    const timed = await timeSegments(run, segments, offsets);
    const acrossCuts = await timeCutSentences(run, order, offsets, claims, timed, pace);
    return report(run, { ...timed, order, offsets, claims, segments, acrossCuts, heardMatched, perMinute, decodedSeconds });
  } finally {
    if (ownDir) fs.rmSync(workDir, { recursive: true, force: true });
  }
}

async function checkInput(opts: AlignRecordingOptions): Promise<void> {
  if (!opts.files.length) throw new SpeechInputError('no audio files to align');
  if (!opts.words.length) throw new SpeechInputError('the document has no words to align');
  if (opts.names && opts.names.length !== opts.files.length) throw new SpeechInputError(`${opts.names.length} names for ${opts.files.length} audio files`);
  if (!(await recordingLanguageSupported(opts.language))) {
    throw new SpeechInputError(`cannot locate the text in a recording in language "${opts.language}": long recordings can be aligned in ${RECORDING_LANGUAGES}; eSpeak NG has no voice for it`);
  }
}

/**
 * The recogniser hears any speech as the book's words (its model holds nothing else), so a run
 * shorter than MIN_ANCHORS is chance; a text that short could only ever be refused as not speech.
 */
function checkTextLength(spoken: number): void {
  if (spoken < MIN_ANCHORS) {
    throw new SpeechInputError(`the text holds ${spoken} spoken word${spoken === 1 ? '' : 's'}: a recording is located in its text by runs of ${MIN_ANCHORS} words heard in order, so a read-along needs a text of at least ${MIN_ANCHORS} words`);
  }
}

/** 1. Every file decoded once, two at a time (ffmpeg is single-threaded for audio). */
async function decodeFiles(opts: AlignRecordingOptions, workDir: string, stop: () => Promise<void>): Promise<DecodedFile[]> {
  const decodedFiles: DecodedFile[] = new Array(opts.files.length);
  let nextFile = 0, filesDone = 0;
  opts.onProgress?.({ phase: 'decode', done: 0, total: opts.files.length });
  await Promise.all(
    Array.from({ length: Math.min(2, opts.files.length) }, async () => {
      for (let i = nextFile++; i < opts.files.length; i = nextFile++) {
        await stop();
        const decoded = await decodeRecordingFile(opts.files[i]!, i, workDir, opts.signal);
        decodedFiles[i] = opts.suppressReverb === false ? decoded : await hearThroughRoom(decoded, opts.signal);
        opts.onProgress?.({ phase: 'decode', done: ++filesDone, total: opts.files.length });
      }
    }),
  );
  return decodedFiles;
}

/** The first pass's windows: every file in full when the recording is short, else one window in every SPARSE_STRIDE seconds of each file longer than SHORT_FILE, the short ones in full. */
export function firstWindows(files: { decoded: { index: number; duration: number } }[], totalSeconds: number): AudioWindow[] {
  const dense = totalSeconds <= DENSE_UP_TO;
  const pending: AudioWindow[] = [];
  for (const f of files) {
    const stride = dense || f.decoded.duration <= SHORT_FILE ? WINDOW : SPARSE_STRIDE;
    for (let t = 0; t < f.decoded.duration; t += stride) {
      // a file heard in full is heard to its end: a last piece too short for a window of its
      // own goes to the window before it (dropped, it took a chapter's last word: jfk's
      // "country." in the last 1.2 s of a 41.2 s file, bench/messy-placements.bench.ts draw 20)
      const rest = f.decoded.duration - (t + WINDOW);
      const end = stride === WINDOW && rest > 0 && rest < MIN_WINDOW ? f.decoded.duration : Math.min(f.decoded.duration, t + WINDOW);
      if (end - t >= MIN_WINDOW || t === 0) pending.push({ file: f.decoded.index, start: t, end });
    }
  }
  return pending;
}

/** 2. Locate: passes of recognition until every stretch whose anchors do not fit the pace has been heard. */
async function locate(run: Run, workDir: string): Promise<{ pace: Pace; decodedSeconds: number; dictionary: Map<string, string[]> }> {
  const { opts, files, keys, stop } = run;
  const words = new Set(keys);
  const recognizer = createBookRecognizer(words, { workDir, language: opts.language, sentences: sentencesIn(run, 0, keys.length - 1), processes: opts.processes, dictionary: await bookDictionary(words, opts.language), scorer: opts.recognizerScorer, energyAsRecorded: opts.energyAsRecorded });
  let pending = firstWindows(files, files.reduce((s, f) => s + f.decoded.duration, 0));
  let pace: Pace = DEFAULT_PACE;
  let decodedSeconds = 0;
  let plannedSeconds = pending.reduce((s, w) => s + w.end - w.start, 0);
  for (let pass = 0; pass < MAX_PASSES && pending.length; pass++) {
    await stop();
    const doneBefore = decodedSeconds;
    const progress = (done: number) => opts.onProgress?.({ phase: 'locate', done: Math.round(done), total: Math.round(Math.max(plannedSeconds, doneBefore + 1)) });
    progress(doneBefore);
    const windows = pending;
    const heard = await recognizer.recognize(
      files.map((f) => f.decoded),
      windows,
      { signal: opts.signal, stop, onWindows: (n) => progress(doneBefore + windows.slice(0, n).reduce((s, w) => s + w.end - w.start, 0)) },
    );
    decodedSeconds += addHeard(files, windows, heard);
    const chained = chainAll(run, pace);
    pace = chained.pace;
    pending = [];
    // each second is heard once: what an earlier want of this pass asked for is covered too
    // (the windows beside a run's short stretches and between its runs can overlap, and audio
    // decoded twice gave its heard words twice, breaking the trigrams there)
    const want = (fi: number, a: number, b: number) => {
      const planned = [...files[fi]!.covered, ...pending.filter((w) => w.file === fi).map((w): [number, number] => [w.start, w.end])].sort((x, y) => x[0] - y[0]);
      for (const [s, e] of uncovered(planned, Math.max(0, a), Math.min(files[fi]!.decoded.duration, b))) pending.push({ file: fi, start: s, end: e });
    };
    files.forEach((f, fi) => {
      f.runs = findRuns(run, chained, fi, want);
      if (f.runs.length) {
        // what lies before, between and after the matched runs
        want(fi, 0, f.runs[0]![0]!.start);
        for (let r = 1; r < f.runs.length; r++) want(fi, f.runs[r - 1]!.at(-1)!.end, f.runs[r]![0]!.start);
        want(fi, f.runs.at(-1)!.at(-1)!.end, f.decoded.duration);
      }
    });
    // a recording that matched nothing after its first pass is refined no further (another text)
    if (!files.some((f) => f.runs.length)) pending = [];
    plannedSeconds = decodedSeconds + pending.reduce((s, w) => s + w.end - w.start, 0);
  }
  return { pace, decodedSeconds, dictionary: recognizer.dictionary };
}

/**
 * 2b. Islands (islands.ts): the audio beside the runs, heard again, each stretch with a language
 * model of only the free text beside its runs; its heard words replace the book-wide
 * recogniser's there, and the anchors are chained again.
 */
async function hearIslands(run: Run, workDir: string, pace: Pace, dictionary: Map<string, string[]>): Promise<Pace> {
  // rounds: a file that matched nothing can gain a run from its first island, and then the
  // rest of it is beside a run
  const heardBefore = new Set<string>();
  for (let round = 0; round < ISLAND_ROUNDS; round++) {
    const islands = islandsToHear(run.files.map((f) => ({ duration: f.decoded.duration, runs: f.runs })), run.index, pace).filter((isl) => {
      const key = `${isl.file}:${isl.start.toFixed(2)}:${isl.end.toFixed(2)}:${JSON.stringify(isl.text)}`;
      return !heardBefore.has(key) && heardBefore.add(key);
    });
    if (!islands.length) break;
    pace = await hearIslandsOnce(run, workDir, islands, pace, round, dictionary);
  }
  return pace;
}

async function hearIslandsOnce(run: Run, workDir: string, islands: Island[], pace: Pace, round: number, dictionary: Map<string, string[]>): Promise<Pace> {
  const { opts, files, stop } = run;
  const windows: AudioWindow[][] = islands.map((isl) => windowsOf(isl.start, isl.end).map(([start, end]) => ({ file: isl.file, start, end })));
  // one recogniser run per island, each with its own model: islands joined into models of up to
  // 400 words lost 55 more spoken words of the bench's messy book and timed 9 more unread ones
  const heard: HeardWord[][][] = new Array(islands.length);
  let next = 0;
  const hear = async () => {
    for (let i = next++; i < islands.length; i = next++) {
      await stop();
      const sentences = islands[i]!.text.flatMap(([k0, k1]) => sentencesIn(run, k0, k1));
      const dir = path.join(workDir, `island${round}-${i}`);
      fs.mkdirSync(dir, { recursive: true });
      try {
        // a file that matched nothing is heard with each utterance's own cepstral mean: its speech
        // may be one sentence after seconds of music, noise or a preface in another voice, and a
        // mean carried over those heard the sentence as other words (messy-placements draws 66,
        // 169, 234: "He might even have been made amiable himself." untimed, the file order wrong)
        const cmn = files[islands[i]!.file]!.runs.length ? 'live' : 'utterance';
        const recognizer = createBookRecognizer(new Set(sentences.flat()), { workDir: dir, language: opts.language, sentences, processes: 1, dictionary, scorer: opts.recognizerScorer, cmn, energyAsRecorded: opts.energyAsRecorded });
        // no trigram to anchor with: names and numbers the dictionary lacks are all the text there is
        // beside runs, an utterance that sounds like the narrator is heard with the narrator's
        // mean (round 29: a sentence after music, heard with the mean the music left, came out as
        // other words; messy-placements draws 86, 149, 168, 221, 266, 281)
        const narrator = cmn === 'live' ? narratorSpeech(files[islands[i]!.file]!, islands[i]!) : undefined;
        if (recognizer.known.size >= 3) heard[i] = await recognizer.recognize(files.map((f) => f.decoded), windows[i]!, { signal: opts.signal, stop, narrator });
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(Math.max(1, opts.processes ?? os.availableParallelism()), islands.length) }, hear));
  const heardIslands = islands.flatMap((isl, i) => (heard[i] ? [i] : []));
  for (const i of heardIslands) {
    const f = files[islands[i]!.file]!;
    f.heard = f.heard.filter((h) => (h.start + h.end) / 2 < islands[i]!.start || (h.start + h.end) / 2 >= islands[i]!.end);
  }
  addHeard(files, heardIslands.flatMap((i) => windows[i]!), heardIslands.flatMap((i) => heard[i]!), true);
  const chained = chainAll(run, pace);
  files.forEach((f, fi) => (f.runs = findRuns(run, chained, fi, () => {})));
  return chained.pace;
}

/**
 * The file's anchored speech nearest the island, up to WARM_UP seconds of a run's anchors ending
 * at its start or starting at its end (an island inside a run: the anchors around it), or none
 * where that lasts under a second.
 */
function narratorSpeech(f: FileState, isl: Island): AudioWindow | undefined {
  let best: AudioWindow | undefined, bestGap = Infinity;
  const take = (start: number, end: number, gap: number) => {
    if (end - start >= 1 && gap < bestGap) (bestGap = gap), (best = { file: isl.file, start, end });
  };
  for (const r of f.runs) {
    let i = r.length - 1;
    while (i >= 0 && r[i]!.end > isl.start + 1e-6) i--;
    if (i >= 0) {
      let j = i;
      while (j > 0 && r[j - 1]!.start >= r[i]!.end - WARM_UP) j--;
      take(r[j]!.start, r[i]!.end, isl.start - r[i]!.end);
    }
    let k = 0;
    while (k < r.length && r[k]!.start < isl.end - 1e-6) k++;
    if (k < r.length) {
      let m = k;
      while (m + 1 < r.length && r[m + 1]!.end <= r[k]!.start + WARM_UP) m++;
      take(r[k]!.start, r[m]!.end, r[k]!.start - isl.end);
    }
  }
  return best;
}

/** A pass's heard words into their files; each heard word learns its stretch of continuously decoded audio. Returns the seconds decoded. */
function addHeard(files: FileState[], windows: AudioWindow[], heard: Awaited<ReturnType<BookRecognizer['recognize']>>, island = false): number {
  let seconds = 0;
  windows.forEach((w, k) => {
    const f = files[w.file]!;
    f.covered.push([w.start, w.end]);
    for (const h of heard[k]!) f.heard.push({ ...h, stretch: -1, ...(island ? { island } : {}) });
    seconds += w.end - w.start;
  });
  for (const f of files) {
    f.covered.sort((a, b) => a[0] - b[0]);
    f.heard.sort((a, b) => a.start - b.start);
    // touching windows make one stretch of continuously decoded audio
    const stretches: [number, number][] = [];
    for (const [s, e] of f.covered) {
      const last = stretches[stretches.length - 1];
      if (last && s <= last[1] + 0.01) last[1] = Math.max(last[1], e);
      else stretches.push([s, e]);
    }
    for (const h of f.heard) {
      const mid = (h.start + h.end) / 2;
      h.stretch = stretches.findIndex(([s, e]) => mid >= s - 1e-6 && mid <= e + 1e-6);
    }
  }
  return seconds;
}

/** The anchor chains of every file and the narrator's pace they show. */
interface Chained {
  pace: Pace;
  chains: Anchor[][];
  /** Seconds the text between two anchors takes at the pace. */
  predicted: (a: Anchor, b: Anchor) => number;
  /** Median and spread of the log ratio (time taken / predicted) across undecoded audio. */
  mid: number;
  spread: number;
}

/** Chain loosely, learn the narrator's pace, chain again in step with it; then how far out of step the gaps across undecoded audio are. */
function chainAll(run: Run, previous: Pace): Chained {
  const { files, index } = run;
  let pace = previous;
  const loose = files.map((f) => chainAnchors(f.heard, index, DEFAULT_PACE));
  const paces = loose.map((a) => measurePace(a, index)).filter((p): p is number => p !== null).sort((a, b) => a - b);
  if (paces.length) pace = { secondsPerChar: paces[Math.floor(paces.length / 2)]!, low: 0.6, high: 1.7, slack: 10 };
  const chains = pace === DEFAULT_PACE ? loose : files.map((f) => chainAnchors(f.heard, index, pace));
  const predicted = (a: Anchor, b: Anchor) => Math.max(0.2, (index.charsBefore[b.key]! - index.charsBefore[a.key]!) * pace.secondsPerChar);
  // gaps between anchors across undecoded audio: how far out of step is each (log ratio)?
  const sampledRatios: number[] = [];
  for (const chain of chains) {
    for (let k = 1; k < chain.length; k++) {
      const a = chain[k - 1]!, b = chain[k]!;
      if (a.stretch !== b.stretch) sampledRatios.push(Math.log((b.start - a.start) / predicted(a, b)));
    }
  }
  const mid = median(sampledRatios);
  const spread = Math.max(0.1, 3 * 1.4826 * median(sampledRatios.map((r) => Math.abs(r - mid))));
  return { pace, chains, predicted, mid, spread };
}

function median(xs: number[]): number {
  return xs.length ? [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]! : 0;
}

/**
 * Book words between two anchors of one decoded stretch were not read when far fewer words were
 * heard for them (a misheard stretch still yields about as many heard words as it has) and the
 * anchors are closer in time than SKIP_MAX_PACE of what the words between take at the reader's
 * pace: a skip leaves a pause, not the words' time. A borrowed model hears some read phrases as
 * nothing (Italian: "… modificate. [Tutti gli operatori della] ditta …", 1.4 s between the
 * anchors, 0 words heard), and those split the region and went untimed.
 */
function skipped(a: Anchor, b: Anchor, predicted: Chained['predicted']): boolean {
  const bookGap = b.key - a.key - 1, heardGap = b.heard - a.heard - 1;
  return a.stretch === b.stretch && bookGap >= 4 && heardGap < bookGap / 2 - 1 && b.start - a.start < SKIP_MAX_PACE * predicted(a, b);
}

/** A file's matched runs of anchors; gaps out of step across audio nobody heard, and those beside unconfirmed edges, go to `want` (decoded on the next pass). */
function findRuns(run: Run, c: Chained, fi: number, want: (fi: number, a: number, b: number) => void): Anchor[][] {
  const chain = c.chains[fi]!;
  const fits = (a: Anchor, b: Anchor) => {
    const dt = b.start - a.start, pred = c.predicted(a, b);
    if (a.stretch === b.stretch) {
      // all of the audio between was heard: the words between must be few on both
      // sides (recognition slips), and the time must fit them
      const gk = b.key - a.key - 1, gh = b.heard - a.heard - 1;
      if (skipped(a, b, c.predicted)) {
        // A skip next to the edge of the decoded audio is unconfirmed: a phrase the book has
        // twice ("…can do for you, ask what you can do for your…") heard up to the window's
        // edge chains to its second occurrence. Hear what follows (precedes) it on the next pass.
        const heard = run.files[fi]!.heard;
        if (heard[b.heard + 1]?.stretch !== b.stretch) want(fi, b.end, b.end + WINDOW);
        if (heard[a.heard - 1]?.stretch !== a.stretch) want(fi, a.start - WINDOW, a.start);
        return false;
      }
      if (gk > MAX_GAP_WORDS || gh > MAX_GAP_WORDS) return false;
      // (a pause of a few seconds fits; music or noise between sentences does not)
      return dt >= 0.3 * pred - 1 && dt <= 2 * pred + MAX_PAUSE;
    }
    if (Math.abs(Math.log(dt / pred) - c.mid) <= c.spread) return true;
    want(fi, a.end, b.start); // out of step across audio nobody heard: hear it
    return false;
  };
  const all = splitRuns(chain, fits, MIN_SHORT_RUN).map((r) => r.anchors);
  // a short run counts only beside a long one whose text it continues (a sentence
  // after music, a line after a pause): alone, three words are chance
  const long = (r: Anchor[]) => r.length >= MIN_ANCHORS;
  const continues = (a: Anchor[] | undefined, b: Anchor[] | undefined) => !!a && !!b && b[0]!.key - a.at(-1)!.key - 1 <= MAX_GAP_WORDS && b[0]!.key > a.at(-1)!.key;
  const heard = run.files[fi]!.heard;
  // runs heard only by an island, amid words that match nothing, are chance too: a run alone, or
  // several that continue each other's text (a group), judged together
  const groupOf: number[] = [];
  const groups: Anchor[][] = [];
  all.forEach((r, i) => {
    if (i && continues(all[i - 1], r)) groups.at(-1)!.push(...r);
    else groups.push([...r]);
    groupOf.push(groups.length - 1);
  });
  const chanceGroup = groups.map((g) => islandChance(g, heard));
  // and one heard only by an island, amid words that match little, whose text runs on into a neighbour's across speech the text between cannot hold
  const speechWedges = (a: Anchor[] | undefined, b: Anchor[] | undefined) => continues(a, b) && speechBetween(a!, b!, heard);
  const wedged = (i: number) => islandChance(all[i]!, heard, WEDGED_MATCH) && (speechWedges(all[i - 1], all[i]) || speechWedges(all[i], all[i + 1]));
  const kept = all.filter((r, i) => (long(r) || (long(all[i - 1] ?? []) && continues(all[i - 1], r)) || (long(all[i + 1] ?? []) && continues(r, all[i + 1])) || readsItsSentence(run, r, heard)) && !chanceGroup[groupOf[i]!] && !wedged(i));
  const runs = joinRuns(kept, c.predicted, run.keyToken).map((r) => chanceUtterancesCut(trimEdges(r, c.predicted), heard, (k) => keyEndsSentence(run, k))).filter((r) => r.length >= MIN_SHORT_RUN);
  for (const r of runs) for (const [a, b] of unconfirmedEdges(r)) want(fi, a, b);
  return runs;
}

/**
 * A run that only an island heard, amid words of its model that match nothing (round 21). An
 * island's language model holds nothing but the text nearby, so any speech comes out as that
 * text's words, and now and then as a few of them in the book's order: a spoken preface heard
 * with the model of an unread paragraph before the first chapter gave "to the temperature at
 * which" among 30 heard words that chained to nothing within 3 s either side, and the region
 * grown from it timed the paragraph's 43 words over the preface (bench/messy-placements.bench.ts,
 * draws 0 and 29: 0.16 and 0.17 of the words heard within 3 s were the run's). Text that is read
 * comes out of its island mostly in order: such a run (one that continues no neighbouring run's
 * text) is kept when at least ISLAND_MATCH of the words heard within ISLAND_CONTEXT seconds of
 * it are its anchors. Read text's runs of that kind came to 0.25-0.68 on the language benches
 * (51 runs, borrowed models included: the language heard worst), at least 0.4 on the English
 * messy books, and the narrated books had none; so none of them is dropped.
 */
function islandChance(r: Anchor[], heard: HeardIn[], share = ISLAND_MATCH): boolean {
  if (!islandOnly(r, heard)) return false;
  const from = r[0]!.start - ISLAND_CONTEXT, to = r.at(-1)!.end + ISLAND_CONTEXT;
  const around = heard.filter((h) => h.end > from && h.start < to).length;
  return r.length < share * around;
}

/**
 * A run without its first or last utterance (heard words with no pause of UTTERANCE_PAUSE
 * between them) when only an island heard it, a pause longer than LONG_EDGE_PAUSE parts it from
 * the rest of the run, and it holds one anchor or under ISLAND_MATCH of the words heard there
 * (round 26): islandChance's measure, for a run's edge. An island's model makes
 * any speech the nearby text, and a file of the preface and one sentence, heard with the text
 * before that sentence, gave the preface's last utterance one of its words, the unread sentence's
 * last ("them", of 9 heard), 1.8 s before "He was not an ill disposed young man."; the region
 * then took that unread sentence, 19 words over the preface (messy-placements draw 37).
 */
export function chanceUtterancesCut(r: Anchor[], heard: HeardIn[], endsSentence: (key: number) => boolean): Anchor[] {
  // (a pause longer than a reader makes inside a sentence between it and the rest: a borrowed
  // model's island hears read prompts so poorly that their utterances next to the rest fall under
  // the share, Italian seed 29 and Spanish seed 13: 12 and 6 words lost. One word alone there is
  // chance too when a sentence ends between it and the rest: the island heard the skipped
  // sentence's "and" in the music after the one before it, draw 49. A lone word inside a sentence
  // is kept, as a reader's pause before a sentence's last words may be long. The share cost the
  // English messy book of seed 11 a telephone prompt, "press star now.": 3 anchors of 21 heard
  // words 3.2 s from the rest, as the unread paragraphs over the preface in draws 224 and 239)
  const chance = (edge: Anchor[], from: number, to: number, pause: number, across: boolean) =>
    pause > LONG_EDGE_PAUSE && islandOnly(edge, heard) && ((edge.length === 1 && across) || edge.length < ISLAND_MATCH * (to - from + 1));
  const [i0, j0] = utteranceAround(heard, r[0]!.heard);
  const head = r.filter((a) => a.heard <= j0);
  const next = r[head.length];
  const rest = next && chance(head, i0, j0, next.start - head.at(-1)!.end, endsSentence(head.at(-1)!.key)) ? r.slice(head.length) : r;
  const [i1, j1] = utteranceAround(heard, rest.at(-1)!.heard);
  const tail = rest.filter((a) => a.heard >= i1);
  const before = rest[rest.length - tail.length - 1];
  return before && chance(tail, i1, j1, tail[0]!.start - before.end, endsSentence(before.key)) ? rest.slice(0, rest.length - tail.length) : rest;
}

/** The first and last heard words of the utterance holding heard word h: no pause of UTTERANCE_PAUSE between them. */
function utteranceAround(heard: HeardIn[], h: number, until = h): [number, number] {
  const joined = (a: HeardIn, b: HeardIn) => a.stretch === b.stretch && b.start - a.end < UTTERANCE_PAUSE;
  let i = h, j = until;
  while (i > 0 && joined(heard[i - 1]!, heard[i]!)) i--;
  while (j < heard.length - 1 && joined(heard[j]!, heard[j + 1]!)) j++;
  return [i, j];
}

/** Whether a sentence ends at book key k (its punctuation, or the end of a block). */
function keyEndsSentence(run: Run, k: number): boolean {
  return run.sentenceEnd[k] === 1 || run.endsSentence[run.keyToken[k]!] === 1;
}

/**
 * A short run (3 or 4 anchors: alone, chance) kept because the book-wide recogniser heard it
 * within one utterance (heard words with no pause of UTTERANCE_PAUSE between them) that reads one
 * sentence of the book (round 24): the utterance holds at most UTTERANCE_EXTRA times the
 * sentence's words, and SENTENCE_MATCH of the sentence's words, and at least as many as a run
 * needs anchors (MIN_ANCHORS), are heard in order. A sentence read alone (a chapter file of the
 * preface and one sentence, or music and one sentence) came out as "the black even as been made
 * amiable himself" for "He might even have been made amiable himself.": 4 anchors, 5 of 8 words
 * in order; the file matched nothing, its sentence went untimed and the file order was wrong
 * (messy-placements draws 31, 73, 114 and 133). With 5 words in order and no share, the
 * preface's 40 words gave 5 of a 53-word sentence of an unread paragraph, and 53 words were timed
 * over it. An island's words are not taken: its model makes any speech the nearby text.
 */
function readsItsSentence(run: Run, r: Anchor[], heard: HeardIn[]): boolean {
  if (r.some((a) => heard[a.heard]!.island)) return false;
  const ends = (k: number) => keyEndsSentence(run, k);
  let k0 = r[0]!.key, k1 = r.at(-1)!.key;
  for (let k = k0; k < k1; k++) if (ends(k)) return false;
  while (k0 > 0 && !ends(k0 - 1)) k0--;
  while (k1 < run.keys.length - 1 && !ends(k1)) k1++;
  const sentence = run.keys.slice(k0, k1 + 1);
  const [i, j] = utteranceAround(heard, r[0]!.heard, r.at(-1)!.heard);
  const said = heard.slice(i, j + 1).map((h) => h.word);
  if (said.length > UTTERANCE_EXTRA * sentence.length) return false;
  return inOrder(said, sentence) >= Math.max(MIN_ANCHORS, SENTENCE_MATCH * sentence.length);
}

/** The length of the longest common subsequence of two word lists. */
function inOrder(a: string[], b: string[]): number {
  let prev = new Array<number>(b.length + 1).fill(0);
  for (const x of a) {
    const cur = [0];
    for (let j = 0; j < b.length; j++) cur.push(x === b[j] ? prev[j]! + 1 : Math.max(prev[j + 1]!, cur[j]!));
    prev = cur;
  }
  return prev[b.length]!;
}

const islandOnly = (r: Anchor[], heard: HeardIn[]) => r.every((a) => heard[a.heard]?.island);

/**
 * Whether UNEXPLAINED_WORDS more words were heard between run `a` and run `b` (which continues
 * a's text a few words on) than the book has between them (round 24). An island's model holds
 * nothing but the text nearby, so any speech comes out as its words, now and then a few in
 * order: a spoken preface before a chapter whose first sentence was skipped gave that sentence's
 * "… power to do" 5.9 s before the next sentence's reading, with 15 words heard between where
 * the book has 3, and the region grown from it timed the 22 unread words over the preface
 * (bench/messy-placements.bench.ts, draws 12, 42 and 44: 12-13 words more). Read text can leave
 * as many: a Russian prompt heard by an island with a borrowed model had 6 more words before it
 * over 15 s (seed 11), and a 27-anchor run of read Russian (seed 13) was dropped with them. So the
 * run must also be under WEDGED_MATCH of the words heard within ISLAND_CONTEXT of it (islandChance):
 * the chance runs so dropped were 0.11-0.20 on 288 draws, the read ones 0.24 and 0.71. Words of
 * the runs' own text are counted too: in the island's decode every word is one of them.
 */
export function speechBetween(a: Anchor[], b: Anchor[], heard: HeardIn[]): boolean {
  const t0 = a.at(-1)!.end, t1 = b[0]!.start;
  const n = heard.filter((h) => (h.start + h.end) / 2 > t0 && (h.start + h.end) / 2 < t1).length;
  return n - (b[0]!.key - a.at(-1)!.key - 1) >= UNEXPLAINED_WORDS;
}

/**
 * Audio to hear on the next pass (seconds) beside a run's edge of fewer than MIN_ANCHORS
 * anchors that joins the rest only across audio nobody heard: the window next to the edge, on
 * the unheard side. Such an edge is unconfirmed: a phrase the text has more than once, heard at
 * a window's edge, chains to whichever copy fits the pace (on the Spanish bench, seed 11, "… de
 * numero. Para" heard after 30 s of unheard audio, at a copy of the phrase 8 s from where it is
 * read: the region's last segment held too little audio for its text, 35 s of it went to the
 * dtw fallback, and 35 words were timed outside their prompt). Heard beside it, the text before
 * it confirms the edge or the chain finds the right copy. The same holds for a stretch inside
 * the run with unheard audio on both sides and no more anchors than one trigram gives
 * (MIN_SHORT_RUN; round 23): the windows on both sides of it. On the Spanish bench, seed 29, "No
 * hay mensajes" heard as "no hay mas", the start of a prompt ten words on, was linked in step
 * 40 s after the anchor before it; the audio between (music, a skipped prompt) was never heard,
 * and one region spread a prompt and a half of text over it (31 words outside their prompt once
 * links in step cost something). Stretches of up to 4 anchors gave the same books and made the
 * bench hour's locate hear 36 % of its audio instead of 31 % (this rule: 33 %).
 */
export function unconfirmedEdges(r: Anchor[]): [number, number][] {
  const { head, tail } = edgeBreaks(r, MIN_ANCHORS, (a, b) => a.stretch !== b.stretch);
  const out: [number, number][] = [];
  if (head > 0) out.push([r[head - 1]!.end, Math.min(r[head]!.start, r[head - 1]!.end + WINDOW)]);
  if (tail > 0 && tail !== head) out.push([Math.max(r[tail - 1]!.end, r[tail]!.start - WINDOW), r[tail]!.start]);
  // inside the run: a decoded stretch with one trigram's anchors and unheard audio on both sides
  const to = tail > 0 ? tail : r.length;
  for (let i = Math.max(head, 0); i < to; ) {
    let j = i + 1;
    while (j < to && r[j]!.stretch === r[i]!.stretch) j++;
    if (i > 0 && j < r.length && j - i <= MIN_SHORT_RUN) out.push([Math.max(r[i - 1]!.end, r[i]!.start - WINDOW), r[i]!.start], [r[j - 1]!.end, Math.min(r[j]!.start, r[j - 1]!.end + WINDOW)]);
    i = j;
  }
  return out;
}

/** A token read out for longer than this is not believed to be one reading (see joinRuns). */
const MAX_TOKEN_SECONDS = 10;

/**
 * Neighbouring runs joined into regions:
 * - Two runs that follow each other in both text and time, with a gap whose length fits the
 *   words between at the reader's pace, are one region whose middle the recogniser misheard (a
 *   name, a noisy line): only the chance anchors were worth dropping.
 * - Two runs that meet inside one token of the book, in audio heard without a break and within
 *   MAX_TOKEN_SECONDS, are one reading of it: a URL or a path read out
 *   ("http://www.gnu.org/licenses/", "/usr/share/…") lasts seconds, while its keys' letters
 *   (http www gnu org licenses) predict a fraction of that, so its inner gap fails the pace.
 *   Unjoined, both regions held the token and its audio went to neither (the Live Systems
 *   Manual read aloud, bench/narrated-book.bench.ts: 6.2 s of it timed by the dtw fallback).
 */
export function joinRuns(kept: Anchor[][], predicted: Chained['predicted'], keyToken: ArrayLike<number>): Anchor[][] {
  const oneToken = (a: Anchor, b: Anchor) => a.stretch === b.stretch && keyToken[a.key] === keyToken[b.key] && b.start - a.start <= MAX_TOKEN_SECONDS;
  const runs: Anchor[][] = [];
  for (const r of kept) {
    const prev = runs[runs.length - 1];
    const a = prev?.[prev.length - 1], b = r[0]!;
    const inStep = prev && a && b.key > a.key && (oneToken(a, b) || Math.abs(b.start - a.start - predicted(a, b)) <= 1.5 + 0.35 * predicted(a, b));
    if (inStep && !skipped(a, b, predicted)) prev.push(...r);
    else runs.push([...r]);
  }
  return runs;
}

/**
 * A run's edges that the audio does not support, cut off in two steps:
 * - Its last (first) few anchors past book words that got no time: the recogniser heard the
 *   run's last word as the first words of the text after it, which the book's model expects there
 *   ("… suivi du dièse." heard as "suivi du plus tard on", the next, unread paragraph's "Des années
 *   plus tard, on …"). Inside a run such a slip costs nothing (the segment's forced alignment times
 *   every word of its text); at its edge it drags unread words into the region. So fewer than
 *   MIN_ANCHORS anchors beyond two or more book words and no heard ones, in far less time than
 *   those words take at the pace, are cut off.
 * - Then fewer than MIN_SHORT_RUN anchors joined to the rest of the run only across undecoded
 *   audio and more than MAX_GAP_WORDS book words (a run inside decoded audio never has such a
 *   gap): a stray word at the edge of a window, nothing beside it to confirm which of the book's
 *   copies of it was heard. A phrase the text repeats ("… el modo mudo. En modo mudo …") put a
 *   region's first anchor 23 words early, and the per-segment aligner then spread the next
 *   13 s of its text over audio that reads the words before it (Spanish bench seed 11: 82
 *   instead of 97 words outside their prompt, 24 more spoken words timed). Cut, the stretch is
 *   heard again as an island with its own text.
 */
export function trimEdges(r: Anchor[], predicted: Chained['predicted']): Anchor[] {
  const compressed = (a: Anchor, b: Anchor) => a.stretch === b.stretch && b.key - a.key - 1 >= 2 && b.heard - a.heard === 1 && b.start - a.start < 0.3 * predicted(a, b);
  const far = (a: Anchor, b: Anchor) => b.key - a.key - 1 > MAX_GAP_WORDS;
  return cutEdges(cutEdges(r, MIN_ANCHORS, compressed), MIN_SHORT_RUN, far);
}

/** The last gap `breaks` among a run's first n anchors, and the first among its last n: the index of the anchor after it, or -1. */
function edgeBreaks(r: Anchor[], n: number, breaks: (a: Anchor, b: Anchor) => boolean): { head: number; tail: number } {
  const at = (i: number) => i > 0 && breaks(r[i - 1]!, r[i]!);
  return { head: r.findLastIndex((_, i) => i < n && at(i)), tail: r.findIndex((_, i) => i > r.length - n && at(i)) };
}

/** The run without its head up to the last gap `breaks` among its first n anchors, nor its tail from the first among its last n. */
function cutEdges(r: Anchor[], n: number, breaks: (a: Anchor, b: Anchor) => boolean): Anchor[] {
  const { head, tail } = edgeBreaks(r, n, breaks);
  return r.slice(Math.max(0, head), tail > 0 ? tail : r.length);
}

/** b's text follows a's within MAX_GAP_WORDS book words, and b comes later in the audio. */
function inTextAfter(a: Anchor, b: Anchor): boolean {
  return b.key > a.key && b.key - a.key - 1 <= MAX_GAP_WORDS && b.start > a.start;
}

/** 3. Regions: longest run first; a book word belongs to one region only. */
export function claimRegions(files: Pick<FileState, 'runs'>[]): Claim[] {
  const claims: Claim[] = [];
  files.forEach((f, fi) => f.runs.forEach((anchors) => claims.push({ file: fi, anchors })));
  claims.sort((a, b) => b.anchors.length - a.anchors.length);
  const taken: [number, number][] = [];
  const kept: Claim[] = [];
  for (const c of claims) {
    const free = c.anchors.filter((a) => !taken.some(([s, e]) => a.key >= s && a.key <= e));
    // the largest stretch of consecutive free anchors
    let best: Anchor[] = [], cur: Anchor[] = [];
    for (const a of c.anchors) {
      if (free.includes(a)) cur.push(a);
      else cur = [];
      if (cur.length > best.length) best = [...cur];
    }
    // a short run counts beside a kept region of its file whose text it continues (findRuns
    // kept it for that: a sentence after music); alone it is chance
    const continues = kept.some((k) => k.file === c.file && best.length && (inTextAfter(k.anchors.at(-1)!, best[0]!) || inTextAfter(best.at(-1)!, k.anchors[0]!)));
    if (best.length < (continues ? MIN_SHORT_RUN : MIN_ANCHORS)) continue;
    taken.push([best[0]!.key, best.at(-1)!.key]);
    kept.push({ file: c.file, anchors: best });
  }
  return kept;
}

/**
 * A sentence is read in one go (round 22): two regions of one file whose text meets inside a
 * sentence, with more than MAX_PAUSE of audio between them, do not share it; the one with fewer
 * anchors in that sentence gives them up (and goes when fewer than MIN_SHORT_RUN are left), and
 * the other grows to the sentence's edge from its own audio. An island hears music or a spoken
 * preface as the words its model expects there, and the run before it went on into the next
 * sentence's first words: "was. And so" with "And so" heard in 8 s of music, so jfk's "And so"
 * were timed over the music, 10 s early; "Chapter 1. He" heard at the end of the preface, and
 * "He" timed 8.4 s before "might even have been" (bench/messy-placements.bench.ts, draws 4 and 33).
 */
export function keepSentencesWhole(run: Pick<Run, 'keyToken' | 'endsSentence'>, claims: Claim[]): Claim[] {
  const { keyToken, endsSentence } = run;
  const sentenceStart = (t: number) => {
    while (t > 0 && !endsSentence[t - 1]) t--;
    return t;
  };
  const sentenceEnd = (t: number) => {
    while (t < endsSentence.length - 1 && !endsSentence[t]) t++;
    return t;
  };
  const byText = [...claims].sort((x, y) => x.file - y.file || x.anchors[0]!.key - y.anchors[0]!.key);
  const drop = new Set<Claim>();
  // a: the region before b in the text that is still kept (one that gave up all its anchors is
  // gone: the next region meets the one before it; round 29, Italian bench seed 11 crashed here)
  let a: Claim | undefined;
  for (const b of byText) {
    const before = a;
    a = b;
    if (!before) continue;
    const last = before.anchors.at(-1)!, first = b.anchors[0]!;
    if (before.file !== b.file || first.start - last.end <= MAX_PAUSE) continue;
    const t0 = keyToken[last.key]!, t1 = keyToken[first.key]!;
    if (t1 <= t0 || sentenceEnd(t0) < t1) continue;
    // the anchors of each region inside the sentence they share
    const from = sentenceStart(t0), to = sentenceEnd(t1);
    const inA = before.anchors.filter((x) => keyToken[x.key]! >= from).length;
    const inB = b.anchors.filter((x) => keyToken[x.key]! <= to).length;
    if (inA === inB) continue;
    const [loser, n] = inA < inB ? [before, inA] : [b, inB];
    loser.anchors = inA < inB ? loser.anchors.slice(0, -n) : loser.anchors.slice(n);
    if (loser.anchors.length < MIN_SHORT_RUN) drop.add(loser);
    if (loser === b && drop.has(b)) a = before;
  }
  return claims.filter((c) => !drop.has(c));
}

/**
 * Edges: recognition often garbles a sentence's first or last words (a first breath, a
 * name); a region grows to its sentence's edge when there is heard speech beside it, no
 * further than a pause away, that lasts about as long as those words take at the reader's pace.
 */
function growToSentenceEdges(run: Run, claims: Claim[], pace: Pace, grow: Claim[] = claims): void {
  const { files, keys, keyToken, index } = run;
  // a block's end (a heading's, a paragraph's) ends its sentence too: grown across one, the War
  // of the Worlds title page's region took the cover's "Cover" from the credits track before it
  const endsSentence = (token: number) => run.endsSentence[token] === 1;
  const keyTaken = (k: number, self: Claim) => claims.some((o) => o !== self && k >= (o.head?.key ?? o.anchors[0]!.key) && k <= o.anchors.at(-1)!.key);
  const heardTaken = (fi: number, h: HeardIn, self: Claim) => claims.some((o) => o !== self && o.file === fi && h.end > o.anchors[0]!.start && h.start < o.anchors.at(-1)!.end);
  for (const c of grow) {
    const f = files[c.file]!;
    const first = c.anchors[0]!;
    let k = first.key;
    while (k > 0 && !endsSentence(keyToken[k - 1]!) && !keyTaken(k - 1, c)) k--;
    const head = k < first.key ? headByItsWords(run, c, k, pace, (p) => heardTaken(c.file, p, c)) : null;
    if (head) {
      c.anchors.unshift(head);
      c.headFound = true;
    } else if (k < first.key) {
      // take heard words back from the anchor, no further than a pause, until they sound
      // about as long as the missing words take
      const need = GROW_NEED * (index.charsBefore[first.key]! - index.charsBefore[k]!) * pace.secondsPerChar;
      let h = first.heard, onset = first.start, sounding = 0;
      for (; h > 0 && sounding < need; h--) {
        const p = f.heard[h - 1]!;
        if (p.stretch !== first.stretch || onset - p.end > EDGE_PAUSE || heardTaken(c.file, p, c)) break;
        onset = p.start;
        sounding += p.end - p.start;
      }
      const grown = fitsPace(index.charsBefore[first.key]! - index.charsBefore[k]!, sounding, pace) ? { heard: h, key: k, start: onset, end: onset, stretch: first.stretch } : null;
      // a head of more than one word, or one not grown, is left to an aligner that can leave it
      // out (round 25); a one-word head left to it was left out now and then (French books,
      // seeds 11 and 29: "Veuillez", "Pour")
      if (run.opts.aligner.skips?.(run.opts.language) && (first.key - k > 1 || !grown)) c.head = { key: k, from: headFrom(run, c, k, pace, claims), grownFrom: grown && segmentStart(f, grown) };
      else if (grown) c.anchors.unshift(grown);
    }
    const last = c.anchors.at(-1)!;
    k = last.key;
    while (k + 1 < keys.length && !endsSentence(keyToken[k]!) && !keyTaken(k + 1, c)) k++;
    if (k > last.key) {
      const need = GROW_NEED * (index.charsBefore[k + 1]! - index.charsBefore[last.key + 1]!) * pace.secondsPerChar;
      let h = last.heard, offset = last.end, sounding = 0;
      for (; h + 1 < f.heard.length && sounding < need; h++) {
        const n = f.heard[h + 1]!;
        if (n.stretch !== last.stretch || n.start - offset > EDGE_PAUSE || heardTaken(c.file, n, c)) break;
        offset = n.end;
        sounding += n.end - n.start;
      }
      if (fitsPace(index.charsBefore[k + 1]! - index.charsBefore[last.key + 1]!, sounding, pace)) c.anchors.push({ heard: h, key: k, start: offset, end: offset, stretch: last.stretch });
    }
  }
}

/**
 * A region's missing head (book keys k..first-1, back to its sentence's start) found by its own
 * words (round 22): heard words before the first anchor, across pauses of up to
 * LONG_EDGE_PAUSE and no further than twice the time the words take at the pace, matched to
 * the missing keys in order, each as far past the last match as the heard words between allow,
 * plus two. The head starts at the heard sentence's first word that the most matches follow (of
 * equals, the nearest: round 27), if one more matches when more than one word is missing. Else
 * the per-segment aligner looks for it (Claim.head, round 25), or, one that cannot leave words
 * out, it grows by sounding time. An orator's pauses inside a sentence are longer than EDGE_PAUSE (jfk's "And so, my
 * fellow Americans, [1.1 s] ask not"), and his pace slower than the book's, so growth by
 * sounding time alone stopped 2-3 s late and squeezed seven words into the last second before
 * the anchor (bench/messy-placements.bench.ts, draws 21, 33, 34). Crossing such pauses without
 * the words' evidence took other prompts' audio (Italian bench, seed 11: 16 more words timed
 * outside their prompt).
 */
function headByItsWords(run: Run, c: Claim, k: number, pace: Pace, taken: (h: HeardIn) => boolean): Anchor | null {
  const { keys } = run;
  const heard = run.files[c.file]!.heard;
  const first = c.anchors[0]!;
  const span = headSpan(run, k, first.key, pace, LONG_EDGE_PAUSE);
  // the heard words it may hold, back from the anchor
  let h0 = first.heard, onset = first.start;
  for (let h = first.heard - 1; h >= 0; h--) {
    const p = heard[h]!;
    if (p.stretch !== first.stretch || onset - p.end > LONG_EDGE_PAUSE || first.start - p.start > span || taken(p)) break;
    (h0 = h), (onset = p.start);
  }
  const said = heard.slice(h0, first.heard).map((p) => p.word);
  const want = keys.slice(k, first.key);
  // a heard word may stand for a missing word as far on as the words heard between allow, plus
  // two the recogniser did not hear at all; the anchor closes the chain (n: its place in said)
  const n = said.length;
  const reaches = (i: number, j: number, i2: number, j2: number) => j2 - j - 1 <= i2 - i - 1 + 2;
  // most: the most missing words heard in order from heard word i as missing word j on (0: no chain to the anchor)
  const most = new Int32Array(n * want.length);
  for (let i = n - 1; i >= 0; i--) {
    for (let j = want.length - 1; j >= 0; j--) {
      if (said[i] !== want[j]) continue;
      let m = reaches(i, j, n, want.length) ? 1 : 0;
      for (let i2 = i + 1; i2 < n; i2++) {
        for (let j2 = j + 1; j2 < want.length && reaches(i, j, i2, j2); j2++) if (most[i2 * want.length + j2]!) m = Math.max(m, 1 + most[i2 * want.length + j2]!);
      }
      most[i * want.length + j] = m;
    }
  }
  // the head starts at the sentence's first word heard with the most of the others after it;
  // of equals, the nearest (round 27: the nearest alone took an "and" in jfk's pause, draw 230)
  let best = -1, bestMatched = 0;
  for (let i = n - 1; i >= 0; i--) {
    const matched = most[i * want.length]!;
    if (matched > bestMatched) (best = i), (bestMatched = matched);
  }
  // (one more besides the first when more than one word is missing)
  if (best < 0 || bestMatched < Math.min(2, want.length)) return null;
  const p = heard[h0 + best]!;
  return { heard: h0 + best, key: k, start: p.start, end: p.start, stretch: p.stretch };
}

/** How far before its first anchor a head of keys k..firstKey-1 may start: twice its words' time at the pace, plus the pauses a reader may make inside it. */
function headSpan(run: Run, k: number, firstKey: number, pace: Pace, pauses: number): number {
  return 2 * (run.index.charsBefore[firstKey]! - run.index.charsBefore[k]!) * pace.secondsPerChar + pauses;
}

/** How far back a head not found by its words may lie: twice its words' time at the pace (as headByItsWords looks), not before another region of the file. */
function headFrom(run: Run, c: Claim, k: number, pace: Pace, claims: Claim[]): number {
  const heard = run.files[c.file]!.heard;
  const first = c.anchors[0]!;
  // a reader pauses for long inside a sentence at its punctuation ("Americans, [1.1 s] ask not")
  let pauses = EDGE_PAUSE;
  for (let j = k; j < first.key; j++) if (CLAUSE_END.test(run.opts.words[run.keyToken[j]!]!)) pauses = LONG_EDGE_PAUSE;
  let from = Math.max(0, first.start - headSpan(run, k, first.key, pace, pauses));
  for (const o of claims) {
    const last = o.anchors.at(-1)!;
    if (o === c || o.file !== c.file || last.end > first.start) continue;
    // and after the speech heard on from its last anchor without a pause: its unanchored last words
    let end = last.end;
    for (let h = last.heard + 1; h < first.heard && heard[h]!.start - end <= EDGE_PAUSE && heard[h]!.end <= first.start; h++) end = Math.max(end, heard[h]!.end);
    from = Math.max(from, end);
  }
  // and after a pause longer than any a reader makes inside a sentence: what the recogniser heard
  // before one is another reading (the preface, a prompt before), which the head's search would
  // take for the head's first words (a sentence's "And" timed 1.8 s early, over the preface's
  // last word: messy-placements draw 15)
  let onset = first.start;
  for (let h = first.heard - 1; h >= 0 && heard[h]!.stretch === first.stretch && heard[h]!.end > from; h--) {
    if (onset - heard[h]!.end > LONG_EDGE_PAUSE) return Math.max(from, onset - PAD);
    onset = Math.min(onset, heard[h]!.start);
  }
  return from;
}

/** The failure rules: too few heard words in matched regions → not this text, or not speech at all. */
function checkMatch(files: FileState[], claims: Claim[], decodedSeconds: number): { heardMatched: number; perMinute: number } {
  const heardTotal = files.reduce((s, f) => s + f.heard.length, 0);
  let heardIn = 0;
  for (const f of files) {
    const spans = claims.filter((c) => c.file === f.decoded.index).map((c) => [c.anchors[0]!.start, c.anchors.at(-1)!.end] as const);
    for (const h of f.heard) if (spans.some(([s, e]) => h.start >= s - 0.05 && h.end <= e + 0.05)) heardIn++;
  }
  const heardMatched = heardTotal ? heardIn / heardTotal : 0;
  const perMinute = heardTotal / Math.max(1 / 60, decodedSeconds / 60);
  if (heardMatched < THRESHOLDS.minHeardMatched) {
    const share = `${(100 * heardMatched).toFixed(1)}% of the words heard in it were found in the text (at least ${100 * THRESHOLDS.minHeardMatched}% needed)`;
    if (perMinute < THRESHOLDS.minSpeechWordsPerMinute) {
      throw new RecordingMismatchError(
        `the recording does not sound like speech: ${perMinute.toFixed(0)} words a minute were recognised in it (read speech gave 104–190 in the languages measured, music 0–92, noise a few), and ${share}`,
        'not-speech',
        { heardMatched, textMatched: 0 },
      );
    }
    throw new RecordingMismatchError(`the recording is not a reading of this text: only ${share}; is it the right book?`, 'other-text', { heardMatched, textMatched: 0 });
  }
  return { heardMatched, perMinute };
}

/** File names in natural order ("2 …" before "10 …", case and accents aside). */
const byName = new Intl.Collator(undefined, { numeric: true, sensitivity: 'base' }).compare;

/**
 * Files by the first book word they hold, and each file's start on the joined timeline. A file
 * holding no book word (music, credits) goes after its predecessor in the order of the names
 * when the names sort the other files as their words do (numbered tracks, whatever order they
 * were uploaded in; `byName` is then that order, else null), else after its predecessor in upload order.
 */
export function readingOrder(files: { decoded: { index: number; duration: number } }[], claims: Pick<Claim, 'file' | 'anchors'>[], names: string[]): { order: number[]; offsets: Map<number, number>; byName: number[] | null } {
  const firstKey = new Map<number, number>();
  for (const c of claims) firstKey.set(c.file, Math.min(firstKey.get(c.file) ?? Infinity, c.anchors[0]!.key));
  const uploadOrder = files.map((f) => f.decoded.index);
  const nameOrder = [...uploadOrder].sort((a, b) => byName(names[a] ?? '', names[b] ?? '') || a - b);
  const matched = nameOrder.filter((i) => firstKey.has(i));
  const namesAgree = new Set(names).size === names.length && matched.every((i, k) => k === 0 || firstKey.get(matched[k - 1]!)! < firstKey.get(i)!);
  const sequence = namesAgree ? nameOrder : uploadOrder;
  const sortKey = new Map<number, number>();
  let lastSeen = -1;
  for (const i of sequence) {
    const k = firstKey.get(i);
    if (k !== undefined) lastSeen = k;
    sortKey.set(i, k ?? lastSeen + 0.5);
  }
  const order = [...sequence].sort((a, b) => sortKey.get(a)! - sortKey.get(b)!); // stable: ties keep `sequence` order
  const offsets = new Map<number, number>();
  let acc = 0;
  for (const i of order) (offsets.set(i, acc), (acc += files[i]!.decoded.duration));
  return { order, offsets, byName: namesAgree ? nameOrder : null };
}

/**
 * Likely retakes in a region (a narrator's second go at a sentence, whole or in part), by two
 * signs: RETAKE_GAP_WORDS more heard words between two anchors than the text between them holds
 * (the recogniser garbles a second reading: its model does not expect a sentence twice), or two
 * consecutive heard words outside the anchor chain that are two consecutive anchored words of
 * the text nearby (within RETAKE_SECONDS: a passage heard twice). Returns the tokens beside
 * either sign (per token of the region from token `base`, a head's included; their sentences
 * become repeatable for the per-segment aligner) and the stretches of audio between the
 * readings, where the region is not cut.
 */
function retakesOf(run: Run, c: Claim, base: number): { retaken: Uint8Array; zones: [number, number][] } {
  const { keys, keyToken } = run;
  const heard = run.files[c.file]!.heard;
  const first = c.anchors[0]!, last = c.anchors.at(-1)!;
  const retaken = new Uint8Array(keyToken[last.key]! - base + 1);
  const zones: [number, number][] = [];
  const chain = new Set(c.anchors.map((a) => a.heard));
  // the tokens of these keys are retaken; the region is not cut in [from, to)
  const mark = (keysMarked: number[], from: number, to: number) => {
    for (const k of keysMarked) retaken[keyToken[k]! - base] = 1;
    zones.push([from, to]);
  };
  // anchors by the key pair they start: (key k, key k+1) heard as consecutive anchors
  const pairs = new Map<string, Anchor[]>();
  for (let i = 1; i < c.anchors.length; i++) {
    const x = c.anchors[i - 1]!, y = c.anchors[i]!;
    // more speech heard between two anchors than the text between them holds: a second reading
    // the recogniser garbled (its model does not expect a sentence twice)
    if (y.stretch === x.stretch && y.heard - x.heard - (y.key - x.key) >= RETAKE_GAP_WORDS) mark([x.key, y.key], x.start, y.end);
    if (y.key !== x.key + 1 || y.heard !== x.heard + 1) continue;
    const k = `${keys[x.key]} ${keys[y.key]}`;
    pairs.set(k, [...(pairs.get(k) ?? []), x]);
  }
  for (let h = first.heard; h + 1 <= last.heard + RETAKE_HEARD; h++) {
    const a = heard[h], b = heard[h + 1];
    if (!a || !b || chain.has(h) || chain.has(h + 1) || a.stretch !== b.stretch) continue;
    for (const x of pairs.get(`${a.word} ${b.word}`) ?? []) if (Math.abs(x.start - a.start) <= RETAKE_SECONDS) mark([x.key], Math.min(x.start, a.start), Math.max(x.end, b.end));
  }
  return { retaken, zones };
}

/** Where a region's first segment starts, from its first anchor: PAD before it, not before the word heard before it ends (starts, `intoWordBefore`). */
export function segmentStart(f: Pick<FileState, 'heard'>, first: Anchor, intoWordBefore = false): number {
  // (a word heard before the first anchor can overlap it: one heard again as an island beside one heard before)
  const before = f.heard[first.heard - 1];
  // a head found by its words starts where the recogniser heard its first word, often late, run
  // into the misheard word before it (jfk's "And" heard 0.24 s late after the music, and the
  // segment could not start before it: messy-placements draw 122, round 28); the aligner gets
  // that word's audio too, no more than PAD before the heard start, as a head with nothing before it
  const bound = !before ? 0 : intoWordBefore ? before.start : before.end <= first.start ? before.end : 0;
  return Math.max(0, first.start - PAD, bound);
}

/** 4. Segments for the per-segment aligner: each region, cut at anchors once a segment passes SEGMENT_SECONDS. */
function cutSegments(run: Run, claims: Claim[]): Segment[] {
  const { files, keyToken } = run;
  const segments: Segment[] = [];
  for (const c of claims) {
    const f = files[c.file]!;
    const heardAfter = (a: Anchor) => f.heard[a.heard + 1];
    const first = c.anchors[0]!, last = c.anchors.at(-1)!;
    const base = keyToken[c.head?.key ?? first.key]!;
    const anchored = new Uint8Array(keyToken[last.key]! - base + 1);
    const heardAt = new Float64Array(anchored.length).fill(NaN);
    for (const a of c.anchors) {
      const t = keyToken[a.key]! - base;
      anchored[t] = 1;
      if (Number.isNaN(heardAt[t]!)) heardAt[t] = a.start;
    }
    const { retaken, zones } = retakesOf(run, c, base);
    // a segment's share of the region's per-token marks
    const perToken = (a: number, b: number) => tokenMarks({ anchored, heardAt, retaken }, a - base, b - base + 1);
    const bodyStart = segmentStart(f, first, c.headFound);
    let segStart = c.head ? Math.min(c.head.from, bodyStart) : bodyStart;
    let segFirstToken = base;
    let head: SegmentHead | undefined = c.head && { tokens: keyToken[first.key]! - base, bodyStart, anchorAt: first.start, grownStart: c.head.grownFrom };
    const edges = edgeSentences(run.endsSentence, base, anchored);
    let lead = edges.lead;
    let segBegin = first;
    let cuts: Cut[] = [];
    for (let k = 1; k < c.anchors.length; k++) {
      const x = c.anchors[k - 1]!, y = c.anchors[k]!;
      // two words heard as the book has them: the boundary between them is a safe place to cut
      if (y.key !== x.key + 1 || y.heard !== x.heard + 1 || keyToken[y.key] === keyToken[x.key]) continue;
      const cut = (x.end + y.start) / 2;
      // (heard words can overlap where an island's window meets audio heard before: a cut must
      // fall between the two words and after the last cut, or a piece would have no audio)
      if (y.start < x.end || cut <= (cuts.at(-1)?.at ?? segStart)) continue;
      // never between two readings of a sentence: the per-segment aligner keeps the last one
      if (zones.some(([a, b]) => cut > a && cut < b)) continue;
      if (y.start - segBegin.start < SEGMENT_SECONDS) {
        cuts.push({ at: cut, token: keyToken[y.key]! });
        continue;
      }
      segments.push({ file: c.file, start: segStart, end: cut, firstToken: segFirstToken, lastToken: keyToken[x.key]!, cuts, head, lead: fitsIn(lead, segFirstToken, keyToken[x.key]!), tail: 0, ...perToken(segFirstToken, keyToken[x.key]!) });
      head = undefined;
      lead = 0;
      segStart = cut;
      segFirstToken = keyToken[y.key]!;
      segBegin = y;
      cuts = [];
    }
    const after = heardAfter(last);
    const segEnd = f.decoded.duration - last.end <= FILE_END_REACH ? f.decoded.duration : Math.min(f.decoded.duration, last.end + PAD, after && after.start >= last.end ? after.start : Infinity);
    const lastToken = keyToken[last.key]!;
    const tail = fitsIn(edges.tail, segFirstToken, lastToken);
    segments.push({ file: c.file, start: segStart, end: segEnd, firstToken: segFirstToken, lastToken, cuts, head, lead: fitsIn(lead, segFirstToken, lastToken - tail), tail, ...perToken(segFirstToken, lastToken) });
  }
  return segments;
}

type TokenMarks = Pick<Segment, 'anchored' | 'heardAt' | 'retaken'>;

/** The per-token marks of tokens [begin, end) of a segment or region (views, not copies). */
function tokenMarks(m: TokenMarks, begin: number, end?: number): TokenMarks {
  return { anchored: m.anchored.subarray(begin, end), heardAt: m.heardAt.subarray(begin, end), retaken: m.retaken.subarray(begin, end) };
}

/** n edge tokens, if the segment firstToken..lastToken holds them and a token more; else 0. */
const fitsIn = (n: number, firstToken: number, lastToken: number) => (n > 0 && n < lastToken - firstToken + 1 ? n : 0);

/**
 * A region's first and last sentences, as tokens the per-segment aligner may leave out, when
 * fewer than MIN_SHORT_RUN of their words are anchors and the rest of the region holds at least
 * MIN_ANCHORS (round 31). The book's model expects the next sentence after a sentence's last word,
 * so music or noise right after a reading is heard as its first word or two, and a run ended
 * there: jfk's crowd noise as "chapter" (the next chapter's heading, grown to "Chapter 2."), the
 * music after "… young man." as "and so", the unread sentence's first words, and then timed over
 * the noise (bench/messy-placements.bench.ts: 36 of 37 unread words timed in round 30's 288 draws;
 * before a run, the unread sentence's last word "them." in draw 193). A read sentence has more of
 * its words heard; and one read where a file ends is kept by the aligner, which hears it, as a
 * head (Claim.head) is. `base`: the region's first token; `anchored`: per token from it to its last.
 */
export function edgeSentences(endsSentence: ArrayLike<number>, base: number, anchored: Uint8Array): { lead: number; tail: number } {
  const last = base + anchored.length - 1;
  const anchors = (a: number, b: number) => anchored.subarray(a - base, b - base + 1).reduce((x, y) => x + y, 0);
  const all = anchors(base, last);
  let firstEnd = -1, lastEnd = -1;
  for (let t = base; t < last; t++) if (endsSentence[t]) (firstEnd = firstEnd < 0 ? t : firstEnd), (lastEnd = t);
  if (firstEnd < 0) return { lead: 0, tail: 0 };
  const few = (n: number) => n < MIN_SHORT_RUN && all - n >= MIN_ANCHORS;
  return { lead: few(anchors(base, firstEnd)) ? firstEnd - base + 1 : 0, tail: few(anchors(lastEnd + 1, last)) ? last - lastEnd : 0 };
}

/**
 * 5. Time: every segment's words by the per-segment aligner, as many segments at once as it
 * runs (its `concurrency`: worker threads), longest first so that the threads finish together.
 */
async function timeSegments(run: Run, segments: Segment[], offsets: Map<number, number>): Promise<{ words: (TimedWord | null)[]; segmentsFallback: number; fallbackSeconds: number; skippedSentences: [number, number][] }> {
  const { opts } = run;
  const words: (TimedWord | null)[] = opts.words.map(() => null);
  let done = 0;
  let segmentsFallback = 0;
  let fallbackSeconds = 0;
  const skippedSentences: [number, number][] = [];
  opts.onProgress?.({ phase: 'align', done: 0, total: segments.length });
  const queue = [...segments].sort((a, b) => b.end - b.start - (a.end - a.start));
  const lanes = Math.max(1, Math.min(opts.aligner.concurrency ?? 1, queue.length));
  await Promise.all(
    Array.from({ length: lanes }, async () => {
      for (let s = queue.shift(); s; s = queue.shift()) {
        await run.stop();
        const { timed, fellBackSeconds } = await timeSegment(run, s);
        if (fellBackSeconds > 0) segmentsFallback++;
        fallbackSeconds += fellBackSeconds;
        const off = offsets.get(s.file)!;
        timed.forEach((w, k) => {
          const t = s.firstToken + k;
          if (w.skipped) {
            if (!timed[k - 1]?.skipped || run.endsSentence[t - 1]) skippedSentences.push([t, t]);
            else skippedSentences.at(-1)![1] = t;
            return;
          }
          words[t] = { file: s.file, start: w.start, end: w.end, globalStart: off + w.start, globalEnd: off + w.end };
        });
        opts.onProgress?.({ phase: 'align', done: ++done, total: segments.length });
      }
    }),
  );
  skippedSentences.sort((a, b) => a[0] - b[0]);
  return { words, segmentsFallback, fallbackSeconds, skippedSentences };
}

/**
 * 5b. Sentences a file's end cuts (cut-sentences.ts, round 32): the words at the cut timed again on
 * the end of the one file joined to the start of the next, each given to the file it falls in.
 * Words so timed leave the skipped sentences (the first file's last region may have left them out).
 * Returns their tokens.
 */
async function timeCutSentences(run: Run, order: number[], offsets: Map<number, number>, claims: Claim[], timed: { words: (TimedWord | null)[]; skippedSentences: [number, number][] }, pace: Pace): Promise<Set<number>> {
  const { opts, files } = run;
  const { words } = timed;
  const durations = files.map((f) => f.decoded.duration);
  const book = { words: opts.words, keyToken: run.keyToken, endsSentence: run.endsSentence, durations, secondsPerChar: pace.secondsPerChar };
  const moved = new Set<number>();
  for (const c of cutSentences(order, claims, words, book)) {
    await run.stop();
    const a = files[c.before]!.decoded, b = files[c.after]!.decoded;
    const end = readSamples(a, c.from, a.duration), start = readSamples(b, 0, c.to);
    const joined = new Float32Array(end.length + start.length);
    joined.set(end);
    joined.set(start, end.length);
    const options: AlignOptions = { ...SEGMENT_ALIGN, ...bandOptions(Math.min(a.sourceRate, b.sourceRate)) };
    let aligned: AlignedWord[];
    try {
      aligned = await opts.aligner.align(joined, RATE, opts.words.slice(c.first, c.last + 1).join(' '), opts.language, options);
    } catch (e) {
      // no path through the join: the words keep the times their segments gave them
      if (e instanceof SpeechInputError) continue;
      throw e;
    }
    for (const [t, w] of splitAtCut(c, aligned, end.length / RATE, words, durations) ?? []) {
      const off = offsets.get(w.file)!;
      words[t] = { ...w, globalStart: off + w.start, globalEnd: off + w.end };
      moved.add(t);
    }
  }
  if (moved.size) timed.skippedSentences = untimedRanges(timed.skippedSentences, words);
  return moved;
}

/** A narrow-band source named as such to the aligner (AlignOptions.sourceRate): it compares only the band the source has. */
function bandOptions(sourceRate: number): AlignOptions {
  return sourceRate < RATE ? { sourceRate } : {};
}

/** The parts of token ranges whose tokens have no time. */
function untimedRanges(ranges: [number, number][], words: (TimedWord | null)[]): [number, number][] {
  const out: [number, number][] = [];
  for (const [a, b] of ranges) {
    for (let t = a; t <= b; t++) {
      if (words[t]) continue;
      if (out.at(-1)?.[1] === t - 1 && t > a) out.at(-1)![1] = t;
      else out.push([t, t]);
    }
  }
  return out;
}

/** The segment's sentences (the last may be cut short by the segment's end), as token ranges within it. */
function sentencesOf(run: Run, s: Segment): [number, number][] {
  const out: [number, number][] = [];
  let first = s.firstToken;
  for (let t = s.firstToken; t <= s.lastToken; t++) {
    if (!run.endsSentence[t] && t < s.lastToken) continue;
    out.push([first - s.firstToken, t - s.firstToken]);
    first = t + 1;
  }
  return out;
}

/**
 * Of a segment's sentences (given its words and which of them are anchors), those that may have
 * been skipped: at least MIN_SKIPPABLE_WORDS words or MIN_SKIPPABLE_LETTERS letters, neither of
 * the segment's edge words (those were heard where it starts and ends), and under
 * MAX_SKIPPABLE_ANCHORED of their words anchors (heard in sequence as the book has them: a
 * sentence nobody read has next to none).
 */
export function skippableSentences(words: string[], anchored: Uint8Array, sentences: [number, number][]): [number, number][] {
  const last = words.length - 1;
  const letters = (a: number, b: number) => words.slice(a, b + 1).join('').replace(/[^\p{L}]/gu, '').length;
  return sentences.filter(([a, b]) => {
    const n = b - a + 1;
    const heard = anchored.subarray(a, b + 1).reduce((x, y) => x + y, 0);
    return a > 0 && b < last && (n >= MIN_SKIPPABLE_WORDS || letters(a, b) >= MIN_SKIPPABLE_LETTERS) && heard < MAX_SKIPPABLE_ANCHORED * n;
  });
}

/**
 * One segment's words (seconds in the file), by the aligner. Where it finds no path through
 * the segment (a line the book does not have, a repeat, a sound the text describes), the
 * segment is split at the cut nearest its middle and each piece aligned again, so that only
 * the piece holding the trouble is timed by the fallback aligner (`dtw`, coarser), not the
 * whole half minute around it.
 */
async function timeSegment(run: Run, s: Segment): Promise<{ timed: AlignedWord[]; fellBackSeconds: number }> {
  const { opts, files } = run;
  const f = files[s.file]!;
  const samples = readSamples(f.decoded, s.start, s.end);
  const words = opts.words.slice(s.firstToken, s.lastToken + 1);
  const text = words.join(' ');
  // a narrow-band source is named as such (AlignOptions.sourceRate): the aligner compares only
  // the band it has (else it looks silent above 4 kHz) and picks its model by it, with no
  // resampling down and up again here (round 16: 6 % of the hour's align-phase CPU)
  const band = bandOptions(f.decoded.sourceRate);
  const inFile = (ws: AlignedWord[]) => ws.map((w) => ({ ...w, start: s.start + w.start, end: s.start + w.end }));
  // a piece with no audio (its region's last anchor heard before a cut) holds no reading of its words: they get no time
  if (!(s.end > s.start)) return { timed: untimed(words, s.start), fellBackSeconds: 0 };
  const sentences = opts.aligner.skips?.(opts.language) ? sentencesOf(run, s) : [];
  // the region's edge sentences (a head, a first or last sentence of few anchors) may be left out as a whole
  const lead = Math.max(s.head?.tokens ?? 0, s.lead), tail = s.tail;
  const skippable = skippableSentences(words, s.anchored, sentences).filter(([a, b]) => a >= lead && b < words.length - tail);
  if (lead) skippable.unshift([0, lead - 1]);
  if (tail) skippable.push([words.length - tail, words.length - 1]);
  const repeatable = sentences.filter(([a, b]) => s.retaken.subarray(a, b + 1).includes(1));
  try {
    const options: AlignOptions = { ...SEGMENT_ALIGN, ...band, ...(skippable.length || repeatable.length ? { skippable, repeatable } : {}) };
    const timed = inFile(await opts.aligner.align(samples, RATE, text, opts.language, options));
    // the head's search pulled the first anchor early: it took speech before the reading
    // (another prompt) for the head, and the words after it followed (Russian book, seed 29: the
    // anchor 8.8 s early, 16 words of three sentences outside their prompts). Later is allowed:
    // the recogniser's times are rough in noise, and the aligner put jfk's "Americans," 1.4 s
    // after where it was heard, rightly (messy-placements draw 55)
    const firstRead = s.head ? timed.findIndex((w, i) => i >= s.head!.tokens && !w.skipped) : -1;
    const headRight = !s.head || firstRead < 0 || timed[firstRead]!.start >= s.head.anchorAt - ANCHOR_EARLY;
    // a path far from the anchors is no path (anchorsAgree), unless there is nothing else to try
    if (headRight && (anchorsAgree(s, timed) || (!s.head && !s.cuts.length && !opts.fallbackAligner))) return { timed, fellBackSeconds: 0 };
  } catch (e) {
    if (!(e instanceof SpeechInputError) || (!s.head && !opts.fallbackAligner)) throw e;
  }
  if (s.head) return timeWithoutHead(run, s, words);
  if (s.cuts.length) {
    const mid = (s.start + s.end) / 2;
    const k = s.cuts.reduce((best, c, i) => (Math.abs(c.at - mid) < Math.abs(s.cuts[best]!.at - mid) ? i : best), 0);
    const cut = s.cuts[k]!;
    const at = cut.token - s.firstToken;
    const left: Segment = { ...s, end: cut.at, lastToken: cut.token - 1, cuts: s.cuts.slice(0, k), ...tokenMarks(s, 0, at), lead: fitsIn(s.lead, s.firstToken, cut.token - 1), tail: 0 };
    const right: Segment = { ...s, start: cut.at, firstToken: cut.token, head: undefined, cuts: s.cuts.slice(k + 1), ...tokenMarks(s, at), lead: 0, tail: fitsIn(s.tail, cut.token, s.lastToken) };
    const a = await timeSegment(run, left);
    const b = await timeSegment(run, right);
    return { timed: [...a.timed, ...b.timed], fellBackSeconds: a.fellBackSeconds + b.fellBackSeconds };
  }
  // (a segment without a head gets here only with a fallback: see the catch above)
  return { timed: inFile(await opts.fallbackAligner!.align(samples, RATE, text, opts.language, band)), fellBackSeconds: s.end - s.start };
}

/**
 * A segment whose head the aligner found no place for, or a wrong one: the head grown by sounding
 * time where that fitted (as before round 25), else left untimed and the rest timed from its first anchor.
 */
async function timeWithoutHead(run: Run, s: Segment, words: string[]): Promise<{ timed: AlignedWord[]; fellBackSeconds: number }> {
  const { tokens, bodyStart, grownStart } = s.head!;
  if (grownStart !== null) return timeSegment(run, { ...s, start: grownStart, head: undefined });
  const body = await timeSegment(run, { ...s, start: bodyStart, firstToken: s.firstToken + tokens, head: undefined, lead: Math.max(0, s.lead - tokens), ...tokenMarks(s, tokens) });
  return { timed: [...untimed(words.slice(0, tokens), bodyStart), ...body.timed], fellBackSeconds: body.fellBackSeconds };
}

/**
 * Whether the aligner's path keeps most of the segment's anchors near where the recogniser heard
 * them (within ANCHOR_AGREE; retaken tokens aside, whose anchor may be the other reading). A path
 * that moves most of them by seconds is one the search was left with, not the reading: in
 * messy-placements draw 171 an unread sentence whose first words were heard in music was given
 * the narrator's first sentence, whose 16 words went into the next 3 s, 1-4 s late. Such a
 * segment is treated as one with no path (split at a cut, or the fallback).
 */
export function anchorsAgree(s: TokenMarks, timed: AlignedWord[]): boolean {
  let n = 0, near = 0;
  timed.forEach((w, i) => {
    if (!s.anchored[i] || s.retaken[i] || w.skipped || Number.isNaN(s.heardAt[i]!)) return;
    n++;
    if (Math.abs(w.start - s.heardAt[i]!) <= ANCHOR_AGREE) near++;
  });
  return n < MIN_ANCHORS || 2 * near >= n;
}

/** Words the audio holds no reading of: skipped, zero length at `at`. */
function untimed(words: string[], at: number): AlignedWord[] {
  return words.map((word) => ({ word, start: at, end: at, skipped: true as const }));
}

/** The result: regions in reading order, per-file reports and the coverage figures. */
function report(
  run: Run,
  r: { words: (TimedWord | null)[]; order: number[]; offsets: Map<number, number>; claims: Claim[]; segments: Segment[]; acrossCuts: Set<number>; segmentsFallback: number; fallbackSeconds: number; skippedSentences: [number, number][]; heardMatched: number; perMinute: number; decodedSeconds: number },
): RecordingAlignment {
  const { files, keyToken } = run;
  const { words, order, offsets } = r;
  const totalSeconds = files.reduce((s, f) => s + f.decoded.duration, 0);
  // a head the aligner found (Claim.head) is part of its region; the words of a sentence cut by
  // the file before that went there (timeCutSentences) are not
  const firstOf = (c: Claim): { firstWord: number; start: number } => {
    const anchor = keyToken[c.anchors[0]!.key]!, from = c.head ? keyToken[c.head.key]! : anchor;
    let t = from;
    while (t < keyToken[c.anchors.at(-1)!.key]! && r.acrossCuts.has(t) && words[t]!.file !== c.file) t++;
    if (t > from && words[t]?.file === c.file) return { firstWord: t, start: words[t]!.start };
    return c.head && words[from] ? { firstWord: from, start: words[from]!.start } : { firstWord: anchor, start: c.anchors[0]!.start };
  };
  const regions: RecordingRegion[] = r.claims
    .map((c) => {
      const { firstWord, start } = firstOf(c);
      let lastWord = keyToken[c.anchors.at(-1)!.key]!, end = c.anchors.at(-1)!.end;
      // and so are the words after its last anchor that a cut sentence put in its file
      while (r.acrossCuts.has(lastWord + 1) && words[lastWord + 1]!.file === c.file) end = Math.max(end, words[++lastWord]!.end);
      return { file: c.file, start, end, firstWord, lastWord };
    })
    .sort((a, b) => order.indexOf(a.file) - order.indexOf(b.file) || a.start - b.start);
  const wordsTimed = words.filter(Boolean).length;
  const audioMatchedSeconds = regions.reduce((s, x) => s + x.end - x.start, 0);
  const fileReports: RecordingFileReport[] = files.map((f) => {
    const rs = regions.filter((x) => x.file === f.decoded.index);
    return {
      index: f.decoded.index,
      path: f.decoded.source,
      duration: f.decoded.duration,
      chapters: f.decoded.chapters,
      position: order.indexOf(f.decoded.index),
      offset: offsets.get(f.decoded.index)!,
      firstWord: rs.length ? Math.min(...rs.map((x) => x.firstWord)) : null,
      lastWord: rs.length ? Math.max(...rs.map((x) => x.lastWord)) : null,
      matchedSeconds: rs.reduce((s, x) => s + x.end - x.start, 0),
    };
  });
  return {
    words,
    order,
    files: fileReports,
    regions,
    skippedSentences: r.skippedSentences,
    coverage: {
      wordsTotal: words.length,
      wordsTimed,
      textMatched: wordsTimed / words.length,
      audioSeconds: totalSeconds,
      audioMatchedSeconds,
      audioUnmatched: 1 - audioMatchedSeconds / Math.max(1e-9, totalSeconds),
      heardMatched: r.heardMatched,
      heardPerMinute: r.perMinute,
      decodedShare: r.decodedSeconds / Math.max(1e-9, totalSeconds),
      segments: r.segments.length,
      segmentsFallback: r.segmentsFallback,
      fallbackSeconds: r.fallbackSeconds,
      sentencesSkipped: r.skippedSentences.length,
    },
  };
}
