// Document model → the reader's pages: PDF pages rendered to PNG (1400 px wide) with each
// word's box normalised to the page, other formats as their text blocks.
import fs from 'node:fs';
import path from 'node:path';
import { normaliseBox, type DocumentModel } from '../documents/model.ts';
import type { ReaderPage } from './build.ts';

export const PAGE_IMAGE_WIDTH = 1400;

export interface ReaderPagesOptions {
  /** Only these 1-based page numbers (a reader of the pages narrated so far). Default: all. */
  pages?: Iterable<number>;
  /** Where PDF page images are written (created if missing). */
  imageDir: string;
  signal?: AbortSignal;
  onPage?: (done: number, total: number) => void;
}

export async function readerPages(doc: DocumentModel, opts: ReaderPagesOptions): Promise<ReaderPage[]> {
  const wanted = opts.pages ? new Set(opts.pages) : null;
  const pages = doc.pages.filter((p) => !wanted || wanted.has(p.index + 1));
  const out: ReaderPage[] = [];
  if (doc.format === 'pdf') await fs.promises.mkdir(opts.imageDir, { recursive: true });
  const { renderPage } = doc.format === 'pdf' ? await import('../documents/model.ts') : { renderPage: null };
  try {
    for (const [n, page] of pages.entries()) {
      opts.signal?.throwIfAborted();
      const rp: ReaderPage = {
        number: page.index + 1,
        blocks: page.blocks.map((b) => ({
          kind: b.kind,
          ...(b.level !== undefined ? { level: b.level } : {}),
          words: b.words.map((w) => {
            // Silent words (furniture, leaders) are on the page image already; no box to click.
            if (w.silent) return { text: w.text, silent: true as const };
            const parts = w.boxes ?? (w.box ? [w.box] : null);
            return parts && doc.format === 'pdf' ? { text: w.text, boxes: parts.map((x) => normaliseBox(x, page)) } : { text: w.text };
          }),
        })),
      };
      if (renderPage) {
        const png = await renderPage(doc, page.index, PAGE_IMAGE_WIDTH);
        const file = path.join(opts.imageDir, `page-${String(page.index + 1).padStart(4, '0')}.png`);
        await fs.promises.writeFile(file, png);
        rp.image = { file, ...pngSize(png) };
      }
      out.push(rp);
      opts.onPage?.(n + 1, pages.length);
    }
  } finally {
    if (doc.format === 'pdf') await (await import('../documents/model.ts')).closeRendering(doc);
  }
  return out;
}

/** Width and height from a PNG's IHDR chunk. */
export function pngSize(png: Buffer): { width: number; height: number } {
  if (png.length < 24 || png.readUInt32BE(12) !== 0x49484452) throw new Error('not a PNG');
  return { width: png.readUInt32BE(16), height: png.readUInt32BE(20) };
}
