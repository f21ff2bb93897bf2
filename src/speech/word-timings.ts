// The one rule for a chunk's word timings, local or remote: the engine's own timings when it
// gave one per source token (tokenizeWords), else the audio aligned to the text.
import type { WordTiming } from './types.ts';
import { tokenizeWords } from './words.ts';

export async function engineWordsOrAligned(words: WordTiming[] | undefined, text: string, align: () => Promise<WordTiming[]>): Promise<WordTiming[]> {
  if (words && words.length === tokenizeWords(text).length) return words;
  return align();
}
