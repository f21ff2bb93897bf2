// PDF → document model with pdfjs-dist (text items with positions → words with boxes), and
// page images with @napi-rs/canvas for the highlight pipeline.
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { createCanvas } from '@napi-rs/canvas';
import { getDocument, PDFDataRangeTransport, type PDFDocumentProxy, type PDFPageProxy } from 'pdfjs-dist/legacy/build/pdf.mjs';
import type { TextItem } from 'pdfjs-dist/types/src/display/api.js';
import { DocumentError, hasSpokenWords, type ByteSource, type DocBlock, type DocPage, type DocumentModel, type DocWord, type TocEntry, type WordBox } from './types.ts';
import { bodySize, hyphenatedForms, linesToBlocks, markFurniture, markLeaders, readingOrder, type LaidPage, type Line } from './pdf-layout.ts';

const require = createRequire(import.meta.url);
// Fonts for the 14 standard PDF fonts, which documents may use without embedding them.
const STANDARD_FONTS = `${path.join(path.dirname(require.resolve('pdfjs-dist/package.json')), 'standard_fonts')}/`;

// Glyph extent around the baseline, as a fraction of the font size (no per-font metrics in text items).
const ASCENT = 0.8;
const DESCENT = 0.22;

async function openPdf(file: string): Promise<PDFDocumentProxy> {
  const data = new Uint8Array(await fs.promises.readFile(file));
  return loaded(getDocument({ data, verbosity: 0, standardFontDataUrl: STANDARD_FONTS, isEvalSupported: false, useSystemFonts: false }).promise);
}

async function loaded(loading: Promise<PDFDocumentProxy>): Promise<PDFDocumentProxy> {
  try {
    return await loading;
  } catch (e) {
    const err = e as Error;
    if (err.name === 'PasswordException') throw new DocumentError('the PDF is encrypted with a password; upload an unprotected copy');
    throw new DocumentError(`the file is not a readable PDF (${oneLine(err.message)})`);
  }
}

/** Bytes pdf.js reads at a time from a PDF opened in ranges. */
const RANGE_CHUNK = 64 * 1024;
/**
 * The most of a PDF its language may cost. A sound PDF's catalog takes kilobytes; one whose
 * cross-reference table is broken makes pdf.js scan (and keep) the whole file, which for a
 * 1 GB upload is not worth a language: past this the read stops and the language is unknown.
 */
export const MAX_LANGUAGE_READ = 32 * 1024 * 1024;

/**
 * The document's declared language (its catalog's Lang, which pdf.js reports as info.Language),
 * read without its pages, and without reading the file whole: pdf.js asks for the ranges it
 * needs (the trailer, the cross-reference table, the catalog), so the language of a 1 GB upload
 * costs kilobytes of the API's memory, not a gigabyte. `stats.bytesRead` counts what was read.
 */
export async function readPdfLanguage(source: ByteSource, stats: { bytesRead: number } = { bytesRead: 0 }): Promise<string | null> {
  const read = async (begin: number, end: number) => {
    if (stats.bytesRead + (end - begin) > MAX_LANGUAGE_READ) throw new DocumentError(`reading the PDF's language would take more than ${MAX_LANGUAGE_READ} bytes of it`);
    const chunk = await source.read(begin, end);
    stats.bytesRead += chunk.length;
    return chunk;
  };
  const transport = new PDFDataRangeTransport(source.size, await read(0, RANGE_CHUNK));
  // A range that cannot be read (or is past the bound) ends the read: pdf.js would wait for it
  // forever, so its error races the load and the metadata, and the load is destroyed after.
  let fail!: (e: Error) => void;
  const failed = new Promise<never>((_, reject) => (fail = reject));
  failed.catch(() => undefined);
  transport.requestDataRange = (begin: number, end: number) => {
    read(begin, end).then((chunk) => transport.onDataRange(begin, chunk), fail);
  };
  const loading = getDocument({ range: transport, length: source.size, rangeChunkSize: RANGE_CHUNK, disableAutoFetch: true, disableStream: true, verbosity: 0, isEvalSupported: false, useSystemFonts: false });
  let pdf: PDFDocumentProxy;
  try {
    pdf = await Promise.race([loaded(loading.promise), failed]);
  } catch (e) {
    void loading.destroy().catch(() => undefined);
    throw e;
  }
  try {
    const meta = (await Promise.race([pdf.getMetadata(), failed]).catch(() => null)) as { info?: Record<string, unknown> } | null;
    return str(meta?.info?.Language);
  } finally {
    await pdf.destroy();
  }
}

export async function readPdf(file: string): Promise<DocumentModel> {
  const pdf = await openPdf(file);
  try {
    const laid: LaidPage[] = [];
    for (let i = 0; i < pdf.numPages; i++) {
      const page = await pdf.getPage(i + 1);
      const vp = page.getViewport({ scale: 1 });
      laid.push({ width: round2(vp.width), height: round2(vp.height), lines: await pageLines(page) });
      page.cleanup();
    }
    // Headings stand out by size against the body text of the whole document; furniture is
    // what recurs across its pages.
    const body = bodySize(laid);
    markFurniture(laid);
    const compounds = hyphenatedForms(laid);
    const pages: DocPage[] = laid.map((p, i) => {
      for (const l of p.lines) if (l.role !== 'furniture') markLeaders(l);
      const blocks = linesToBlocks(readingOrder(p, body), body, compounds);
      markCaptions(blocks);
      return { index: i, width: p.width, height: p.height, blocks };
    });
    if (!pages.some(hasSpokenWords)) {
      throw new DocumentError('the PDF has no text layer (a scanned document?); run OCR on it first');
    }
    const meta = (await pdf.getMetadata().catch(() => null)) as { info?: Record<string, unknown> } | null;
    const info = meta?.info ?? {};
    return {
      format: 'pdf',
      path: file,
      title: str(info.Title),
      author: str(info.Author),
      language: str(info.Language),
      pages,
      toc: await outlineToc(pdf),
    };
  } finally {
    await pdf.destroy();
  }
}

interface Glyphs {
  text: string;
  x0: number;
  x1: number;
  /** The item's generic font family (pdfjs style: serif, sans-serif, monospace). */
  family?: string;
  /** A raised, smaller mark (a footnote reference): its own word, not read. */
  mark?: boolean;
}

/**
 * Text items in content-stream order → lines of words in viewport points. Items on one
 * baseline join into a line; a gap wider than two em cuts it (a column gutter, a table
 * cell, a right-aligned number), the pieces keeping one `row` id. A raised, smaller item of
 * digits or symbols is a footnote mark.
 */
async function pageLines(page: PDFPageProxy): Promise<Line[]> {
  const vp = page.getViewport({ scale: 1 });
  const content = await page.getTextContent();
  const lines: Line[] = [];
  let runs: Glyphs[] = [];
  let cur: { baseline: number; size: number; end: number } | null = null;
  let breakNext = false;
  let row = 0;

  const flush = () => {
    if (cur && runs.length) {
      const words = runsToWords(runs, cur.baseline, cur.size, vp);
      if (words.length) {
        const boxes = words.flatMap((w) => w.boxes ?? []);
        const [, y] = vp.convertToViewportPoint(runs[0]!.x0, cur.baseline) as [number, number];
        lines.push({ y: round2(y), x0: Math.min(...boxes.map((b) => b.x)), x1: Math.max(...boxes.map((b) => b.x + b.width)), size: cur.size, words, row, seq: lines.length });
      }
    }
    runs = [];
    cur = null;
  };

  for (const it of content.items) {
    if (!('str' in it)) continue;
    const item = it as TextItem;
    const [a, b, , , e, f] = item.transform as number[];
    const size = Math.hypot(a!, b!) || item.height;
    if (item.str.length > 0 && size > 0) {
      const lineSize = Math.max(size, cur?.size ?? 0);
      const sameLine = cur && !breakNext && Math.abs(f! - cur.baseline) < 0.5 * lineSize && e! > cur.end - lineSize;
      if (!sameLine) {
        flush();
        row++;
      } else if (e! - cur!.end > 2 * lineSize) flush();
      const mark = !!cur && size < 0.8 * cur.size && f! - cur.baseline > 0.15 * cur.size && /^[\d*†‡§¶,]+$/u.test(item.str.trim());
      if (!cur) cur = { baseline: f!, size, end: e! };
      // A visible gap between items is a word break even without a space character.
      if (runs.length && (e! - cur.end > 0.2 * size || mark)) runs.push({ text: ' ', x0: cur.end, x1: e! });
      runs.push({ text: item.str, x0: e!, x1: e! + item.width, family: content.styles[item.fontName]?.fontFamily, ...(mark ? { mark } : {}) });
      if (mark) runs.push({ text: ' ', x0: e! + item.width, x1: e! + item.width });
      cur.end = e! + item.width;
      if (!mark) cur.size = Math.max(cur.size, size);
    }
    breakNext = item.hasEOL;
  }
  flush();
  return lines;
}

/** A block that opens with a label and a number ("Figure 3:", "Table 2.", "Abb. 4:") is a caption, read where it stands. */
function markCaptions(blocks: DocBlock[]): void {
  for (const b of blocks) {
    if (!b.role && b.kind === 'paragraph' && /^\p{Lu}\p{L}{1,11}\.?\s\d+(\.\d+)*[:.]\s/u.test(b.text)) b.role = 'caption';
  }
}

function runsToWords(runs: Glyphs[], baseline: number, size: number, vp: ReturnType<PDFPageProxy['getViewport']>): DocWord[] {
  // Text items carry no per-glyph advances: each item's width is shared among its characters
  // in proportion to their advances in a font of the same generic family ("i" is narrower
  // than "m"), which lands word boxes on the glyphs far better than an even spread.
  const chars: Array<{ ch: string; x0: number; x1: number; mark?: boolean }> = [];
  for (const r of runs) {
    // Dot leaders glued to the text ("Introduction......4") are words of their own.
    const list = [...r.text.replace(/([.·…]{4,})/gu, ' $1 ')];
    const adv = list.map((ch) => advance(ch, r.family));
    const sum = adv.reduce((a, b) => a + b, 0) || 1;
    let at = r.x0;
    list.forEach((ch, k) => {
      const w = ((r.x1 - r.x0) * adv[k]!) / sum;
      chars.push({ ch, x0: at, x1: at + w, ...(r.mark ? { mark: true } : {}) });
      at += w;
    });
  }
  const words: DocWord[] = [];
  let text = '';
  let x0 = 0;
  let x1 = 0;
  let mark = false;
  const end = () => {
    if (text) {
      const box = toViewport(vp, x0, x1, baseline, size);
      words.push({ text, box, boxes: [box], ...(mark ? { silent: true as const } : {}) });
    }
    text = '';
  };
  for (const c of chars) {
    if (/\s/u.test(c.ch)) {
      end();
      continue;
    }
    if (!text) {
      x0 = c.x0;
      mark = !!c.mark;
    }
    text += c.ch;
    x1 = c.x1;
  }
  end();
  return words;
}

function toViewport(vp: ReturnType<PDFPageProxy['getViewport']>, x0: number, x1: number, baseline: number, size: number): WordBox {
  const [ax, ay] = vp.convertToViewportPoint(x0, baseline - DESCENT * size) as [number, number];
  const [bx, by] = vp.convertToViewportPoint(x1, baseline + ASCENT * size) as [number, number];
  return { x: round2(Math.min(ax, bx)), y: round2(Math.min(ay, by)), width: round2(Math.abs(bx - ax)), height: round2(Math.abs(by - ay)) };
}

async function outlineToc(pdf: PDFDocumentProxy): Promise<TocEntry[]> {
  const outline = await pdf.getOutline().catch(() => null);
  if (!outline) return [];
  const toc: TocEntry[] = [];
  type Node = { title: string; dest: string | unknown[] | null; items: Node[] };
  const walk = async (nodes: Node[], level: number) => {
    for (const n of nodes) {
      const page = await destPage(pdf, n.dest);
      const title = n.title.replace(/\s+/g, ' ').trim();
      if (page !== null && title) toc.push({ title, page, level });
      await walk(n.items, level + 1);
    }
  };
  await walk(outline as Node[], 1);
  return toc;
}

async function destPage(pdf: PDFDocumentProxy, dest: string | unknown[] | null): Promise<number | null> {
  try {
    const explicit = typeof dest === 'string' ? await pdf.getDestination(dest) : dest;
    const ref = explicit?.[0];
    if (typeof ref === 'number') return ref;
    if (ref && typeof ref === 'object') return await pdf.getPageIndex(ref as { num: number; gen: number });
  } catch {
    // a broken link in the outline: leave the entry out
  }
  return null;
}

const measurer = createCanvas(8, 8).getContext('2d');
const advances = new Map<string, number>();
/** A character's advance at 100 px in a system font of the generic family (cached). */
function advance(ch: string, family = 'sans-serif'): number {
  const font = /mono/i.test(family) ? 'DejaVu Sans Mono' : /^serif$/i.test(family) ? 'DejaVu Serif' : 'DejaVu Sans';
  const key = `${font}\u0000${ch}`;
  let w = advances.get(key);
  if (w === undefined) {
    measurer.font = `100px "${font}"`;
    w = Math.max(1, measurer.measureText(ch).width);
    advances.set(key, w);
  }
  return w;
}

const opened = new WeakMap<DocumentModel, Promise<PDFDocumentProxy>>();

/** Renders one page (0-based) of a PDF document model as a PNG `widthPx` wide, on white. */
export async function renderPage(doc: DocumentModel, pageIndex: number, widthPx = 1400): Promise<Buffer> {
  if (doc.format !== 'pdf') throw new Error(`renderPage needs a PDF document, not ${doc.format}`);
  if (!Number.isInteger(pageIndex) || pageIndex < 0 || pageIndex >= doc.pages.length) throw new RangeError(`no page ${pageIndex} (the document has ${doc.pages.length})`);
  let pending = opened.get(doc);
  if (!pending) {
    pending = openPdf(doc.path);
    opened.set(doc, pending);
  }
  const page = await (await pending).getPage(pageIndex + 1);
  try {
    const base = page.getViewport({ scale: 1 });
    const viewport = page.getViewport({ scale: widthPx / base.width });
    const canvas = createCanvas(Math.round(viewport.width), Math.round(viewport.height));
    const ctx = canvas.getContext('2d');
    ctx.fillStyle = '#ffffff';
    ctx.fillRect(0, 0, canvas.width, canvas.height);
    await page.render({ canvasContext: ctx as unknown as Parameters<PDFPageProxy['render']>[0]['canvasContext'], viewport }).promise;
    return canvas.toBuffer('image/png');
  } finally {
    page.cleanup();
  }
}

/** Releases what renderPage holds open for `doc`. */
export async function closeRendering(doc: DocumentModel): Promise<void> {
  const pending = opened.get(doc);
  opened.delete(doc);
  if (pending) await (await pending.catch(() => null))?.destroy();
}

const str = (v: unknown): string | null => (typeof v === 'string' && v.trim() ? v.replace(/\s+/g, ' ').trim() : null);
const round2 = (n: number) => Math.round(n * 100) / 100;
const oneLine = (s: string) => s.replace(/\s+/g, ' ').trim();
