// PDF reading order and furniture from the page layout alone (positions, sizes and the text
// repeated across pages), never from rules for one document:
//  - running heads and footers: the top- or bottom-most line of a page, set apart from the
//    text, that recurs at the same height and size with the same text (numbers and chapter
//    titles may change) on other pages; a lone page number in a margin;
//  - table-of-contents dot leaders and the page reference after them;
//  - columns: side-by-side runs of text lines split at a clear vertical gutter, read left
//    column first; full-width lines (titles, figures' captions) where they stand;
//  - footnotes: small text at the foot of a column starting with a mark, read after the page's
//    body text;
//  - a word hyphenated at a line end (also across a column break) joined, with both boxes.
// Every line keeps its words; what is not read is marked, so page images and EPUB pages still
// show it.
import type { BlockKind, BlockRole, DocBlock, DocWord } from './types.ts';

/** One line of text on a page, in viewport points (origin top-left, y down). */
export interface Line {
  /** Baseline height from the top of the page. */
  y: number;
  x0: number;
  x1: number;
  size: number;
  words: DocWord[];
  /** Lines cut from one printed line at a wide gap share this id (table cells, a right-aligned number). */
  row: number;
  /** Position in the content stream: the producer's order, which is the reading order within a column. */
  seq: number;
  role?: BlockRole;
  /** Set by readingOrder: the first line of a column or region. */
  regionStart?: boolean;
}

export interface LaidPage {
  width: number;
  height: number;
  lines: Line[];
}

const PAGE_NUMBER = /^(page\s+)?[-–—]?\s*(\d{1,4}|[ivxlcdm]{1,7})\s*[-–—]?$/i;
const LEADER_TOKEN = /^[.·…•_]+$/u;
const PAGE_REF = /^(\d{1,4}|[ivxlcdm]{1,7}|[A-Z]-?\d{1,3})$/i;
const FOOTNOTE_MARK = /^(\d{1,3}|[*†‡§¶#]+|\p{No}+)[.)]?$/u;
const MARK_START = /^(\d{1,3}|[*†‡§¶]+|\p{No}+)/u;

const text = (l: Line) => l.words.map((w) => w.text).join(' ');
const median = (xs: number[]) => {
  if (!xs.length) return 0;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
};

/** The body text size of a document: the size most words are set in. */
export function bodySize(pages: LaidPage[]): number {
  const counts = new Map<number, number>();
  for (const p of pages) for (const l of p.lines) counts.set(Math.round(l.size * 2) / 2, (counts.get(Math.round(l.size * 2) / 2) ?? 0) + l.words.length);
  let best = 0;
  let n = -1;
  for (const [size, c] of counts) if (c > n) [best, n] = [size, c];
  return best;
}

// ---------------------------------------------------------------- furniture

/** Words of a line with the parts that change from page to page (numbers) made equal. */
function shape(l: Line): string[] {
  return l.words.map((w) => w.text.toLowerCase().replace(/\d+/g, '#').replace(/^[ivxlcdm]+([.:]?)$/, '#$1'));
}

function similar(a: string[], b: string[]): boolean {
  if (a.join(' ') === b.join(' ')) return true;
  const sa = new Set(a);
  const sb = new Set(b);
  let common = 0;
  for (const w of sa) if (sb.has(w)) common++;
  if (common / (sa.size + sb.size - common) >= 0.5) return true;
  // "Chapter 3: Utilities" / "Chapter 4: Function reference": the same lead-in, a new title.
  let prefix = 0;
  while (prefix < a.length && prefix < b.length && a[prefix] === b[prefix]) prefix++;
  let suffix = 0;
  while (suffix < a.length && suffix < b.length && a[a.length - 1 - suffix] === b[b.length - 1 - suffix]) suffix++;
  return prefix >= 2 || suffix >= 2;
}

/**
 * Marks running headers/footers and page numbers with role "furniture" and their words
 * silent. A candidate is the top-most (or bottom-most) printed line of a page, in the top
 * (bottom) 15 % and set off from the text by more than a line's spacing; it is furniture when
 * a candidate on other pages stands at the same height, in the same size, with similar text
 * (two other pages, or one in a document of under five pages). A line that is only a page
 * number in the top or bottom 10 % is furniture on any page.
 */
export function markFurniture(pages: LaidPage[]): void {
  interface Candidate {
    page: number;
    lines: Line[];
    y: number;
    size: number;
    shape: string[];
  }
  const candidates: Candidate[] = [];
  pages.forEach((p, pi) => {
    for (const l of p.lines) {
      const top = l.y - 0.8 * l.size;
      if (PAGE_NUMBER.test(text(l)) && (top < 0.1 * p.height || l.y > 0.88 * p.height)) setFurniture(l);
    }
    const sorted = [...p.lines].sort((a, b) => a.y - b.y);
    if (sorted.length < 2) return;
    for (const end of ['top', 'bottom'] as const) {
      const list = end === 'top' ? sorted : [...sorted].reverse();
      const first = list[0]!;
      const group = list.filter((l) => Math.abs(l.y - first.y) < 0.5 * Math.max(l.size, first.size));
      const rest = list.find((l) => !group.includes(l));
      if (!rest) continue;
      const inBand = end === 'top' ? first.y - first.size < 0.15 * p.height : first.y > 0.85 * p.height;
      const size = Math.max(...group.map((l) => l.size));
      const apart = Math.abs(rest.y - first.y) > 1.45 * Math.max(size, rest.size);
      if (!inBand || !apart) continue;
      const words = group.filter((l) => !l.role);
      if (!words.length) continue;
      candidates.push({ page: pi, lines: words, y: first.y, size, shape: words.flatMap(shape) });
    }
  });
  const needed = pages.length < 5 ? 1 : 2;
  for (const c of candidates) {
    const pagesLike = new Set<number>();
    for (const d of candidates) {
      if (d.page === c.page || pagesLike.has(d.page)) continue;
      if (Math.abs(d.y - c.y) <= 3 && Math.abs(d.size - c.size) <= 0.15 * c.size && similar(c.shape, d.shape)) pagesLike.add(d.page);
    }
    if (pagesLike.size >= needed) for (const l of c.lines) setFurniture(l);
  }
}

function setFurniture(l: Line): void {
  l.role = 'furniture';
  for (const w of l.words) w.silent = true;
}

// ---------------------------------------------------------------- leaders

/**
 * A table of contents' dot leaders (". . . . 12", "Intro......4") and the page reference
 * after them are not read: those words become silent.
 */
export function markLeaders(line: Line): void {
  const w = line.words;
  for (let i = 0; i < w.length; i++) {
    let j = i;
    while (j < w.length && LEADER_TOKEN.test(w[j]!.text)) j++;
    const run = j - i;
    const long = run >= 3 || (run >= 1 && w.slice(i, j).some((x) => x.text.length >= 4));
    if (!long) {
      i = j;
      continue;
    }
    for (let k = i; k < j; k++) w[k]!.silent = true;
    if (j < w.length && PAGE_REF.test(w[j]!.text) && (j + 1 === w.length || LEADER_TOKEN.test(w[j + 1]!.text) === false)) w[j]!.silent = true;
    i = j;
  }
}

// ---------------------------------------------------------------- reading order

/**
 * The page's lines in reading order: furniture at the top, the body column by column, the
 * footnotes, furniture at the bottom. `regionStart` marks where a column or region begins.
 */
export function readingOrder(page: LaidPage, body: number): Line[] {
  const furniture = page.lines.filter((l) => l.role === 'furniture');
  const rest = page.lines.filter((l) => l.role !== 'furniture');
  const mid = page.height / 2;
  const head = furniture.filter((l) => l.y < mid).sort(byPosition);
  const foot = furniture.filter((l) => l.y >= mid).sort(byPosition);
  const regions = columns(rest, body);
  const notes: Line[] = [];
  const hasBody = rest.some((l) => l.size > 0.9 * body);
  const out: Line[] = [...head];
  for (const region of regions) {
    const note = hasBody ? footnotes(region, body) : [];
    const main = region.filter((l) => !note.includes(l));
    main.forEach((l, i) => (l.regionStart = i === 0));
    out.push(...main);
    notes.push(...note);
  }
  notes.forEach((l, i) => (l.regionStart = i === 0));
  out.push(...notes, ...foot);
  return out;
}

function byPosition(a: Line, b: Line): number {
  const dy = a.y - b.y;
  return Math.abs(dy) < 0.3 * Math.max(a.size, b.size) ? a.x0 - b.x0 : dy;
}

/**
 * Lines → regions in reading order. Full-width lines split the page into bands; a band of
 * narrower lines with a clear vertical gutter (no line crosses it) is read left side first,
 * each side split again (three columns). A gutter between table cells (short pieces of the
 * same printed rows) is not a column break: tables read row by row.
 */
function columns(lines: Line[], body: number): Line[][] {
  const sorted = [...lines].sort(byPosition);
  if (sorted.length < 6) return sorted.length ? [sorted.sort((a, b) => a.seq - b.seq)] : [];
  const x0 = Math.min(...sorted.map((l) => l.x0));
  const x1 = Math.max(...sorted.map((l) => l.x1));
  const wide = (l: Line) => l.x1 - l.x0 > 0.6 * (x1 - x0);
  const out: Region[] = [];
  let band: Line[] = [];
  let full: Line[] = [];
  const flushBand = () => {
    if (band.length) out.push(...splitBand(band, body));
    band = [];
  };
  const flushFull = () => {
    if (full.length) out.push(full);
    full = [];
  };
  for (const l of sorted) {
    if (wide(l)) {
      flushBand();
      full.push(l);
    } else {
      flushFull();
      band.push(l);
    }
  }
  flushBand();
  flushFull();
  // Consecutive single-column regions read as one (a short line between wide ones is no column).
  const merged: Region[] = [];
  for (const r of out) {
    const last = merged.at(-1);
    if (last && !last.split && !r.split) last.push(...r);
    else merged.push(r);
  }
  // Within a column the producer's order is the reading order (a label set in the margin, a
  // superscript, a formula may sit off the line grid).
  for (const r of merged) if (!r.split) r.sort((a, b) => a.seq - b.seq);
  return merged;
}

type Region = Line[] & { split?: boolean };

function splitBand(band: Line[], body: number): Region[] {
  const sorted = [...band].sort(byPosition);
  const single = () => [sorted.sort((a, b) => a.seq - b.seq)];
  if (sorted.length < 6) return single();
  const gutter = findGutter(sorted, body);
  if (!gutter) return single();
  const left = sorted.filter((l) => l.x1 <= gutter);
  const right = sorted.filter((l) => l.x0 >= gutter);
  const parts = [...splitBand(left, body), ...splitBand(right, body)].map((r) => Object.assign(r, { split: true }) as Region);
  return parts;
}

/** The x of the widest gap no line crosses, when both sides are columns of text. */
function findGutter(lines: Line[], body: number): number | null {
  const spans = lines.map((l) => [l.x0, l.x1] as const).sort((a, b) => a[0] - b[0]);
  let reach = spans[0]![1];
  let best: { at: number; width: number } | null = null;
  for (const [a, b] of spans.slice(1)) {
    if (a > reach && a - reach >= 0.6 * body && (!best || a - reach > best.width)) best = { at: (a + reach) / 2, width: a - reach };
    reach = Math.max(reach, b);
  }
  if (!best) return null;
  const left = lines.filter((l) => l.x1 <= best.at);
  const right = lines.filter((l) => l.x0 >= best.at);
  if (left.length < 3 || right.length < 3) return null;
  const words = (side: Line[]) => median(side.map((l) => l.words.length));
  if (words(left) < 3 || words(right) < 3) return null;
  // Table rows: the two sides are pieces of the same printed lines.
  const leftRows = new Set(left.map((l) => l.row));
  const shared = right.filter((l) => leftRows.has(l.row)).length;
  if (shared > 0.5 * Math.min(left.length, right.length)) return null;
  // Columns stand side by side: their heights overlap.
  const top = (s: Line[]) => Math.min(...s.map((l) => l.y));
  const bottom = (s: Line[]) => Math.max(...s.map((l) => l.y));
  const overlap = Math.min(bottom(left), bottom(right)) - Math.max(top(left), top(right));
  if (overlap < 0.3 * Math.min(bottom(left) - top(left), bottom(right) - top(right))) return null;
  return best.at;
}

/**
 * The footnotes at the foot of a region: its last lines, smaller than the body text, from
 * the first one that starts with a mark ("1", "*", "†", a superscript) down.
 */
function footnotes(lines: Line[], body: number): Line[] {
  const region = [...lines].sort(byPosition);
  let k = region.length;
  while (k > 0 && region[k - 1]!.size <= 0.9 * body) k--;
  if (k === 0 || k === region.length) return [];
  for (let i = k; i < region.length; i++) {
    const first = region[i]!.words[0];
    if (!first) continue;
    const mark = FOOTNOTE_MARK.test(first.text) || MARK_START.test(first.text);
    if (mark && region[i]!.y - region[i - 1]!.y > 1.1 * region[i]!.size) {
      const notes = region.slice(i);
      for (const l of notes) l.role = 'footnote';
      return notes;
    }
  }
  return [];
}

// ---------------------------------------------------------------- blocks

/** Words printed with an inner hyphen ("well-known") somewhere in the document: such a hyphen at a line end is kept. */
export function hyphenatedForms(pages: LaidPage[]): Set<string> {
  const out = new Set<string>();
  for (const p of pages) for (const l of p.lines) for (const w of l.words) if (/\p{L}-\p{L}/u.test(w.text)) out.add(bare(w.text));
  return out;
}

const bare = (s: string) => s.toLowerCase().replace(/^[^\p{L}\p{N}]+|[^\p{L}\p{N}]+$/gu, '');

/**
 * Ordered lines → blocks: a new block at a paragraph gap, a change of size or role, or a new
 * column (unless the sentence runs on into it). A word hyphenated at a line end is joined
 * with its second half into one word with two boxes: "exam-" + "ple" → "example", but
 * "well-" + "known" → "well-known" when the document prints "well-known" elsewhere.
 */
export function linesToBlocks(lines: Line[], body: number, compounds: Set<string>): DocBlock[] {
  const blocks: DocBlock[] = [];
  let words: DocWord[] = [];
  let prev: Line | null = null;
  let kind: BlockKind = 'paragraph';
  let level: number | undefined;
  let role: BlockRole | undefined;
  const flush = () => {
    if (words.length) {
      const block: DocBlock = { kind, text: words.map((w) => w.text).join(' '), words };
      if (level !== undefined) block.level = level;
      if (role) block.role = role;
      blocks.push(block);
    }
    words = [];
  };
  for (const line of lines) {
    const last = words.at(-1);
    const head = line.words[0];
    const hyphenated = !!(last && head && prev && line.role === prev.role && !last.silent && /\p{L}[-\u00AD\u2010]$/u.test(last.text) && /^\p{Ll}/u.test(head.text));
    if (prev) {
      const size = Math.max(line.size, prev.size);
      const resized = Math.abs(line.size - prev.size) > 0.15 * size;
      const gap = line.y - prev.y;
      const runsOn = hyphenated || (!!head && /^\p{Ll}/u.test(head.text) && !!last && !/[.!?:;]["'”’)]*$/u.test(last.text));
      const newRegion = line.regionStart && !(runsOn && !resized && line.role === prev.role);
      if (resized || newRegion || line.role !== prev.role || (!line.regionStart && (gap > 1.6 * size || gap < -0.5 * size))) flush();
    }
    if (!words.length) {
      const big = body > 0 && line.size >= 1.15 * body && line.role !== 'furniture';
      kind = big ? 'heading' : 'paragraph';
      level = big ? (line.size >= 1.6 * body ? 1 : line.size >= 1.3 * body ? 2 : 3) : undefined;
      role = line.role;
    }
    let first = 0;
    const tail = words.at(-1);
    if (tail && head && hyphenated) {
      const stem = tail.text.slice(0, -1);
      const keep = tail.text.endsWith('-') && compounds.has(bare(`${stem}-${head.text}`));
      tail.text = `${keep ? `${stem}-` : stem}${head.text}`;
      tail.boxes = [...(tail.boxes ?? []), ...(head.boxes ?? [])];
      first = 1;
    }
    for (let i = first; i < line.words.length; i++) words.push(line.words[i]!);
    prev = line;
  }
  flush();
  return blocks;
}
