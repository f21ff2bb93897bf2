// Whole audio pipeline for War of the Worlds (61k words, EPUB) to narration with the fastest
// local backend (eSpeak NG): extraction → segmentation → synthesis → MP3 + timeline + VTT,
// from a cold chunk cache. Baseline measured in the same run: extraction alone (tinybench
// median), reported with its share of the whole. Also the real-time factor of the whole run
// (seconds of narration per second of wall time).
// Run: node --import tsx bench/pipeline.bench.ts            (the whole book; several minutes)
//      node --import tsx bench/pipeline.bench.ts --chapters 3 (the first 3 spine documents with text)
//      node --import tsx bench/pipeline.bench.ts --format m4b (audiobook with chapter marks)
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Bench } from 'tinybench';
import { readDocument } from '../src/documents/model.ts';
import { createLogger } from '../src/log.ts';
import { ffprobe } from '../src/media/ffmpeg.ts';
import { audioPipeline } from '../src/pipelines/audio.ts';
import { fillOptions } from '../src/pipelines/options.ts';
import { createLocalSpeech } from '../src/speech/local.ts';
import { makeEpub3 } from '../test/helpers/make-documents.ts';
import { QUICK, sized } from './quick.ts';

const BOOK = path.join(import.meta.dirname, '..', 'test', 'fixtures', 'documents', 'war-of-the-worlds.epub');
const EPUB = 'application/epub+zip';
const arg = process.argv.indexOf('--chapters');
const chapters = arg > 0 ? Number(process.argv[arg + 1]) : sized(0, 1);
const backend = process.env.LECTERN_TTS_BACKEND ?? 'espeak';
const fmtArg = process.argv.indexOf('--format');
const format = fmtArg > 0 && process.argv[fmtArg + 1] === 'm4b' ? 'm4b' : 'mp3';

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'lectern-pipeline-bench-'));
let input = BOOK;
if (chapters > 0) {
  // A smaller book made of the first chapters' own text, for a quick run.
  const full = await readDocument(BOOK, EPUB);
  // Quick mode: the first chapter's first three paragraphs.
  const picked = full.pages.filter((p) => p.blocks.length > 0).slice(0, chapters).map((p) => (QUICK ? { ...p, blocks: p.blocks.slice(0, 3) } : p));
  input = path.join(work, 'part.epub');
  const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;');
  fs.writeFileSync(input, makeEpub3({ title: full.title!, author: full.author!, language: 'en', chapters: picked.map((p, i) => ({ title: `Part ${i + 1}`, paragraphs: p.blocks.map((b) => esc(b.text)) })) }));
}

const bench = new Bench({ iterations: sized(5, 1), warmupIterations: sized(1, 0), time: 0 });
bench.add('extract (readDocument)', async () => {
  await readDocument(input, EPUB);
});
await bench.run();
const extractMs = bench.tasks[0]!.result!.latency.p50!;
const doc = await readDocument(input, EPUB);
const words = doc.pages.reduce((n, p) => n + p.blocks.reduce((m, b) => m + b.words.length, 0), 0);

const speech = await createLocalSpeech(backend, { modelsDir: 'models', device: 'cpu', voice: null });
const outDir = path.join(work, 'out');
fs.mkdirSync(outDir);
const phases = new Map<string, number>();
let last = performance.now();
let lastPhase = '';
const t0 = performance.now();
const result = await audioPipeline.run({
  input: { jobId: 'bench', document: { path: input, originalName: path.basename(input), contentType: EPUB }, language: 'en-US', voiceId: null, options: fillOptions({ format, speed: 1 }), title: null },
  outputDir: outDir,
  cacheDir: path.join(work, 'cache'),
  speech,
  log: createLogger('warn', 'bench'),
  progress(phase) {
    const now = performance.now();
    if (lastPhase) phases.set(lastPhase, (phases.get(lastPhase) ?? 0) + now - last);
    last = now;
    lastPhase = phase;
  },
  cancelled: async () => false,
  signal: new AbortController().signal,
});
const wallMs = performance.now() - t0;
const probe = await ffprobe(path.join(outDir, result.output));
const outMb = fs.statSync(path.join(outDir, result.output)).size / 1e6;
phases.set(lastPhase, (phases.get(lastPhase) ?? 0) + performance.now() - last);
await speech.close();
const rss = process.resourceUsage().maxRSS / 1024;
fs.rmSync(work, { recursive: true, force: true });

const audio = result.duration_seconds!;
console.log(`book: ${chapters > 0 ? `first ${chapters} chapters of ` : ''}War of the Worlds, ${doc.pages.length} spine documents, ${words} words, ${result.chunks} chunks, backend ${speech.engine}, ${os.cpus().length} cores`);
console.log(`extract (readDocument) median      ${extractMs.toFixed(0)} ms (baseline)`);
console.log(`whole pipeline, cold cache          ${(wallMs / 1000).toFixed(1)} s for ${(audio / 3600).toFixed(2)} h of narration (${(audio / (wallMs / 1000)).toFixed(1)}x real time, ${(words / (wallMs / 1000)).toFixed(0)} words/s)`);
console.log(`output ${result.output}: ffprobe ${probe.durationSeconds.toFixed(2)} s (timeline ${audio.toFixed(2)} s), ${probe.chapters.length} chapters, ${outMb.toFixed(1)} MB`);
console.log(`stages: ${[...phases].map(([k, v]) => `${k} ${(v / 1000).toFixed(1)} s`).join(', ')}`);
console.log(`whole pipeline / extraction: ${(wallMs / extractMs).toFixed(1)}x (extraction is ${((100 * extractMs) / wallMs).toFixed(2)}% of the run); peak RSS ${rss.toFixed(0)} MiB`);
