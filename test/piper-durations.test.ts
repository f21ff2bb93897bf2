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
