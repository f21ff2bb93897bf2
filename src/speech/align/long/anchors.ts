// Which heard words are which words of the book. Heard trigrams that occur in the book (at
// most a few times) propose pairs (heard word ↔ book word); the best monotone chain of them
// per file, scored by the words it covers less a penalty for every jump whose audio time does
// not fit the text between (a skip, a repeat, a preface, a reordered chapter) and a smaller one
// for a link that fits but is not one continuous reading, gives the anchors. Runs of anchors
// whose gaps fit the narrator's pace are the matched regions; a gap that does not fit is where
// the audio holds something else or left text out.

export interface TextIndex {
  keys: string[];
  /** Characters of the spoken words before key k (pace is measured in characters). */
  charsBefore: Float64Array;
  trigrams: Map<string, number[]>;
}

/** A trigram found more often than this is no evidence of where the audio is. */
const MAX_OCCURRENCES = 12;

export function buildTextIndex(keys: string[]): TextIndex {
  const charsBefore = new Float64Array(keys.length + 1);
  for (let k = 0; k < keys.length; k++) charsBefore[k + 1] = charsBefore[k]! + keys[k]!.length + 1;
  const trigrams = new Map<string, number[]>();
  for (let k = 0; k + 2 < keys.length; k++) {
    const t = `${keys[k]} ${keys[k + 1]} ${keys[k + 2]}`;
    const list = trigrams.get(t);
    if (!list) trigrams.set(t, [k]);
    else if (list.length <= MAX_OCCURRENCES) list.push(k);
  }
  return { keys, charsBefore, trigrams };
}

export interface HeardIn {
  /** The contiguous decoded stretch it was heard in (trigrams never span two). */
  stretch: number;
  word: string;
  start: number;
  end: number;
  /** Heard by an island's recogniser (a model of only the nearby text), not the book-wide one. */
  island?: boolean;
}

export interface Anchor {
  /** Index of the heard word (in the file's heard list) and of the book's key word. */
  heard: number;
  key: number;
  start: number;
  end: number;
  stretch: number;
}

/** Pace bounds for chaining: a gap is "in step" when its time is within these factors of the text's time. */
export interface Pace {
  secondsPerChar: number;
  low: number;
  high: number;
  /** Seconds of slack on both sides (pauses). */
  slack: number;
}

export const DEFAULT_PACE: Pace = { secondsPerChar: 0.068, low: 0.4, high: 2.5, slack: 3 };

/** Heard speech of `seconds` is about as long as `chars` of text take at the pace (a region's grown edge, a title track). */
export function fitsPace(chars: number, seconds: number, pace: Pace): boolean {
  const predicted = chars * pace.secondsPerChar;
  return seconds >= 0.5 * predicted - 0.3 && seconds <= 2 * predicted + 0.3;
}
/** Score lost by a jump out of step: a new stretch must cover more words than this to be worth it. */
const JUMP = 6;
/**
 * Score lost by a link in step that is not one continuous reading (across other heard words or
 * undecoded audio), so such a link gains at most 1 (round 23). Chance trigrams scattered in step
 * over a preface or an unread paragraph then no longer outscore a short read run that conflicts
 * with them: in bench/messy-placements.bench.ts draw 30 three of them ("it has air", "up to the",
 * "that are to our") beat the 6 anchors of a one-sentence chapter file under the default pace's
 * loose bounds, and the sentence went untimed and the file order wrong.
 */
const LINK = 2;
/** Candidates looked back at per candidate (keeps chaining linear in an hour's heard words). */
const LOOK_BACK = 3000;

export function inStep(index: TextIndex, pace: Pace, keyA: number, tA: number, keyB: number, tB: number): boolean {
  const pred = (index.charsBefore[keyB]! - index.charsBefore[keyA]!) * pace.secondsPerChar;
  const dt = tB - tA;
  return dt >= pred * pace.low - pace.slack && dt <= pred * pace.high + pace.slack;
}

/** The best monotone chain of anchors for one file's heard words (in time order). */
export function chainAnchors(heard: HeardIn[], index: TextIndex, pace: Pace): Anchor[] {
  interface Cand { i: number; j: number }
  const cands: Cand[] = [];
  for (let i = 0; i + 2 < heard.length; i++) {
    if (heard[i]!.stretch !== heard[i + 2]!.stretch) continue;
    const list = index.trigrams.get(`${heard[i]!.word} ${heard[i + 1]!.word} ${heard[i + 2]!.word}`);
    if (!list || list.length > MAX_OCCURRENCES) continue;
    for (const j of list) cands.push({ i, j });
  }
  const n = cands.length;
  if (!n) return [];
  const score = new Float64Array(n);
  const prev = new Int32Array(n).fill(-1);
  let best = 0;
  for (let c = 0; c < n; c++) {
    const { i, j } = cands[c]!;
    score[c] = 3;
    for (let p = c - 1; p >= 0 && p >= c - LOOK_BACK; p--) {
      const q = cands[p]!;
      if (q.i >= i || q.j >= j) continue;
      const di = i - q.i, dj = j - q.j;
      const gain = Math.min(3, di, dj);
      let s = score[p]! + gain;
      const sameRun = heard[q.i]!.stretch === heard[i]!.stretch && Math.abs(di - dj) <= 3 && di <= 12;
      if (!sameRun) s -= inStep(index, pace, q.j, heard[q.i]!.start, j, heard[i]!.start) ? LINK : JUMP;
      if (s > score[c]!) (score[c] = s), (prev[c] = p);
    }
    if (score[c]! > score[best]!) best = c;
  }
  const chain: Cand[] = [];
  for (let c = best; c >= 0; c = prev[c]!) chain.push(cands[c]!);
  chain.reverse();
  // each trigram vouches for its three words; keep them strictly increasing on both sides
  const out: Anchor[] = [];
  for (const { i, j } of chain) {
    for (let k = 0; k < 3; k++) {
      const last = out[out.length - 1];
      if (last && (last.heard >= i + k || last.key >= j + k)) continue;
      const h = heard[i + k]!;
      out.push({ heard: i + k, key: j + k, start: h.start, end: h.end, stretch: h.stretch });
    }
  }
  return out;
}

/** The narrator's pace from a chain: median seconds per character over anchor gaps of some length. */
export function measurePace(anchors: Anchor[], index: TextIndex): number | null {
  const ratios: number[] = [];
  for (let a = 0, b = 1; b < anchors.length; b++) {
    const chars = index.charsBefore[anchors[b]!.key]! - index.charsBefore[anchors[a]!.key]!;
    if (chars < 60) continue;
    ratios.push((anchors[b]!.start - anchors[a]!.start) / chars);
    a = b;
  }
  if (ratios.length < 3) return null;
  ratios.sort((x, y) => x - y);
  return ratios[Math.floor(ratios.length / 2)]!;
}

export interface Run {
  anchors: Anchor[];
}

/**
 * Splits a chain into runs at gaps that are out of step (`fits` says which gaps are). Runs of
 * fewer than `minAnchors` anchors are chance matches and dropped.
 */
export function splitRuns(anchors: Anchor[], fits: (a: Anchor, b: Anchor) => boolean, minAnchors: number): Run[] {
  const runs: Run[] = [];
  let cur: Anchor[] = [];
  for (const a of anchors) {
    const last = cur[cur.length - 1];
    if (last && !fits(last, a)) {
      if (cur.length >= minAnchors) runs.push({ anchors: cur });
      cur = [];
    }
    cur.push(a);
  }
  if (cur.length >= minAnchors) runs.push({ anchors: cur });
  return runs;
}
