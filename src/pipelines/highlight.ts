// The highlight pipeline: the narrated document with the spoken word highlighted, as a
// video (format=mp4) or as the offline reader ZIP (format=reader). Both start from the same
// narration and write narration.mp3 / timeline.json / narration.vtt beside their output.
import path from 'node:path';
import { renderHighlightVideo } from '../media/highlight-video.ts';
import { writeNarrationFiles } from './narration-files.ts';
import { narrateDocument } from './narrate-document.ts';
import { writeReaderZip } from './reader-output.ts';
import type { Pipeline, PipelineContext, PipelineResult } from './types.ts';

export const VIDEO_DEFAULTS = { width: 1280, height: 720, fps: 24 };

export const highlightPipeline: Pipeline = {
  async run(ctx: PipelineContext): Promise<PipelineResult> {
    const format = ctx.input.options.format ?? 'mp4';
    if (format !== 'mp4' && format !== 'reader') throw new Error(`this pipeline makes mp4 or reader, not ${format}`);
    const narrated = await narrateDocument(ctx);
    const { doc } = narrated;
    const files = await writeNarrationFiles(ctx, narrated, ctx.input.title);
    const common = { duration_seconds: files.duration, words: files.words.length, chunks: narrated.chunks.length, pages: doc.pages.length, engine: ctx.speech.engine };
    const audioPath = path.join(ctx.outputDir, files.audio);

    if (format === 'mp4') {
      const opt = ctx.input.options as Record<string, unknown>;
      // H.264 4:2:0 needs even sizes; the API bounds the values, odd ones are rounded down.
      const even = (v: unknown, d: number) => (typeof v === 'number' && Number.isFinite(v) ? Math.floor(v / 2) * 2 : d);
      const width = even(opt.width, VIDEO_DEFAULTS.width);
      const height = even(opt.height, VIDEO_DEFAULTS.height);
      const fps = typeof opt.fps === 'number' ? Math.round(opt.fps) : VIDEO_DEFAULTS.fps;
      ctx.progress('render', 0, 1);
      const video = await renderHighlightVideo({
        doc,
        timeline: files.words,
        audioPath,
        width,
        height,
        fps,
        outPath: path.join(ctx.outputDir, 'highlight.mp4'),
        signal: ctx.signal,
        cancelled: () => ctx.cancelled(),
        onProgress: (done, total) => ctx.progress('render', done, total),
      });
      return { output: 'highlight.mp4', files: ['highlight.mp4', ...files.list], ...common, width, height, fps, states: video.states };
    }

    ctx.progress('pages', 0, doc.pages.length);
    await writeReaderZip(ctx, doc, files, { onPage: (d, t) => ctx.progress('pages', d, t) });
    return { output: 'reader.zip', files: ['reader.zip', ...files.list], ...common };
  },
};
