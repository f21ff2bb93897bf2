// Where a long recording's memory goes, phase by phase (README, round 33): the process's RSS,
// the main thread's V8 heap and its array buffers every 3 s while `alignRecording` decodes,
// locates and aligns a recording that bench/long-recording.bench.ts built (its manifest.json:
// files and words), then the peak RSS of each phase. The aligner's worker threads have their
// own heaps (a WebAssembly heap each, which keeps the high-water mark of the longest segment
// decoded): they show in the RSS, not in the main heap.
// Run: node --import tsx bench/long-recording.bench.ts --aligner hmm 180   (builds /tmp/lectern-bench-long8k-180 once)
//      node --import tsx bench/recording-memory.ts /tmp/lectern-bench-long8k-180 [--every 3]
import fs from 'node:fs';
import path from 'node:path';
import { alignRecording } from '../src/speech/align/long/recording.ts';
import { createAligner, defaultAlignerThreads } from '../src/speech/align/aligners.ts';

const args = process.argv.slice(2);
const dir = args[0];
if (!dir || !fs.existsSync(path.join(dir, 'manifest.json'))) {
  console.error('usage: node --import tsx bench/recording-memory.ts DIR (a folder bench/long-recording.bench.ts built: DIR/manifest.json)');
  process.exit(2);
}
const every = args.includes('--every') ? Number(args[args.indexOf('--every') + 1]) : 3;
const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf8')) as { files: string[]; words: string[] };
const aligner = await createAligner('hmm', { modelsDir: 'models', device: 'cpu', threads: defaultAlignerThreads() });
const fallbackAligner = await createAligner('dtw', { modelsDir: 'models', device: 'cpu' });

const MiB = (bytes: number) => Math.round(bytes / 2 ** 20);
const t0 = performance.now();
let phase = 'start';
const peaks = new Map<string, number>();
const sample = () => {
  const m = process.memoryUsage();
  peaks.set(phase, Math.max(peaks.get(phase) ?? 0, m.rss));
  return m;
};
const timer = setInterval(() => {
  const m = sample();
  console.log(`${((performance.now() - t0) / 1000).toFixed(0).padStart(5)} s  ${phase.padEnd(7)} RSS ${MiB(m.rss)} MiB, main heap ${MiB(m.heapUsed)}/${MiB(m.heapTotal)} MiB, array buffers ${MiB(m.arrayBuffers)} MiB`);
}, every * 1000);
const res = await alignRecording({
  files: manifest.files,
  words: manifest.words,
  language: 'en-US',
  aligner,
  fallbackAligner,
  onProgress: (p) => {
    sample();
    phase = p.phase;
  },
});
clearInterval(timer);
sample();
await aligner.close();
await fallbackAligner.close();
const timed = res.words.filter(Boolean).length;
console.log(`${manifest.files.length} files, ${timed} of ${manifest.words.length} words timed in ${((performance.now() - t0) / 1000).toFixed(1)} s; peak RSS ${MiB(process.resourceUsage().maxRSS * 1024)} MiB`);
console.log(`highest RSS sampled per phase: ${[...peaks].map(([p, b]) => `${p} ${MiB(b)} MiB`).join(', ')}`);
