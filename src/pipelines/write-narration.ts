// The files every document pipeline leaves beside its output (contract): narration.mp3, its
// word timeline (timeline.json) and word cues (narration.vtt), all in the sped-up time.
import fs from 'node:fs';
import path from 'node:path';
import { NARRATION_FILES, OUTPUT_FILES } from '../core/output-files.ts';
import { writeFileAtomic } from '../storage.ts';
import { chapterMarks, renderAudio, toWebVtt, type Chapter } from './audio.ts';
import { atSpeed, roundTime, type DocumentNarration, type TimelineEntry } from './narrate-document.ts';
import type { PipelineContext } from './types.ts';

export interface NarrationFiles {
  audio: typeof OUTPUT_FILES.narration;
  /** Every file written, relative to the output dir. */
  list: string[];
  title: string | null;
  duration: number;
  chapters: Chapter[];
  /** The timeline at the job's speed: times in narration.mp3 (a recording's skipped words have none). */
  words: TimelineEntry[];
}

export async function writeNarrationFiles(ctx: PipelineContext, n: DocumentNarration, fallbackTitle: string | null): Promise<NarrationFiles> {
  ctx.progress('audio', 0, 1);
  const { speed } = ctx.input.options;
  const words = atSpeed(n.timeline, speed);
  const title = n.doc.title ?? fallbackTitle;
  const duration = roundTime(n.narration.length / n.narration.sampleRate / speed);
  const chapters = chapterMarks(n.doc, words, duration, title);
  await renderAudio(ctx, n.narration, speed, path.join(ctx.outputDir, OUTPUT_FILES.narration), 'mp3', { title, author: n.doc.author, chapters: [] });
  await fs.promises.rm(n.narration.pcmPath, { force: true });
  const files = await writeTimelineFiles(ctx.outputDir, { title, author: n.doc.author, duration, pages: n.doc.pages.length, chapters, words });
  ctx.progress('audio', 1, 1);
  return files;
}

/**
 * timeline.json and narration.vtt for narration.mp3, whoever made it (Lectern's voices, or a
 * person's recording aligned to the text: then `extra` carries the alignment's figures).
 */
export async function writeTimelineFiles(
  outputDir: string,
  t: { title: string | null; author: string | null; duration: number; pages: number; chapters: Chapter[]; words: TimelineEntry[]; extra?: Record<string, unknown> },
): Promise<NarrationFiles> {
  const { title, author, duration, pages, chapters, words } = t;
  await writeFileAtomic(path.join(outputDir, OUTPUT_FILES.timeline), JSON.stringify({ title, author, duration, pages, chapters, ...t.extra, words }));
  await writeFileAtomic(path.join(outputDir, OUTPUT_FILES.cues), toWebVtt(words));
  return { audio: OUTPUT_FILES.narration, list: [...NARRATION_FILES], title, duration, chapters, words };
}
