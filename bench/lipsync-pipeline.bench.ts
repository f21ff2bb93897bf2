// Lip-sync reader time per page: the whole lipsync pipeline (format=reader, eSpeak, the
// viseme provider `fast` on the presenter clip) on a 3-page PDF of one sentence (~2 s of
// narration) per page, against the audio pipeline on the same document in the same run
// (narration only: the floor). Cached TTS chunks are cleared before every iteration.
// Run: node --import tsx bench/lipsync-pipeline.bench.ts
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Bench } from 'tinybench';
import { loadServiceConfig } from '../src/config.ts';
import { createLogger } from '../src/log.ts';
import { audioPipeline } from '../src/pipelines/audio.ts';
import { lipsyncPipeline } from '../src/pipelines/lipsync.ts';
import { createPresenterGenerator } from '../src/pipelines/presenter.ts';
import { fillOptions, type OutputFormat } from '../src/pipelines/options.ts';
import type { Pipeline, PipelineContext } from '../src/pipelines/types.ts';
import { createLocalSpeech } from '../src/speech/local.ts';
import { makePdf } from '../test/helpers/make-documents.ts';
import { QUICK, sized } from './quick.ts';

const root = path.join(import.meta.dirname, '..');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'lectern-lipsync-pipeline-bench-'));
const ALL_PAGES = ['Hello from the first page of this book.', 'The second page says a little more than that.', 'And the third page ends the story here.'];
const PAGES = QUICK ? ['Hello.'] : ALL_PAGES;
const pdf = path.join(tmp, 'three.pdf');
fs.writeFileSync(pdf, makePdf({ pages: PAGES.map((text) => [{ text, x: 72, y: 700, size: 14 }]) }));
const config = loadServiceConfig({}, { LECTERN_DATA_DIR: tmp, LECTERN_LIPSYNC_PROVIDER: 'viseme' });
const log = createLogger('warn', 'bench');
const speech = await createLocalSpeech('espeak', { modelsDir: config.modelsDir, device: 'cpu', voice: null });
const presenter = await createPresenterGenerator({ gpu: null, modelsDir: config.modelsDir, lipsync: config.lipsync }, log);
let narrated = 0;
let iteration = 0;

async function run(p: Pipeline, format: OutputFormat): Promise<void> {
  // A fresh dir per iteration: nothing of a previous run's files is touched while its ZIP may still be closing.
  const out = path.join(tmp, `out-${format}-${iteration++}`);
  const cache = path.join(tmp, `cache-${iteration}`);
  fs.mkdirSync(out, { recursive: true });
  const ctx: PipelineContext = {
    input: {
      jobId: 'bench',
      document: { path: pdf, originalName: 'three.pdf', contentType: 'application/pdf' },
      language: 'en-US',
      voiceId: null,
      options: fillOptions({ format, speed: 1, lipsync_preset: 'fast' }),
      title: null,
      referenceVideo: path.join(root, 'test/fixtures/video/presenter.mp4'),
    },
    outputDir: out,
    cacheDir: cache,
    speech,
    log,
    progress: () => undefined,
    cancelled: async () => false,
    signal: new AbortController().signal,
    presenter: async () => presenter,
  };
  const r = await p.run(ctx);
  narrated = r.duration_seconds ?? 0;
}

const bench = new Bench({ iterations: sized(3, 1), warmupIterations: sized(1, 0), time: 0 });
bench.add('audio pipeline, mp3 (baseline: narration only)', () => run(audioPipeline, 'mp3'));
bench.add('lipsync pipeline, reader (viseme fast)', () => run(lipsyncPipeline, 'reader'));
await bench.run();
await presenter.close();
await speech.close();

for (const t of bench.tasks) if (t.result?.error) throw t.result.error;
const med = (name: string) => bench.tasks.find((t) => t.name === name)!.result!.latency.p50!;
console.log(`${PAGES.length} pages, ${narrated.toFixed(2)} s of narration, ${os.cpus().length} cores`);
const base = med(bench.tasks[0]!.name);
for (const t of bench.tasks) {
  const ms = med(t.name);
  console.log(`${t.name.padEnd(50)} median ${(ms / 1000).toFixed(2)} s  ${(ms / 1000 / PAGES.length).toFixed(2)} s/page  ${(ms / base).toFixed(2)}x baseline  ${(ms / 1000 / narrated).toFixed(2)} s per narrated s`);
}
fs.rmSync(tmp, { recursive: true, force: true });
