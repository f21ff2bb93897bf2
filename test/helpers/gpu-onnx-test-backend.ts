// Test-only TTS backend for the GPU server tests ("onnx-test"): runs the hand-written tiny
// ONNX model (test/helpers/gpu-tiny-onnx.ts, loaded from <modelsDir>/tiny-square.onnx) with
// the whole batch as one [batch, length] tensor, so batch sizes are observable without Piper.
// It produces a tone per character, not speech. A text starting with "busy:<ms>" keeps the
// worker thread blocked that long, to show the event loop stays free while workers are busy.
import { existsSync } from 'node:fs';
import path from 'node:path';
import ort from 'onnxruntime-node';
import type { TtsBackendOptions } from '../../src/speech/tts/backends.ts';
import { MissingModelError, type SynthesisOutput, type SynthesisRequest, type TtsBackend } from '../../src/speech/types.ts';
import { tokenizeWords } from '../../src/speech/words.ts';

export const TINY_MODEL_FILE = 'tiny-square.onnx';
const RATE = 16000;
const PER_CHAR = 400; // samples

export async function createBackend(opts: TtsBackendOptions): Promise<TtsBackend> {
  const file = path.join(opts.modelsDir, TINY_MODEL_FILE);
  if (!existsSync(file)) throw new MissingModelError(`model file not found: ${file}`);
  const session = await ort.InferenceSession.create(file);
  return {
    name: 'onnx-test',
    outputFormat: 'wav',
    maxChunkBytes: 200,
    canClone: false,
    batched: true,
    async languages() {
      return [
        { code: 'en-US', name: 'English (US)' },
        { code: 'de-DE', name: 'German' },
      ];
    },
    async synthesize(batch: SynthesisRequest[]): Promise<SynthesisOutput[]> {
      const busy = batch.map((r) => /^busy:(\d+)/.exec(r.text)).find(Boolean);
      if (busy) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, Number(busy[1]));
      const len = Math.max(...batch.map((r) => r.text.length));
      const x = new Float32Array(batch.length * len);
      batch.forEach((r, b) => {
        for (let i = 0; i < r.text.length; i++) x[b * len + i] = (r.text.charCodeAt(i) % 64) / 64;
      });
      const out = await session.run({ x: new ort.Tensor('float32', x, [batch.length, len]) });
      const y = out.y!.data as Float32Array;
      return batch.map((r, b) => {
        const samples = new Float32Array(r.text.length * PER_CHAR);
        for (let i = 0; i < r.text.length; i++) {
          const f = 200 + 600 * y[b * len + i]!;
          for (let k = 0; k < PER_CHAR; k++) samples[i * PER_CHAR + k] = 0.2 * Math.sin((2 * Math.PI * f * k) / RATE);
        }
        const words = tokenizeWords(r.text).map((w) => ({ word: w.word, start: (w.start * PER_CHAR) / RATE, end: (w.end * PER_CHAR) / RATE }));
        return { samples, sampleRate: RATE, words };
      });
    },
    async close() {
      await session.release();
    },
  };
}
