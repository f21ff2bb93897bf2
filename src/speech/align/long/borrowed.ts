// The recogniser's dictionary for a language no acoustic model here covers (Spanish, Italian,
// Russian, German, any language eSpeak NG speaks): the borrowed model (acoustic-models.ts) hears
// it, with the book's own words pronounced by eSpeak NG in their language and mapped to that
// model's nearest phones (phones.ts). Locating needs only that the book's words in the book's
// order come out of the recogniser often enough to anchor on; the book's trigram model does the rest.
import { phonemizeWords } from '../../tts/espeak.ts';
import type { AcousticModel } from '../acoustic-models.ts';
import { ipaToPhones } from '../phones.ts';

/**
 * The book's words (spoken forms) → pronunciations in the model's phones. A word eSpeak reads
 * as nothing the model has (a lone symbol) is left out: it can be aligned, never recognised.
 */
export async function borrowedDictionary(words: Iterable<string>, language: string, model: Pick<AcousticModel, 'phoneSet'>): Promise<Map<string, string[]>> {
  const ipa = await phonemizeWords(words, language);
  const out = new Map<string, string[]>();
  for (const [word, p] of ipa) {
    const phones = ipaToPhones(p, model.phoneSet, language);
    if (phones.length) out.set(word, [phones.join(' ')]);
  }
  return out;
}
