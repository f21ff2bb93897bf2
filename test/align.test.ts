import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAligner, type ClosableAligner } from '../src/speech/align/aligners.ts';
import { MissingModelError, SpeechInputError } from '../src/speech/types.ts';
import { tokenizeWords } from '../src/speech/words.ts';
import { decodeWav } from '../src/media/wav.ts';
import { splitMergedWords } from '../src/speech/align/dtw.ts';
import { EspeakProcess, wordTimingsFromEvents } from '../src/speech/tts/espeak.ts';

const fixtures = path.join(import.meta.dirname, 'fixtures');
const refDir = path.join(fixtures, 'alignment');

function loadWav(file: string): { samples: Float32Array; sampleRate: number } {
  const buf = readFileSync(file);
  // the sample rate straight from the RIFF fmt chunk (bytes 24..27 of a canonical header)
  expect(buf.toString('latin1', 12, 16)).toBe('fmt ');
  return { samples: decodeWav(buf).samples, sampleRate: buf.readUInt32LE(24) };
}

interface Reference {
  audio: string;
  text: string;
  words: { word: string; start: number; end: number }[];
}

describe('dtw aligner (eSpeak NG reference + MFCC + banded DTW, real speech)', () => {
  let aligner: ClosableAligner;
  beforeAll(async () => {
    aligner = await createAligner('dtw', { modelsDir: 'models', device: 'cpu' });
  });
  afterAll(async () => aligner?.close());

  it('aligns every word of the real clips close to independent reference boundaries', async () => {
    const refs = readdirSync(refDir).filter((f) => f.endsWith('.json') && f !== 'corrections.json').map((f) => JSON.parse(readFileSync(path.join(refDir, f), 'utf8')) as Reference);
    let n = 0, errStart = 0, errEnd = 0;
    for (const ref of refs) {
      const { samples, sampleRate } = loadWav(path.join(fixtures, ref.audio));
      const words = await aligner.align(samples, sampleRate, ref.text, 'en-US');
      expect(words.map((w) => w.word)).toEqual(tokenizeWords(ref.text).map((t) => t.word));
      let prev = 0;
      for (const w of words) {
        expect(w.start).toBeGreaterThanOrEqual(prev);
        expect(w.end).toBeGreaterThan(w.start);
        expect(w.end).toBeLessThanOrEqual(samples.length / sampleRate + 0.03);
        prev = w.end;
      }
      words.forEach((w, i) => {
        errStart += Math.abs(w.start - ref.words[i]!.start);
        errEnd += Math.abs(w.end - ref.words[i]!.end);
      });
      n += words.length;
    }
    expect(n).toBeGreaterThanOrEqual(40);
    // measured 23.8 ms / 23.8 ms against the refined references (fixtures/alignment/README.md;
    // `node --import tsx test/fixtures/alignment/score.ts` prints them per clip); these bounds
    // leave room for noise but not for a broken path, boundary mapping or pause handling
    expect(errStart / n).toBeLessThan(0.03);
    expect(errEnd / n).toBeLessThan(0.03);
  }, 60_000);

  it('gives each word of a pair eSpeak reads as one entry ("to be") its own share, split at a phoneme', async () => {
    const proc = new EspeakProcess();
    try {
      const text = 'unless to be rather cold';
      const syn = await proc.synth('en-us', text, 175);
      const { words, phonemes } = wordTimingsFromEvents(text, syn);
      const merged = words[1]!.end;
      splitMergedWords(words, phonemes);
      expect(words.map((w) => w.word)).toEqual(['unless', 'to', 'be', 'rather', 'cold']);
      for (let i = 0; i < words.length; i++) {
        expect(words[i]!.end).toBeGreaterThan(words[i]!.start);
        if (i) expect(words[i]!.start).toBeCloseTo(words[i - 1]!.end, 6);
      }
      expect(words[2]!.end).toBeCloseTo(merged, 6);
      expect(phonemes.some((p) => Math.abs(p.start - words[2]!.start) < 1e-6)).toBe(true);
    } finally {
      await proc.close();
    }
  });

  it('gives numbers and glued punctuation a time, and handles resampled input', async () => {
    const { samples } = loadWav(path.join(fixtures, 'speech', 'jfk.wav'));
    // the same clip at 8 kHz, with the text written with a number the recogniser would never produce
    const down = new Float32Array(Math.floor(samples.length / 2));
    for (let i = 0; i < down.length; i++) down[i] = (samples[2 * i]! + samples[2 * i + 1]!) / 2;
    const text = 'And so my fellow Americans, ask not what your country can do for you, ask what you can do for your country.';
    const words = await aligner.align(down, 8000, text, 'en-US');
    expect(words).toHaveLength(22);
    const americans = words[4]!;
    expect(americans.word).toBe('Americans,');
    expect(americans.start).toBeGreaterThan(1.3);
    expect(americans.end).toBeLessThan(2.6);
  }, 30_000);

  it('aligns the same clip the same way every time, whatever it aligned before', async () => {
    // eSpeak NG carries state from one synthesis to the next (its pitch flutter); until round 28
    // the second call here moved jfk's word edges by 5.7 ms on average and up to 60 ms
    const { samples, sampleRate } = loadWav(path.join(fixtures, 'speech', 'jfk.wav'));
    const text = 'And so my fellow Americans, ask not what your country can do for you, ask what you can do for your country.';
    const first = await aligner.align(samples, sampleRate, text, 'en-US');
    await aligner.align(samples.subarray(0, sampleRate * 4), sampleRate, 'And so my fellow Americans,', 'en-US');
    for (let k = 0; k < 2; k++) expect(await aligner.align(samples, sampleRate, text, 'en-US')).toEqual(first);
  }, 30_000);

  it('rejects a language eSpeak lacks, and names providers that are not installed', async () => {
    const { samples, sampleRate } = loadWav(path.join(fixtures, 'speech', 'jfk.wav'));
    await expect(aligner.align(samples, sampleRate, 'hello', 'zz')).rejects.toThrow(SpeechInputError);
    await expect(createAligner('ctc', { modelsDir: 'models', device: 'cpu' })).rejects.toThrow(MissingModelError);
    await expect(createAligner('nope', { modelsDir: 'models', device: 'cpu' })).rejects.toThrow(/unknown aligner "nope"/);
  });
});
