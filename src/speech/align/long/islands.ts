// Islands: stretches of audio the book-wide recogniser heard but did not place (a sentence
// after music, a slow orator's phrases, terse lines a whole novel's language model turns into
// other words): the gaps beside a file's runs, the audio between two anchors of a run with
// several book words between them, and a file that matched nothing. Each is heard again with
// a language model of only the book text that can lie there (the free text beside the runs
// around it, about as much as the stretch holds at the narrator's pace): the recursive idea of
// long-audio alignment (re-recognise unaligned islands with a model restricted to their text),
// in a few rounds (recording.ts).
import type { Anchor, Pace, TextIndex } from './anchors.ts';

/** Seconds of audio beside a run that are heard again (a longer gap is heard at its two ends). */
export const ISLAND_SECONDS = 45;
/** Book words between two anchors of one run that make the audio between them an island (more than a misheard name). */
export const INNER_WORDS = 5;
/** Text beyond the pace's share heard at a file that matched nothing: a chapter heading, a paragraph the reader left out. */
const UNMATCHED_EXTRA_CHARS = 800;
/**
 * A free stretch of text up to this long is heard whole at a file that matched nothing (about
 * 900 words: a short chapter): the file's speech can lie anywhere in it, not only at its edges.
 */
const UNMATCHED_WHOLE_CHARS = 5000;
/** Shorter gaps hold no words worth a recogniser run. */
const MIN_ISLAND = 1.2;
/** Text allowed per second of island, beyond the pace: a slow reader, a margin of words. */
const TEXT_MARGIN = 1.5;
const TEXT_SLACK_CHARS = 40;

export interface Island {
  file: number;
  /** Seconds within the file. */
  start: number;
  end: number;
  /** Book key ranges [first, last] whose words the island's language model holds, in order. */
  text: [number, number][];
}

export interface FileRuns {
  duration: number;
  runs: Anchor[][];
}

/**
 * The islands to hear again: every gap before, between and after a file's runs (a run cut
 * where INNER_WORDS book words lie between two anchors), at most ISLAND_SECONDS beside each
 * run, with the free book text next to the run's text on that side (text no run of any file
 * holds), as many characters as the gap takes at the pace; and the start and end of a file
 * with no run, with the free text after and before every run.
 */
export function islandsToHear(files: FileRuns[], index: TextIndex, pace: Pace): Island[] {
  // a run whose anchors leave seconds of audio between them (joined over a misheard stretch
  // whose length fits its text) is pieces with islands between, like separate runs
  const pieces = files.map((f) => f.runs.flatMap((r) => splitAtSilentAnchors(r)));
  const spans = pieces.flatMap((runs) => runs.map((r) => [r[0]!.key, r.at(-1)!.key] as const)).sort((a, b) => a[0] - b[0]);
  const taken = (k: number) => spans.some(([s, e]) => k >= s && k <= e);
  const charsFor = (seconds: number) => (TEXT_MARGIN * seconds) / pace.secondsPerChar + TEXT_SLACK_CHARS;
  const chars = (k0: number, k1: number) => index.charsBefore[k1 + 1]! - index.charsBefore[k0]!;
  /**
   * Free keys after `k` (forward) or before it (backward), as many as `seconds` of speech hold
   * (and `extraChars` more); the whole free stretch there when it is at most `wholeChars` long.
   */
  const freeText = (k: number, dir: 1 | -1, seconds: number, extraChars = 0, wholeChars = 0): [number, number] | null => {
    const span = (n: number) => chars(Math.min(k + dir, n), Math.max(k + dir, n));
    const limit = charsFor(seconds) + extraChars;
    let end = k, whole = true;
    for (let n = k + dir; n >= 0 && n < index.keys.length && !taken(n); n += dir) {
      if (span(n) > Math.max(limit, wholeChars)) {
        whole = false;
        break;
      }
      end = n;
    }
    // a stretch longer than wholeChars: as much of it as the limit holds
    if (!whole) while (end !== k && span(end) > limit) end -= dir;
    if (end === k) return null;
    return dir === 1 ? [k + 1, end] : [end, k - 1];
  };
  const islands: Island[] = [];
  const add = (file: number, start: number, end: number, texts: ([number, number] | null)[]) => {
    const text = mergeRanges(texts.filter((t): t is [number, number] => t !== null));
    if (text.length) islands.push({ file, start, end, text });
  };
  const all = files.flatMap((f) => f.runs);
  files.forEach((f, fi) => {
    const runs = [...pieces[fi]!].sort((a, b) => a[0]!.start - b[0]!.start);
    if (!runs.length) {
      // a file that matched nothing (a short chapter the book-wide model misheard throughout):
      // a chapter file starts where some region's text ends and ends where another's begins,
      // so its start is heard with the free text after every region, its end with the text
      // before every region; a short free stretch whole, since unread text (a heading, an
      // epigraph, a paragraph left out) can lie between a region and the file's speech (round
      // 28: a sentence after two unread paragraphs and a skipped one was not in its model)
      if (!all.length || f.duration < MIN_ISLAND) return;
      const head = Math.min(f.duration, ISLAND_SECONDS), tail = Math.max(head, f.duration - ISLAND_SECONDS);
      const after = (seconds: number) => all.map((r) => freeText(r.at(-1)!.key, 1, seconds, UNMATCHED_EXTRA_CHARS, UNMATCHED_WHOLE_CHARS));
      const before = (seconds: number) => all.map((r) => freeText(r[0]!.key, -1, seconds, UNMATCHED_EXTRA_CHARS, UNMATCHED_WHOLE_CHARS));
      if (f.duration <= 2 * ISLAND_SECONDS) add(fi, 0, f.duration, [...after(f.duration), ...before(f.duration)]);
      else (add(fi, 0, head, after(head)), add(fi, tail, f.duration, before(f.duration - tail)));
      return;
    }
    for (let r = 0; r <= runs.length; r++) {
      const before = runs[r - 1], after = runs[r];
      const a = before ? before.at(-1)!.end : 0;
      const b = after ? after[0]!.start : f.duration;
      if (b - a < MIN_ISLAND) continue;
      if (b - a <= 2 * ISLAND_SECONDS) {
        add(fi, a, b, [before ? freeText(before.at(-1)!.key, 1, b - a) : null, after ? freeText(after[0]!.key, -1, b - a) : null]);
      } else {
        if (before) add(fi, a, a + ISLAND_SECONDS, [freeText(before.at(-1)!.key, 1, ISLAND_SECONDS)]);
        if (after) add(fi, b - ISLAND_SECONDS, b, [freeText(after[0]!.key, -1, ISLAND_SECONDS)]);
      }
    }
  });
  return islands;
}

/** A run cut between two anchors with INNER_WORDS or more book words and MIN_ISLAND seconds of decoded audio between them. */
function splitAtSilentAnchors(run: Anchor[]): Anchor[][] {
  const out: Anchor[][] = [[run[0]!]];
  for (let k = 1; k < run.length; k++) {
    const a = run[k - 1]!, b = run[k]!;
    // (across audio nobody decoded the gap fits the pace, or the passes would have heard it)
    if (a.stretch === b.stretch && b.start - a.end >= MIN_ISLAND && b.key - a.key - 1 >= INNER_WORDS) out.push([]);
    out[out.length - 1]!.push(b);
  }
  return out;
}

/** Sorted ranges, overlapping or touching ones joined. */
function mergeRanges(ranges: [number, number][]): [number, number][] {
  const out: [number, number][] = [];
  for (const [s, e] of [...ranges].sort((x, y) => x[0] - y[0])) {
    const last = out[out.length - 1];
    if (last && s <= last[1] + 1) last[1] = Math.max(last[1], e);
    else out.push([s, e]);
  }
  return out;
}
