// eSpeak NG's IPA → the phone set of a PocketSphinx acoustic model, so a word the
// pronouncing dictionary lacks (a name, a number, a coined word) is still aligned with
// the sounds eSpeak would make for it instead of being dropped.

/** IPA (longest sequences first) → model phones, per model phone set. */
const ARPABET: [string, string][] = [
  ['aɪə', 'AY ER'], ['aɪ', 'AY'], ['aʊ', 'AW'], ['eɪ', 'EY'], ['oʊ', 'OW'], ['əʊ', 'OW'], ['ɔɪ', 'OY'],
  ['tʃ', 'CH'], ['dʒ', 'JH'], ['ɜː', 'ER'], ['ɜ', 'ER'], ['ɚ', 'ER'], ['ɝ', 'ER'], ['ɑː', 'AA'], ['ɑ', 'AA'], ['ɒ', 'AA'],
  ['ɔː', 'AO'], ['ɔ', 'AO'], ['æ', 'AE'], ['ʌ', 'AH'], ['ə', 'AH'], ['ɐ', 'AH'], ['ɛ', 'EH'], ['e', 'EH'],
  ['ɪ', 'IH'], ['ᵻ', 'IH'], ['iː', 'IY'], ['i', 'IY'], ['ʊ', 'UH'], ['uː', 'UW'], ['u', 'UW'], ['o', 'OW'], ['a', 'AE'],
  ['b', 'B'], ['d', 'D'], ['f', 'F'], ['ɡ', 'G'], ['g', 'G'], ['h', 'HH'], ['j', 'Y'], ['k', 'K'], ['l', 'L'], ['ɫ', 'L'],
  ['m', 'M'], ['n', 'N'], ['ŋ', 'NG'], ['p', 'P'], ['ɹ', 'R'], ['r', 'R'], ['ɾ', 'T'], ['s', 'S'], ['ʃ', 'SH'],
  ['t', 'T'], ['θ', 'TH'], ['ð', 'DH'], ['v', 'V'], ['w', 'W'], ['ʍ', 'W'], ['z', 'Z'], ['ʒ', 'ZH'], ['ʔ', 'T'],
  ['x', 'HH'], ['ç', 'HH'],
  // other languages' sounds, for languages aligned with a borrowed model (long/borrowed.ts): the nearest English phone
  ['tɕ', 'CH'], ['dʑ', 'JH'], ['ʈʂ', 'CH'], ['ɖʐ', 'JH'], ['β', 'B'], ['ɣ', 'G'], ['ʝ', 'Y'], ['ɲ', 'N Y'], ['ʎ', 'L Y'],
  ['ɕ', 'SH'], ['ʑ', 'ZH'], ['ʂ', 'SH'], ['ʐ', 'ZH'], ['ɭ', 'L'], ['ɬ', 'SH'], ['ɨ', 'IH'], ['ɯ', 'UW'], ['ɤ', 'AH'],
  ['ɘ', 'AH'], ['ɵ', 'UH'], ['ø', 'ER'], ['œ', 'ER'], ['ɶ', 'AH'], ['y', 'UW'], ['ʏ', 'UH'], ['ʁ', 'R'], ['ʀ', 'R'],
  ['χ', 'HH'], ['ħ', 'HH'], ['ɦ', 'HH'], ['q', 'K'], ['c', 'K'], ['ɟ', 'G'], ['ʋ', 'V'], ['ɱ', 'M'], ['ɳ', 'N'],
  ['ɖ', 'D'], ['ʈ', 'T'], ['ɽ', 'R'], ['ɻ', 'R'], ['ɰ', 'W'], ['ɥ', 'Y'],
];

/** The fr-fr model's phones (its own phoneset.json mislabels uu and oo: these follow its dictionary). */
const FRENCH: [string, string][] = [
  ['ɑ̃', 'an'], ['ɛ̃', 'in'], ['ɔ̃', 'on'], ['œ̃', 'un'],
  ['a', 'aa'], ['ɑ', 'aa'], ['ɛ', 'ai'], ['e', 'ei'], ['ə', 'ee'], ['ø', 'eu'], ['œ', 'oe'], ['i', 'ii'], ['y', 'uu'],
  ['u', 'ou'], ['o', 'au'], ['ɔ', 'oo'], ['ɲ', 'gn'], ['ʁ', 'rr'], ['r', 'rr'], ['ɹ', 'rr'], ['ɥ', 'uy'], ['j', 'yy'],
  ['w', 'ww'], ['ʃ', 'ch'], ['ʒ', 'jj'], ['b', 'bb'], ['d', 'dd'], ['f', 'ff'], ['ɡ', 'gg'], ['g', 'gg'], ['k', 'kk'],
  ['l', 'll'], ['m', 'mm'], ['n', 'nn'], ['ŋ', 'nn gg'], ['p', 'pp'], ['s', 'ss'], ['t', 'tt'], ['v', 'vv'], ['z', 'zz'],
  ['x', 'rr'], ['h', ''],
  // other languages' sounds, for languages aligned with a borrowed model (long/borrowed.ts): the nearest French phone
  ['tɕ', 'tt ch'], ['dʑ', 'dd jj'], ['β', 'bb'], ['ð', 'dd'], ['θ', 'ss'], ['ɣ', 'gg'], ['ʝ', 'yy'], ['ʎ', 'll yy'],
  ['ɾ', 'rr'], ['ɕ', 'ch'], ['ʑ', 'jj'], ['ʂ', 'ch'], ['ʐ', 'jj'], ['ɭ', 'll'], ['ɨ', 'ii'], ['ɪ', 'ii'], ['ʊ', 'ou'],
  ['ʌ', 'ee'], ['ɐ', 'aa'], ['æ', 'ai'], ['ɒ', 'oo'], ['ɜ', 'eu'], ['ɵ', 'eu'], ['ʏ', 'uu'], ['ɯ', 'ou'], ['ɤ', 'ee'],
  ['χ', 'rr'], ['ħ', 'rr'], ['ç', 'ch'], ['q', 'kk'], ['c', 'kk'], ['ɟ', 'gg'], ['ʋ', 'vv'], ['ɱ', 'mm'], ['ɳ', 'nn'],
  ['ɖ', 'dd'], ['ʈ', 'tt'], ['ɰ', 'ww'],
];

export type PhoneSet = 'arpabet' | 'fr-fr';

const TABLES: Record<PhoneSet, [string, string][]> = { arpabet: ARPABET, 'fr-fr': FRENCH };

/**
 * IPA as eSpeak writes it for `language` → the model's phones, space-separated. Stress and length
 * marks, tie bars and diacritics are dropped (nasalisation only where the phone set has
 * nasal vowels); a symbol with no counterpart is skipped.
 */
export function ipaToPhones(ipa: string, set: PhoneSet, language = 'en'): string[] {
  const table = TABLES[set];
  const keepNasal = set === 'fr-fr';
  const s = ipa
    .normalize('NFD')
    // ɾ is English's flapped t in eSpeak's IPA (water), a tapped r in other languages (pero)
    .replace(/ɾ/g, /^en(-|_|$)/i.test(language) ? 'ɾ' : 'r')
    .replace(/[ˈˌ‿_\-'’.|]/g, '')
    .replace(/[\u0300-\u036f]/g, (c) => (keepNasal && c === '\u0303' ? c : ''))
    .replace(/\s+/g, ' ');
  const out: string[] = [];
  for (let i = 0; i < s.length; ) {
    if (s[i] === ' ' || s[i] === 'ː') {
      i++;
      continue;
    }
    const hit = table.find(([k]) => s.startsWith(k, i));
    if (!hit) {
      i++;
      continue;
    }
    if (hit[1]) out.push(...hit[1].split(' '));
    i += hit[0].length;
  }
  return out;
}
