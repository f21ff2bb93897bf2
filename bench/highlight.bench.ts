// Real-time factor of the highlight video: seconds of narration rendered per second of wall
// time, for a PDF (the live manual's first pages: real page images, boxes) and a text
// document (War of the Worlds' first chapters, laid out here), at 1280×720, 24 fps.
// Narration (eSpeak) is made first and not timed; the renderer is. Baseline in the same run:
// ffmpeg encoding the same duration of one still image with the same encoder settings at
// constant frame rate with the narration's AAC (`-loop 1`), i.e. the cheapest possible
// "video of the narration". One tinybench iteration each by default (the machine is shared).
// Run: node --import tsx bench/highlight.bench.ts            (PDF 8 pages, EPUB 2 chapters)
//      node --import tsx bench/highlight.bench.ts --pages 8 --chapters 4
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createCanvas } from '@napi-rs/canvas';
import { Bench } from 'tinybench';
import { readDocument, type DocumentModel } from '../src/documents/model.ts';
import { createLogger } from '../src/log.ts';
import { ffmpeg } from '../src/media/ffmpeg.ts';
import { planStates, renderHighlightVideo } from '../src/video/highlight-video.ts';
import { narrateModel } from '../src/pipelines/narrate-document.ts';
import { writeNarrationFiles } from '../src/pipelines/write-narration.ts';
import { fillOptions } from '../src/pipelines/options.ts';
import type { PipelineContext } from '../src/pipelines/types.ts';
import { createLocalSpeech } from '../src/speech/local.ts';
import { QUICK, sized } from './quick.ts';

const FIX = path.join(import.meta.dirname, '..', 'test', 'fixtures', 'documents');
const arg = (name: string, d: number) => (process.argv.includes(name) ? Number(process.argv[process.argv.indexOf(name) + 1]) : d);
const PAGES = arg('--pages', sized(8, 1));
const CHAPTERS = arg('--chapters', sized(2, 1));
const W = sized(1280, 320);
const H = sized(720, 180);
const FPS = 24;

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'lectern-highlight-bench-'));
const speech = await createLocalSpeech(process.env.LECTERN_TTS_BACKEND ?? 'espeak', { modelsDir: 'models', device: 'cpu', voice: null });

async function narrated(name: string, doc: DocumentModel) {
  const outputDir = path.join(work, name);
  fs.mkdirSync(outputDir);
  const ctx: PipelineContext = {
    input: { jobId: 'bench', document: { path: doc.path, originalName: path.basename(doc.path), contentType: '' }, language: 'en-US', voiceId: null, options: fillOptions({ format: 'mp4', speed: 1 }), title: null },
    outputDir,
    cacheDir: path.join(work, 'cache'),
    speech,
    log: createLogger('warn', 'bench'),
    progress() {},
    cancelled: async () => false,
    signal: new AbortController().signal,
  };
  const n = await narrateModel(ctx, doc);
  const files = await writeNarrationFiles(ctx, n, null);
  return { doc, outputDir, words: files.words, duration: files.duration, audio: path.join(outputDir, files.audio) };
}

// Documents cut to their first pages / chapters with plenty of text: the other pages keep their
// place with no blocks, so page indices (and PDF page rendering) stay those of the file.
const keep = (doc: DocumentModel, minWords: number, n: number): DocumentModel => {
  const chosen = new Set(doc.pages.filter((p) => p.blocks.reduce((k, b) => k + b.words.length, 0) >= minWords).slice(0, n).map((p) => p.index));
  // Quick mode: two blocks of the page are enough to run every stage.
  const blocks = (p: DocumentModel['pages'][number]) => (QUICK ? p.blocks.slice(0, 2) : p.blocks);
  return { ...doc, toc: [], pages: doc.pages.map((p) => (chosen.has(p.index) ? { ...p, blocks: blocks(p) } : { ...p, blocks: [] })) };
};
const pdfCut = keep(await readDocument(path.join(FIX, 'live-manual.en.pdf'), 'application/pdf'), 30, PAGES);
const epubCut = keep(await readDocument(path.join(FIX, 'war-of-the-worlds.epub'), 'application/epub+zip'), 200, CHAPTERS);
const cases = [await narrated('pdf', pdfCut), await narrated('text', epubCut)];

const still = path.join(work, 'still.png');
const c = createCanvas(W, H);
const g = c.getContext('2d');
g.fillStyle = '#fbf8f1';
g.fillRect(0, 0, W, H);
g.fillStyle = '#1b1b1b';
g.font = '32px "DejaVu Serif"';
for (let l = 0; l < 12; l++) g.fillText('A still page of text for the baseline encode, line after line.', 80, 80 + l * 48);
fs.writeFileSync(still, c.toBuffer('image/png'));

const bench = new Bench({ iterations: 1, warmupIterations: 0, time: 0 });
for (const k of cases) {
  const name = k.doc.format === 'pdf' ? 'pdf' : 'text';
  bench.add(`highlight video (${name})`, async () => {
    await renderHighlightVideo({ doc: k.doc, timeline: k.words, audioPath: k.audio, width: W, height: H, fps: FPS, outPath: path.join(k.outputDir, 'highlight.mp4') });
  });
  bench.add(`baseline: one still, same duration (${name})`, async () => {
    await ffmpeg(['-y', '-loop', '1', '-framerate', String(FPS), '-i', still, '-i', k.audio, '-t', String(k.duration), '-map', '0:v', '-map', '1:a',
      '-vf', 'format=yuv420p', '-c:v', 'libx264', '-preset', 'veryfast', '-tune', 'stillimage', '-crf', '22', '-bf', '0', '-c:a', 'aac', '-b:a', '96k', path.join(k.outputDir, 'still.mp4')]);
  });
}
await bench.run();
await speech.close();

console.log(`${os.cpus().length} cores, load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}; ${W}×${H} @ ${FPS} fps, backend ${speech.engine}`);
for (const [i, k] of cases.entries()) {
  const video = bench.tasks[i * 2]!.result!.latency.p50! / 1000;
  const base = bench.tasks[i * 2 + 1]!.result!.latency.p50! / 1000;
  const states = planStates(k.words, k.duration, FPS).length;
  const what = k.doc.format === 'pdf' ? `PDF, live manual first ${PAGES} pages of ≥30 words` : `text, War of the Worlds first ${CHAPTERS} chapters of ≥200 words`;
  console.log(`${what}: ${k.words.length} words, ${k.duration.toFixed(1)} s narration, ${states} pictures`);
  console.log(`  highlight video  median ${video.toFixed(2)} s → ${(k.duration / video).toFixed(1)}x real time`);
  console.log(`  baseline still   median ${base.toFixed(2)} s → ${(k.duration / base).toFixed(1)}x real time`);
  console.log(`  highlight / baseline wall time: ${(video / base).toFixed(2)}`);
}
fs.rmSync(work, { recursive: true, force: true });
