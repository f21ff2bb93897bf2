// Stage shared by the highlight and lip-sync readers: the document's pages (PDF page images
// rendered into a scratch folder) and the job's narration packed into the reader ZIP.
import fs from 'node:fs';
import path from 'node:path';
import type { DocumentModel } from '../documents/model.ts';
import { OUTPUT_FILES } from '../core/output-files.ts';
import { buildReaderZip } from '../reader/build.ts';
import { readerPages } from '../reader/pages.ts';
import type { TimelineEntry } from './narrate-document.ts';
import type { PipelineContext } from './types.ts';

export interface ReaderNarration {
  title: string | null;
  /** Every source word; skipped ones (a recording that does not read them) are shown, never highlighted. */
  words: TimelineEntry[];
  duration: number;
}

/** Writes `reader.zip` in the job's output dir; `presenterFile` adds the presenter window. */
export async function writeReaderZip(
  ctx: PipelineContext,
  doc: DocumentModel,
  narration: ReaderNarration,
  opts: { presenterFile?: string; onPage?: (done: number, total: number) => void } = {},
): Promise<void> {
  const imageDir = path.join(ctx.outputDir, 'reader-pages');
  try {
    const pages = await readerPages(doc, { imageDir, signal: ctx.signal, onPage: opts.onPage });
    ctx.progress('package', 0, 1);
    await buildReaderZip({
      outPath: path.join(ctx.outputDir, OUTPUT_FILES.readerZip),
      title: narration.title ?? ctx.input.document.originalName,
      author: doc.author,
      language: doc.language ?? ctx.input.language,
      audioFile: path.join(ctx.outputDir, OUTPUT_FILES.narration),
      words: narration.words,
      duration: narration.duration,
      pages,
      ...(opts.presenterFile ? { presenter: { videoFile: opts.presenterFile } } : {}),
    });
    ctx.progress('package', 1, 1);
  } finally {
    await fs.promises.rm(imageDir, { recursive: true, force: true });
  }
}
