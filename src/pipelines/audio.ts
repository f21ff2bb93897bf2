// The audio pipeline: document → sentences → chunks → narration (MP3, or M4B with chapter
// marks from the table of contents) with a word timeline (JSON) and word cues (WebVTT) beside it.
import fs from 'node:fs';
import path from 'node:path';
import type { DocumentModel } from '../documents/model.ts';
import { narrationFile, OUTPUT_FILES } from '../core/output-files.ts';
import { ffmpeg } from '../media/ffmpeg.ts';
import { pcmInput } from '../media/pcm-file.ts';
import { toWebVtt as webVtt } from '../media/captions.ts';
import { writeFileAtomic } from '../storage.ts';
import type { Narration } from './synthesize-chunks.ts';
import { atSpeed, isTimed, narrateDocument, roundTime as round, type TimelineEntry, type TimelineWord } from './narrate-document.ts';
import type { Pipeline, PipelineContext, PipelineResult } from './types.ts';

export interface Chapter {
  title: string;
  start: number;
  end: number;
}

export const audioPipeline: Pipeline = {
  async run(ctx: PipelineContext): Promise<PipelineResult> {
    const { input } = ctx;
    const { format, speed } = input.options;
    if (format !== 'mp3' && format !== 'm4b') throw new Error(`the audio pipeline makes mp3 or m4b, not ${format}`);
    const { doc, chunks, narration, timeline } = await narrateDocument(ctx);

    ctx.progress('render', 0, 1);
    const scaled = atSpeed(timeline, speed);
    const title = doc.title ?? input.title;
    const output = narrationFile(format);
    const duration = round(narration.length / narration.sampleRate / speed);
    const chapters = format === 'm4b' ? chapterMarks(doc, scaled, duration, title) : [];
    await renderAudio(ctx, narration, speed, path.join(ctx.outputDir, output), format, { title, author: doc.author, chapters });
    await fs.promises.rm(narration.pcmPath, { force: true });
    await writeFileAtomic(path.join(ctx.outputDir, OUTPUT_FILES.timeline), JSON.stringify({ title, author: doc.author, duration, pages: doc.pages.length, chapters, words: scaled }));
    await writeFileAtomic(path.join(ctx.outputDir, OUTPUT_FILES.cues), toWebVtt(scaled));
    ctx.progress('render', 1, 1);
    return {
      output,
      files: [output, OUTPUT_FILES.timeline, OUTPUT_FILES.cues],
      duration_seconds: duration,
      words: scaled.length,
      chunks: chunks.length,
      pages: doc.pages.length,
      chapters: chapters.length,
      engine: ctx.speech.engine,
    };
  },
};

/**
 * Chapters from the table of contents: each entry starts at the first spoken word of its
 * page (and block, where the entry names one). Entries that land on the same moment keep the
 * first (the outermost); the first chapter always starts at 0. No TOC → one chapter.
 */
export function chapterMarks(doc: Pick<DocumentModel, 'toc'>, entries: TimelineEntry[], duration: number, title: string | null): Chapter[] {
  // A chapter starts at its first word that is heard (words a recording skips have no time).
  const words = entries.filter(isTimed);
  const starts: Array<{ title: string; start: number }> = [];
  let w = 0;
  for (const entry of doc.toc) {
    const page = entry.page + 1;
    const block = entry.block ?? -1;
    // TOC entries are in reading order; a backwards one (a broken outline) is searched from the top.
    if (w >= words.length || words[w]!.page > page || (words[w]!.page === page && words[w]!.block > block && block >= 0)) w = 0;
    while (w < words.length && (words[w]!.page < page || (words[w]!.page === page && words[w]!.block < block))) w++;
    if (w >= words.length) continue;
    const start = words[w]!.start;
    if (starts.some((s) => Math.abs(s.start - start) < 0.001)) continue;
    starts.push({ title: entry.title, start });
  }
  starts.sort((a, b) => a.start - b.start);
  if (starts.length === 0) starts.push({ title: title ?? 'Narration', start: 0 });
  starts[0]!.start = 0;
  return starts.map((s, i) => ({ title: s.title, start: s.start, end: i + 1 < starts.length ? starts[i + 1]!.start : duration }));
}

export type { TimelineWord };

/** Narration samples → MP3 or M4B (chapters and book metadata), sped up when speed ≠ 1; written atomically. */
export async function renderAudio(
  ctx: PipelineContext,
  n: Narration,
  speed: number,
  out: string,
  format: 'mp3' | 'm4b',
  meta: { title: string | null; author: string | null; chapters: Chapter[] },
): Promise<void> {
  const tmp = `${out}.tmp.${format}`;
  const metaFile = `${out}.ffmeta.txt`;
  const filters = speed !== 1 ? ['-filter:a', `atempo=${speed}`] : [];
  const input = ['-y', ...pcmInput(n.pcmPath, n.sampleRate)];
  try {
    if (format === 'mp3') {
      await ffmpeg([...input, ...filters, '-c:a', 'libmp3lame', '-q:a', '4', tmp], { signal: ctx.signal });
    } else {
      await fs.promises.writeFile(metaFile, ffmetadata(meta));
      // The default AAC coder (twoloop) encodes speech at ~35x real time per core, "fast" at ~200x
      // with the same size: a whole book's M4B in a minute and a half instead of nine.
      await ffmpeg(
        [...input, '-i', metaFile, '-map', '0:a', '-map_metadata', '1', '-map_chapters', '1', ...filters, '-c:a', 'aac', '-aac_coder', 'fast', '-b:a', '64k', '-movflags', '+faststart', '-f', 'ipod', tmp],
        { signal: ctx.signal },
      );
    }
    await fs.promises.rename(tmp, out);
  } finally {
    await fs.promises.rm(tmp, { force: true });
    await fs.promises.rm(metaFile, { force: true });
  }
}

/** ffmpeg's FFMETADATA1 file: book title/author and chapters in milliseconds. */
export function ffmetadata(meta: { title: string | null; author: string | null; chapters: Chapter[] }): string {
  const esc = (s: string) => s.replace(/[\\=;#\n]/g, (c) => `\\${c}`);
  const lines = [';FFMETADATA1'];
  if (meta.title) lines.push(`title=${esc(meta.title)}`, `album=${esc(meta.title)}`);
  if (meta.author) lines.push(`artist=${esc(meta.author)}`);
  lines.push('genre=Audiobook');
  for (const c of meta.chapters) {
    lines.push('', '[CHAPTER]', 'TIMEBASE=1/1000', `START=${Math.round(c.start * 1000)}`, `END=${Math.round(c.end * 1000)}`, `title=${esc(c.title)}`);
  }
  return `${lines.join('\n')}\n`;
}

/** One cue per spoken word (what the narration's captions show); skipped words (no time) have none. */
export function toWebVtt(words: TimelineEntry[]): string {
  return webVtt(words.filter(isTimed).map((w) => ({ start: w.start, end: w.end, text: w.word })));
}
