import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createPiperBackend, speechEnd } from '../src/speech/tts/piper.ts';
import { phonemesToIds } from '../src/speech/tts/piper/ids.ts';
import { readVoiceConfig } from '../src/speech/tts/piper/voices.ts';
import { createTtsBackend } from '../src/speech/tts/backends.ts';
import { MissingModelError, SpeechInputError } from '../src/speech/types.ts';

const MODELS = path.resolve('models');
const VOICE_JSON = path.join(MODELS, 'voices/piper/en_US-joe-medium.onnx.json');

function rms(x: Float32Array): number {
  let s = 0;
  for (const v of x) s += v * v;
  return Math.sqrt(s / Math.max(1, x.length));
}

const tmp: string[] = [];
afterAll(() => tmp.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));

describe('piper backend (en_US-joe-medium on onnxruntime CPU)', () => {
  it('synthesizes real speech for a sentence', async () => {
    const tts = await createTtsBackend('piper', { modelsDir: MODELS, device: 'cpu' });
    expect(tts.name).toBe('piper');
    expect(tts.batched).toBe(true);
    expect(await tts.languages()).toEqual([{ code: 'en-US', name: 'English (United States)' }]);
    const [out] = await tts.synthesize([{ text: 'He was not an ill disposed young man.', language: 'en-US' }]);
    expect(out!.sampleRate).toBe(22050);
    const seconds = out!.samples.length / out!.sampleRate;
    // Eight words of read speech: about 2 s, never a blip and never a minute.
    expect(seconds).toBeGreaterThan(1.2);
    expect(seconds).toBeLessThan(4);
    expect(rms(out!.samples)).toBeGreaterThan(0.02);
    // Words from the voice's own phoneme durations: one per source token, in order, inside the audio.
    expect(out!.words!.map((w) => w.word)).toEqual('He was not an ill disposed young man.'.split(' '));
    for (const w of out!.words!) expect(w.end).toBeLessThanOrEqual(seconds);
  });

  it('batched output for 4 texts (one session run) matches per-item output', async () => {
    // Zero noise makes durations and audio repeatable, so the comparison is exact.
    const tts = await createPiperBackend({ modelsDir: MODELS, device: 'cpu', scales: { noiseScale: 0, noiseW: 0 } });
    const texts = [
      'Hi.',
      'He might even have been made amiable himself.',
      'Unless to be rather cold hearted and rather selfish is to be ill disposed.',
      'And mister John Dashwood had then leisure to consider how much there might be prudently in his power to do for them.',
    ];
    const batched = await tts.synthesize(texts.map((text) => ({ text, language: 'en-US' })));
    expect(batched).toHaveLength(4);
    for (let i = 0; i < texts.length; i++) {
      const [single] = await tts.synthesize([{ text: texts[i]!, language: 'en-US' }]);
      const a = single!.samples;
      const b = batched[i]!.samples;
      // each item is cut at its own frames (durations × 256 samples), so lengths agree exactly
      expect(b.length).toBe(a.length);
      expect(batched[i]!.words).toEqual(single!.words);
      let maxDiff = 0;
      for (let k = 0; k < Math.min(a.length, b.length); k++) maxDiff = Math.max(maxDiff, Math.abs(a[k]! - b[k]!));
      expect(maxDiff).toBeLessThan(1e-3);
    }
    // Longer text, longer audio: the padding was trimmed per item.
    const lens = batched.map((o) => o.samples.length);
    expect([...lens].sort((x, y) => x - y)).toEqual(lens);
  });

  it('maps IPA to ids the way Piper does (BOS, pad after every phoneme, EOS)', () => {
    const cfg = readVoiceConfig(VOICE_JSON);
    const m = cfg.phoneme_id_map;
    expect(phonemesToIds('hə.', cfg)).toEqual([m['^']![0], 0, m.h![0], 0, m['ə']![0], 0, m['.']![0], 0, m.$![0]]);
  });

  it('finds the end of speech in a padded tail and gives 0 for silence', () => {
    expect(speechEnd(new Float32Array(4096))).toBe(0);
    const x = new Float32Array(256 * 60);
    for (let i = 0; i < 256 * 20; i++) x[i] = 0.5 * Math.sin(i / 5);
    for (let i = 256 * 30; i < 256 * 35; i++) x[i] = 0.02 * Math.sin(i / 3); // the decoder's padding burst
    expect(speechEnd(x)).toBe(256 * 22);
  });

  it('names the missing voice file', async () => {
    await expect(createPiperBackend({ modelsDir: MODELS, device: 'cpu', voice: 'de_DE-nobody-low' })).rejects.toThrow(
      /de_DE-nobody-low\.onnx is missing/,
    );
    const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'piper-'));
    tmp.push(empty);
    const err = await createPiperBackend({ modelsDir: empty, device: 'cpu' }).catch((e) => e);
    expect(err).toBeInstanceOf(MissingModelError);
    expect(String(err.message)).toContain(path.join(empty, 'voices', 'piper'));
  });

  it('rejects a language with no voice and a speaker the voice does not have', async () => {
    const tts = await createPiperBackend({ modelsDir: MODELS, device: 'cpu' });
    await expect(tts.synthesize([{ text: 'Bonjour.', language: 'fr-FR' }])).rejects.toThrow(SpeechInputError);
    await expect(tts.synthesize([{ text: 'Bonjour.', language: 'fr-FR' }])).rejects.toThrow(/fr-FR/);
    await expect(tts.synthesize([{ text: 'Hello.', language: 'en-US', voice: 'en_US-joe-medium#3' }])).rejects.toThrow(/one speaker/);
  });

  it('device cuda (no CUDA provider installed here) fails clearly', async () => {
    const tts = await createPiperBackend({ modelsDir: MODELS, device: 'cuda' });
    await expect(tts.synthesize([{ text: 'Hello.', language: 'en-US' }])).rejects.toThrow(/CUDA execution provider is not installed/);
  });
});
