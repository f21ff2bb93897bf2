// The long-recording recogniser's acoustic scorer (round 20): the bench hour's first-pass
// windows (what the locate phase decodes first: 10 s every 40 s of each file, with its context)
// heard by the book recogniser, one pocketsphinx_batch process at a time, with Lectern's
// preloaded scorer and with the library's own, in turn, for several rounds: CPU seconds of the
// recogniser processes (median), the ratio, and whether every heard word agrees (word, start and
// end). Needs the bench hour (bench/long-recording.bench.ts builds it); quick mode
// (BENCH_QUICK=1) hears the test fixtures' LibriVox clips and jfk.wav whole, once.
// Run: node --import tsx bench/recognizer-scorer.bench.ts [--rounds 3]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { decodeRecordingFile } from '../src/speech/align/long/audio.ts';
import { spokenWords } from '../src/speech/align/long/book-lm.ts';
import { firstWindows } from '../src/speech/align/long/recording.ts';
import { createBookRecognizer, type HeardWord } from '../src/speech/align/long/recognize.ts';
import type { RecognizerScorer } from '../src/speech/align/long/pocketsphinx-scorer.ts';
import { librivoxClips } from '../test/helpers/messy-book.ts';
import { QUICK } from './quick.ts';
import { cpuSeconds } from './recording-build.ts';

const args = process.argv.slice(2);
const rounds = QUICK ? 1 : Number(args.includes('--rounds') ? args[args.indexOf('--rounds') + 1] : 3);
const HOUR = path.join(os.tmpdir(), 'lectern-bench-long8k-60');

/** The audio files and their text: the bench hour, or in quick mode the fixtures' clips. */
function source(): { what: string; files: string[]; words: string[] } {
  if (QUICK) {
    const clips = librivoxClips();
    return { what: 'the LibriVox clips and jfk.wav, whole', files: clips.map((c) => c.file!), words: clips.flatMap((c) => c.text!.split(' ')) };
  }
  if (!fs.existsSync(path.join(HOUR, 'manifest.json'))) throw new Error(`no bench hour in ${HOUR}: run bench/long-recording.bench.ts first`);
  return { what: "the bench hour's first pass", ...(JSON.parse(fs.readFileSync(path.join(HOUR, 'manifest.json'), 'utf8')) as { files: string[]; words: string[] }) };
}
const book = source();

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'lectern-bench-scorer-'));
try {
  const decoded = await Promise.all(book.files.map((f, i) => decodeRecordingFile(f, i, work)));
  const seconds = decoded.reduce((s, d) => s + d.duration, 0);
  const windows = QUICK ? decoded.map((d, file) => ({ file, start: 0, end: d.duration })) : firstWindows(decoded.map((d) => ({ decoded: d })), seconds);
  const heardSeconds = windows.reduce((s, w) => s + w.end - w.start, 0);
  const words = book.words.flatMap((w) => spokenWords(w, 'en')).filter(Boolean);
  const hear = async (scorer: RecognizerScorer) => {
    const dir = fs.mkdtempSync(path.join(work, `${scorer}-`));
    const rec = createBookRecognizer(words, { workDir: dir, language: 'en-US', sentences: [words], processes: 1, scorer });
    const cpu = cpuSeconds();
    const heard = await rec.recognize(decoded, windows, {});
    return { cpu: cpuSeconds() - cpu, heard };
  };
  const key = (h: HeardWord[][]) => h.flat().map((w) => `${w.word} ${w.start} ${w.end}`);
  const cpu: Record<RecognizerScorer, number[]> = { simd: [], stock: [] };
  let same = true;
  let count = 0;
  for (let r = 0; r < rounds; r++) {
    // in turn, so that both share the machine's drift
    const stock = await hear('stock');
    const simd = await hear('simd');
    cpu.stock.push(stock.cpu);
    cpu.simd.push(simd.cpu);
    const a = key(simd.heard), b = key(stock.heard);
    same &&= a.length === b.length && a.every((w, i) => w === b[i]);
    count = a.length;
    console.log(`  round ${r + 1}: library's scorer ${stock.cpu.toFixed(1)} s CPU, Lectern's ${simd.cpu.toFixed(1)} s`);
  }
  const median = (v: number[]) => [...v].sort((x, y) => x - y)[Math.floor(v.length / 2)]!;
  const [s, l] = [median(cpu.simd), median(cpu.stock)];
  console.log(
    `recogniser on ${book.what}: ${windows.length} windows, ${heardSeconds.toFixed(0)} s of audio, ${os.availableParallelism()} cores, load ${os.loadavg()[0]!.toFixed(1)}\n` +
      `  CPU (median of ${rounds}): library's scorer ${l.toFixed(1)} s, Lectern's ${s.toFixed(1)} s, ratio ${(s / l).toFixed(2)}; ` +
      `${(s / heardSeconds).toFixed(4)} against ${(l / heardSeconds).toFixed(4)} s of CPU per second of audio\n` +
      `  heard words: ${count}, ${same ? 'identical in every round (word, start, end)' : 'DIFFERENT'}`,
  );
  if (!same) process.exitCode = 1;
} finally {
  fs.rmSync(work, { recursive: true, force: true });
}
