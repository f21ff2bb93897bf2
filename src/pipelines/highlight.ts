// The highlight pipeline: the narrated document with the spoken word highlighted, as a
// video (format=mp4), the offline reader ZIP (format=reader) or a read-along EPUB 3 with
// Media Overlays (format=epub). All start from one narration and write narration.mp3 /
// timeline.json / narration.vtt beside their output. The render stage (renderReadAlong) takes
// any narration: Lectern's own voices here, a person's recording aligned to the text in the
// readalong pipeline (readalong.ts), whose skipped words are shown but never highlighted.
import path from 'node:path';
import { OUTPUT_FILES } from '../core/output-files.ts';
import type { DocumentModel } from '../documents/model.ts';
import { buildEpub } from '../epub/build.ts';
import { renderHighlightVideo } from '../video/highlight-video.ts';
import { writeNarrationFiles, type NarrationFiles } from './write-narration.ts';
import { narrateDocument } from './narrate-document.ts';
import { writeReaderZip } from './reader-output.ts';
import type { Pipeline, PipelineContext, PipelineResult } from './types.ts';

export const highlightPipeline: Pipeline = {
  async run(ctx: PipelineContext): Promise<PipelineResult> {
    const narrated = await narrateDocument(ctx);
    const { doc } = narrated;
    const files = await writeNarrationFiles(ctx, narrated, ctx.input.title);
    const common = { duration_seconds: files.duration, words: files.words.length, chunks: narrated.chunks.length, pages: doc.pages.length, engine: ctx.speech.engine };
    return { ...common, ...(await renderReadAlong(ctx, doc, files)) };
  },
};

/**
 * The job's output in its format (mp4, reader or epub) from the document and the narration
 * files already in the output dir (narration.mp3 and its timeline); returns the output, every
 * file of the job and the format's own figures.
 */
export async function renderReadAlong(ctx: PipelineContext, doc: DocumentModel, files: NarrationFiles): Promise<PipelineResult> {
  const { format, width, height, fps } = ctx.input.options;
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
    return { output: OUTPUT_FILES.highlightVideo, files: [OUTPUT_FILES.highlightVideo, ...files.list], width, height, fps, states: video.states };
  }
  if (format === 'reader') {
    ctx.progress('pages', 0, doc.pages.length);
    await writeReaderZip(ctx, doc, files, { onPage: (d, t) => ctx.progress('pages', d, t) });
    return { output: OUTPUT_FILES.readerZip, files: [OUTPUT_FILES.readerZip, ...files.list] };
  }
  if (format === 'epub') {
    ctx.progress('render', 0, 1);
    const book = await buildEpub({
      outPath: path.join(ctx.outputDir, OUTPUT_FILES.epub),
      doc,
      words: files.words,
      audioFile: audioPath,
      language: ctx.input.language,
      title: ctx.input.title ?? path.parse(ctx.input.document.originalName).name,
      signal: ctx.signal,
      onProgress: (phase, current, total) => ctx.progress(phase, current, total),
    });
    ctx.progress('render', 1, 1);
    return { output: OUTPUT_FILES.epub, files: [OUTPUT_FILES.epub, ...files.list], epub_pages: book.pages.length, epub_images: book.images };
  }
  throw new Error(`this pipeline makes mp4, reader or epub, not ${format}`);
}
