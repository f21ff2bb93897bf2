// The highlight video: the document on screen, the spoken word boxed, the page turning with
// the narration. PDFs show their real page images; other formats are laid out into pages of
// text here.
//
// Why it is fast: the picture only changes when the spoken word does (2–3 times a second),
// so each distinct (page, word) state is drawn once, handed to ffmpeg as a raw PAM frame
// (PNG encoding would cost 70 ms a frame) in an ffconcat list with its duration, and
// encoded as variable-frame-rate H.264 whose timestamps all sit on the 1/fps grid: x264
// encodes one frame per state instead of `fps` identical frames a second. States go in
// batches (bounded temp disk); the next batch is drawn while ffmpeg encodes the last, and
// the segments are joined with the narration at the end without re-encoding.
import fs from 'node:fs';
import path from 'node:path';
import { createCanvas, loadImage, type Canvas, type SKRSContext2D } from '@napi-rs/canvas';
import { sourceWords, type DocumentModel, type WordBox } from '../documents/model.ts';
import type { TimelineWord } from '../pipelines/narrate-document.ts';
import { JobCancelled } from '../pipelines/types.ts';
import { ffmpeg, ffprobe } from './ffmpeg.ts';

export interface HighlightVideoOptions {
  doc: DocumentModel;
  /** Word times in the narration file (speed applied), one per source word in reading order. */
  timeline: TimelineWord[];
  /** The narration (narration.mp3); the video lasts exactly as long. */
  audioPath: string;
  width: number;
  height: number;
  fps: number;
  outPath: string;
  signal?: AbortSignal;
  onProgress?: (done: number, total: number) => void;
  /** Polled between batches: true stops the render (the pipeline's stop request) with JobCancelled. */
  cancelled?: () => Promise<boolean>;
  /** Where frames and segments are staged (default: beside outPath); removed afterwards. */
  workDir?: string;
}

export interface HighlightVideoResult {
  duration: number;
  /** Distinct pictures encoded. */
  states: number;
}

/** One picture and how many frames (of 1/fps) it holds: `word` is the timeline index, -1 before the first. */
export interface VideoState {
  word: number;
  frames: number;
}

const BATCH = 48; // states per segment at most: fewer ffmpeg start-ups (48 × 3.7 MB of PAM frames at 720p)
export const HIGHLIGHT_FILL = 'rgba(255, 208, 0, 0.55)';
export const HIGHLIGHT_EDGE = '#e07b00';

/**
 * The pictures in order: each word's picture starts on the frame nearest its start and holds
 * until the next word starts (it stays lit through pauses); words shorter than a frame are
 * skipped. The frames add up to round(duration × fps).
 */
export function planStates(words: Array<Pick<TimelineWord, 'start'>>, duration: number, fps: number): VideoState[] {
  const total = Math.max(1, Math.round(duration * fps));
  const marks: Array<{ word: number; frame: number }> = [{ word: -1, frame: 0 }];
  words.forEach((w, i) => marks.push({ word: i, frame: Math.min(total - 1, Math.max(0, Math.round(w.start * fps))) }));
  const states: VideoState[] = [];
  for (let k = 0; k < marks.length; k++) {
    const end = k + 1 < marks.length ? marks[k + 1]!.frame : total;
    const frames = end - marks[k]!.frame;
    if (frames > 0) states.push({ word: marks[k]!.word, frames });
  }
  return states;
}

/** Where a PDF page image lands in the frame: fitted to the frame's width, scrolled down when taller. */
export interface PdfView {
  /** Frame pixels per page-image pixel. */
  scale: number;
  /** Frame position of the page's top-left corner (y ≤ 0 once scrolled). */
  x: number;
  y: number;
}

/**
 * The view for a PDF page given the previous view's scroll: a page that fits is centred; a
 * taller one keeps its scroll until the word leaves the middle 80% of the frame, then turns
 * so the word sits near the top — whole screens at a time, like turning a page.
 */
export function pdfView(img: { width: number; height: number }, frame: { width: number; height: number }, box: WordBox | null, prevScroll: number): PdfView & { scroll: number } {
  const scale = Math.min(frame.width / img.width, (frame.height * 3) / img.height);
  const w = img.width * scale;
  const h = img.height * scale;
  const x = (frame.width - w) / 2;
  if (h <= frame.height) return { scale, x, y: (frame.height - h) / 2, scroll: 0 };
  const max = h - frame.height;
  let scroll = Math.min(prevScroll, max);
  if (box) {
    const top = box.y * h;
    const bottom = (box.y + box.height) * h;
    if (top < scroll + frame.height * 0.1 || bottom > scroll + frame.height * 0.9) scroll = Math.max(0, Math.min(max, top - frame.height * 0.15));
  }
  return { scale, x, y: -scroll, scroll };
}

interface Painter {
  /** Draws the picture for timeline word `i` (-1: before the first word) into ctx. */
  paint(ctx: SKRSContext2D, i: number): Promise<void>;
  close(): Promise<void>;
}

export async function renderHighlightVideo(o: HighlightVideoOptions): Promise<HighlightVideoResult> {
  const { width, height, fps } = o;
  if (!Number.isInteger(width) || !Number.isInteger(height) || width % 2 || height % 2) throw new Error(`video size must be even integers (got ${width}×${height})`);
  const words = sourceWords(o.doc);
  if (words.length !== o.timeline.length || words.some((w, i) => w.word.text !== o.timeline[i]!.word)) {
    throw new Error('the timeline does not match the document’s words');
  }
  const duration = (await ffprobe(o.audioPath)).durationSeconds;
  const states = planStates(o.timeline, duration, fps);
  const frameBytes = width * height * 4;
  // Frames go through memory (tmpfs) where there is one: writing 3.7 MB a state to a disk
  // cost more system time than drawing it. Two batches in flight stay under ~400 MB.
  const batchSize = Math.max(4, Math.min(BATCH, Math.floor(200e6 / frameBytes)));
  const work = o.workDir ?? (await defaultWorkDir(o.outPath));
  await fs.promises.rm(work, { recursive: true, force: true });
  await fs.promises.mkdir(work, { recursive: true });

  const painter = o.doc.format === 'pdf' ? await pdfPainter(o.doc, width, height) : textPainter(o.doc, width, height);
  const canvas = createCanvas(width, height);
  const ctx = canvas.getContext('2d');
  const header = Buffer.from(`P7\nWIDTH ${width}\nHEIGHT ${height}\nDEPTH 4\nMAXVAL 255\nTUPLTYPE RGB_ALPHA\nENDHDR\n`, 'latin1');
  const segments: Array<{ file: string; frames: number }> = [];
  let encoding: Promise<unknown> = Promise.resolve();
  try {
    for (let b = 0; b * batchSize < states.length; b++) {
      const batch = states.slice(b * batchSize, (b + 1) * batchSize);
      if (await o.cancelled?.()) throw new JobCancelled();
      const dir = path.join(work, `b${b}`);
      await fs.promises.mkdir(dir);
      const list = ['ffconcat version 1.0'];
      for (const [k, s] of batch.entries()) {
        o.signal?.throwIfAborted();
        await painter.paint(ctx, s.word);
        const file = `s${k}.pam`;
        const fh = await fs.promises.open(path.join(dir, file), 'w');
        try {
          await fh.writev([header, canvas.data()]);
        } finally {
          await fh.close();
        }
        // The concat demuxer gives the last entry one frame of its own: a state of n frames is
        // listed for n−1 and repeated for the last, so the segment is exactly its frames long.
        if (k === batch.length - 1 && s.frames > 1) list.push(`file ${file}`, `duration ${(s.frames - 1) / fps}`, `file ${file}`, `duration ${1 / fps}`);
        else list.push(`file ${file}`, `duration ${s.frames / fps}`);
      }
      await fs.promises.writeFile(path.join(dir, 'list.ffconcat'), `${list.join('\n')}\n`);
      const seg = path.join(work, `seg${String(b).padStart(5, '0')}.mp4`);
      segments.push({ file: seg, frames: batch.reduce((n, s) => n + s.frames, 0) });
      const done = Math.min(states.length, (b + 1) * batchSize);
      // One batch encodes while the next is drawn.
      await encoding;
      encoding = encodeSegment(dir, seg, fps, o.signal).then(() => {
        o.onProgress?.(done, states.length);
        return fs.promises.rm(dir, { recursive: true, force: true });
      });
      encoding.catch(() => {}); // awaited on the next turn or below
    }
    await encoding;
    const joined = ['ffconcat version 1.0', ...segments.flatMap((s) => [`file ${path.basename(s.file)}`, `duration ${s.frames / fps}`])];
    await fs.promises.writeFile(path.join(work, 'segments.ffconcat'), `${joined.join('\n')}\n`);
    const tmp = `${o.outPath}.tmp.mp4`;
    await ffmpeg(
      ['-y', '-f', 'concat', '-safe', '0', '-i', path.join(work, 'segments.ffconcat'), '-i', o.audioPath, '-map', '0:v:0', '-map', '1:a:0', '-c:v', 'copy', '-c:a', 'aac', '-b:a', '96k', '-movflags', '+faststart', tmp],
      { signal: o.signal },
    );
    await fs.promises.rename(tmp, o.outPath);
    return { duration, states: states.length };
  } finally {
    await encoding.catch(() => {});
    await painter.close();
    await fs.promises.rm(work, { recursive: true, force: true });
    await fs.promises.rm(`${o.outPath}.tmp.mp4`, { force: true });
  }
}

/** /dev/shm when it exists (Linux), else a folder beside the output. */
async function defaultWorkDir(outPath: string): Promise<string> {
  const shm = '/dev/shm';
  const ok = await fs.promises.access(shm, fs.constants.W_OK).then(() => true, () => false);
  return ok ? fs.promises.mkdtemp(path.join(shm, 'lectern-highlight-')) : `${outPath}.work`;
}

function encodeSegment(dir: string, out: string, fps: number, signal?: AbortSignal) {
  // VFR on the 1/fps grid; no B-frames so segments join cleanly by stream copy;
  // stillimage tuning suits text that holds still between highlights.
  return ffmpeg(
    ['-y', '-f', 'concat', '-safe', '0', '-i', path.join(dir, 'list.ffconcat'), '-vf', 'format=yuv420p', '-r', String(fps), '-fps_mode', 'vfr',
      '-c:v', 'libx264', '-preset', 'veryfast', '-tune', 'stillimage', '-crf', '22', '-bf', '0', '-an', out],
    { signal },
  );
}

function highlightRect(ctx: SKRSContext2D, x: number, y: number, w: number, h: number, line: number) {
  ctx.save();
  // Multiply keeps the (dark) glyphs dark under the yellow.
  ctx.globalCompositeOperation = 'multiply';
  ctx.fillStyle = HIGHLIGHT_FILL;
  ctx.fillRect(x, y, w, h);
  ctx.restore();
  ctx.strokeStyle = HIGHLIGHT_EDGE;
  ctx.lineWidth = line;
  ctx.strokeRect(x, y, w, h);
}

/** PDF pages rendered at 1400 px (once per page, in turn), scaled into the frame, the word's boxes drawn over. */
async function pdfPainter(doc: DocumentModel, width: number, height: number): Promise<Painter> {
  const { renderPage, closeRendering } = await import('../documents/pdf.ts');
  const words = sourceWords(doc);
  const byIndex = new Map(doc.pages.map((p) => [p.index, p]));
  let page = -1;
  let scaled: Canvas | null = null;
  let img = { width: 0, height: 0 };
  let scroll = 0;
  const bg = '#5f6b76';
  return {
    async paint(ctx, i) {
      const w = words[Math.max(0, i)]!;
      if (w.page !== page) {
        const image = await loadImage(await renderPage(doc, w.page, 1400));
        img = { width: image.width, height: image.height };
        const v = pdfView(img, { width, height }, null, 0);
        // Scaled once per page: drawing a 1400 px image down every frame would cost more than the encode.
        scaled = createCanvas(Math.round(img.width * v.scale), Math.round(img.height * v.scale));
        const sctx = scaled.getContext('2d');
        sctx.imageSmoothingQuality = 'high';
        sctx.drawImage(image, 0, 0, scaled.width, scaled.height);
        page = w.page;
        scroll = 0;
      }
      const p = byIndex.get(page)!;
      const boxes = i >= 0 ? (w.word.boxes ?? (w.word.box ? [w.word.box] : [])) : [];
      const norm = boxes.map((b) => ({ x: b.x / p.width!, y: b.y / p.height!, width: b.width / p.width!, height: b.height / p.height! }));
      const v = pdfView(img, { width, height }, norm[0] ?? null, scroll);
      scroll = v.scroll;
      ctx.fillStyle = bg;
      ctx.fillRect(0, 0, width, height);
      ctx.drawImage(scaled!, v.x, v.y);
      const pw = scaled!.width;
      const ph = scaled!.height;
      const pad = Math.max(2, Math.round(pw / 400));
      for (const b of norm) highlightRect(ctx, v.x + b.x * pw - pad, v.y + b.y * ph - pad, b.width * pw + 2 * pad, b.height * ph + 2 * pad, Math.max(2, Math.round(width / 640)));
    },
    close: () => closeRendering(doc),
  };
}

interface LaidWord {
  x: number;
  y: number;
  w: number;
}

interface Screen {
  canvas: Canvas | null;
  draw: Array<{ text: string; x: number; y: number; font: string }>;
}

/**
 * Text, Markdown and EPUB chapters laid out into screens of readable text (a serif at 1/22
 * of the frame height, about 65 characters a line); each chapter starts a new screen. A
 * screen is drawn once, then each state is that screen plus the word's highlight.
 */
function textPainter(doc: DocumentModel, width: number, height: number): Painter {
  const size = Math.round(height / 22);
  const lineH = Math.round(size * 1.45);
  const ascent = Math.round(size * 0.95);
  const margin = Math.round(Math.max(width * 0.06, (width - size * 34) / 2));
  const top = Math.round(height * 0.08);
  const bottom = height - Math.round(height * 0.08);
  const measure = createCanvas(8, 8).getContext('2d');
  const fontFor = (kind: string, level?: number) => {
    if (kind === 'heading') return `bold ${Math.round(size * (level === 1 ? 1.45 : level === 2 ? 1.25 : 1.1))}px "DejaVu Serif"`;
    if (kind === 'pre') return `${Math.round(size * 0.85)}px "DejaVu Sans Mono"`;
    if (kind === 'quote') return `italic ${size}px "DejaVu Serif"`;
    return `${size}px "DejaVu Serif"`;
  };
  const screens: Screen[] = [];
  const placed: Array<{ screen: number; at: LaidWord; lineH: number; ascent: number }> = [];
  let screen: Screen = { canvas: null, draw: [] };
  let y = top;
  const newScreen = () => {
    screens.push(screen);
    screen = { canvas: null, draw: [] };
    y = top;
  };
  for (const page of doc.pages) {
    if (screen.draw.length > 0) newScreen();
    for (const block of page.blocks) {
      const font = fontFor(block.kind, block.level);
      measure.font = font;
      const fsz = Number(/(\d+)px/.exec(font)![1]);
      const lh = Math.round(fsz * 1.45);
      const asc = Math.round(fsz * 0.95);
      const indent = block.kind === 'item' || block.kind === 'quote' ? size * 1.5 : 0;
      const left = margin + indent;
      const right = width - margin;
      const space = measure.measureText(' ').width;
      if (block.kind === 'heading' && y > top) y += Math.round(lh * 0.4);
      if (y + lh > bottom) newScreen();
      let x = left;
      if (block.kind === 'item') screen.draw.push({ text: '•', x: left - size, y: y + asc, font });
      for (const w of block.words) {
        const ww = measure.measureText(w.text).width;
        if (x > left && x + ww > right) {
          x = left;
          y += lh;
          if (y + lh > bottom) newScreen();
        }
        screen.draw.push({ text: w.text, x, y: y + asc, font });
        placed.push({ screen: screens.length, at: { x, y, w: ww }, lineH: lh, ascent: asc });
        x += ww + space;
      }
      y += lh + Math.round(lineH * 0.5);
    }
  }
  if (screen.draw.length > 0) newScreen();
  let cached = -1;
  let base: Canvas | null = null;
  return {
    async paint(ctx, i) {
      const p = placed[Math.max(0, i)];
      const s = p?.screen ?? 0;
      if (s !== cached) {
        // Only the current screen is kept: a book has thousands.
        base = createCanvas(width, height);
        const b = base.getContext('2d');
        b.fillStyle = '#fbf8f1';
        b.fillRect(0, 0, width, height);
        b.fillStyle = '#1b1b1b';
        for (const d of screens[s]!.draw) {
          b.font = d.font;
          b.fillText(d.text, d.x, d.y);
        }
        b.font = `${Math.round(size * 0.6)}px "DejaVu Sans"`;
        b.fillStyle = '#8a8a8a';
        b.fillText(`${s + 1} / ${screens.length}`, width - margin - size * 3, height - Math.round(height * 0.03));
        cached = s;
      }
      ctx.drawImage(base!, 0, 0);
      if (i >= 0 && p) {
        const pad = Math.round(size * 0.12);
        highlightRect(ctx, p.at.x - pad, p.at.y + (p.lineH - p.ascent) * 0.1, p.at.w + 2 * pad, p.lineH * 0.95, Math.max(2, Math.round(width / 640)));
      }
    },
    close: async () => {},
  };
}
