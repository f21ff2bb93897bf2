import type { WordTiming } from './types.ts';

/**
 * eSpeak reads some word pairs as one dictionary entry ("to be", "have been") and sends a
 * single word event, so the second token comes back with no length. Share the merged span
 * among its tokens by letter count, each split moved to the nearest phoneme start.
 */
export function splitMergedWords(words: WordTiming[], phonemes: { start: number }[]): void {
  for (let k = 0; k < words.length; ) {
    let j = k + 1;
    // Only spoken tokens were merged: a bare dash or symbol the engine reads as nothing stays silent.
    while (j < words.length && words[j]!.end - words[j]!.start <= 0 && words[j]!.start >= words[k]!.end - 1e-6 && /[\p{L}\p{N}]/u.test(words[j]!.word)) j++;
    if (j - k > 1 && words[k]!.end > words[k]!.start) {
      const { start, end } = words[k]!;
      const letters = words.slice(k, j).map((w) => Math.max(1, w.word.replace(/[^\p{L}\p{N}]/gu, '').length));
      const total = letters.reduce((a, b) => a + b, 0);
      const starts = phonemes.map((p) => p.start).filter((t) => t > start && t < end);
      let acc = 0;
      let prev = start;
      for (let t = k; t < j; t++) {
        acc += letters[t - k]!;
        let cut = t === j - 1 ? end : start + ((end - start) * acc) / total;
        if (t < j - 1 && starts.length) cut = starts.reduce((a, b) => (Math.abs(b - cut) < Math.abs(a - cut) ? b : a));
        cut = Math.max(prev, Math.min(end, cut));
        words[t] = { ...words[t]!, start: prev, end: cut };
        prev = cut;
      }
    }
    k = j;
  }
}
