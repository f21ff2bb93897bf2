// The lip-sync reader: page by page, narrate the page and have the presenter (the job's
// reference video) speak it; then presenter.mp4 (the pages' clips joined), narration.mp3 +
// timeline.json + narration.vtt over the pages done, and the output: the offline reader with
// the presenter in a window (format=reader) or the presenter over the highlight video (mp4).
// A stop request (the job's cancel flag) is seen between pages and inside the clip in
// flight; the outputs are then built from the pages done and the job ends `stopped`.
import fs from 'node:fs';
import path from 'node:path';
import { NARRATION_FILES, OUTPUT_FILES } from '../core/output-files.ts';
import { hasSpokenWords, readDocument, type DocumentModel } from '../documents/model.ts';
import { ffmpeg } from '../media/ffmpeg.ts';
import { PcmWriter, pcmInput } from '../media/pcm-file.ts';
import { renderHighlightVideo } from '../video/highlight-video.ts';
import { writeReaderZip } from './reader-output.ts';
import { writeFileAtomic } from '../storage.ts';
import { renderAudio, toWebVtt } from './audio.ts';
import type { Narration } from './synthesize-chunks.ts';
import { atSpeed, narrateModel, roundTime, type TimelineWord } from './narrate-document.ts';
import type { PresenterPosition } from './options.ts';
import { JobCancelled, type Pipeline, type PipelineContext, type PipelineResult } from './types.ts';

/** Silence after each page's narration: a breath between pages, in the clip and in narration.mp3 alike. */
const PAGE_GAP_SECONDS = 0.4;
const WORK_DIR = 'pages';

export interface DonePage {
  /** 0-based page index in the document. */
  index: number;
  /** The page's narration with its trailing gap, as a PCM file in the work dir (`pcmInput`). */
  pcmPath: string;
  /** Its length in samples. */
  length: number;
  sampleRate: number;
  /** Words of this page, times from the page's own start (speed 1). */
  words: TimelineWord[];
  clip: string;
}

export interface LipsyncAssets {
  doc: DocumentModel;
  title: string | null;
  pagesDone: DonePage[];
  pagesTotal: number;
  stopped: boolean;
  /** Whole narration (speed applied) and its timeline over the pages done. */
  duration: number;
  words: TimelineWord[];
}

/** Pages with something to say, in reading order. */
export function narratablePages(doc: DocumentModel): number[] {
  return doc.pages.filter(hasSpokenWords).map((p) => p.index);
}

/**
 * Narrates and lip-syncs page by page until done or stopped, then writes presenter.mp4,
 * narration.mp3, timeline.json and narration.vtt for the pages done.
 */
export async function makeLipsyncAssets(ctx: PipelineContext): Promise<LipsyncAssets> {
  const { input } = ctx;
  if (!input.referenceVideo) throw new Error('a lip-sync job needs a presenter video (ref_video_file_id)');
  if (!ctx.presenter) throw new Error('this worker cannot make presenter clips');
  const { speed } = input.options;
  const preset = input.options.lipsync_preset ?? undefined;

  ctx.progress('extract', 0, 1);
  const doc = await readDocument(input.document.path, input.document.contentType);
  ctx.progress('extract', 1, 1);
  const pages = narratablePages(doc);
  if (pages.length === 0) throw new Error('the document has no text to narrate');
  const presenter = await ctx.presenter();
  ctx.log.info({ pages: pages.length, presenter: presenter.where }, 'lip-sync reader: generating page by page');

  const work = path.join(ctx.outputDir, WORK_DIR);
  await fs.promises.rm(work, { recursive: true, force: true }); // a previous attempt's half-made clips
  await fs.promises.mkdir(work, { recursive: true });
  // Narration reports its own stages; here progress counts pages.
  const pageCtx: PipelineContext = { ...ctx, progress: () => undefined };

  const done: DonePage[] = [];
  let stopped = false;
  for (let k = 0; k < pages.length; k++) {
    if (await ctx.cancelled()) {
      stopped = true;
      break;
    }
    ctx.progress('page', k, pages.length);
    const index = pages[k]!;
    const name = `page-${String(index + 1).padStart(4, '0')}`;
    try {
      const n = await narrateModel(pageCtx, doc, { pages: [index] });
      const page = await withTail(n.narration, Math.round(PAGE_GAP_SECONDS * n.narration.sampleRate), path.join(work, `${name}.pcm`));
      const audio = path.join(work, `${name}.wav`);
      await writePageAudio(ctx, page.pcmPath, n.narration.sampleRate, speed, audio);
      const clip = path.join(work, `${name}.mp4`);
      await presenter.generate({ audioPath: audio, referenceVideoPath: input.referenceVideo, outputPath: clip, preset }, () => ctx.cancelled(), ctx.signal);
      if (ctx.signal.aborted) throw ctx.signal.reason ?? new Error('aborted');
      done.push({ index, ...page, sampleRate: n.narration.sampleRate, words: n.timeline, clip });
      ctx.progress('page', k + 1, pages.length);
    } catch (e) {
      if (!(e instanceof JobCancelled)) throw e;
      stopped = true; // the page in flight is dropped; the pages before it make the outputs
      break;
    }
  }
  if (done.length === 0) throw new JobCancelled('stopped before any page was generated');

  ctx.progress('assemble', 0, 1);
  const sampleRate = done[0]!.sampleRate;
  if (done.some((p) => p.sampleRate !== sampleRate)) throw new Error('pages were narrated at different sample rates');
  const pcm = await PcmWriter.create(path.join(work, 'narration.pcm'));
  const timeline: TimelineWord[] = [];
  try {
    for (const p of done) {
      const t0 = pcm.length / sampleRate;
      await pcm.file(p.pcmPath);
      for (const w of p.words) timeline.push({ ...w, start: roundTime(w.start + t0), end: roundTime(w.end + t0) });
    }
  } finally {
    await pcm.close();
  }
  const words = atSpeed(timeline, speed);
  const duration = roundTime(pcm.length / sampleRate / speed);
  const title = doc.title ?? input.title;
  const narration: Narration = { pcmPath: pcm.path, sampleRate, length: pcm.length, words: [], chunkStarts: [] };
  await renderAudio(ctx, narration, speed, path.join(ctx.outputDir, OUTPUT_FILES.narration), 'mp3', { title, author: doc.author, chapters: [] });
  const lastPage = done[done.length - 1]!.index + 1;
  await writeFileAtomic(
    path.join(ctx.outputDir, OUTPUT_FILES.timeline),
    JSON.stringify({ title, author: doc.author, duration, pages: lastPage, chapters: [], words }),
  );
  await writeFileAtomic(path.join(ctx.outputDir, OUTPUT_FILES.cues), toWebVtt(words));
  await joinClips(ctx, done.map((p) => p.clip), path.join(ctx.outputDir, OUTPUT_FILES.presenter));
  await fs.promises.rm(work, { recursive: true, force: true });
  ctx.progress('assemble', 1, 1);
  return { doc, title, pagesDone: done, pagesTotal: pages.length, stopped, duration, words };
}

/** A page's narration moved to `pcmPath`, with `tail` samples of silence after it. */
async function withTail(n: Narration, tail: number, pcmPath: string): Promise<{ pcmPath: string; length: number }> {
  await fs.promises.rename(n.pcmPath, pcmPath);
  await fs.promises.appendFile(pcmPath, Buffer.alloc(tail * 2));
  return { pcmPath, length: n.length + tail };
}

/** A page's narration as 16-bit WAV at the job's speed: what its presenter clip speaks. */
async function writePageAudio(ctx: PipelineContext, pcmPath: string, sampleRate: number, speed: number, out: string): Promise<void> {
  const filters = speed !== 1 ? ['-filter:a', `atempo=${speed}`] : [];
  await ffmpeg(['-y', ...pcmInput(pcmPath, sampleRate), ...filters, '-c:a', 'pcm_s16le', out], { signal: ctx.signal });
}

/**
 * The pages' clips one after another. Every clip comes from the same provider, preset and
 * reference, so they share codec, size and frame rate and join without re-encoding.
 */
async function joinClips(ctx: PipelineContext, clips: string[], out: string): Promise<void> {
  const list = `${out}.list.txt`;
  const tmp = `${out}.tmp.mp4`;
  await fs.promises.writeFile(list, clips.map((c) => `file '${c.replace(/'/g, "'\\''")}'`).join('\n') + '\n');
  try {
    await ffmpeg(['-y', '-f', 'concat', '-safe', '0', '-i', list, '-c', 'copy', '-movflags', '+faststart', tmp], { signal: ctx.signal });
    await fs.promises.rename(tmp, out);
  } finally {
    await fs.promises.rm(list, { force: true });
    await fs.promises.rm(tmp, { force: true });
  }
}

/** The result fields every lip-sync output shares. */
export function lipsyncResult(a: LipsyncAssets, output: string, extra: string[]): PipelineResult {
  return {
    output,
    files: [output, OUTPUT_FILES.presenter, ...NARRATION_FILES, ...extra].filter((f, i, all) => all.indexOf(f) === i),
    duration_seconds: a.duration,
    words: a.words.length,
    pages: a.doc.pages.length,
    pages_done: a.pagesDone.length,
    pages_total: a.pagesTotal,
    ...(a.stopped ? { status: 'stopped' as const } : {}),
  };
}

export const lipsyncPipeline: Pipeline = {
  async run(ctx) {
    const { format, width, height, fps, presenter_position: position, presenter_scale: scale } = ctx.input.options;
    if (format !== 'reader' && format !== 'mp4') throw new Error(`the lipsync pipeline makes reader or mp4, not ${format}`);
    const a = await makeLipsyncAssets(ctx);
    // The outputs show the document up to the last page done (a stopped job's part, whole otherwise).
    const lastPage = a.pagesDone[a.pagesDone.length - 1]!.index;
    const doc: DocumentModel = { ...a.doc, pages: a.doc.pages.filter((p) => p.index <= lastPage) };
    const audioPath = path.join(ctx.outputDir, OUTPUT_FILES.narration);
    const presenterPath = path.join(ctx.outputDir, OUTPUT_FILES.presenter);

    if (format === 'reader') {
      ctx.progress('package', 0, 1);
      await writeReaderZip(ctx, doc, a, { presenterFile: presenterPath });
      return lipsyncResult(a, OUTPUT_FILES.readerZip, []);
    }

    ctx.progress('render', 0, 1);
    const highlight = path.join(ctx.outputDir, OUTPUT_FILES.highlightVideo);
    await renderHighlightVideo({ doc, timeline: a.words, audioPath, width, height, fps, outPath: highlight, signal: ctx.signal, onProgress: (d, t) => ctx.progress('render', d, t) });
    ctx.progress('composite', 0, 1);
    await compositePresenter(ctx, { background: highlight, presenter: presenterPath, audio: audioPath, width, height, fps, position, scale, out: path.join(ctx.outputDir, OUTPUT_FILES.lipsyncVideo) });
    ctx.progress('composite', 1, 1);
    return { ...lipsyncResult(a, OUTPUT_FILES.lipsyncVideo, [OUTPUT_FILES.highlightVideo]), width, height, fps };
  },
};

/** The filter graph that puts the presenter (scaled to `scale` of the width, a margin from the corner) over the background. */
export function overlayFilter(width: number, position: PresenterPosition, scale: number): string {
  const w = Math.max(2, Math.floor((width * scale) / 2) * 2);
  const m = Math.round(width * 0.02);
  const x = position.endsWith('right') ? `W-w-${m}` : String(m);
  const y = position.startsWith('bottom') ? `H-h-${m}` : String(m);
  return `[1:v]scale=${w}:-2[p];[0:v][p]overlay=x=${x}:y=${y}:eof_action=pass:shortest=0,format=yuv420p[v]`;
}

async function compositePresenter(
  ctx: PipelineContext,
  o: { background: string; presenter: string; audio: string; width: number; height: number; fps: number; position: PresenterPosition; scale: number; out: string },
): Promise<void> {
  const tmp = `${o.out}.tmp.mp4`;
  try {
    await ffmpeg(
      [
        '-y', '-i', o.background, '-i', o.presenter, '-i', o.audio,
        '-filter_complex', overlayFilter(o.width, o.position, o.scale),
        '-map', '[v]', '-map', '2:a', '-r', String(o.fps),
        '-c:v', 'libx264', '-preset', 'veryfast', '-crf', '23', '-c:a', 'aac', '-b:a', '128k', '-shortest', '-movflags', '+faststart', tmp,
      ],
      { signal: ctx.signal },
    );
    await fs.promises.rename(tmp, o.out);
  } finally {
    await fs.promises.rm(tmp, { force: true });
  }
}
