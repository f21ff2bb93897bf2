// Test-only voice-cloning backend for the GPU server ("clone-test"): no cloning model can
// be installed here, so this one "clones" by answering with the reference clip itself
// (decoded from the bytes it was sent), and records every request it received — text,
// language, ref_text and the sha256 of ref_audio — in <modelsDir>/clone-received.jsonl,
// so a test can assert on what reached the server through the real multipart path.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { decodeWav } from '../../src/media/wav.ts';
import type { TtsBackendOptions } from '../../src/speech/tts/backends.ts';
import { SpeechInputError, type SynthesisOutput, type SynthesisRequest, type TtsBackend } from '../../src/speech/types.ts';

export const RECEIVED_FILE = 'clone-received.jsonl';

export interface ReceivedRequest {
  text: string;
  language: string;
  refText: string | null;
  refAudioSha256: string | null;
  refAudioBytes: number;
}

export function readReceived(modelsDir: string): ReceivedRequest[] {
  const f = path.join(modelsDir, RECEIVED_FILE);
  if (!fs.existsSync(f)) return [];
  return fs.readFileSync(f, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as ReceivedRequest);
}

export async function createBackend(opts: TtsBackendOptions): Promise<TtsBackend> {
  return {
    name: 'clone-test',
    outputFormat: 'wav',
    maxChunkBytes: 2000,
    canClone: true,
    batched: false,
    languages: async () => [{ code: 'en-US', name: 'English (US)' }],
    async synthesize(batch: SynthesisRequest[]): Promise<SynthesisOutput[]> {
      return batch.map((r) => {
        const rec: ReceivedRequest = {
          text: r.text,
          language: r.language,
          refText: r.refText ?? null,
          refAudioSha256: r.refAudio ? createHash('sha256').update(r.refAudio).digest('hex') : null,
          refAudioBytes: r.refAudio?.length ?? 0,
        };
        fs.appendFileSync(path.join(opts.modelsDir, RECEIVED_FILE), `${JSON.stringify(rec)}\n`);
        if (!r.refAudio) throw new SpeechInputError('clone-test needs ref_audio');
        return decodeWav(r.refAudio);
      });
    },
    async close() {},
  };
}
