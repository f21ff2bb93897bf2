// Word error rate: (substitutions + deletions + insertions) / reference words, after the
// normalisation ASR scoring usually applies (case, punctuation, hyphens).

export function normalizeForWer(text: string): string[] {
  return text
    .toLowerCase()
    .replace(/<\/?s>|\([^)]*\)/g, ' ') // sphinx transcript markers and utterance ids
    .replace(/[’‘]/g, "'")
    .replace(/[^\p{L}\p{N}'\s-]/gu, ' ')
    .replace(/-/g, ' ')
    .split(/\s+/)
    .map((w) => w.replace(/^'+|'+$/g, ''))
    .filter(Boolean);
}

export interface WerResult {
  wer: number;
  errors: number;
  referenceWords: number;
}

/** Levenshtein distance over normalised words; several pairs are pooled (total errors / total words). */
export function wordErrorRate(pairs: { reference: string; hypothesis: string }[] | { reference: string; hypothesis: string }): WerResult {
  const list = Array.isArray(pairs) ? pairs : [pairs];
  let errors = 0;
  let referenceWords = 0;
  for (const { reference, hypothesis } of list) {
    const r = normalizeForWer(reference);
    const h = normalizeForWer(hypothesis);
    let prev = Array.from({ length: h.length + 1 }, (_, j) => j);
    for (let i = 1; i <= r.length; i++) {
      const cur = [i];
      for (let j = 1; j <= h.length; j++) {
        cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (r[i - 1] === h[j - 1] ? 0 : 1));
      }
      prev = cur;
    }
    errors += prev[h.length]!;
    referenceWords += r.length;
  }
  return { wer: referenceWords ? errors / referenceWords : errors > 0 ? 1 : 0, errors, referenceWords };
}
