// Mouth geometry from Face Mesh landmarks, in a frame aligned with the mouth:
// s runs along the corner-to-corner axis (in half-widths, corners at ±1), t runs
// perpendicular to it towards the chin (in pixels). Lip and chin contours become
// lookup tables t(s), so the warp follows the real curve of the lips.
import type { Landmarks } from './face.ts';

// MediaPipe Face Mesh indices, left corner → right corner.
export const UPPER_INNER = [78, 191, 80, 81, 82, 13, 312, 311, 310, 415, 308];
export const LOWER_INNER = [78, 95, 88, 178, 87, 14, 317, 402, 318, 324, 308];
export const LOWER_OUTER = [61, 146, 91, 181, 84, 17, 314, 405, 321, 375, 291];
export const CHIN = [172, 136, 150, 149, 176, 148, 152, 377, 400, 378, 379, 365, 397];
export const CORNER_L = 61;
export const CORNER_R = 291;
export const SUBNASALE = 2;
export const LIP_INNER_TOP = 13;
export const LIP_INNER_BOTTOM = 14;

/** Every landmark the renderer reads (the rest are not kept per frame). */
export const USED_POINTS = [...new Set([...UPPER_INNER, ...LOWER_INNER, ...LOWER_OUTER, ...CHIN, CORNER_L, CORNER_R, SUBNASALE])];

export const TABLE_N = 81;
export const TABLE_S = 2; // tables cover s ∈ [−2, 2]

export interface MouthGeometry {
  cx: number;
  cy: number;
  ux: number;
  uy: number;
  /** Half the corner-to-corner distance, pixels. */
  halfWidth: number;
  /** Subnasale (negative: above the corner line). */
  nose: number;
  upper: Float32Array; // inner upper lip t(s)
  lower: Float32Array; // inner lower lip t(s)
  outer: Float32Array; // outer lower lip t(s)
  chin: Float32Array; // jaw line t(s)
}

/** Inner-lip gap over the mouth width: the opening measure used for sync. */
export function mouthOpening(p: Landmarks): number {
  const gap = Math.hypot(p[LIP_INNER_TOP * 2]! - p[LIP_INNER_BOTTOM * 2]!, p[LIP_INNER_TOP * 2 + 1]! - p[LIP_INNER_BOTTOM * 2 + 1]!);
  const width = Math.hypot(p[CORNER_L * 2]! - p[CORNER_R * 2]!, p[CORNER_L * 2 + 1]! - p[CORNER_R * 2 + 1]!);
  return width > 0 ? gap / width : 0;
}

function table(p: Landmarks, idx: number[], g: { cx: number; cy: number; ux: number; uy: number; w: number }): Float32Array {
  const s: number[] = [];
  const t: number[] = [];
  for (const i of idx) {
    const dx = p[i * 2]! - g.cx, dy = p[i * 2 + 1]! - g.cy;
    s.push((dx * g.ux + dy * g.uy) / g.w);
    t.push(-dx * g.uy + dy * g.ux);
  }
  // Monotone in s (the mesh can fold a point over at the corners).
  for (let i = 1; i < s.length; i++) if (s[i]! <= s[i - 1]!) s[i] = s[i - 1]! + 1e-3;
  const out = new Float32Array(TABLE_N);
  let k = 0;
  for (let j = 0; j < TABLE_N; j++) {
    const sj = -TABLE_S + (2 * TABLE_S * j) / (TABLE_N - 1);
    if (sj <= s[0]!) out[j] = t[0]!;
    else if (sj >= s[s.length - 1]!) out[j] = t[t.length - 1]!;
    else {
      while (s[k + 1]! < sj) k++;
      const a = (sj - s[k]!) / (s[k + 1]! - s[k]!);
      out[j] = t[k]! + (t[k + 1]! - t[k]!) * a;
    }
  }
  return out;
}

export function mouthGeometry(p: Landmarks): MouthGeometry {
  const lx = p[CORNER_L * 2]!, ly = p[CORNER_L * 2 + 1]!, rx = p[CORNER_R * 2]!, ry = p[CORNER_R * 2 + 1]!;
  const w = Math.max(1, Math.hypot(rx - lx, ry - ly) / 2);
  const g = { cx: (lx + rx) / 2, cy: (ly + ry) / 2, ux: (rx - lx) / (2 * w), uy: (ry - ly) / (2 * w), w };
  const upper = table(p, UPPER_INNER, g);
  const lower = table(p, LOWER_INNER, g);
  for (let j = 0; j < TABLE_N; j++) if (lower[j]! < upper[j]!) lower[j] = upper[j]!; // lips never cross
  const nx = p[SUBNASALE * 2]! - g.cx, ny = p[SUBNASALE * 2 + 1]! - g.cy;
  return {
    cx: g.cx,
    cy: g.cy,
    ux: g.ux,
    uy: g.uy,
    halfWidth: w,
    nose: -nx * g.uy + ny * g.ux,
    upper,
    lower,
    outer: table(p, LOWER_OUTER, g),
    chin: table(p, CHIN, g),
  };
}

/** t(s) from a table, linear between entries. */
export function lookup(tab: Float32Array, s: number): number {
  let x = ((s + TABLE_S) * (TABLE_N - 1)) / (2 * TABLE_S);
  if (x <= 0) return tab[0]!;
  if (x >= TABLE_N - 1) return tab[TABLE_N - 1]!;
  const i = Math.floor(x);
  x -= i;
  return tab[i]! + (tab[i + 1]! - tab[i]!) * x;
}

/** Centred moving average of landmark tracks over ±radius frames (the mesh jitters by a pixel or so). */
export function smoothTracks(tracks: Landmarks[], radius: number): Landmarks[] {
  if (radius <= 0 || tracks.length < 2) return tracks;
  const n = tracks.length;
  const len = tracks[0]!.length;
  return tracks.map((_, f) => {
    const out = new Float32Array(len);
    const a = Math.max(0, f - radius), b = Math.min(n - 1, f + radius);
    for (let k = a; k <= b; k++) {
      const tk = tracks[k]!;
      for (let i = 0; i < len; i++) out[i]! += tk[i]!;
    }
    const inv = 1 / (b - a + 1);
    for (let i = 0; i < len; i++) out[i]! *= inv;
    return out;
  });
}
