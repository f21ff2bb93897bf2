// The documents layer's one entry point: readDocument (the readers behind it: pdf.ts, epub.ts,
// text.ts, loaded on demand), page rendering for PDFs, and the model's types (types.ts).
// Code outside src/documents imports this file only (the dependency rule says so).
import fs from 'node:fs';
import { DocumentError, type ByteSource, type DocumentModel } from './types.ts';

export * from './types.ts';

/** Reads any supported document into the model. contentType is the sniffed type of the upload. */
export async function readDocument(file: string, contentType: string): Promise<DocumentModel> {
  const base = contentType.split(';')[0]!.trim();
  switch (base) {
    case 'application/pdf':
      return (await import('./pdf.ts')).readPdf(file);
    case 'application/epub+zip':
      return (await import('./epub.ts')).readEpub(file);
    case 'text/markdown':
    case 'text/plain':
      return (await import('./text.ts')).readTextModel(file, base);
    default:
      throw new DocumentError(`cannot read ${base} documents (PDF, EPUB, Markdown and plain text are supported)`);
  }
}

/** A document's language when neither the request nor the document names one. */
export const DEFAULT_LANGUAGE = 'en-US';

/**
 * The language a document says it is in (an EPUB's dc:language, a PDF's /Lang), as a BCP-47
 * tag ("fr_CA" → "fr-CA"), or null: none declared, not a language tag, or a format that has no
 * place for it (Markdown, plain text). Reads the metadata only, not the pages.
 */
export async function declaredLanguage(file: string | ByteSource, contentType: string): Promise<string | null> {
  const read = LANGUAGE_READERS[contentType.split(';')[0]!.trim()];
  const raw = !read ? null : typeof file === 'string' ? await withFileSource(file, read) : await read(file);
  const tag = raw?.trim().replace(/_/g, '-');
  return tag && tag.length <= 35 && /^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$/.test(tag) ? tag : null;
}

/** `use` on a local file as a ByteSource, the file closed after. */
export async function withFileSource<T>(file: string, use: (source: ByteSource) => Promise<T>): Promise<T> {
  const fh = await fs.promises.open(file, 'r');
  try {
    const { size } = await fh.stat();
    return await use({
      size,
      async read(begin, end) {
        const buf = Buffer.alloc(Math.max(0, Math.min(end, size) - begin));
        const { bytesRead } = await fh.read(buf, 0, buf.length, begin);
        return buf.subarray(0, bytesRead);
      },
    });
  } finally {
    await fh.close();
  }
}

const LANGUAGE_READERS: Record<string, (source: ByteSource) => Promise<string | null>> = {
  'application/epub+zip': async (source) => (await import('./epub.ts')).readEpubLanguage(source),
  'application/pdf': async (source) => (await import('./pdf.ts')).readPdfLanguage(source),
};

/** Whether a document of this type has a place to declare its language (else declaredLanguage is null without reading it). */
export const declaresLanguage = (contentType: string): boolean => contentType.split(';')[0]!.trim() in LANGUAGE_READERS;

/** A PDF page as a PNG `widthPx` wide (pdf.js loaded on first use; see pdf.ts). */
export async function renderPage(doc: DocumentModel, pageIndex: number, widthPx?: number): Promise<Buffer> {
  return (await import('./pdf.ts')).renderPage(doc, pageIndex, widthPx);
}

/** Frees what renderPage kept open for this document. */
export async function closeRendering(doc: DocumentModel): Promise<void> {
  await (await import('./pdf.ts')).closeRendering(doc);
}
