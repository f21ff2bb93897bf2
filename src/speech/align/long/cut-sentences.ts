// A sentence that one file's end cuts and the next file goes on with (round 32): an audiobook
// ripped from CDs, or split into tracks every few minutes, cuts by time, so a track can end one to
// three words into a sentence. The recogniser hears too little of those words at the end of the
// first file to anchor them, so they became the next file's region's head, and the per-segment
// aligner, with no audio before that file's first anchor, squeezed them into its first 10–250 ms
// or left them out (bench/cut-tracks.bench.ts: 6 of 18 cuts). Which file holds such a word is a
// question for the audio on both sides of the cut, not for the pace (round 31 tried the pace and
// moved short words across the cut the wrong way): the words between the last word timed before
// the cut and the first heard after it are aligned once more against the end of the one file
// joined to the start of the next, and each goes to the file its time falls in.

/** A word's time in its file (recording.ts TimedWord). */
interface TimedWord {
  file: number;
  start: number;
  end: number;
}

/** A matched region (recording.ts Claim): its file, its anchors (book keys heard at times), the key of a head left to the aligner. */
interface Region {
  file: number;
  anchors: { key: number; start: number; end: number }[];
  head?: { key: number };
}

/** One cut sentence to time across the files' join. */
export interface CutSentence {
  /** The file that ends (before the cut) and the one that goes on, next in reading order. */
  before: number;
  after: number;
  /**
   * Book tokens of the join's text: from one timed about 2 × AFTER_CUT seconds before the first
   * file's end to a heard one as far into the next file. The words up to `lastBefore` (the last
   * timed before the cut) and from the first kept after it (see `until`) are context and keep
   * their times: the join's ends, where the aligner has no audio beyond the edge words and a short
   * clip's noise floor, time worse than the segments did.
   */
  first: number;
  lastBefore: number;
  last: number;
  /** The audio: file `before` from `from` to its end, then file `after` from its start to `to` (seconds in each file). */
  from: number;
  to: number;
  /**
   * Seconds into file `after`: its words timed before this are timed anew from the join (the
   * segment there had squeezed them after the words it had no room for), the later ones keep
   * their times.
   */
  until: number;
}

/** At most this many words between the last word timed before the cut and the first heard after it (a sentence's words at a cut, not a passage). */
export const MAX_CUT_WORDS = 8;
/** Seconds after the next file's first heard word whose words are timed anew, and twice that the join holds. */
export const AFTER_CUT = 1;
/** Seconds a reader may pause inside a sentence (an orator's "Americans, [1.1 s] ask not"): see recording.ts LONG_EDGE_PAUSE. */
const PAUSE = 1.2;

/**
 * The cut sentences of a recording, given its files in reading order, its regions and the words
 * the per-segment aligner timed: for each two files next in the order, the words between the
 * last word timed in the first file's last region and the first word heard in the next file's
 * first region, when they are 1 to MAX_CUT_WORDS, are untimed or timed in one of the two files,
 * hold no whole sentence (a heading or a sentence the segments left out as unread stays so),
 * and both files' audio beside the cut is no longer than twice those words' time at the pace
 * plus a pause (so the join holds speech, not a chapter's music or credits): the end of one
 * sentence and the start of the next, or words inside one.
 */
export function cutSentences(
  order: number[],
  claims: Region[],
  words: (TimedWord | null)[],
  book: { words: string[]; keyToken: ArrayLike<number>; endsSentence: ArrayLike<number>; durations: number[]; secondsPerChar: number },
): CutSentence[] {
  const out: CutSentence[] = [];
  const inFile = (t: number, file: number) => words[t]?.file === file;
  // an anchor grown to a sentence's edge by sounding time, or a head found by its words, is an
  // onset, not a heard word: at a file's start it took a word the cut left in the file before
  const heard = (x: { start: number; end: number }) => x.end > x.start;
  for (let i = 1; i < order.length; i++) {
    const before = order[i - 1]!, after = order[i]!;
    // the first file's last region, the next file's first
    let a: Region | undefined, b: Region | undefined;
    for (const c of claims) {
      if (c.file === before && (!a || c.anchors.at(-1)!.end > a.anchors.at(-1)!.end)) a = c;
      if (c.file === after && (!b || c.anchors[0]!.start < b.anchors[0]!.start)) b = c;
    }
    if (!a || !b) continue;
    // the last word timed in the first file's last region up to its last heard anchor, the
    // first timed in the next file's first region from its first heard anchor on
    const aFirst = book.keyToken[a.head?.key ?? a.anchors[0]!.key]!;
    let lastBefore = book.keyToken[(a.anchors.findLast(heard) ?? a.anchors[0]!).key]!;
    while (lastBefore >= aFirst && !inFile(lastBefore, before)) lastBefore--;
    const bLast = book.keyToken[b.anchors.at(-1)!.key]!;
    let firstHeard = book.keyToken[(b.anchors.find(heard) ?? b.anchors.at(-1)!).key]!;
    while (firstHeard <= bLast && !inFile(firstHeard, after)) firstHeard++;
    if (lastBefore < aFirst || firstHeard > bLast || firstHeard - lastBefore - 1 < 1 || firstHeard - lastBefore - 1 > MAX_CUT_WORDS) continue;
    let chars = 0, ours = true, whole = false;
    for (let t = lastBefore + 1, sentenceStart = book.endsSentence[lastBefore] === 1; t < firstHeard; t++) {
      chars += book.words[t]!.length + 1;
      if (words[t] && !inFile(t, before) && !inFile(t, after)) ours = false;
      if (!book.endsSentence[t]) continue;
      whole ||= sentenceStart;
      sentenceStart = true;
    }
    const span = 2 * chars * book.secondsPerChar + PAUSE;
    const heardAt = words[firstHeard]!.start;
    if (!ours || whole || book.durations[before]! - words[lastBefore]!.end > span || heardAt > span) continue;
    // the join's start: a word timed in the region 2 × AFTER_CUT before
    let first = lastBefore;
    while (first > aFirst && inFile(first - 1, before) && words[first - 1]!.end <= words[first]!.start + 1e-9 && words[lastBefore]!.end - words[first - 1]!.start <= 2 * AFTER_CUT) first--;
    // the join's end: a heard anchor 2 × AFTER_CUT on, else the region's last timed word
    const on = b.anchors.find((x) => heard(x) && inFile(book.keyToken[x.key]!, after) && words[book.keyToken[x.key]!]!.start >= heardAt + 2 * AFTER_CUT);
    let last = on ? book.keyToken[on.key]! : bLast;
    while (last > firstHeard && !inFile(last, after)) last--;
    out.push({ before, after, first, lastBefore, last, from: words[first]!.start, to: words[last]!.end, until: heardAt + AFTER_CUT });
  }
  return out;
}

/**
 * The words of a cut sentence as the aligner timed them on the joined audio (`timed`: tokens
 * first..last, seconds from the join's start; `cutAt`: where the next file starts in it), each in
 * the file that holds most of it: the words between the cut's two sides, and the next file's
 * words before `until`, each ending before the first word kept after them; the last word before
 * the cut ends sooner if the join says so (its segment had stretched it over the words it had no
 * room for: "not" over "an" in "He was not an|ill"), never later. Undefined when the aligner's
 * starts for the two context words are more than `agree` seconds from those they had, or it left
 * out a word that had a time (it found another reading there: the old times stay). A word it
 * left out that had none stays untimed.
 */
export function splitAtCut(
  c: CutSentence,
  timed: { start: number; end: number; skipped?: boolean }[],
  cutAt: number,
  words: (TimedWord | null)[],
  durations: number[],
  agree = 0.25,
): Map<number, { file: number; start: number; end: number }> | undefined {
  const before = words[c.lastBefore]!, after = words[c.last]!;
  const p = timed[c.lastBefore - c.first]!, q = timed.at(-1)!;
  if (p.skipped || q.skipped || Math.abs(c.from + p.start - before.start) > agree || Math.abs(q.start - cutAt - after.start) > agree) return undefined;
  if (timed.some((w, k) => w.skipped && words[c.first + k])) return undefined;
  // the first word after the cut that keeps its time
  let kept = c.lastBefore + 1;
  while (kept < c.last && !(words[kept]?.file === c.after && words[kept]!.start >= c.until)) kept++;
  const bound = words[kept]!.start;
  const out = new Map<number, { file: number; start: number; end: number }>();
  // the context word before the cut may end sooner (its segment stretched it over the words it had no room for), never later
  const pEnd = Math.max(before.start, Math.min(before.end, c.from + p.end));
  if (pEnd < before.end) out.set(c.lastBefore, { file: c.before, start: before.start, end: pEnd });
  for (let k = c.lastBefore - c.first + 1; k < kept - c.first; k++) {
    const w = timed[k]!;
    if (w.skipped) continue;
    if ((w.start + w.end) / 2 < cutAt) {
      const start = Math.max(pEnd, c.from + w.start);
      out.set(c.first + k, { file: c.before, start, end: Math.max(start, Math.min(durations[c.before]!, c.from + w.end)) });
    } else {
      const end = Math.min(bound, w.end - cutAt);
      out.set(c.first + k, { file: c.after, start: Math.min(end, Math.max(0, w.start - cutAt)), end });
    }
  }
  return out;
}
