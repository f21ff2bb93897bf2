// The long-recording recogniser's acoustic scorer (round 20): the bench hour's first-pass
// windows (what the locate phase decodes first: 10 s every 40 s of each file, with its context)
// heard by the book recogniser, one pocketsphinx_batch process at a time, with Lectern's
// preloaded scorer and with the library's own, in turn, for several rounds: CPU seconds of the
// recogniser processes (median), the ratio, and whether every heard word agrees (word, start and
// end). Needs the bench hour (bench/long-recording.bench.ts builds it).
// Run: node --import tsx bench/recognizer-scorer.bench.ts [--rounds 3]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { decodeRecordingFile } from '../src/speech/align/long/audio.ts';
import { spokenWords } from '../src/speech/align/long/book-lm.ts';
import { firstWindows } from '../src/speech/align/long/recording.ts';
import { createBookRecognizer, type HeardWord } from '../src/speech/align/long/recognize.ts';
import type { RecognizerScorer } from '../src/speech/align/long/pocketsphinx-scorer.ts';
import { cpuSeconds } from './recording-build.ts';

const args = process.argv.slice(2);
const rounds = Number(args.includes('--rounds') ? args[args.indexOf('--rounds') + 1] : 3);
const HOUR = path.join(os.tmpdir(), 'lectern-bench-long8k-60');
if (!fs.existsSync(path.join(HOUR, 'manifest.json'))) throw new Error(`no bench hour in ${HOUR}: run bench/long-recording.bench.ts first`);
const hour = JSON.parse(fs.readFileSync(path.join(HOUR, 'manifest.json'), 'utf8')) as { files: string[]; words: string[] };

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'lectern-bench-scorer-'));
try {
  const decoded = await Promise.all(hour.files.map((f, i) => decodeRecordingFile(f, i, work)));
  const seconds = decoded.reduce((s, d) => s + d.duration, 0);
  const windows = firstWindows(decoded.map((d) => ({ decoded: d })), seconds);
  const heardSeconds = windows.reduce((s, w) => s + w.end - w.start, 0);
  const words = hour.words.flatMap((w) => spokenWords(w, 'en')).filter(Boolean);
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
    `recogniser on the bench hour's first pass: ${windows.length} windows, ${heardSeconds.toFixed(0)} s of audio, ${os.availableParallelism()} cores, load ${os.loadavg()[0]!.toFixed(1)}\n` +
      `  CPU (median of ${rounds}): library's scorer ${l.toFixed(1)} s, Lectern's ${s.toFixed(1)} s, ratio ${(s / l).toFixed(2)}; ` +
      `${(s / heardSeconds).toFixed(4)} against ${(l / heardSeconds).toFixed(4)} s of CPU per second of audio\n` +
      `  heard words: ${count}, ${same ? 'identical in every round (word, start, end)' : 'DIFFERENT'}`,
  );
  if (!same) process.exitCode = 1;
} finally {
  fs.rmSync(work, { recursive: true, force: true });
}
