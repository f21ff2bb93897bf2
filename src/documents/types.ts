// The document model, one for every format: pages (PDF pages, EPUB chapters, a whole text or
// Markdown file as one page) → blocks → words. A block's words are exactly
// tokenizeWords(block.text), so a word's identity is (page, block, word index) everywhere:
// timelines, highlights and read-along clips all point back to the same source word.
import { tokenizeWords } from '../speech/words.ts';
import { LecternError } from '../core/errors.ts';

/** A rectangle on a PDF page in points (1/72 in), origin at the page's top-left corner, y down. */
export interface WordBox {
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface DocWord {
  /** The source token, punctuation kept (a hyphenated line-end is joined: "exam-" + "ple" → "example"). */
  text: string;
  /** PDF only: the word's box (its first part when hyphenated across lines). */
  box?: WordBox;
  /** PDF only: every part of the word (two for a word hyphenated across lines). */
  boxes?: WordBox[];
  /**
   * Printed but not read aloud: page furniture (running heads, page numbers), a table of
   * contents' dot leaders and page references, footnote reference marks. Silent words stay in
   * the block (and on page images and EPUB pages) but are in no timeline.
   */
  silent?: true;
}

export type BlockKind = 'heading' | 'paragraph' | 'item' | 'quote' | 'pre' | 'cell';

/**
 * Where a PDF block stands on its page, when it is not body text. `furniture`: a running
 * header or footer or a page number (every word silent). `footnote`: read after the page's
 * body text. `caption`: a figure or table caption, read where it stands.
 */
export type BlockRole = 'furniture' | 'footnote' | 'caption';

export interface DocBlock {
  kind: BlockKind;
  /** Heading level 1–6 for headings. */
  level?: number;
  role?: BlockRole;
  /** Whitespace-normalised text; its tokens are `words`. */
  text: string;
  words: DocWord[];
}

export interface DocPage {
  /** 0-based position in the document (PDF page index, EPUB spine position). */
  index: number;
  /** PDF: page size in points (after rotation). */
  width?: number;
  height?: number;
  /** EPUB: the chapter's path inside the book. */
  href?: string;
  blocks: DocBlock[];
}

export interface TocEntry {
  title: string;
  /** 0-based index into `pages`. */
  page: number;
  /** 0-based block within the page, where the entry points inside a page (Markdown headings). */
  block?: number;
  /** Nesting depth, 1 for top-level entries. */
  level: number;
}

export type DocumentFormat = 'pdf' | 'epub' | 'markdown' | 'text';

export interface DocumentModel {
  format: DocumentFormat;
  /** The file it was read from (renderPage reopens PDFs from here). */
  path: string;
  title: string | null;
  author: string | null;
  /** BCP 47 tag when the document declares one. */
  language: string | null;
  pages: DocPage[];
  toc: TocEntry[];
}

/**
 * Random access to a document's bytes, for readers that need a few ranges of it (a PDF's
 * catalog, an EPUB's package document), not all of it: a local file, or an object in the store
 * read in ranges (no copy of a bucket's object for its metadata).
 */
export interface ByteSource {
  readonly size: number;
  /** Bytes [begin, end) (fewer at the end of the source). */
  read(begin: number, end: number): Promise<Uint8Array>;
}

/** Raised for a document Lectern cannot read; the message is one line, fit for a failed job. */
export class DocumentError extends LecternError {
  override name = 'DocumentError';
  constructor(message: string) {
    super('DOCUMENT_UNREADABLE', message);
  }
}

export function makeBlock(kind: BlockKind, text: string, level?: number): DocBlock | null {
  const clean = text.replace(/\s+/g, ' ').trim();
  if (!clean) return null;
  const block: DocBlock = { kind, text: clean, words: tokenizeWords(clean).map((t) => ({ text: t.word })) };
  if (level !== undefined) block.level = level;
  return block;
}

/** Words read aloud (silent ones not counted). */
export function wordCount(doc: DocumentModel): number {
  let n = 0;
  for (const p of doc.pages) for (const b of p.blocks) for (const w of b.words) if (!w.silent) n++;
  return n;
}

export interface SourceWord {
  /** 0-based page and block, and the word's index among the block's words. */
  page: number;
  block: number;
  index: number;
  word: DocWord;
}

/** Every spoken word in reading order: the same order, one to one, as the audio timeline's words (silent words left out; `index` counts them). */
export function sourceWords(doc: DocumentModel): SourceWord[] {
  const out: SourceWord[] = [];
  for (const p of doc.pages) p.blocks.forEach((b, bi) => b.words.forEach((word, index) => word.silent || out.push({ page: p.index, block: bi, index, word })));
  return out;
}

/** The words of a block that are read aloud, as the text the narration speaks ('' when none). */
export function spokenText(block: DocBlock): string {
  return block.words.every((w) => !w.silent) ? block.text : block.words.filter((w) => !w.silent).map((w) => w.text).join(' ');
}

/** Whether a page has anything to read aloud (a page of only a running head and a number has not). */
export function hasSpokenWords(page: DocPage): boolean {
  return page.blocks.some((b) => b.words.some((w) => !w.silent));
}

/** The box in 0..1 page coordinates (origin top-left), for drawing on a page image of any size. */
export function normaliseBox(box: WordBox, page: DocPage): WordBox {
  if (!page.width || !page.height) throw new Error(`page ${page.index + 1} has no size (not a PDF page)`);
  return { x: box.x / page.width, y: box.y / page.height, width: box.width / page.width, height: box.height / page.height };
}
