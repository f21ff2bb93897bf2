// The audio pipeline: document → sentences → chunks → narration (MP3) with a word
// timeline (JSON) and word cues (WebVTT) beside it.
import fs from 'node:fs';
import path from 'node:path';
import { readTextDocument } from '../documents/text.ts';
import { ffmpeg } from '../media/ffmpeg.ts';
import { tokenizeWords } from '../speech/words.ts';
import { writeFileAtomic } from '../storage.ts';
import { narrate, type Narration } from './narrate.ts';
import { chunkSentences, splitSentences } from './segment.ts';
import type { Pipeline, PipelineContext, PipelineResult } from './types.ts';

export interface TimelineWord {
  word: string;
  start: number;
  end: number;
  page: number;
  block: number;
}

export const audioPipeline: Pipeline = {
  async run(ctx: PipelineContext): Promise<PipelineResult> {
    const { input } = ctx;
    ctx.progress('extract', 0, 1);
    const doc = await readTextDocument(input.document.path, input.document.contentType);
    if (doc.blocks.length === 0) throw new Error('the document has no text to narrate');
    ctx.progress('extract', 1, 1);

    // Chunks never cross a block, so each chunk's words belong to one block.
    ctx.progress('segment', 0, 1);
    const maxBytes = await ctx.speech.maxChunkBytes();
    const chunks: Array<{ text: string; block: number }> = [];
    doc.blocks.forEach((block, b) => {
      for (const text of chunkSentences(splitSentences(block), maxBytes)) chunks.push({ text, block: b });
    });
    ctx.progress('segment', 1, 1);

    const narration = await narrate(ctx, chunks.map((c) => c.text));
    const timeline: TimelineWord[] = narration.words.map((w) => ({ word: w.word, start: round(w.start), end: round(w.end), page: 1, block: chunks[w.chunk]!.block }));
    const expected = chunks.reduce((n, c) => n + tokenizeWords(c.text).length, 0);
    if (timeline.length !== expected) throw new Error(`timeline has ${timeline.length} words, the text ${expected}`);

    ctx.progress('render', 0, 1);
    const speed = input.options.speed ?? 1;
    const duration = await renderMp3(ctx, narration, speed, path.join(ctx.outputDir, 'narration.mp3'));
    const scaled = timeline.map((w) => ({ ...w, start: round(w.start / speed), end: round(w.end / speed) }));
    await writeFileAtomic(path.join(ctx.outputDir, 'timeline.json'), JSON.stringify({ title: doc.title ?? input.title, duration, words: scaled }));
    await writeFileAtomic(path.join(ctx.outputDir, 'narration.vtt'), toWebVtt(scaled));
    ctx.progress('render', 1, 1);
    return {
      output: 'narration.mp3',
      files: ['narration.mp3', 'timeline.json', 'narration.vtt'],
      duration_seconds: duration,
      words: scaled.length,
      chunks: chunks.length,
      engine: ctx.speech.engine,
    };
  },
};

const round = (t: number) => Math.round(t * 1000) / 1000;

async function renderMp3(ctx: PipelineContext, n: Narration, speed: number, out: string): Promise<number> {
  // Raw float PCM straight into ffmpeg: no intermediate WAV, nothing that blocks the event loop.
  const pcm = Buffer.from(n.samples.buffer, n.samples.byteOffset, n.samples.byteLength);
  const tmp = `${out}.tmp.mp3`;
  const filters = speed !== 1 ? ['-filter:a', `atempo=${speed}`] : [];
  try {
    await ffmpeg(['-y', '-f', 'f32le', '-ar', String(n.sampleRate), '-ac', '1', '-i', 'pipe:0', ...filters, '-c:a', 'libmp3lame', '-q:a', '4', tmp], { input: pcm, signal: ctx.signal });
    await fs.promises.rename(tmp, out);
  } finally {
    await fs.promises.rm(tmp, { force: true });
  }
  return round(n.samples.length / n.sampleRate / speed);
}

export function toWebVtt(words: TimelineWord[]): string {
  const ts = (t: number) => {
    const ms = Math.round(t * 1000);
    const h = Math.floor(ms / 3_600_000);
    const m = Math.floor((ms % 3_600_000) / 60_000);
    const s = Math.floor((ms % 60_000) / 1000);
    return `${String(h).padStart(2, '0')}:${String(m).padStart(2, '0')}:${String(s).padStart(2, '0')}.${String(ms % 1000).padStart(3, '0')}`;
  };
  const cues = words.map((w, i) => `${i + 1}\n${ts(w.start)} --> ${ts(Math.max(w.end, w.start + 0.001))}\n${w.word.replace(/-->/g, '→')}\n`);
  return `WEBVTT\n\n${cues.join('\n')}`;
}
