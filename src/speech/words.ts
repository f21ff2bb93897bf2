// The one word tokenisation every timing in Lectern refers to: whitespace-separated
// tokens of the source text, punctuation kept on the token ("word," "1,200" "U.S.").
// Highlights, timelines, SMIL clips and alignment all index into this list.

export interface WordToken {
  word: string;
  /** Offsets into the text, in UTF-16 code units: text.slice(start, end) === word. */
  start: number;
  end: number;
}

export function tokenizeWords(text: string): WordToken[] {
  const out: WordToken[] = [];
  const re = /\S+/gu;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    out.push({ word: m[0], start: m.index, end: m.index + m[0].length });
  }
  return out;
}

export function utf8Bytes(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}
