// A whole document read aloud from its first page, aligned back as a long recording: what
// `alignRecording` does on continuous narration of a book it was never tuned on, with every
// word's true edges known.
//  - the reading: Piper (en_US-joe-medium, its own noise scales: timing varies as in natural
//    speech) reads the document's spoken words page by page, sentence by sentence (0.3 s
//    between sentences, 0.7 s between blocks), until the minutes asked are reached (mid-page
//    if need be); the rest of the document is never read. Each page is one MP3 chapter file
//    (22.05 kHz, 64 kbit/s), named by its place in the reading (track-01.mp3 …, as an
//    audiobook's tracks are) and handed over in shuffled order; the first one opens with 11 s
//    of real speech that is not in the text (jfk.wav), as an audiobook's credits would.
//  - the references: each word's edges from the durations the voice itself computed
//    (piper-exact.ts: its conventions, the middle of the space token between two words with no
//    punctuation); a sentence whose eSpeak phoneme words do not map one to one onto its words
//    (numbers, joined words; piper-exact.ts's oneToOne, checked when scoring) is read but has
//    no references.
//  - default document: Debian's Live Systems Manual (EPUB; commands, paths, numbered headings),
//    which no parameter of the aligner was chosen on; `--book war-of-the-worlds` reads the novel
//    whose sentences the synthetic accuracy set draws from.
// Baseline, in the same run: the per-segment aligner on each referenced sentence's own stretch
// of the same decoded audio with its own text (no locating): what the long-recording steps cost.
// Needs what scripts/setup.sh installs (the Piper voice, ffmpeg, PocketSphinx). Made once into
// bench/.cache/narrated-<book>-<minutes> (git-ignored).
// Run: node --import tsx bench/narrated-book.bench.ts [minutes=30 | quick] [--aligner hmm] [--book live-manual] [--seed 5] [--scorer stock] [--recognizer stock]
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { readEpub } from '../src/documents/epub.ts';
import { sourceWords } from '../src/documents/types.ts';
import { decodeAudio } from '../src/media/ffmpeg.ts';
import { createAligner, defaultAlignerThreads } from '../src/speech/align/aligners.ts';
import { alignRecording } from '../src/speech/align/long/recording.ts';
import { splitSentences } from '../src/speech/sentences.ts';
import { phonemize } from '../src/speech/tts/espeak.ts';
import { tokenizeWords } from '../src/speech/words.ts';
import type { HandWord } from '../test/fixtures/alignment/hand/references.ts';
import { exactVoice, oneToOne, spaceMidpoints } from './piper-exact.ts';
import { QUICK } from './quick.ts';
import { cpuSeconds, phaseClock, joinParts, rng, recognizerArg, scorerArg, shuffle, writeMp3 } from './recording-build.ts';

const root = path.join(import.meta.dirname, '..');
const args = process.argv.slice(2);
const opt = (name: string, dflt: string) => (args.includes(name) ? args[args.indexOf(name) + 1]! : dflt);
const quick = args.includes('quick') || QUICK;
const minutes = quick ? 1 : Number(args.find((a, i) => /^\d+(\.\d+)?$/.test(a) && !args[i - 1]?.startsWith('--')) ?? 30);
const bookName = opt('--book', 'live-manual');
const alignerName = opt('--aligner', 'hmm');
const seed = Number(opt('--seed', '5'));
const BOOKS: Record<string, string> = {
  'live-manual': 'test/fixtures/documents/live-manual.en.epub',
  'war-of-the-worlds': 'test/fixtures/documents/war-of-the-worlds.epub',
};
if (!BOOKS[bookName]) throw new Error(`--book: one of ${Object.keys(BOOKS).join(', ')}`);
const PREFACE = path.join(root, 'test/fixtures/speech/jfk.wav');
const DIR = path.join(import.meta.dirname, '.cache', `narrated-${bookName}-${minutes}`);

interface Manifest {
  /** Chapter files in upload order; `trueOrder[k]` is the upload index of the k-th chapter read. */
  files: string[];
  trueOrder: number[];
  words: string[];
  blockEnds: number[];
  spoken: boolean[];
  /** Exact edges (seconds in the word's file), or null where the sentence had no one-to-one phoneme words. */
  refs: ({ file: number; start: number; end: number; pauseBefore: boolean; pauseAfter: boolean } | null)[];
  /** Each read sentence: its words and its stretch of its file (for the baseline). */
  sentences: { file: number; first: number; last: number; start: number; end: number }[];
  seconds: number;
  prefaceSeconds: number;
}

/** Reads the book with Piper into DIR (in its own process, so that its buffers do not count in the measured peak). */
async function build(): Promise<void> {
  fs.mkdirSync(DIR, { recursive: true });
  const { rate, speak } = await exactVoice();
  const doc = await readEpub(path.join(root, BOOKS[bookName]!));
  const source = sourceWords(doc);
  const m: Manifest = { files: [], trueOrder: [], words: source.map((s) => s.word.text), blockEnds: [], spoken: source.map(() => false), refs: source.map(() => null), sentences: [], seconds: 0, prefaceSeconds: 0 };
  m.blockEnds = source.flatMap((s, i) => (i + 1 === source.length || source[i + 1]!.page !== s.page || source[i + 1]!.block !== s.block ? [i] : []));
  const sentenceGap = new Float32Array(Math.round(0.3 * rate));
  const blockGap = new Float32Array(Math.round(0.7 * rate));
  const chapters: { parts: Float32Array[]; length: number; words: number[] }[] = [];
  let total = 0;
  let w = 0; // index into source
  while (w < source.length && total < minutes * 60 * rate) {
    const page = source[w]!.page;
    const ch = { parts: [] as Float32Array[], length: 0, words: [] as number[] };
    if (!chapters.length) {
      const pre = await decodeAudio(PREFACE, rate);
      ch.parts.push(pre, blockGap);
      ch.length += pre.length + blockGap.length;
      m.prefaceSeconds = pre.length / rate;
    }
    chapters.push(ch);
    const file = chapters.length - 1;
    while (w < source.length && source[w]!.page === page && total + ch.length < minutes * 60 * rate) {
      const block = source[w]!.block;
      let end = w;
      while (end < source.length && source[end]!.page === page && source[end]!.block === block) end++;
      const text = source.slice(w, end).map((s) => s.word.text).join(' ');
      let at = w;
      for (const sentence of splitSentences(text)) {
        const n = tokenizeWords(sentence).length;
        const ipa = await phonemize(sentence, 'en-us');
        const start = ch.length;
        let exact: HandWord[] | null = null;
        for (const chunk of ipa) {
          const { audio, spans } = await speak(chunk);
          if (ipa.length === 1 && spans.length === n) exact = spans.map((s, i) => ({ word: m.words[at + i]!, start: (ch.length + s.start * rate) / rate, end: (ch.length + s.end * rate) / rate, sure: [true, true] }));
          ch.parts.push(audio);
          ch.length += audio.length;
        }
        if (exact) {
          const mids = spaceMidpoints(exact);
          mids.forEach((r, i) => (m.refs[at + i] = { file, start: r.start, end: r.end, pauseBefore: i === 0 || mids[i - 1]!.end !== r.start, pauseAfter: i + 1 === n || mids[i + 1]!.start !== r.end }));
        }
        for (let i = at; i < at + n; i++) (m.spoken[i] = true), ch.words.push(i);
        m.sentences.push({ file, first: at, last: at + n - 1, start: start / rate, end: ch.length / rate });
        ch.parts.push(sentenceGap);
        ch.length += sentenceGap.length;
        at += n;
      }
      if (at !== end) throw new Error(`block at word ${w}: its sentences hold ${at - w} words, the block ${end - w}`);
      ch.parts.push(blockGap);
      ch.length += blockGap.length;
      w = end;
    }
    total += ch.length;
  }
  // upload order: shuffled; the manifest's file indices are reading order until remapped here
  const given = shuffle(chapters.map((_, i) => i), rng(seed));
  m.files = new Array(chapters.length);
  for (let c = 0; c < chapters.length; c++) {
    const g = given[c]!;
    // numbered in reading order, as an audiobook's tracks are; handed over in another order
    m.files[g] = path.join(DIR, `track-${String(c + 1).padStart(2, '0')}.mp3`);
    m.trueOrder.push(g);
    await writeMp3(joinParts(chapters[c]!.parts), rate, '64k', m.files[g]!);
  }
  for (const r of m.refs) if (r) r.file = given[r.file]!;
  for (const s of m.sentences) s.file = given[s.file]!;
  m.seconds = total / rate;
  fs.writeFileSync(path.join(DIR, 'manifest.json'), JSON.stringify(m));
}

if (args.includes('--build')) {
  await build();
  process.exit(0); // the shared eSpeak helper would keep the process alive
}
if (!fs.existsSync(path.join(DIR, 'manifest.json'))) {
  console.log(`reading ${minutes} min of ${bookName} with Piper into ${DIR} (once)...`);
  const r = spawnSync(process.execPath, ['--import', 'tsx', import.meta.filename, ...args, '--build'], { stdio: 'inherit' });
  if (r.status !== 0) process.exit(1);
}
const book = JSON.parse(fs.readFileSync(path.join(DIR, 'manifest.json'), 'utf8')) as Manifest;
// the tracks where the cache is now (a checkout moved or copied since the build)
book.files = book.files.map((f) => path.join(DIR, path.basename(f)));
// equal counts of words and phoneme words are not enough: each token must be one phoneme word
for (const s of book.sentences) if (book.refs[s.first] && !(await oneToOne(book.words.slice(s.first, s.last + 1)))) book.refs.fill(null, s.first, s.last + 1);

interface Edges { start: number[]; end: number[]; pause: number[]; running: number[] }
const edges = (): Edges => ({ start: [], end: [], pause: [], running: [] });
function add(e: Edges, ref: NonNullable<Manifest['refs'][number]>, start: number, end: number) {
  const s = 1000 * Math.abs(start - ref.start), t = 1000 * Math.abs(end - ref.end);
  e.start.push(s), e.end.push(t);
  (ref.pauseBefore ? e.pause : e.running).push(s);
  (ref.pauseAfter ? e.pause : e.running).push(t);
}
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
const within = (xs: number[], ms: number) => (100 * xs.filter((x) => x <= ms).length) / Math.max(1, xs.length);
const line = (e: Edges) => {
  const all = [...e.start, ...e.end];
  // a word more than half a second off is in the wrong place, not at a wrong boundary
  const lost = e.start.filter((x, i) => x > 500 || e.end[i]! > 500).length;
  return `MAE starts/ends ${mean(e.start).toFixed(1)}/${mean(e.end).toFixed(1)} ms (pause edges ${mean(e.pause).toFixed(1)}, running-speech edges ${mean(e.running).toFixed(1)}), ${within(all, 20).toFixed(1)} % within 20 ms, ${within(all, 50).toFixed(1)} % within 50 ms, ${e.start.length} words (${lost} off by over 0.5 s)`;
};

const threads = defaultAlignerThreads();
const aligner = await createAligner(alignerName, { modelsDir: 'models', device: 'cpu', threads, hmmScorer: scorerArg(args) });
const fallbackAligner = await createAligner('dtw', { modelsDir: 'models', device: 'cpu' });
const spokenTotal = book.spoken.filter(Boolean).length;
const cpu0 = cpuSeconds();
let t0 = performance.now();
// where an hour's time goes
const clock = phaseClock();
const res = await alignRecording({ recognizerScorer: recognizerArg(args), files: book.files, names: book.files.map((f) => path.basename(f)), words: book.words, blockEnds: book.blockEnds, language: 'en-US', aligner, fallbackAligner: alignerName === 'dtw' ? undefined : fallbackAligner, onProgress: clock.onProgress });
const phaseLine = clock.done().map((ph) => `${ph.phase} ${ph.wall.toFixed(1)} s wall / ${ph.cpu.toFixed(1)} s CPU`).join(', ');
const longSecs = (performance.now() - t0) / 1000;
const longCpu = cpuSeconds() - cpu0;
const peak = process.resourceUsage().maxRSS / 1024;

const longEdges = edges();
let spokenTimed = 0, unreadTimed = 0, offRef = 0;
res.words.forEach((w, i) => {
  if (!w) return;
  if (!book.spoken[i]) return void unreadTimed++;
  spokenTimed++;
  const ref = book.refs[i];
  if (!ref) return;
  if (w.file !== ref.file) return void offRef++;
  add(longEdges, ref, w.start, w.end);
});
const right = JSON.stringify(res.order) === JSON.stringify(book.trueOrder);
console.log(`${bookName}: ${(book.seconds / 60).toFixed(1)} min read by Piper in ${book.files.length} MP3 files (shuffled; ${book.prefaceSeconds.toFixed(0)} s of credits not in the text), ${spokenTotal} of the document's ${book.words.length} words read, aligner ${alignerName} in ${threads} thread(s), ${os.availableParallelism()} cores, load ${os.loadavg()[0]!.toFixed(1)}:`);
console.log(`  long-recording alignment: ${longSecs.toFixed(1)} s wall, ${longCpu.toFixed(1)} s CPU in this process and its finished children, peak RSS ${peak.toFixed(0)} MiB; ${res.coverage.segmentsFallback} of ${res.coverage.segments} segments with a dtw-fallback piece (${res.coverage.fallbackSeconds.toFixed(1)} s)`);
console.log(`  phases: ${phaseLine}; decoded ${(100 * res.coverage.decodedShare).toFixed(0)} % of the audio to locate the text`);
console.log(`  read words timed ${spokenTimed}/${spokenTotal} (${((100 * spokenTimed) / spokenTotal).toFixed(1)} %), unread words timed ${unreadTimed} of ${book.words.length - spokenTotal}, sentences found skipped ${res.coverage.sentencesSkipped} (each one a false skip), order ${right ? 'right' : `WRONG ${JSON.stringify(res.order)} vs ${JSON.stringify(book.trueOrder)}`}${offRef ? `, ${offRef} words timed in another file` : ''}`);
console.log(`  boundaries: ${line(longEdges)}`);
if (args.includes('--details')) {
  // runs of read words left untimed, and sentences found skipped, with their text
  for (let i = 0; i < res.words.length; i++) {
    if (!book.spoken[i] || res.words[i]) continue;
    let j = i;
    while (j + 1 < res.words.length && book.spoken[j + 1] && !res.words[j + 1]) j++;
    const near = res.words.slice(Math.max(0, i - 1), j + 2).find(Boolean);
    console.log(`    untimed ${i}-${j}${near ? ` (file ${near.file} ~${near.start.toFixed(1)} s)` : ''}: ${book.words.slice(i, j + 1).join(' ').slice(0, 200)}`);
    i = j;
  }
  // runs of read words timed more than half a second from their reference: in the wrong place
  for (let i = 0; i < res.words.length; i++) {
    const off = (k: number) => {
      const w = res.words[k], ref = book.refs[k];
      return !!w && !!ref && (w.file !== ref.file || Math.abs(w.start - ref.start) > 0.5 || Math.abs(w.end - ref.end) > 0.5);
    };
    if (!off(i)) continue;
    let j = i;
    while (j + 1 < res.words.length && off(j + 1)) j++;
    const w = res.words[i]!, ref = book.refs[i]!;
    console.log(`    off ${i}-${j} (file ${w.file} at ${w.start.toFixed(1)} s, reference file ${ref.file} at ${ref.start.toFixed(1)} s): ${book.words.slice(i, j + 1).join(' ').slice(0, 200)}`);
    i = j;
  }
  for (const [a, b] of res.skippedSentences) console.log(`    found skipped ${a}-${b}: ${book.words.slice(a, b + 1).join(' ')}`);
  res.files.forEach((f, k) => console.log(`    file ${k} ${path.basename(book.files[k]!)}: ${JSON.stringify(f).slice(0, 240)}`));
}

// baseline: each referenced sentence aligned alone on its own stretch of the same decoded audio
t0 = performance.now();
const cpu1 = cpuSeconds();
const RATE = 16000;
const baseEdges = edges();
const sameEdges = edges();
const decoded = new Map<number, Float32Array>();
for (let f = 0; f < book.files.length; f++) decoded.set(f, await decodeAudio(book.files[f]!, RATE));
const referenced = book.sentences.filter((s) => book.refs[s.first] && book.refs[s.last]);
await Promise.all(
  Array.from({ length: Math.max(1, aligner.concurrency ?? 1) }, async (_, lane, lanes = Math.max(1, aligner.concurrency ?? 1)) => {
    for (let k = lane; k < referenced.length; k += lanes) {
      const s = referenced[k]!;
      // 0.15 s of the gaps either side (the gap between sentences is 0.3 s)
      const from = Math.max(0, s.start - 0.15), audio = decoded.get(s.file)!;
      const clip = audio.subarray(Math.round(from * RATE), Math.min(audio.length, Math.round((s.end + 0.15) * RATE)));
      const words = await aligner.align(clip, RATE, book.words.slice(s.first, s.last + 1).join(' '), 'en-US');
      words.forEach((w, j) => {
        const i = s.first + j, ref = book.refs[i]!;
        add(baseEdges, ref, from + w.start, from + w.end);
        const lw = res.words[i];
        if (lw && lw.file === ref.file) add(sameEdges, ref, lw.start, lw.end);
      });
    }
  }),
);
const baseSecs = (performance.now() - t0) / 1000;
const baseCpu = cpuSeconds() - cpu1;
console.log(`  baseline, ${alignerName} on each of ${referenced.length} referenced sentences alone with its own text (decode included): ${baseSecs.toFixed(1)} s wall, ${baseCpu.toFixed(1)} s CPU; long-recording / baseline = ${(longSecs / baseSecs).toFixed(2)}x wall`);
console.log(`    per sentence: ${line(baseEdges)}`);
console.log(`    long recording, the same sentences: ${line(sameEdges)}; MAE ratio long / per sentence ${(mean([...sameEdges.start, ...sameEdges.end]) / mean([...baseEdges.start, ...baseEdges.end])).toFixed(2)}`);
await aligner.close();
await fallbackAligner.close();
process.exit(0);
