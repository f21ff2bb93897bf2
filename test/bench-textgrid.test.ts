// The benches read outside labels from Praat TextGrids (bench/emu-ae.ts): the reader must give
// the same words and times as the labels this repository copied from a TextGrid by hand.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { textGridTier } from '../bench/emu-ae.ts';
import { loadHandReferences } from './fixtures/alignment/hand/references.ts';

const hand = path.join(import.meta.dirname, 'fixtures', 'alignment', 'hand');

describe('the benches\' TextGrid reader', () => {
  it("reads PolyglotDB's word tier as the hand-label file has it (59 words, every time)", () => {
    const words = textGridTier(readFileSync(path.join(hand, 'polyglotdb-acoustic-corpus.TextGrid'), 'utf8'), 'word').filter((iv) => iv.label !== 'sil' && iv.label !== '');
    const ref = loadHandReferences('noisy').find((r) => r.audio === 'polyglotdb-acoustic-corpus.wav')!;
    // one label holds a line break before its word ("\ncares"), which the hand-label file trimmed
    expect(words.map((w) => w.label.trim())).toEqual(ref.words.map((w) => w.word));
    words.forEach((w, i) => {
      expect(w.start).toBeCloseTo(ref.words[i]!.start, 4);
      expect(w.end).toBeCloseTo(ref.words[i]!.end, 4);
    });
  });

  it('reads exponents and doubled quotes, and names a tier it lacks', () => {
    const grid = ['item []:', '    item [1]:', '        class = "IntervalTier"', '        name = "Text"', '        intervals [1]:', '            xmin = 0', '            xmax = 5e-2', '            text = ""', '        intervals [2]:', '            xmin = 5e-2', '            xmax = 0.31', '            text = "say ""hi"""'].join('\n');
    expect(textGridTier(grid, 'Text')).toEqual([
      { start: 0, end: 0.05, label: '' },
      { start: 0.05, end: 0.31, label: 'say "hi"' },
    ]);
    expect(() => textGridTier(grid, 'Phonetic')).toThrow(/no tier "Phonetic"/);
  });
});
