// Re-renders the mouth region of a frame for a target mouth shape: the jaw and lower lip
// are moved by a piecewise-linear warp along the mouth's own axes (anchored on the inner
// lips, the outer lower lip, the chin and a fade-out below it), the lips are spread or
// rounded by a horizontal scale, the inner mouth is filled darker (with a hint of upper
// teeth) as it opens, and the result is blended back with a feathered ellipse through
// the native addon, so nothing outside the lower face changes.
import { blendRgba, featherMask } from '../../../native/index.ts';
import type { MouthShape } from './audio.ts';
import { lookup, type MouthGeometry } from './mouth.ts';

/** Widest inner-lip gap, in mouth half-widths. */
const MAX_GAP = 0.75;
/** Lip width change at full spread / rounding. */
const SPREAD_GAIN = 0.1;
const ROUND_GAIN = 0.14;
const MOUTH_DARK = [52, 20, 22];
const TEETH = [196, 188, 176];

const smooth = (x: number) => (x <= 0 ? 0 : x >= 1 ? 1 : x * x * (3 - 2 * x));

export interface Roi {
  x: number;
  y: number;
  w: number;
  h: number;
}

/** The lower-face region the warp may touch, clipped to the frame. */
export function mouthRoi(g: MouthGeometry, width: number, height: number): { roi: Roi; ellipse: { cx: number; cy: number; rx: number; ry: number }; fade: number } {
  const W = g.halfWidth;
  const chinT = lookup(g.chin, 0);
  const fade = Math.max(0.45 * (chinT - lookup(g.lower, 0)), 0.9 * W);
  const top = Math.min(g.nose, -0.6 * W) * 1.05;
  const bottom = chinT + MAX_GAP * W + fade;
  // Ellipse in the frame around the mouth-aligned box s ∈ [−2.1, 2.1], t ∈ [top, bottom].
  const midT = (top + bottom) / 2;
  const cx = g.cx - g.uy * midT;
  const cy = g.cy + g.ux * midT;
  const halfS = 2.1 * W, halfT = (bottom - top) / 2;
  const rx = Math.abs(g.ux) * halfS + Math.abs(g.uy) * halfT;
  const ry = Math.abs(g.uy) * halfS + Math.abs(g.ux) * halfT;
  const x0 = Math.max(0, Math.floor(cx - rx - 1)), y0 = Math.max(0, Math.floor(cy - ry - 1));
  const x1 = Math.min(width, Math.ceil(cx + rx + 1)), y1 = Math.min(height, Math.ceil(cy + ry + 1));
  return { roi: { x: x0, y: y0, w: Math.max(1, x1 - x0), h: Math.max(1, y1 - y0) }, ellipse: { cx: cx - x0, cy: cy - y0, rx, ry }, fade };
}

/** Piecewise-linear inverse map along t: output anchors `o` (increasing) → source anchors `src`. */
function inverse(t: number, o: number[], src: number[]): number {
  if (t <= o[0]!) return t - o[0]! + src[0]!;
  for (let i = 1; i < o.length; i++) {
    if (t <= o[i]!) {
      const span = o[i]! - o[i - 1]!;
      return span < 1e-6 ? src[i]! : src[i - 1]! + ((t - o[i - 1]!) * (src[i]! - src[i - 1]!)) / span;
    }
  }
  return t - o[o.length - 1]! + src[src.length - 1]!;
}

/**
 * Draws `shape` onto `frame` (RGBA, modified in place) using the reference mouth `g`.
 * `scratch` buffers are reused between frames.
 */
export function renderMouth(frame: Uint8Array, width: number, height: number, g: MouthGeometry, shape: MouthShape, scratch: { src?: Uint8Array; dst?: Uint8Array } = {}): Roi {
  const { roi, ellipse, fade } = mouthRoi(g, width, height);
  const n = roi.w * roi.h * 4;
  if (!scratch.src || scratch.src.length < n) scratch.src = new Uint8Array(n);
  if (!scratch.dst || scratch.dst.length < n) scratch.dst = new Uint8Array(n);
  const src = scratch.src.subarray(0, n);
  const dst = scratch.dst.subarray(0, n);
  warpMouth(frame, width, height, g, roi, fade, jawDisplacement(g, shape), lipWidthScale(shape), src, dst);
  const mask = featherMask(roi.w, roi.h, ellipse, Math.max(2, Math.min(ellipse.rx, ellipse.ry) * 0.35));
  blendRgba(dst, src, mask, roi.w, roi.h);
  for (let j = 0; j < roi.h; j++) {
    const f = ((roi.y + j) * width + roi.x) * 4;
    frame.set(dst.subarray(j * roi.w * 4, (j + 1) * roi.w * 4), f);
  }
  return roi;
}

/** How far the jaw moves the lower lip at the lip centre, pixels along t, for `shape.open`. */
function jawDisplacement(g: MouthGeometry, shape: MouthShape): number {
  const g0 = Math.max(0, lookup(g.lower, 0) - lookup(g.upper, 0));
  const target = shape.open * MAX_GAP * g.halfWidth;
  return Math.max(-g0, target - g0);
}

/** The lip line's width factor: wider when spread, narrower when rounded, only once the mouth opens. */
function lipWidthScale(shape: MouthShape): number {
  return 1 + (shape.spread >= 0 ? SPREAD_GAIN * shape.spread : ROUND_GAIN * shape.spread) * smooth(shape.open * 3);
}

/**
 * The warped mouth region into `src` and the untouched one into `dst` (RGBA, roi.w × roi.h):
 * each output pixel is mapped back through the jaw/lip warp `d` and the width scale,
 * sampled bilinearly from `frame`, and darkened where it falls inside the opened mouth.
 * The sampling and the copy stay inline: as a helper call and a separate pass they cost
 * about 8% per frame.
 */
function warpMouth(frame: Uint8Array, width: number, height: number, g: MouthGeometry, roi: Roi, fade: number, d: number, widthScale: number, src: Uint8Array, dst: Uint8Array): void {
  const W = g.halfWidth;
  const { ux, uy, cx, cy } = g;
  const noseT = g.nose;
  const edge = Math.max(1, 0.07 * W); // lip edges soften with the face's size
  const o = [0, 0, 0, 0, 0];
  const sAnch = [0, 0, 0, 0, 0];
  for (let j = 0; j < roi.h; j++) {
    const py = roi.y + j + 0.5 - cy;
    for (let i = 0; i < roi.w; i++) {
      const px = roi.x + i + 0.5 - cx;
      let s = (px * ux + py * uy) / W;
      const t = -px * uy + py * ux;
      const as = Math.abs(s);
      // Lip profile: the lower lip follows the jaw fully at the centre, not at the corners.
      const prof = as >= 1 ? 0 : Math.sqrt(1 - as * as);
      const jaw = 1 - smooth((as - 1.1) / 0.9); // the jaw moves as a whole, fading out by |s| = 2
      const dl = d * Math.max(prof, 0) * jaw;
      const dc = d * jaw;
      const up = lookup(g.upper, s), lo = lookup(g.lower, s), ou = lookup(g.outer, s), ch = lookup(g.chin, s);
      sAnch[0] = up; sAnch[1] = lo; sAnch[2] = Math.max(ou, lo + 0.5); sAnch[3] = Math.max(ch, sAnch[2] + 1); sAnch[4] = sAnch[3] + fade;
      o[0] = up; o[1] = lo + dl; o[2] = sAnch[2] + dl; o[3] = sAnch[3] + dc; o[4] = sAnch[4];
      const ts = t <= up ? t : inverse(t, o, sAnch);
      // Lip width: strongest on the lip line, fading towards nose and chin.
      const band = t < 0 ? smooth(1 - t / noseT) : smooth(1 - t / (sAnch[3] + Math.abs(dc)));
      const k = 1 + (widthScale - 1) * band * (1 - smooth((as - 1.2) / 0.8));
      s = s / k;
      // Back to frame coordinates and sample bilinearly.
      let fx = cx + (s * W) * ux - ts * uy - 0.5;
      let fy = cy + (s * W) * uy + ts * ux - 0.5;
      fx = fx < 0 ? 0 : fx > width - 1.001 ? width - 1.001 : fx;
      fy = fy < 0 ? 0 : fy > height - 1.001 ? height - 1.001 : fy;
      const ix = Math.floor(fx), iy = Math.floor(fy);
      const tx = fx - ix, ty = fy - iy;
      const p00 = (iy * width + ix) * 4, p10 = p00 + width * 4;
      const q = (j * roi.w + i) * 4;
      for (let c = 0; c < 3; c++) {
        const a = frame[p00 + c]! + (frame[p00 + 4 + c]! - frame[p00 + c]!) * tx;
        const b = frame[p10 + c]! + (frame[p10 + 4 + c]! - frame[p10 + c]!) * tx;
        src[q + c] = a + (b - a) * ty;
      }
      src[q + 3] = 255;
      // Inner mouth in output geometry: between the upper lip and the moved lower lip.
      const topT = up, botT = lo + dl;
      const gap = botT - topT;
      if (as < 1 && gap > 0.3 && t > topT - 1 && t < botT + 1) darkenInnerMouth(src, q, t, topT, botT, as, W, edge);
      const f = ((roi.y + j) * width + roi.x + i) * 4;
      dst[q] = frame[f]!;
      dst[q + 1] = frame[f + 1]!;
      dst[q + 2] = frame[f + 2]!;
      dst[q + 3] = frame[f + 3]!;
    }
  }
}

/** The pixel at `q`, at height `t` between the lips topT…botT, towards dark mouth with a hint of upper teeth. */
function darkenInnerMouth(src: Uint8Array, q: number, t: number, topT: number, botT: number, as: number, W: number, edge: number): void {
  const gap = botT - topT;
  const inside = smooth(Math.min(t - topT + 0.5, botT - t + 0.5) / edge) * smooth(gap / 3) * smooth((1 - as) * 4);
  const teethH = Math.min(0.35 * gap, 0.22 * W);
  const teeth = smooth((teethH - (t - topT)) / 1.2) * smooth((0.6 - as) * 4) * smooth((gap - 2) / 3);
  for (let c = 0; c < 3; c++) {
    const fill = MOUTH_DARK[c]! + (TEETH[c]! - MOUTH_DARK[c]!) * teeth;
    src[q + c] = src[q + c]! + (fill - src[q + c]!) * inside * 0.92;
  }
}
