// Mouth shapes from phoneme timings (eSpeak NG's phoneme events, IPA), for callers that
// synthesized the narration themselves and so know what is said and when. Each phoneme
// class has a target shape; frames blend the targets of the phonemes around them
// (coarticulation), and bilabials (p b m) close the lips whatever surrounds them.
import type { PhonemeTiming } from '../../types.ts';
import type { MouthShape } from './audio.ts';

/** Lips move ahead of the sound they make. */
const LEAD_S = 0.04;
/** Half-width of the triangular blend around each frame. */
const BLEND_S = 0.06;

// Longest symbol first, so "tʃ" wins over "t"; diphthongs take their first vowel.
const TARGETS: Array<[string, MouthShape]> = [
  ['tʃ', { open: 0.2, spread: -0.3 }], ['dʒ', { open: 0.2, spread: -0.3 }],
  ['p', { open: 0, spread: 0 }], ['b', { open: 0, spread: 0 }], ['m', { open: 0, spread: 0 }],
  ['f', { open: 0.1, spread: 0.2 }], ['v', { open: 0.1, spread: 0.2 }],
  ['θ', { open: 0.22, spread: 0.3 }], ['ð', { open: 0.22, spread: 0.3 }],
  ['s', { open: 0.15, spread: 0.6 }], ['z', { open: 0.15, spread: 0.6 }],
  ['ʃ', { open: 0.18, spread: -0.4 }], ['ʒ', { open: 0.18, spread: -0.4 }],
  ['w', { open: 0.15, spread: -0.9 }], ['ɹ', { open: 0.25, spread: -0.3 }], ['r', { open: 0.25, spread: -0.2 }],
  ['j', { open: 0.25, spread: 0.6 }], ['l', { open: 0.3, spread: 0.2 }], ['h', { open: 0.4, spread: 0 }],
  ['t', { open: 0.25, spread: 0.3 }], ['d', { open: 0.25, spread: 0.3 }], ['n', { open: 0.25, spread: 0.2 }],
  ['k', { open: 0.3, spread: 0 }], ['g', { open: 0.3, spread: 0 }], ['ɡ', { open: 0.3, spread: 0 }], ['ŋ', { open: 0.3, spread: 0 }],
  ['a', { open: 1, spread: 0.1 }], ['ɑ', { open: 1, spread: -0.1 }], ['æ', { open: 0.9, spread: 0.4 }], ['ʌ', { open: 0.75, spread: 0 }],
  ['ɐ', { open: 0.7, spread: 0 }], ['ɒ', { open: 0.85, spread: -0.5 }],
  ['e', { open: 0.6, spread: 0.6 }], ['ɛ', { open: 0.65, spread: 0.5 }], ['ɜ', { open: 0.5, spread: 0 }], ['ə', { open: 0.45, spread: 0 }], ['ɚ', { open: 0.4, spread: -0.3 }],
  ['i', { open: 0.3, spread: 0.9 }], ['ɪ', { open: 0.4, spread: 0.7 }], ['y', { open: 0.3, spread: -0.8 }],
  ['o', { open: 0.65, spread: -0.7 }], ['ɔ', { open: 0.75, spread: -0.6 }],
  ['u', { open: 0.35, spread: -1 }], ['ʊ', { open: 0.4, spread: -0.8 }],
];
const NEUTRAL: MouthShape = { open: 0.3, spread: 0 };

/** Target shape of one phoneme symbol (IPA or an eSpeak mnemonic's first letter). */
export function phonemeShape(symbol: string): MouthShape {
  const s = symbol.replace(/[ˈˌːˑ̃ʰ]/g, '');
  for (const [k, shape] of TARGETS) if (s.startsWith(k)) return shape;
  return NEUTRAL;
}

/** One mouth shape per video frame from phoneme timings (seconds); gaps are silence → closed. */
export function phonemeMouthTrack(phonemes: PhonemeTiming[], fps: number, frames: number): MouthShape[] {
  const sorted = [...phonemes].filter((p) => p.end > p.start).sort((a, b) => a.start - b.start);
  const shapes: MouthShape[] = [];
  let first = 0;
  for (let f = 0; f < frames; f++) {
    const t = f / fps + LEAD_S;
    while (first < sorted.length && sorted[first]!.end < t - BLEND_S) first++;
    let w = 0, open = 0, spread = 0, bilabial = 0;
    for (let i = first; i < sorted.length && sorted[i]!.start <= t + BLEND_S; i++) {
      const p = sorted[i]!;
      // Overlap of the phoneme with the triangle around t, weighted towards its centre.
      const a = Math.max(p.start, t - BLEND_S), b = Math.min(p.end, t + BLEND_S);
      if (b <= a) continue;
      const mid = (a + b) / 2;
      const weight = (b - a) * (1 - Math.abs(mid - t) / BLEND_S);
      const shape = phonemeShape(p.phoneme);
      open += shape.open * weight;
      spread += shape.spread * weight;
      w += weight;
      if (shape.open === 0 && p.start <= t && p.end >= t) bilabial = 1;
    }
    // Silence inside the window counts as a closed mouth.
    const covered = Math.min(1, w / BLEND_S);
    shapes.push(w > 0 && !bilabial ? { open: (open / w) * covered, spread: spread / w } : { open: 0, spread: 0 });
  }
  for (let f = 1; f < shapes.length; f++) {
    const prev = shapes[f - 1]!, cur = shapes[f]!;
    cur.open = prev.open + (cur.open - prev.open) * 0.7;
    cur.spread = prev.spread + (cur.spread - prev.spread) * 0.6;
  }
  return shapes;
}
