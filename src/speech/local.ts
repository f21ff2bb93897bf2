// The speech services a pipeline uses. Locally this is a TTS backend from the registry;
// with LECTERN_GPU_SERVER_URL set, the same interface is served by the GPU client.
import type { SynthesisOutput, SynthesisRequest, TtsBackend } from './types.ts';
import { createTtsBackend, type TtsBackendOptions } from './tts/registry.ts';

export interface Speech {
  /** Engine name, part of every cache key (a different engine makes different audio). */
  readonly engine: string;
  maxChunkBytes(): Promise<number>;
  /** Chunks worth keeping in flight at once (a GPU server batches them); absent → the pipeline's default. */
  readonly concurrency?: number;
  synthesize(req: SynthesisRequest): Promise<SynthesisOutput>;
  /** Speech → text, where the service has it (GPU servers' /transcribe): a clone reference's missing ref_text. */
  transcribe?(audio: Buffer, language: string): Promise<string>;
  close(): Promise<void>;
}

/** A local backend; requests arriving together are handed to it as one batch. */
export async function createLocalSpeech(backendName: string, opts: TtsBackendOptions): Promise<Speech> {
  const backend: TtsBackend = await createTtsBackend(backendName, opts);
  return {
    engine: backend.name,
    maxChunkBytes: async () => backend.maxChunkBytes,
    async synthesize(req) {
      const [out] = await backend.synthesize([req]);
      if (!out) throw new Error(`${backend.name} returned no audio`);
      return out;
    },
    close: () => backend.close(),
  };
}
