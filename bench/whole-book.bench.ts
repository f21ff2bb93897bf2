// Whole-book narration with the default voice (issue 16): the first ~3 hours of War of the
// Worlds (≈27k words, whole chapters) through the audio pipeline with local speech as a fresh
// install runs it (LECTERN_TTS_BACKEND=auto: the Piper voice installed for English, its own
// word timings), from a cold chunk cache. Prints wall time, seconds of narration, RTF (wall
// ÷ narration) and the process's peak RSS.
// Baseline, measured in the same run: eSpeak NG on the first chapter's text (BENCH_BASELINE=0 skips it).
// Run: node --import tsx bench/whole-book.bench.ts                  (~27k words; tens of minutes on 2 cores)
//      BENCH_WORDS=5000 node --import tsx bench/whole-book.bench.ts (a part of the book)
//      BENCH_QUICK=1 node --import tsx bench/whole-book.bench.ts    (a few sentences, for CI)
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { readDocument } from '../src/documents/model.ts';
import { createLogger } from '../src/log.ts';
import { ffprobe } from '../src/media/ffmpeg.ts';
import { audioPipeline } from '../src/pipelines/audio.ts';
import { fillOptions } from '../src/pipelines/options.ts';
import { createLocalSpeech, type Speech } from '../src/speech/local.ts';
import { localVoiceResolver, speechForVoice } from '../src/voices/resolve.ts';
import { QUICK } from './quick.ts';

const BOOK = process.env.BENCH_BOOK ?? path.join(import.meta.dirname, '..', 'test', 'fixtures', 'documents', 'war-of-the-worlds.epub');
const TARGET = QUICK ? 40 : Number(process.env.BENCH_WORDS ?? 27_000);
const MODELS = path.join(import.meta.dirname, '..', 'models');

/**
 * The book's text from its first part or chapter heading on (the cover, title page and
 * publisher's notes are not the book), as Markdown, whole paragraphs, until `target` words.
 */
async function bookText(target: number): Promise<{ markdown: string; words: number }> {
  const doc = await readDocument(BOOK, 'application/epub+zip');
  const first = Math.max(0, doc.pages.findIndex((p) => p.blocks[0]?.kind === 'heading' && /^(part|chapter|book)\b/i.test(p.blocks[0].text)));
  const out: string[] = [];
  let words = 0;
  for (const page of doc.pages.slice(first)) {
    for (const b of page.blocks) {
      if (words >= target) break;
      const n = b.words.length;
      if (!n) continue;
      out.push(b.kind === 'heading' ? `# ${b.text}` : b.text);
      words += n;
    }
  }
  return { markdown: `${out.join('\n\n')}\n`, words };
}

async function narrate(speech: Speech, file: string, work: string, label: string) {
  const bound = await speechForVoice(speech, null, 'en-US');
  const outDir = fs.mkdtempSync(path.join(work, 'out-'));
  let lastLog = 0;
  const t0 = performance.now();
  const result = await audioPipeline.run({
    input: { jobId: 'bench', document: { path: file, originalName: path.basename(file), contentType: 'text/markdown' }, language: 'en-US', voiceId: bound.voiceId, options: fillOptions({ format: 'mp3', speed: 1 }), title: null },
    outputDir: outDir,
    cacheDir: fs.mkdtempSync(path.join(work, 'cache-')),
    speech: bound.speech,
    log: createLogger('warn', 'bench'),
    progress(phase, current, total) {
      const now = performance.now();
      if (phase === 'synthesize' && now - lastLog > 60_000) {
        lastLog = now;
        console.error(`[${label}] ${((now - t0) / 1000).toFixed(0)} s: chunk ${current}/${total}, rss ${(process.memoryUsage().rss / 1e6).toFixed(0)} MB`);
      }
    },
    cancelled: async () => false,
    signal: new AbortController().signal,
  });
  const wallS = (performance.now() - t0) / 1000;
  const probe = await ffprobe(path.join(outDir, result.output));
  return { engine: bound.speech.engine, voice: bound.voiceId, wallS, audioS: probe.durationSeconds, chunks: result.chunks as number, words: result.words as number };
}

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'lectern-whole-book-'));
try {
  const { markdown, words } = await bookText(TARGET);
  const file = path.join(work, 'book.md');
  fs.writeFileSync(file, markdown);
  const rss0 = process.memoryUsage().rss / 1e6;

  const maxBatch = process.env.BENCH_MAX_BATCH ? Number(process.env.BENCH_MAX_BATCH) : undefined;
  const speech = await createLocalSpeech('auto', { modelsDir: MODELS, device: 'cpu', maxBatch, resolveVoice: localVoiceResolver(MODELS) });
  const main = await narrate(speech, file, work, 'default voice');
  await speech.close();
  const peakMb = process.resourceUsage().maxRSS / 1024;
  console.log(`War of the Worlds, first ${words} words (${QUICK ? 'BENCH_QUICK' : `target ${TARGET}`}), default voice: engine ${main.engine}, voice ${main.voice}, max batch ${maxBatch ?? '1 (local default)'}; ${os.cpus().length} cores, load ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
  console.log(`  wall ${main.wallS.toFixed(1)} s, narration ${(main.audioS / 3600).toFixed(2)} h (${main.audioS.toFixed(0)} s), ${main.chunks} chunks, ${main.words} timeline words`);
  console.log(`  RTF ${(main.wallS / main.audioS).toFixed(3)} (wall ÷ narration; ${(main.audioS / main.wallS).toFixed(1)}× real time), peak RSS ${peakMb.toFixed(0)} MB (at start ${rss0.toFixed(0)} MB)`);

  if (process.env.BENCH_BASELINE !== '0') {
    // Baseline in the same run: eSpeak NG (the former default) on the first ~2000 words.
    const part = await bookText(QUICK ? 40 : 2000);
    const baseFile = path.join(work, 'part.md');
    fs.writeFileSync(baseFile, part.markdown);
    const espeak = await createLocalSpeech('espeak', { modelsDir: MODELS, device: 'cpu' });
    const base = await narrate(espeak, baseFile, work, 'espeak baseline');
    await espeak.close();
    console.log(`  baseline eSpeak NG, first ${part.words} words: wall ${base.wallS.toFixed(1)} s, narration ${base.audioS.toFixed(0)} s, RTF ${(base.wallS / base.audioS).toFixed(3)}; default voice RTF ÷ eSpeak RTF = ${((main.wallS / main.audioS) / (base.wallS / base.audioS)).toFixed(1)}`);
  }
} finally {
  fs.rmSync(work, { recursive: true, force: true });
}
