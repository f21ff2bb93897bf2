// Tracks too short for a run of anchors: an audiobook's part and chapter titles read as tracks of
// their own ("Part One", "User", "About this manual": one to five words, 1–3 s). Three anchors in
// step are what makes a run believable anywhere in a book; a title track has fewer words than
// that. But its place is known: the track names sort the matched files in their reading order,
// so a title track lies between the text its neighbours end and begin with, and the few words
// heard in it only have to be found in that gap, in order.
import { fitsPace, type Anchor, type HeardIn, type Pace, type TextIndex } from './anchors.ts';

/** Most book keys a gap between two matched files may hold for the files between to be matched in it word by word. */
export const MAX_TITLE_GAP_KEYS = 40;
/** Share of a track's heard words that must be words of the gap, in order. */
const MIN_HEARD_IN_GAP = 0.6;
/** Letters the matched words must hold at least: a lone "a" or "the" heard in music is no title. */
const MIN_MATCHED_CHARS = 4;

export interface TitleClaim {
  file: number;
  anchors: Anchor[];
}

/**
 * Claims for the tracks that hold no region, matched word by word in the text between their
 * neighbours. `sequence`: the files in the order of their names, given only when those names
 * sort the matched files as their text runs (else no track's place is known and none is
 * claimed). A track counts when at least MIN_HEARD_IN_GAP of what the recogniser heard in it
 * are words of the gap in order, holding MIN_MATCHED_CHARS letters or more, heard in about the
 * time those words take at the reader's pace; several tracks in one gap take its words in turn.
 */
export function titleClaims(sequence: number[] | null, heard: HeardIn[][], claims: TitleClaim[], index: TextIndex, pace: Pace): TitleClaim[] {
  if (!sequence || !claims.length) return [];
  const span = new Map<number, [number, number]>();
  for (const c of claims) {
    const [s, e] = span.get(c.file) ?? [Infinity, -Infinity];
    span.set(c.file, [Math.min(s, c.anchors[0]!.key), Math.max(e, c.anchors.at(-1)!.key)]);
  }
  const taken = (k: number) => claims.some((c) => k >= c.anchors[0]!.key && k <= c.anchors.at(-1)!.key);
  const last = index.keys.length - 1;
  const out: TitleClaim[] = [];
  for (let i = 0; i < sequence.length; ) {
    if (span.has(sequence[i]!)) {
      i++;
      continue;
    }
    let j = i;
    while (j < sequence.length && !span.has(sequence[j]!)) j++;
    // tracks sequence[i..j) hold no region: their text follows the file before them and precedes the one after
    const after = i > 0 ? span.get(sequence[i - 1]!)![1] + 1 : null;
    const before = j < sequence.length ? span.get(sequence[j]!)![0] - 1 : null;
    let k0 = after ?? Math.max(0, before! - MAX_TITLE_GAP_KEYS + 1);
    const k1 = before ?? Math.min(last, after! + MAX_TITLE_GAP_KEYS - 1);
    if (k1 - k0 + 1 <= MAX_TITLE_GAP_KEYS) {
      for (const file of sequence.slice(i, j)) {
        const anchors = matchInOrder(heard[file]!, index, k0, k1, taken);
        if (!anchors || !believable(anchors, heard[file]!, index, pace)) continue;
        out.push({ file, anchors });
        k0 = anchors.at(-1)!.key + 1;
      }
    }
    i = j;
  }
  return out;
}

/** The longest in-order matching of a track's heard words to the free keys k0..k1 (few of each: a plain table). */
function matchInOrder(heard: HeardIn[], index: TextIndex, k0: number, k1: number, taken: (k: number) => boolean): Anchor[] | null {
  const n = heard.length, m = k1 - k0 + 1;
  if (!n || m <= 0 || n > 2 * m + 4) return null; // far more speech than the gap's text: something else
  const best = Array.from({ length: n + 1 }, () => new Int32Array(m + 1));
  for (let h = n - 1; h >= 0; h--) {
    for (let k = m - 1; k >= 0; k--) {
      const same = heard[h]!.word === index.keys[k0 + k] && !taken(k0 + k);
      best[h]![k] = Math.max(best[h + 1]![k]!, best[h]![k + 1]!, same ? 1 + best[h + 1]![k + 1]! : 0);
    }
  }
  const anchors: Anchor[] = [];
  for (let h = 0, k = 0; h < n && k < m; ) {
    const w = heard[h]!;
    if (w.word === index.keys[k0 + k] && !taken(k0 + k) && best[h]![k] === 1 + best[h + 1]![k + 1]!) {
      anchors.push({ heard: h, key: k0 + k, start: w.start, end: w.end, stretch: w.stretch });
      h++, k++;
    } else if (best[h + 1]![k] === best[h]![k]) h++;
    else k++;
  }
  return anchors.length ? anchors : null;
}

function believable(anchors: Anchor[], heard: HeardIn[], index: TextIndex, pace: Pace): boolean {
  const a = anchors[0]!, b = anchors.at(-1)!;
  if (anchors.length < MIN_HEARD_IN_GAP * heard.length) return false;
  if (anchors.reduce((s, x) => s + index.keys[x.key]!.length, 0) < MIN_MATCHED_CHARS) return false;
  if (anchors.some((x) => x.stretch !== a.stretch)) return false;
  return fitsPace(index.charsBefore[b.key + 1]! - index.charsBefore[a.key]!, b.end - a.start, pace);
}
