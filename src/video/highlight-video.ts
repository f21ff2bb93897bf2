// The highlight video: the document on screen, the spoken word boxed, the page turning with
// the narration. PDFs show their real page images; other formats are laid out into pages of
// text here.
//
// Why it is fast: the picture only changes when the spoken word does (2–3 times a second),
// so each distinct (page, word) state is one frame of variable-frame-rate H.264 whose
// timestamps all sit on the 1/fps grid: x264 encodes one frame per state instead of `fps`
// identical frames a second. A page (or screen of text) is drawn and converted to yuv420p
// once; each state is a copy of it with only the word's box drawn and converted again. The
// frames stream with their timestamps (raw video in Matroska) through a pipe into one
// ffmpeg that encodes them and muxes the narration: no frame files, no second pass.
import fs from 'node:fs';
import { createCanvas, loadImage, type Canvas, type SKRSContext2D } from '@napi-rs/canvas';
import { sourceWords, type DocBlock, type DocumentModel, type WordBox } from '../documents/model.ts';
import type { TimelineEntry } from '../core/timeline.ts';
import { JobCancelled } from '../core/cancel.ts';
import { ffmpegInput, ffprobe } from '../media/ffmpeg.ts';
import { mkvRawFramePrefix, mkvRawHeader } from './raw-video-mkv.ts';

export interface HighlightVideoOptions {
  doc: DocumentModel;
  /** Word times in the narration file (speed applied), one per source word in reading order; skipped words (no time) are never highlighted. */
  timeline: TimelineEntry[];
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

/** Progress is reported, and a stop request polled, every this many pictures. */
const PROGRESS_EVERY = 48;
export const HIGHLIGHT_FILL = 'rgba(255, 208, 0, 0.55)';
export const HIGHLIGHT_EDGE = '#e07b00';

/**
 * The pictures in order: each word's picture starts on the frame nearest its start and holds
 * until the next word starts (it stays lit through pauses); words shorter than a frame are
 * skipped, and so are words with no time (a recording that does not read them). The frames
 * add up to round(duration × fps).
 */
export function planStates(words: Array<Pick<TimelineEntry, 'start'>>, duration: number, fps: number): VideoState[] {
  const total = Math.max(1, Math.round(duration * fps));
  const marks: Array<{ word: number; frame: number }> = [{ word: -1, frame: 0 }];
  words.forEach((w, i) => w.start !== null && marks.push({ word: i, frame: Math.min(total - 1, Math.max(0, Math.round(w.start * fps))) }));
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

interface Rect {
  x: number;
  y: number;
  w: number;
  h: number;
}

/** A picture: a full-frame base (the same object while it stays on screen) with the spoken word's boxes over it. */
interface Picture {
  base: Canvas;
  boxes: Rect[];
  /** The boxes' edge width in pixels. */
  line: number;
}

interface Painter {
  /** The picture for timeline word `i` (-1: before the first word). */
  picture(i: number): Promise<Picture>;
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
  const frameBytes = (width * height * 3) / 2;
  const painter = o.doc.format === 'pdf' ? await pdfPainter(o.doc, width, height) : textPainter(o.doc, width, height);
  const tmp = `${o.outPath}.tmp.mp4`;
  // One ffmpeg for the whole video, the narration muxed in as it goes. VFR on the 1/fps
  // grid; no B-frames; stillimage tuning suits text that holds still between highlights. A
  // keyframe every 48 pictures (~15 s of narration) keeps seeking quick. `veryfast` stays:
  // with frames piped, x264 is no longer most of the time, and `ultrafast` was only ~25 %
  // faster for a file 2.6× the size. The frames are BT.601 limited range (rgbaToYuv420),
  // tagged so.
  const encoder = ffmpegInput(
    ['-y', '-f', 'matroska', '-i', 'pipe:0', '-i', o.audioPath, '-map', '0:v:0', '-map', '1:a:0', '-r', String(fps), '-fps_mode', 'vfr',
      '-c:v', 'libx264', '-preset', 'veryfast', '-tune', 'stillimage', '-crf', '22', '-bf', '0', '-g', '48', '-pix_fmt', 'yuv420p',
      '-colorspace', 'smpte170m', '-color_primaries', 'smpte170m', '-color_trc', 'smpte170m', '-color_range', 'tv',
      '-c:a', 'aac', '-b:a', '96k', '-movflags', '+faststart', '-f', 'mp4', tmp],
    { signal: o.signal },
  );
  // The pipe holds the frame while ffmpeg reads it, so each frame is a buffer of its own;
  // a couple may wait in the pipe while the next is drawn.
  const writing: Array<Promise<void>> = [];
  const send = async (frame: number, pixels: Buffer) => {
    writing.push(encoder.write(mkvRawFramePrefix(frame / fps, frameBytes)), encoder.write(pixels));
    while (writing.length > 4) await writing.shift();
  };
  let base: Canvas | null = null;
  let baseYuv = Buffer.alloc(0);
  let at = 0;
  let pixels = Buffer.alloc(0);
  try {
    await encoder.write(mkvRawHeader(width, height, fps));
    for (const [k, s] of states.entries()) {
      if (k % PROGRESS_EVERY === 0) {
        if (k > 0) o.onProgress?.(k, states.length);
        if (await o.cancelled?.()) throw new JobCancelled();
      }
      o.signal?.throwIfAborted();
      const pic = await painter.picture(s.word);
      if (pic.base !== base) {
        // A new page or screen: converted once, then each word's picture is a copy of it
        // with only the box's pixels drawn again.
        base = pic.base;
        baseYuv = Buffer.allocUnsafe(frameBytes);
        rgbaToYuv420(base.data(), width, height, baseYuv, width, height, 0, 0);
      }
      pixels = Buffer.allocUnsafe(frameBytes);
      baseYuv.copy(pixels);
      drawBoxes(pic, width, height, pixels);
      await send(at, pixels);
      at += s.frames;
    }
    // The last picture again on the last frame, so the stream lasts exactly to the end
    // (each frame is shown for 1/fps, DefaultDuration, after its timestamp).
    if (states.length && states.at(-1)!.frames > 1) await send(at - 1, pixels);
    await Promise.all(writing.splice(0));
    await encoder.end();
    o.onProgress?.(states.length, states.length);
    await fs.promises.rename(tmp, o.outPath);
    return { duration, states: states.length };
  } finally {
    encoder.kill();
    await Promise.allSettled(writing);
    await painter.close();
    await fs.promises.rm(tmp, { force: true });
  }
}

/**
 * The picture's boxes drawn over the base in a small canvas covering them (with the edge and
 * its antialiasing), converted and put into the frame: the rest of the frame is the base's.
 */
function drawBoxes(pic: Picture, width: number, height: number, frame: Buffer) {
  if (pic.boxes.length === 0) return;
  const m = pic.line + 2;
  // Even edges: a 2×2 chroma block is either all base or all drawn here.
  const x0 = Math.max(0, Math.floor(Math.min(...pic.boxes.map((b) => b.x)) - m) & ~1);
  const y0 = Math.max(0, Math.floor(Math.min(...pic.boxes.map((b) => b.y)) - m) & ~1);
  const x1 = Math.min(width, (Math.ceil(Math.max(...pic.boxes.map((b) => b.x + b.w)) + m) + 1) & ~1);
  const y1 = Math.min(height, (Math.ceil(Math.max(...pic.boxes.map((b) => b.y + b.h)) + m) + 1) & ~1);
  if (x1 <= x0 || y1 <= y0) return;
  const patch = createCanvas(x1 - x0, y1 - y0);
  const ctx = patch.getContext('2d');
  ctx.drawImage(pic.base, -x0, -y0);
  ctx.translate(-x0, -y0);
  for (const b of pic.boxes) highlightRect(ctx, b.x, b.y, b.w, b.h, pic.line);
  rgbaToYuv420(patch.data(), x1 - x0, y1 - y0, frame, width, height, x0, y0);
}

/**
 * RGBA (w×h, both even) into the yuv420p frame (fw×fh) at (dx, dy) (even): BT.601 limited
 * range, chroma the mean of each 2×2 block — what ffmpeg's own conversion made, done here
 * because a page is converted once and then only the box's pixels are.
 */
function rgbaToYuv420(src: Uint8Array, w: number, h: number, frame: Uint8Array, fw: number, fh: number, dx: number, dy: number) {
  const uPlane = fw * fh;
  const vPlane = uPlane + (fw * fh) / 4;
  const cw = fw / 2;
  for (let y = 0; y < h; y += 2) {
    const r0 = y * w * 4;
    const r1 = r0 + w * 4;
    const yo0 = (dy + y) * fw + dx;
    const yo1 = yo0 + fw;
    const co = ((dy + y) / 2) * cw + dx / 2;
    for (let x = 0; x < w; x += 2) {
      const a = r0 + x * 4;
      const b = r1 + x * 4;
      const ra = src[a]!, ga = src[a + 1]!, ba = src[a + 2]!;
      const rb = src[a + 4]!, gb = src[a + 5]!, bb = src[a + 6]!;
      const rc = src[b]!, gc = src[b + 1]!, bc = src[b + 2]!;
      const rd = src[b + 4]!, gd = src[b + 5]!, bd = src[b + 6]!;
      frame[yo0 + x] = ((66 * ra + 129 * ga + 25 * ba + 128) >> 8) + 16;
      frame[yo0 + x + 1] = ((66 * rb + 129 * gb + 25 * bb + 128) >> 8) + 16;
      frame[yo1 + x] = ((66 * rc + 129 * gc + 25 * bc + 128) >> 8) + 16;
      frame[yo1 + x + 1] = ((66 * rd + 129 * gd + 25 * bd + 128) >> 8) + 16;
      const r = ra + rb + rc + rd;
      const g = ga + gb + gc + gd;
      const bl = ba + bb + bc + bd;
      frame[uPlane + co + x / 2] = ((-38 * r - 74 * g + 112 * bl + 512) >> 10) + 128;
      frame[vPlane + co + x / 2] = ((112 * r - 94 * g - 18 * bl + 512) >> 10) + 128;
    }
  }
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
  const { renderPage, closeRendering } = await import('../documents/model.ts');
  const words = sourceWords(doc);
  const byIndex = new Map(doc.pages.map((p) => [p.index, p]));
  let page = -1;
  let scaled: Canvas | null = null;
  let img = { width: 0, height: 0 };
  let scroll = 0;
  let base: Canvas | null = null;
  let baseAt = '';
  const bg = '#5f6b76';
  return {
    async picture(i) {
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
      if (`${page}:${v.y}` !== baseAt) {
        // The page at this scroll, framed: the base of every word's picture until it turns.
        base = createCanvas(width, height);
        const ctx = base.getContext('2d');
        ctx.fillStyle = bg;
        ctx.fillRect(0, 0, width, height);
        ctx.drawImage(scaled!, v.x, v.y);
        baseAt = `${page}:${v.y}`;
      }
      const pw = scaled!.width;
      const ph = scaled!.height;
      const pad = Math.max(2, Math.round(pw / 400));
      return {
        base: base!,
        boxes: norm.map((b) => ({ x: v.x + b.x * pw - pad, y: v.y + b.y * ph - pad, w: b.width * pw + 2 * pad, h: b.height * ph + 2 * pad })),
        line: Math.max(2, Math.round(width / 640)),
      };
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
 * screen is drawn once, the base of each of its words' pictures.
 */
function textPainter(doc: DocumentModel, width: number, height: number): Painter {
  const g = textGeometry(width, height);
  const { screens, placed } = layOutText(doc, g);
  let cached = -1;
  let base: Canvas | null = null;
  return {
    async picture(i) {
      const p = placed[Math.max(0, i)];
      const s = p?.screen ?? 0;
      if (s !== cached) {
        // Only the current screen is kept: a book has thousands.
        base = drawScreen(screens, s, g);
        cached = s;
      }
      const pad = Math.round(g.size * 0.12);
      return {
        base: base!,
        boxes: i >= 0 && p ? [{ x: p.at.x - pad, y: p.at.y + (p.lineH - p.ascent) * 0.1, w: p.at.w + 2 * pad, h: p.lineH * 0.95 }] : [],
        line: Math.max(2, Math.round(width / 640)),
      };
    },
    close: async () => {},
  };
}

/** Type size, line height and margins of a text screen, all derived from the frame size. */
interface TextGeometry {
  width: number;
  height: number;
  size: number;
  lineH: number;
  margin: number;
  top: number;
  bottom: number;
}

function textGeometry(width: number, height: number): TextGeometry {
  const size = Math.round(height / 22);
  return {
    width,
    height,
    size,
    lineH: Math.round(size * 1.45),
    margin: Math.round(Math.max(width * 0.06, (width - size * 34) / 2)),
    top: Math.round(height * 0.08),
    bottom: height - Math.round(height * 0.08),
  };
}

/** A spoken word's place: its screen and box, with the line metrics its highlight is sized by. */
interface PlacedWord {
  screen: number;
  at: LaidWord;
  lineH: number;
  ascent: number;
}

function fontFor(size: number, kind: string, level?: number): string {
  if (kind === 'heading') return `bold ${Math.round(size * (level === 1 ? 1.45 : level === 2 ? 1.25 : 1.1))}px "DejaVu Serif"`;
  if (kind === 'pre') return `${Math.round(size * 0.85)}px "DejaVu Sans Mono"`;
  if (kind === 'quote') return `italic ${size}px "DejaVu Serif"`;
  return `${size}px "DejaVu Serif"`;
}

/** Every page's blocks flowed into screens, each page starting a new one. */
function layOutText(doc: DocumentModel, g: TextGeometry): { screens: Screen[]; placed: PlacedWord[] } {
  const flow = new TextFlow(g);
  for (const page of doc.pages) {
    flow.startPage();
    for (const block of page.blocks) flow.addBlock(block);
  }
  return flow.finish();
}

/** The layout cursor: the screen being filled, the y of its next line, and what is placed so far. */
class TextFlow {
  readonly screens: Screen[] = [];
  readonly placed: PlacedWord[] = [];
  private screen: Screen = { canvas: null, draw: [] };
  private y: number;
  private readonly measure = createCanvas(8, 8).getContext('2d');

  constructor(private readonly g: TextGeometry) {
    this.y = g.top;
  }

  startPage(): void {
    if (this.screen.draw.length > 0) this.newScreen();
  }

  /** A block's words, wrapped at the right margin and onto new screens at the bottom one. */
  addBlock(block: DocBlock): void {
    const { g, measure } = this;
    const font = fontFor(g.size, block.kind, block.level);
    measure.font = font;
    const fsz = Number(/(\d+)px/.exec(font)![1]);
    const lh = Math.round(fsz * 1.45);
    const asc = Math.round(fsz * 0.95);
    const indent = block.kind === 'item' || block.kind === 'quote' ? g.size * 1.5 : 0;
    const left = g.margin + indent;
    const right = g.width - g.margin;
    const space = measure.measureText(' ').width;
    if (block.kind === 'heading' && this.y > g.top) this.y += Math.round(lh * 0.4);
    if (this.y + lh > g.bottom) this.newScreen();
    let x = left;
    if (block.kind === 'item') this.screen.draw.push({ text: '•', x: left - g.size, y: this.y + asc, font });
    for (const w of block.words) {
      const ww = measure.measureText(w.text).width;
      if (x > left && x + ww > right) {
        x = left;
        this.y += lh;
        if (this.y + lh > g.bottom) this.newScreen();
      }
      this.screen.draw.push({ text: w.text, x, y: this.y + asc, font });
      // Only spoken words are timeline words; silent ones are drawn, never highlighted.
      if (!w.silent) this.placed.push({ screen: this.screens.length, at: { x, y: this.y, w: ww }, lineH: lh, ascent: asc });
      x += ww + space;
    }
    this.y += lh + Math.round(g.lineH * 0.5);
  }

  finish(): { screens: Screen[]; placed: PlacedWord[] } {
    if (this.screen.draw.length > 0) this.newScreen();
    return { screens: this.screens, placed: this.placed };
  }

  private newScreen(): void {
    this.screens.push(this.screen);
    this.screen = { canvas: null, draw: [] };
    this.y = this.g.top;
  }
}

/** Screen `s` drawn on paper, with its page number at the bottom right. */
function drawScreen(screens: Screen[], s: number, g: TextGeometry): Canvas {
  const { width, height, size, margin } = g;
  const base = createCanvas(width, height);
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
  return base;
}
