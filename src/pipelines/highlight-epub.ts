// The highlight pipeline with format=epub: narrate the document, keep the narration files
// every document pipeline writes (narration.mp3, timeline.json, narration.vtt), and build a
// read-along EPUB 3 (Media Overlays) from them. The on-demand export of a lip-sync job calls
// the same builder on that job's files.
import path from 'node:path';
import { NARRATION_FILES, OUTPUT_FILES } from '../core/output-files.ts';
import { buildEpub } from '../epub/build.ts';
import { writeFileAtomic } from '../storage.ts';
import { renderAudio, toWebVtt } from './audio.ts';
import { atSpeed, narrateDocument, roundTime } from './narrate-document.ts';
import type { Pipeline, PipelineContext, PipelineResult } from './types.ts';

export const highlightEpubPipeline: Pipeline = {
  async run(ctx: PipelineContext): Promise<PipelineResult> {
    const { input } = ctx;
    const { doc, chunks, narration, timeline } = await narrateDocument(ctx);

    ctx.progress('render', 0, 1);
    const { speed } = input.options;
    const words = atSpeed(timeline, speed);
    const title = doc.title ?? input.title;
    const duration = roundTime(narration.samples.length / narration.sampleRate / speed);
    const audioFile = path.join(ctx.outputDir, OUTPUT_FILES.narration);
    await renderAudio(ctx, narration, speed, audioFile, 'mp3', { title, author: doc.author, chapters: [] });
    await writeFileAtomic(path.join(ctx.outputDir, OUTPUT_FILES.timeline), JSON.stringify({ title, author: doc.author, duration, pages: doc.pages.length, chapters: [], words }));
    await writeFileAtomic(path.join(ctx.outputDir, OUTPUT_FILES.cues), toWebVtt(words));
    const book = await buildEpub({
      outPath: path.join(ctx.outputDir, OUTPUT_FILES.epub),
      doc,
      words,
      audioFile,
      language: input.language,
      title: input.title ?? path.parse(input.document.originalName).name,
      signal: ctx.signal,
      onProgress: (phase, current, total) => ctx.progress(phase, current, total),
    });
    ctx.progress('render', 1, 1);
    return {
      output: OUTPUT_FILES.epub,
      files: [OUTPUT_FILES.epub, ...NARRATION_FILES],
      duration_seconds: duration,
      words: words.length,
      chunks: chunks.length,
      pages: doc.pages.length,
      epub_pages: book.pages.length,
      epub_images: book.images,
      engine: ctx.speech.engine,
    };
  },
};
