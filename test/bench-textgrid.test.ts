// The benches read outside labels from Praat TextGrids (bench/emu-ae.ts): the reader must give
// the same words and times as the labels this repository copied from a TextGrid by hand.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { textGridTier } from '../bench/emu-ae.ts';
import { loadUltraTrace } from '../bench/ultratrace.ts';
import { encodeWav } from '../src/media/wav.ts';
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

  it("reads the short text format: ProMo's word tiers as the hand-label file has them", () => {
    for (const ref of loadHandReferences('untouched').filter((r) => r.audio.startsWith('promo-'))) {
      const grid = readFileSync(path.join(hand, ref.audio.replace(/\.wav$/, '.TextGrid')), 'utf8');
      const words = textGridTier(grid, 'words').filter((iv) => iv.label.trim());
      expect(words.map((w) => w.label)).toEqual(ref.words.map((w) => w.word));
      words.forEach((w, i) => {
        expect(w.start).toBe(ref.words[i]!.start);
        expect(w.end).toBe(ref.words[i]!.end);
      });
      // the other tier is read, not taken for this one
      expect(textGridTier(grid, 'utterances').filter((iv) => iv.label)).toHaveLength(1);
      expect(() => textGridTier(grid, 'phones')).toThrow(/no tier "phones"/);
    }
  });

  it('scores the outer edges of an interval the UltraTrace labeller gave two words, not the edge inside it', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'lectern-ultratrace-'));
    try {
      const iv = (i: number, a: number, b: number, text: string) => [`            intervals [${i}]:`, `                xmin = ${a}`, `                xmax = ${b}`, `                text = "${text}"`];
      const grid = ['item []:', '    item [1]:', '        class = "IntervalTier"', '        name = "word"', ...iv(1, 0, 0.4, ''), ...iv(2, 0.4, 0.7, 'blew'), ...iv(3, 0.7, 1.1, 'hard as'), ...iv(4, 1.1, 1.3, 'the '), ...iv(5, 1.3, 2, '')].join('\n');
      writeFileSync(path.join(dir, '20150629171639.TextGrid'), grid);
      writeFileSync(path.join(dir, '20150629171639.wav'), encodeWav(new Float32Array(32000), 16000));
      const [clip] = loadUltraTrace(dir);
      expect(clip!.text).toBe('blew hard as the');
      expect(clip!.sampleRate).toBe(16000);
      expect(clip!.words.map((w) => [w.word, w.start, w.end, w.sure])).toEqual([
        ['blew', 0.4, 0.7, [true, true]],
        ['hard', 0.7, 0.9, [true, false]],
        ['as', 0.9, 1.1, [false, true]],
        ['the', 1.1, 1.3, [true, true]],
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
