// UltraTrace's test recording (SwatPhonLab/UltraTrace, a tool for ultrasound tongue tracing, from
// Swarthmore's phonetics lab): one American English speaker ("p00") reading "The North Wind and the
// Sun", 28.2 s at 48 kHz, with a word tier placed by hand (times at 5 decimals off any frame grid,
// one interval "hard as" for two words, a trailing space in one label, and the reader's repeated
// "of the" labelled as said). Not in this repository: the files lived in UltraTrace's history only
// (added in a6461427, deleted eight days later), before the repository had a licence, so the
// benches read them from where a user put them, named with `--ultratrace DIR`:
//   fetch github:SwatPhonLab/UltraTrace, then
//   git -C <mirror> archive a6461427ac876d62aad11d95786c07fca17f4780 test/p00/20150629171639.wav test/p00/20150629171639.TextGrid | tar -x -C /tmp/ut
//   and pass --ultratrace /tmp/ut/test/p00
// Added in round 45 and scored as found: never used to choose anything (untouched).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { decodeWav } from '../src/media/wav.ts';
import { textGridTier, type EmuAeClip } from './emu-ae.ts';

const NAME = '20150629171639';

/** Every word of the recording's "word" tier; the edge inside an interval that holds two words is not scored. */
export function loadUltraTrace(dir: string): EmuAeClip[] {
  const file = path.join(dir, `${NAME}.wav`);
  const grid = readFileSync(path.join(dir, `${NAME}.TextGrid`), 'utf8');
  const words: EmuAeClip['words'] = [];
  for (const iv of textGridTier(grid, 'word')) {
    const parts = iv.label.trim().split(/\s+/).filter(Boolean);
    if (!parts.length) continue;
    // an interval of n words: its outer edges are the labeller's, the inner ones unknown (split evenly, unscored)
    const step = (iv.end - iv.start) / parts.length;
    parts.forEach((word, j) =>
      words.push({ word, start: iv.start + j * step, end: iv.start + (j + 1) * step, sure: [j === 0, j === parts.length - 1] }),
    );
  }
  if (!words.length) throw new Error(`--ultratrace ${dir}: no words in ${NAME}.TextGrid's "word" tier`);
  const buf = readFileSync(file);
  const { samples, sampleRate } = decodeWav(buf);
  return [{ audio: path.basename(file), file, text: words.map((w) => w.word).join(' '), part: 'untouched', words, samples, sampleRate }];
}

/** `--ultratrace DIR` from the command line, or null. */
export const ultraTraceArg = (argv: string[] = process.argv): string | null => (argv.includes('--ultratrace') ? argv[argv.indexOf('--ultratrace') + 1]! : null);
