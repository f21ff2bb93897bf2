// PDF → document model with pdfjs-dist (text items with positions → words with boxes), and
// page images with @napi-rs/canvas for the highlight pipeline.
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { createCanvas } from '@napi-rs/canvas';
import { getDocument, type PDFDocumentProxy, type PDFPageProxy } from 'pdfjs-dist/legacy/build/pdf.mjs';
import type { TextItem } from 'pdfjs-dist/types/src/display/api.js';
import { DocumentError, type BlockKind, type DocBlock, type DocPage, type DocumentModel, type DocWord, type TocEntry, type WordBox } from './model.ts';

const require = createRequire(import.meta.url);
// Fonts for the 14 standard PDF fonts, which documents may use without embedding them.
const STANDARD_FONTS = `${path.join(path.dirname(require.resolve('pdfjs-dist/package.json')), 'standard_fonts')}/`;

// Glyph extent around the baseline, as a fraction of the font size (no per-font metrics in text items).
const ASCENT = 0.8;
const DESCENT = 0.22;

async function openPdf(file: string): Promise<PDFDocumentProxy> {
  const data = new Uint8Array(await fs.promises.readFile(file));
  try {
    return await getDocument({ data, verbosity: 0, standardFontDataUrl: STANDARD_FONTS, isEvalSupported: false, useSystemFonts: false }).promise;
  } catch (e) {
    const err = e as Error;
    if (err.name === 'PasswordException') throw new DocumentError('the PDF is encrypted with a password; upload an unprotected copy');
    throw new DocumentError(`the file is not a readable PDF (${oneLine(err.message)})`);
  }
}

export async function readPdf(file: string): Promise<DocumentModel> {
  const pdf = await openPdf(file);
  try {
    const raw: Array<{ page: DocPage; lines: Line[] }> = [];
    for (let i = 0; i < pdf.numPages; i++) {
      const page = await pdf.getPage(i + 1);
      const vp = page.getViewport({ scale: 1 });
      const lines = (await pageLines(page)).filter((l) => !isPageNumber(l, vp.height));
      raw.push({ page: { index: i, width: round2(vp.width), height: round2(vp.height), blocks: [] }, lines });
      page.cleanup();
    }
    // Headings stand out by size against the body text of the whole document.
    const sizes = raw.flatMap((r) => r.lines.map((l) => l.size)).sort((a, b) => a - b);
    const body = sizes[Math.floor(sizes.length / 2)] ?? 0;
    for (const r of raw) r.page.blocks = linesToBlocks(r.lines, body);
    const pages = raw.map((r) => r.page);
    if (!pages.some((p) => p.blocks.length > 0)) {
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
}

interface Line {
  /** Baseline and font size in PDF user space. */
  baseline: number;
  size: number;
  words: DocWord[];
}

/** Text items in content-stream order (pdfjs keeps the producer's order, normally the reading order) → lines of words. */
async function pageLines(page: PDFPageProxy): Promise<Line[]> {
  const vp = page.getViewport({ scale: 1 });
  const content = await page.getTextContent();
  const lines: Line[] = [];
  let runs: Glyphs[] = [];
  let cur: { baseline: number; size: number; end: number } | null = null;
  let breakNext = false;

  const flush = () => {
    if (cur && runs.length) {
      const words = runsToWords(runs, cur.baseline, cur.size, vp);
      if (words.length) lines.push({ baseline: cur.baseline, size: cur.size, words });
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
      const sameLine = cur && !breakNext && Math.abs(f! - cur.baseline) < 0.5 * size && e! > cur.end - size;
      if (!sameLine) flush();
      if (!cur) cur = { baseline: f!, size, end: e! };
      // A visible gap between items is a word break even without a space character.
      if (runs.length && e! - cur.end > 0.2 * size) runs.push({ text: ' ', x0: cur.end, x1: e! });
      runs.push({ text: item.str, x0: e!, x1: e! + item.width, family: content.styles[item.fontName]?.fontFamily });
      cur.end = e! + item.width;
      cur.size = Math.max(cur.size, size);
    }
    breakNext = item.hasEOL;
  }
  flush();
  return lines;
}

/** A line holding only a page number ("12", "xiv", "– 12 –", "Page 12") in the top or bottom margin: not read aloud. */
function isPageNumber(line: Line, pageHeight: number): boolean {
  const text = line.words.map((w) => w.text).join(' ');
  if (!/^(page\s+)?[-–—]?\s*(\d{1,4}|[ivxlcdm]{1,7})\s*[-–—]?$/i.test(text)) return false;
  const y = line.words[0]!.box!.y / pageHeight;
  return y < 0.08 || y > 0.9;
}

function runsToWords(runs: Glyphs[], baseline: number, size: number, vp: ReturnType<PDFPageProxy['getViewport']>): DocWord[] {
  // Text items carry no per-glyph advances: each item's width is shared among its characters
  // in proportion to their advances in a font of the same generic family ("i" is narrower
  // than "m"), which lands word boxes on the glyphs far better than an even spread.
  const chars: Array<{ ch: string; x0: number; x1: number }> = [];
  for (const r of runs) {
    const list = [...r.text];
    const adv = list.map((ch) => advance(ch, r.family));
    const sum = adv.reduce((a, b) => a + b, 0) || 1;
    let at = r.x0;
    list.forEach((ch, k) => {
      const w = ((r.x1 - r.x0) * adv[k]!) / sum;
      chars.push({ ch, x0: at, x1: at + w });
      at += w;
    });
  }
  const words: DocWord[] = [];
  let text = '';
  let x0 = 0;
  let x1 = 0;
  const end = () => {
    if (text) {
      const box = toViewport(vp, x0, x1, baseline, size);
      words.push({ text, box, boxes: [box] });
    }
    text = '';
  };
  for (const c of chars) {
    if (/\s/u.test(c.ch)) {
      end();
      continue;
    }
    if (!text) x0 = c.x0;
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

/** Lines → blocks: a new block at a paragraph gap or a change of size; line-end hyphens joined. */
function linesToBlocks(lines: Line[], bodySize: number): DocBlock[] {
  const blocks: DocBlock[] = [];
  let words: DocWord[] = [];
  let prev: Line | null = null;
  let kind: BlockKind = 'paragraph';
  let level: number | undefined;
  const flush = () => {
    if (words.length) {
      const block: DocBlock = { kind, text: words.map((w) => w.text).join(' '), words };
      if (level !== undefined) block.level = level;
      blocks.push(block);
    }
    words = [];
  };
  for (const line of lines) {
    if (prev) {
      const gap = Math.abs(prev.baseline - line.baseline);
      const resized = Math.abs(line.size - prev.size) > 0.15 * Math.max(line.size, prev.size);
      if (resized || gap > 1.6 * Math.max(line.size, prev.size)) flush();
    }
    if (!words.length) {
      const big = bodySize > 0 && line.size >= 1.15 * bodySize;
      kind = big ? 'heading' : 'paragraph';
      level = big ? (line.size >= 1.6 * bodySize ? 1 : line.size >= 1.3 * bodySize ? 2 : 3) : undefined;
    }
    let first = 0;
    const last = words.at(-1);
    const head = line.words[0];
    if (last && head && /\p{L}-$/u.test(last.text) && /^\p{Ll}/u.test(head.text)) {
      // "exam-" at a line end + "ple": one word, two boxes.
      last.text = last.text.slice(0, -1) + head.text;
      last.boxes = [...(last.boxes ?? []), ...(head.boxes ?? [])];
      first = 1;
    }
    for (let i = first; i < line.words.length; i++) words.push(line.words[i]!);
    prev = line;
  }
  flush();
  return blocks;
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
