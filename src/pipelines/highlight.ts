// The highlight pipeline: the narrated document with the spoken word highlighted, as a
// video (format=mp4) or as the offline reader ZIP (format=reader). Both start from the same
// narration and write narration.mp3 / timeline.json / narration.vtt beside their output.
import path from 'node:path';
import { OUTPUT_FILES } from '../core/output-files.ts';
import { renderHighlightVideo } from '../video/highlight-video.ts';
import { writeNarrationFiles } from './narration-files.ts';
import { narrateDocument } from './narrate-document.ts';
import { writeReaderZip } from './reader-output.ts';
import type { Pipeline, PipelineContext, PipelineResult } from './types.ts';

export const highlightPipeline: Pipeline = {
  async run(ctx: PipelineContext): Promise<PipelineResult> {
    const { format, width, height, fps } = ctx.input.options;
    if (format !== 'mp4' && format !== 'reader') throw new Error(`this pipeline makes mp4 or reader, not ${format}`);
    const narrated = await narrateDocument(ctx);
    const { doc } = narrated;
    const files = await writeNarrationFiles(ctx, narrated, ctx.input.title);
    const common = { duration_seconds: files.duration, words: files.words.length, chunks: narrated.chunks.length, pages: doc.pages.length, engine: ctx.speech.engine };
    const audioPath = path.join(ctx.outputDir, files.audio);

    if (format === 'mp4') {
      ctx.progress('render', 0, 1);
      const video = await renderHighlightVideo({
        doc,
        timeline: files.words,
        audioPath,
        width,
        height,
        fps,
        outPath: path.join(ctx.outputDir, OUTPUT_FILES.highlightVideo),
        signal: ctx.signal,
        cancelled: () => ctx.cancelled(),
        onProgress: (done, total) => ctx.progress('render', done, total),
      });
      return { output: OUTPUT_FILES.highlightVideo, files: [OUTPUT_FILES.highlightVideo, ...files.list], ...common, width, height, fps, states: video.states };
    }

    ctx.progress('pages', 0, doc.pages.length);
    await writeReaderZip(ctx, doc, files, { onPage: (d, t) => ctx.progress('pages', d, t) });
    return { output: OUTPUT_FILES.readerZip, files: [OUTPUT_FILES.readerZip, ...files.list], ...common };
  },
};
