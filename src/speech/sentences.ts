// Sentences and chunks. A chunk is what one TTS request carries: whole sentences while
// they fit under the backend's max_chunk_bytes (UTF-8), a long sentence split at a pause.
import { utf8Bytes } from './words.ts';

/** Silence put between chunks when they are joined, so sentences don't run into each other. */
export const CHUNK_GAP_SECONDS = 0.25;

// Tokens ending in a period that do not end a sentence.
const ABBREVIATIONS = new Set(
  'mr mrs ms dr prof sr jr st vs etc e.g i.e a.m p.m no vol fig figs al approx dept est inc ltd co corp jan feb mar apr jun jul aug sep sept oct nov dec mt ft gen gov lt col sgt capt cmdr rev hon u.s u.k cf ch pp ed eds'.split(' '),
);

export function splitSentences(text: string): string[] {
  const tokens = text.split(/(\s+)/);
  const sentences: string[] = [];
  let cur = '';
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!;
    const first = cur.trim() === '';
    cur += t;
    if (/^\s+$/.test(t) || t === '') continue;
    if (endsSentence(t, tokens[i + 2], first)) {
      sentences.push(cur.trim());
      cur = '';
    }
  }
  if (cur.trim()) sentences.push(cur.trim());
  return sentences;
}

function endsSentence(token: string, next: string | undefined, first: boolean): boolean {
  // Strip closing quotes/brackets to find the terminal punctuation.
  const core = token.replace(/["'”’»)\]]+$/u, '');
  if (!/[.!?…]$/u.test(core)) return false;
  // A following lower-case word means it was not the end: '"Stop!" he said', 'approx. five', 'wait… then'.
  if (next !== undefined && /^["'“‘«(\[]*\p{Ll}/u.test(next)) return false;
  if (/[!?…]$/u.test(core)) return true;
  const word = core.slice(0, -1).replace(/^["'“‘«(\[]+/u, '').toLowerCase();
  if (ABBREVIATIONS.has(word)) return false;
  if (/^\p{L}$/u.test(word)) return false; // initials: "J. Smith"
  if (/^(\p{L}\.)+\p{L}$/u.test(word)) return false; // "e.g", "u.s.a"
  // A numbered heading or list item ("1.", "IV.", "a.") is not a sentence of its own.
  if (first && /^(\d+(\.\d+)*|[ivxlcdm]+)$/.test(word)) return false;
  return true;
}

/** Groups sentences into chunks of at most maxBytes; splits a sentence that alone is too long. */
export function chunkSentences(sentences: string[], maxBytes: number): string[] {
  const chunks: string[] = [];
  let cur = '';
  const push = (s: string) => {
    if (!cur) cur = s;
    else if (utf8Bytes(cur) + 1 + utf8Bytes(s) <= maxBytes) cur += ` ${s}`;
    else {
      chunks.push(cur);
      cur = s;
    }
  };
  for (const s of sentences) {
    if (utf8Bytes(s) <= maxBytes) push(s);
    else for (const piece of splitLong(s, maxBytes)) push(piece);
  }
  if (cur) chunks.push(cur);
  return chunks;
}

/** Splits at the last pause (, ; : —) or space that keeps the piece under the limit. */
function splitLong(sentence: string, maxBytes: number): string[] {
  const out: string[] = [];
  let rest = sentence;
  while (utf8Bytes(rest) > maxBytes) {
    const words = rest.split(' ');
    let cut = 0;
    let pause = 0;
    let bytes = 0;
    for (let i = 0; i < words.length; i++) {
      bytes += utf8Bytes(words[i]!) + (i ? 1 : 0);
      if (bytes > maxBytes) break;
      cut = i + 1;
      if (/[,;:—–]$/.test(words[i]!)) pause = i + 1;
    }
    const n = pause > cut / 2 ? pause : Math.max(cut, 1);
    if (cut === 0) {
      // A single "word" longer than the limit (a URL, a hash): cut it by bytes.
      const w = words[0]!;
      let end = w.length;
      while (utf8Bytes(w.slice(0, end)) > maxBytes) end--;
      out.push(w.slice(0, end));
      rest = [w.slice(end), ...words.slice(1)].join(' ');
      continue;
    }
    out.push(words.slice(0, n).join(' '));
    rest = words.slice(n).join(' ');
  }
  if (rest) out.push(rest);
  return out;
}
