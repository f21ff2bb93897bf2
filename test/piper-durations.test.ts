// Piper's own phoneme durations (src/speech/tts/piper/durations.ts) on the real voice: the
// graph edit exposes the Ceil tensor, its frames add up to the audio exactly, and the word
// spans follow the phoneme string's words.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import { phonemize } from '../src/speech/tts/espeak.ts';
import { findDurationsTensor, spanIds, withDurationsOutput, wordSpans } from '../src/speech/tts/piper/durations.ts';
import { phonemesToIds } from '../src/speech/tts/piper/ids.ts';
import { readVoiceConfig } from '../src/speech/tts/piper/voices.ts';

const VOICE = path.resolve('models/voices/piper/en_US-joe-medium.onnx');

describe('Piper phoneme durations (en_US-joe-medium)', () => {
  it('adds the durations tensor as an output; frames × hop equal the audio length; word spans in order', async () => {
    const bytes = readFileSync(VOICE);
    expect(findDurationsTensor(bytes)).toBe('/Ceil_output_0');
    const { model, output } = withDurationsOutput(bytes);
    // a second edit is a no-op
    expect(withDurationsOutput(model).model.length).toBe(model.length);
    const session = await ort.InferenceSession.create(model);
    expect(session.outputNames).toEqual(['output', output]);

    const cfg = readVoiceConfig(`${VOICE}.json`);
    const [ipa] = await phonemize('The Martians had come, said my brother.', 'en-us');
    const ids = phonemesToIds(ipa!, cfg);
    const r = await session.run({
      input: new ort.Tensor('int64', BigInt64Array.from(ids.map(BigInt)), [1, ids.length]),
      input_lengths: new ort.Tensor('int64', BigInt64Array.from([BigInt(ids.length)]), [1]),
      scales: new ort.Tensor('float32', new Float32Array([0.667, 1, 0.8]), [3]),
    });
    const durations = r[output]!.data as Float32Array;
    expect(durations.length).toBe(ids.length);
    const frames = durations.reduce((a, b) => a + b, 0);
    expect(frames * 256).toBe((r.output!.data as Float32Array).length);

    const spans = wordSpans(ids, durations, { hop: 256, sampleRate: cfg.audio.sample_rate, ...spanIds(cfg.phoneme_id_map) });
    expect(spans).toHaveLength(ipa!.split(/[\s,.]+/).filter(Boolean).length);
    let prev = 0;
    for (const s of spans) {
      expect(s.start).toBeGreaterThanOrEqual(prev);
      expect(s.end).toBeGreaterThan(s.start);
      prev = s.end;
    }
    expect(prev).toBeLessThanOrEqual((frames * 256) / cfg.audio.sample_rate);
    // the comma is a pause: the gap after "come," is longer than any gap between words inside a clause
    const gaps = spans.slice(1).map((s, i) => s.start - spans[i]!.end);
    expect(gaps[3]).toBe(Math.max(...gaps));
  }, 120_000);
});

describe('Piper word timings in synthesize() (en_US-joe-medium, real model)', () => {
  it('gives one word per source token, in order, inside the audio, and agrees with the hmm aligner', async () => {
    const { createPiperBackend } = await import('../src/speech/tts/piper.ts');
    const { createAligner } = await import('../src/speech/align/aligners.ts');
    const { tokenizeWords } = await import('../src/speech/words.ts');
    const tts = await createPiperBackend({ modelsDir: path.resolve('models'), device: 'cpu' });
    // Two sentences (joined with Piper's sentence silence) and eSpeak's merged "of the" / "in the".
    const text = 'No one would have believed in the last years of the nineteenth century that this world was being watched. Yet across the gulf of space, minds regarded this earth with envious eyes.';
    const [out] = await tts.synthesize([{ text, language: 'en-US' }]);
    const seconds = out!.samples.length / out!.sampleRate;
    const words = out!.words!;
    expect(words.map((w) => w.word)).toEqual(tokenizeWords(text).map((t) => t.word));
    let prev = 0;
    for (const w of words) {
      expect(w.start).toBeGreaterThanOrEqual(prev - 1e-9);
      expect(w.end).toBeGreaterThan(w.start);
      expect(w.end).toBeLessThanOrEqual(seconds + 1e-9);
      prev = w.end;
    }
    // The second sentence starts after the first one's pause.
    const yet = words.findIndex((w) => w.word === 'Yet');
    expect(words[yet]!.start - words[yet - 1]!.end).toBeGreaterThan(0.15);

    const hmm = await createAligner('hmm', { modelsDir: 'models', device: 'cpu' });
    try {
      const ref = await hmm.align(out!.samples, out!.sampleRate, text, 'en-US');
      const diffs = ref.map((r, i) => Math.abs(r.start - words[i]!.start)).sort((a, b) => a - b);
      const median = diffs[diffs.length >> 1]!;
      console.log(`Piper durations vs hmm aligner: median |start difference| ${(median * 1000).toFixed(0)} ms over ${diffs.length} words`);
      // A mapping one word off would be a word's length (~300 ms) away; measured ~40 ms.
      expect(median).toBeLessThan(0.1);
    } finally {
      await hmm.close();
    }
  }, 180_000);

  it('maps merged, split and silent phoneme words to the tokens', async () => {
    const { mapWordsToTokens } = await import('../src/speech/tts/piper/word-map.ts');
    const span = (start: number, end: number, n: number) => ({ word: 0, start, end, phonemeStarts: Array.from({ length: n }, (_, k) => start + ((end - start) * k) / n) });
    // "out of the — pit": ʌvðə is one word for two tokens, the dash is silent
    const words = mapWordsToTokens(['out', 'of', 'the', '—', 'pit'], [span(0, 0.3, 3), span(0.3, 0.5, 4), span(0.7, 1, 3)]);
    expect(words!.map((w) => w.word)).toEqual(['out', 'of', 'the', '—', 'pit']);
    expect(words![1]!.start).toBe(0.3);
    expect(words![2]!.end).toBe(0.5);
    expect(words![1]!.end).toBeGreaterThan(0.3);
    expect(words![1]!.end).toBeLessThan(0.5);
    expect(words![3]!.end - words![3]!.start).toBe(0);
    expect(words![4]).toEqual({ word: 'pit', start: 0.7, end: 1 });
    // nothing that matches: no words (the caller aligns)
    expect(mapWordsToTokens(['extraordinarily', 'long', 'sentence'], [span(0, 1, 1)])).toBeNull();
  });
});
