// Piper's timed phoneme words → the source tokens (tokenizeWords). eSpeak's phoneme string
// mostly has one word per token, but not always: it runs some function words together
// ("of the" → ʌvðə, "in the" → ɪnðə), reads some tokens as several words ("U.S.A.", a
// number the spoken forms left), and reads a lone dash or ampersand as nothing. So the
// two sequences are aligned monotonically (dynamic programming over groups of one token ↔
// several words, several tokens ↔ one word, a silent token ↔ no word), scoring each pair
// by how well the token's letter count matches the word's phoneme count. A word shared by
// several tokens is cut among them by letter count, each cut moved to the nearest phoneme
// start, as splitMergedWords does for eSpeak's own merged words.
import type { WordTiming } from '../../types.ts';
import type { WordSpan } from './durations.ts';

const MAX_GROUP = 4;
/** Mean cost per token above which the mapping is not trusted (the caller aligns instead). */
const MAX_MEAN_COST = 0.9;

type Step = { tokens: number; words: number };

const letters = (token: string) => token.replace(/[^\p{L}\p{N}]/gu, '').length;
const sounded = (token: string) => letters(token) > 0;

function lengthCost(tokenLetters: number, phonemes: number): number {
  return Math.abs(Math.log((tokenLetters + 1) / (phonemes + 1)));
}

/**
 * One timing per token, in order, or null when the phoneme words cannot be matched to the
 * tokens with confidence. `spans` are the words of the whole request, in order, with
 * times in its audio.
 */
export function mapWordsToTokens(tokens: string[], spans: WordSpan[]): WordTiming[] | null {
  const n = tokens.length;
  const m = spans.length;
  if (n === 0) return [];
  if (m === 0) return null;
  const { cost, back } = alignmentTable(tokens, spans);
  if (cost[n]![m]! / n > MAX_MEAN_COST) return null;
  return timingsOf(tokens, spans, cheapestPath(back, n, m));
}

/**
 * The dynamic-programming table: cost[i][j] is the cheapest alignment of the first i tokens
 * with the first j words, back[i][j] the last step of it.
 */
function alignmentTable(tokens: string[], spans: WordSpan[]): { cost: Float64Array[]; back: Step[][] } {
  const n = tokens.length;
  const m = spans.length;
  const tokLetters = tokens.map(letters);
  const phon = spans.map((s) => s.phonemeStarts.length);
  const INF = Number.POSITIVE_INFINITY;
  const cost = Array.from({ length: n + 1 }, () => new Float64Array(m + 1).fill(INF));
  const back: Step[][] = Array.from({ length: n + 1 }, () => new Array<Step>(m + 1));
  cost[0]![0] = 0;
  const relax = (i: number, j: number, step: Step, c: number) => {
    const ni = i + step.tokens;
    const nj = j + step.words;
    if (ni > n || nj > m) return;
    const total = cost[i]![j]! + c;
    if (total < cost[ni]![nj]!) {
      cost[ni]![nj] = total;
      back[ni]![nj] = step;
    }
  };
  for (let i = 0; i <= n; i++) {
    for (let j = 0; j <= m; j++) {
      if (cost[i]![j] === INF) continue;
      if (i < n) relax(i, j, { tokens: 1, words: 0 }, sounded(tokens[i]!) ? 4 : 0.1);
      if (j < m) relax(i, j, { tokens: 0, words: 1 }, 4);
      // one token ↔ k words
      let ph = 0;
      for (let k = 1; k <= MAX_GROUP && j + k <= m; k++) {
        ph += phon[j + k - 1]!;
        if (i < n) relax(i, j, { tokens: 1, words: k }, lengthCost(tokLetters[i]!, ph) + 0.6 * (k - 1));
      }
      // k tokens ↔ one word
      let le = 0;
      for (let k = 1; k <= MAX_GROUP && i + k <= n; k++) {
        le += tokLetters[i + k - 1]!;
        if (k > 1 && j < m) relax(i, j, { tokens: k, words: 1 }, lengthCost(le, phon[j]!) + 0.6 * (k - 1));
      }
    }
  }
  return { cost, back };
}

/** The steps of the cheapest alignment, first to last, each with the token and word it starts at. */
function cheapestPath(back: Step[][], n: number, m: number): Array<Step & { i: number; j: number }> {
  const steps: Array<Step & { i: number; j: number }> = [];
  for (let i = n, j = m; i > 0 || j > 0; ) {
    const s = back[i]![j]!;
    i -= s.tokens;
    j -= s.words;
    steps.push({ ...s, i, j });
  }
  return steps.reverse();
}

/** One timing per token along the path: a silent token is an instant at the previous end. */
function timingsOf(tokens: string[], spans: WordSpan[], steps: Array<Step & { i: number; j: number }>): WordTiming[] {
  const out: WordTiming[] = [];
  let prevEnd = 0;
  for (const s of steps) {
    if (s.tokens === 0) continue;
    if (s.words === 0) {
      out.push({ word: tokens[s.i]!, start: prevEnd, end: prevEnd });
      continue;
    }
    if (s.tokens === 1) {
      const start = spans[s.j]!.start;
      const end = spans[s.j + s.words - 1]!.end;
      out.push({ word: tokens[s.i]!, start, end });
      prevEnd = end;
      continue;
    }
    const w = spans[s.j]!;
    out.push(...shareWord(tokens.slice(s.i, s.i + s.tokens), w));
    prevEnd = w.end;
  }
  return out;
}

/** Several tokens share one word: cut by letter count at the nearest phoneme starts. */
function shareWord(group: string[], w: WordSpan): WordTiming[] {
  const weights = group.map((t) => Math.max(1, letters(t)));
  const total = weights.reduce((a, b) => a + b, 0);
  const cuts = w.phonemeStarts.filter((t) => t > w.start && t < w.end);
  const out: WordTiming[] = [];
  let acc = 0;
  let prev = w.start;
  group.forEach((word, k) => {
    acc += weights[k]!;
    let cut = k === group.length - 1 ? w.end : w.start + ((w.end - w.start) * acc) / total;
    if (k < group.length - 1 && cuts.length) cut = cuts.reduce((a, b) => (Math.abs(b - cut) < Math.abs(a - cut) ? b : a));
    cut = Math.max(prev, Math.min(w.end, cut));
    out.push({ word, start: prev, end: cut });
    prev = cut;
  });
  return out;
}
