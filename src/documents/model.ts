// The documents layer's one entry point: readDocument (the readers behind it: pdf.ts, epub.ts,
// text.ts, loaded on demand), page rendering for PDFs, and the model's types (types.ts).
// Code outside src/documents imports this file only (the dependency rule says so).
import { DocumentError, type DocumentModel } from './types.ts';

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

/** A PDF page as a PNG `widthPx` wide (pdf.js loaded on first use; see pdf.ts). */
export async function renderPage(doc: DocumentModel, pageIndex: number, widthPx?: number): Promise<Buffer> {
  return (await import('./pdf.ts')).renderPage(doc, pageIndex, widthPx);
}

/** Frees what renderPage kept open for this document. */
export async function closeRendering(doc: DocumentModel): Promise<void> {
  await (await import('./pdf.ts')).closeRendering(doc);
}
