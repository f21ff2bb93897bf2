// Read-along EPUB 3: the document model + the narration's word timeline + narration.mp3 →
// an EPUB whose Media Overlays highlight each word as it is read. Only pages with words in
// the timeline are built (a stopped job's timeline covers only its done pages); nothing is
// synthesized or aligned here.
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import yazl from 'yazl';
import { hasSpokenWords, sourceWords, type DocPage, type DocumentModel } from '../documents/model.ts';
import { ffmpeg, ffprobe } from '../media/ffmpeg.ts';
import { isTimed, type TimelineEntry, type TimelineWord } from '../core/timeline.ts';
import {
  blockId,
  CONTAINER_XML,
  contentXhtml,
  navEntries,
  navXhtml,
  packageOpf,
  sectionId,
  smil,
  STYLE_CSS,
  wordId,
  type Clip,
  type ManifestItem,
  type PageImage,
} from './markup.ts';

/**
 * A PDF page gets its rendered image when its words cover less than this share of the page:
 * a figure, a diagram, a scanned or drawn page, a title page. Running text covers 20–35 %.
 */
export const FIGURE_TEXT_COVERAGE = 0.1;
/** Width in pixels of page images (legible on a tablet, ~100–300 kB per page as PNG). */
const PAGE_IMAGE_WIDTH = 1000;
/** Per-chapter audio: constant bit rate, so every reader seeks to a clip exactly. */
const AUDIO_BITRATE = '64k';

export interface BuildEpubOptions {
  outPath: string;
  doc: DocumentModel;
  /**
   * The timeline's words, one to one with sourceWords(doc) on the pages it covers; times in
   * audioFile. Skipped words (a recording that does not read them) are in the text, with no clip.
   */
  words: TimelineEntry[];
  /** The narration (narration.mp3) the times refer to. */
  audioFile: string;
  /** Used where the document declares none. */
  language: string;
  title?: string | null;
  author?: string | null;
  /** Scratch space for audio parts and page images; default: a folder beside outPath. */
  workDir?: string;
  signal?: AbortSignal;
  onProgress?: (phase: string, current: number, total: number) => void;
}

export interface EpubSummary {
  /** 0-based source pages built, in reading order. */
  pages: number[];
  /** Pages with narration (a content document with a Media Overlay). */
  narratedPages: number;
  images: number;
  /** Sum of the overlays' media:duration, in seconds. */
  duration: number;
  words: number;
}

interface PagePlan {
  page: DocPage;
  /** The page's timeline entries, in order (index = the word's span number). */
  words: TimelineEntry[];
  /** Those with a time. */
  timed: Array<{ w: TimelineWord; i: number }>;
  clips: Clip[];
  /** Where this page's audio starts in audioFile, and its length (both ms). */
  startMs: number;
  durationMs: number;
  image: PageImage | null;
}

const name = (page: number) => `page-${String(page + 1).padStart(4, '0')}`;

type ZipEntry = { name: string; data: Buffer | string; compress: boolean };

/** What the book says about itself: the document's own title, author and language first. */
interface BookInfo {
  title: string;
  author: string | null;
  language: string;
}

export async function buildEpub(o: BuildEpubOptions): Promise<EpubSummary> {
  const { doc } = o;
  const byPage = matchTimeline(doc, o.words);
  const audioMs = await narrationMs(o.audioFile);
  const plans = planPages(doc, byPage);
  const narratedPlans = plans.filter((p) => p.timed.length);
  planClips(narratedPlans, audioMs);

  const work = o.workDir ?? `${o.outPath}.parts`;
  await fs.promises.rm(work, { recursive: true, force: true });
  await fs.promises.mkdir(path.join(work, 'audio'), { recursive: true });
  await fs.promises.mkdir(path.join(work, 'images'), { recursive: true });
  try {
    o.onProgress?.('epub-audio', 0, 1);
    await cutAudio(o.audioFile, narratedPlans.map((p) => ({ startMs: p.startMs, durationMs: p.durationMs, out: path.join(work, 'audio', `${name(p.page.index)}.mp3`) })), o.signal);
    o.onProgress?.('epub-audio', 1, 1);

    const book: BookInfo = { title: doc.title ?? o.title ?? path.parse(doc.path).name, author: doc.author ?? o.author ?? null, language: doc.language ?? o.language };
    if (doc.format === 'pdf') await renderFigurePages(doc, plans, work, book.title, o);
    const { manifest, files, durations } = await contentFiles(plans, work, book);
    files.push({ name: 'nav.xhtml', data: navXhtml(book.title, book.language, tableOfContents(doc, plans, book.title)), compress: true });
    files.push({ name: 'style.css', data: STYLE_CSS, compress: true });
    const opf = packageOpf(
      { identifier: `urn:uuid:${randomUUID()}`, ...book, modified: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'), durations },
      manifest,
      plans.map((p) => `c${name(p.page.index)}`),
    );
    files.push({ name: 'content.opf', data: opf, compress: true });
    await writeZip(o.outPath, files);
    return {
      pages: plans.map((p) => p.page.index),
      narratedPages: narratedPlans.length,
      images: plans.filter((p) => p.image).length,
      duration: durations.reduce((s, d) => s + d.ms, 0) / 1000,
      words: o.words.filter(isTimed).length,
    };
  } finally {
    await fs.promises.rm(work, { recursive: true, force: true });
  }
}

/** The narration's length in whole ms; an error when it has none. */
async function narrationMs(audioFile: string): Promise<number> {
  const ms = Math.round((await ffprobe(audioFile)).durationSeconds * 1000);
  if (!Number.isFinite(ms) || ms <= 0) throw new Error(`${path.basename(audioFile)} has no duration`);
  return ms;
}

/** One plan per built page, in reading order: narrated pages plus the pages without any text that belong with them. */
function planPages(doc: DocumentModel, byPage: Map<number, TimelineEntry[]>): PagePlan[] {
  return builtPages(doc, byPage).map((page) => {
    const words = byPage.get(page.index) ?? [];
    const timed = words.flatMap((w, i) => (isTimed(w) ? [{ w, i }] : []));
    return { page, words, timed, clips: [], startMs: 0, durationMs: 0, image: null };
  });
}

/**
 * Audio: page k's part runs from its first word to the next narrated page's first word (the
 * first from 0, the last to the end), so the parts tile the narration with no gap. A word's
 * clip runs from its start to the next word's start: playback is continuous, and every clip
 * holds its whole word. Times in whole ms, each clip at least 1 ms long. Skipped words (no
 * time) get no clip: the clip before them runs on to the next word heard.
 */
function planClips(narratedPlans: PagePlan[], audioMs: number): void {
  narratedPlans.forEach((p, k) => {
    p.startMs = k === 0 ? 0 : Math.round(p.timed[0]!.w.start * 1000);
    const endMs = k + 1 < narratedPlans.length ? Math.round(narratedPlans[k + 1]!.timed[0]!.w.start * 1000) : audioMs;
    let prev = 0;
    p.clips = p.timed.map(({ i }, j) => {
      const next = j + 1 < p.timed.length ? Math.round(p.timed[j + 1]!.w.start * 1000) - p.startMs : endMs - p.startMs;
      const end = Math.max(prev + 1, next);
      const clip = { id: wordId(p.page.index, i), beginMs: prev, endMs: end };
      prev = end;
      return clip;
    });
    p.durationMs = prev;
  });
}

/** Renders each figure page of a PDF into work/images and sets its plan's image. */
async function renderFigurePages(doc: DocumentModel, plans: PagePlan[], work: string, title: string, o: Pick<BuildEpubOptions, 'signal' | 'onProgress'>): Promise<void> {
  const { renderPage, closeRendering } = await import('../documents/model.ts');
  try {
    const figures = plans.filter((p) => isFigurePage(p.page));
    for (const [i, p] of figures.entries()) {
      o.signal?.throwIfAborted();
      o.onProgress?.('epub-images', i, figures.length);
      const file = `images/${name(p.page.index)}.png`;
      await fs.promises.writeFile(path.join(work, file), await renderPage(doc, p.page.index, PAGE_IMAGE_WIDTH));
      p.image = { href: file, alt: altText(p.page, title) };
    }
  } finally {
    await closeRendering(doc);
  }
}

/** Each page's content document, with its Media Overlay and audio when narrated and its image when it has one; the manifest items and overlay durations for them. */
async function contentFiles(plans: PagePlan[], work: string, book: BookInfo): Promise<{ manifest: ManifestItem[]; files: ZipEntry[]; durations: Array<{ id: string; ms: number }> }> {
  const manifest: ManifestItem[] = [
    { id: 'nav', href: 'nav.xhtml', type: 'application/xhtml+xml', properties: 'nav' },
    { id: 'css', href: 'style.css', type: 'text/css' },
  ];
  const files: ZipEntry[] = [];
  const durations: Array<{ id: string; ms: number }> = [];
  for (const p of plans) {
    const base = name(p.page.index);
    const xhtml = `${base}.xhtml`;
    files.push({ name: xhtml, data: contentXhtml({ page: p.page.index, title: pageTitle(p.page, book.title), blocks: p.page.blocks, image: p.image }, book.language), compress: true });
    const item: ManifestItem = { id: `c${base}`, href: xhtml, type: 'application/xhtml+xml' };
    if (p.clips.length) {
      item.overlay = `m${base}`;
      files.push({ name: `${base}.smil`, data: smil(xhtml, sectionId(p.page.index), `audio/${base}.mp3`, p.clips), compress: true });
      manifest.push({ id: `m${base}`, href: `${base}.smil`, type: 'application/smil+xml' });
      manifest.push({ id: `a${base}`, href: `audio/${base}.mp3`, type: 'audio/mpeg' });
      files.push({ name: `audio/${base}.mp3`, data: await fs.promises.readFile(path.join(work, 'audio', `${base}.mp3`)), compress: false });
      durations.push({ id: `m${base}`, ms: p.durationMs });
    }
    if (p.image) {
      manifest.push({ id: `i${base}`, href: p.image.href, type: 'image/png' });
      files.push({ name: p.image.href, data: await fs.promises.readFile(path.join(work, p.image.href)), compress: false });
    }
    manifest.push(item);
  }
  return { manifest, files, durations };
}

/** The source TOC's entries on built pages; a book needs one, so without a usable source TOC, one entry per page. */
function tableOfContents(doc: DocumentModel, plans: PagePlan[], title: string) {
  const builtSet = new Set(plans.map((p) => p.page.index));
  const entries = navEntries(doc.toc, (page, block) => (builtSet.has(page) ? `${name(page)}.xhtml${block ? `#${blockId(page, block)}` : ''}` : null));
  if (entries.length) return entries;
  return plans.map((p) => ({ title: pageTitle(p.page, title), href: `${name(p.page.index)}.xhtml`, level: 1 }));
}

/** Timeline words grouped by 0-based page, after checking they are the document's words, in order. */
function matchTimeline(doc: DocumentModel, words: TimelineEntry[]): Map<number, TimelineEntry[]> {
  if (!words.length) throw new Error('the timeline has no words: nothing to build an EPUB from');
  const pages = new Set(words.map((w) => w.page - 1));
  for (const p of pages) if (!doc.pages.some((d) => d.index === p)) throw new Error(`the timeline names page ${p + 1}, which the document does not have`);
  const source = sourceWords(doc).filter((s) => pages.has(s.page));
  if (source.length !== words.length) throw new Error(`the timeline has ${words.length} words, the document's pages ${[...pages].length} narrated pages ${source.length}: it was made from another document`);
  const out = new Map<number, TimelineEntry[]>();
  let last: TimelineWord | null = null;
  words.forEach((w, i) => {
    const s = source[i]!;
    if (s.page !== w.page - 1 || s.block !== w.block || s.word.text !== w.word) {
      throw new Error(`timeline word ${i + 1} ("${w.word}", page ${w.page}) is not the document's word there ("${s.word.text}", page ${s.page + 1}): it was made from another document`);
    }
    if (isTimed(w)) {
      if (last && w.start < last.start) throw new Error(`timeline word ${i + 1} starts before the word it follows`);
      last = w;
    }
    let list = out.get(s.page);
    if (!list) out.set(s.page, (list = []));
    list.push(w);
  });
  return out;
}

/**
 * Narrated pages, plus the pages with no text at all (covers, figures, scans) next to them:
 * a textless page goes with the text page before it (leading ones with the first text page),
 * so a book of the first pages done also holds the pictures among them.
 */
function builtPages(doc: DocumentModel, narrated: Map<number, TimelineEntry[]>): DocPage[] {
  const out: DocPage[] = [];
  let pending: DocPage[] = [];
  let owner: boolean | null = null; // whether the text page textless pages attach to is built
  for (const page of doc.pages) {
    const hasText = hasSpokenWords(page);
    if (!hasText) {
      if (owner === null) pending.push(page);
      else if (owner) out.push(page);
      continue;
    }
    owner = narrated.has(page.index);
    if (owner) out.push(...pending, page);
    pending = [];
  }
  return out.filter((p) => p.blocks.length || doc.format === 'pdf' || narrated.has(p.index));
}

function isFigurePage(page: DocPage): boolean {
  if (!page.width || !page.height) return false;
  let area = 0;
  for (const b of page.blocks) for (const w of b.words) for (const box of w.boxes ?? (w.box ? [w.box] : [])) area += box.width * box.height;
  return area / (page.width * page.height) < FIGURE_TEXT_COVERAGE;
}

/** What a reader who cannot see the image is told: the page and whatever text it carries. */
function altText(page: DocPage, title: string): string {
  const text = page.blocks.map((b) => b.text).join(' ');
  const head = `Page ${page.index + 1} of ${title}`;
  if (!text) return `${head}, as printed (the page has no text layer).`;
  return `${head}, as printed: ${text.length > 300 ? `${text.slice(0, 297)}…` : text}`;
}

function pageTitle(page: DocPage, title: string): string {
  const h = page.blocks.find((b) => b.kind === 'heading');
  return h ? h.text.slice(0, 200) : `${title}, page ${page.index + 1}`;
}

/**
 * One MP3 per narrated page, cut from the narration in one ffmpeg run (one decode, exact
 * sample trimming; re-encoded at constant bit rate so readers seek to clips exactly, which
 * VBR MP3 does not guarantee in a long file).
 */
async function cutAudio(src: string, parts: Array<{ startMs: number; durationMs: number; out: string }>, signal?: AbortSignal): Promise<void> {
  // Big books in batches: one ffmpeg keeps every output's encoder open at once.
  const BATCH = 64;
  for (let i = 0; i < parts.length; i += BATCH) {
    const batch = parts.slice(i, i + BATCH);
    const labels = batch.map((_, k) => `[s${k}]`).join('');
    const graph = [`[0:a]asplit=${batch.length}${labels}`, ...batch.map((p, k) => `[s${k}]atrim=start=${p.startMs / 1000}:end=${(p.startMs + p.durationMs) / 1000},asetpts=PTS-STARTPTS[o${k}]`)].join(';');
    const outputs = batch.flatMap((p, k) => ['-map', `[o${k}]`, '-c:a', 'libmp3lame', '-b:a', AUDIO_BITRATE, '-write_xing', '1', p.out]);
    await ffmpeg(['-y', '-i', src, '-filter_complex', graph, ...outputs], { signal });
  }
}

function writeZip(outPath: string, files: ZipEntry[]): Promise<void> {
  const tmp = `${outPath}.${process.pid}.tmp`;
  const zip = new yazl.ZipFile();
  const mtime = new Date();
  // mimetype first and stored: readers identify the book by its first bytes.
  zip.addBuffer(Buffer.from('application/epub+zip'), 'mimetype', { compress: false, mtime });
  zip.addBuffer(Buffer.from(CONTAINER_XML), 'META-INF/container.xml', { mtime });
  for (const f of files) zip.addBuffer(Buffer.isBuffer(f.data) ? f.data : Buffer.from(f.data), `OEBPS/${f.name}`, { compress: f.compress, mtime });
  zip.end();
  return new Promise((resolve, reject) => {
    const out = fs.createWriteStream(tmp);
    zip.outputStream.pipe(out).on('error', reject);
    out.on('close', () => fs.promises.rename(tmp, outPath).then(resolve, reject));
    out.on('error', (e) => {
      fs.promises.rm(tmp, { force: true }).finally(() => reject(e));
    });
  });
}
