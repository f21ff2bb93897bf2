// Transcription engines by name. Modules load only when their engine is asked for.
import type { Transcriber } from '../types.ts';

export interface TranscriberOptions {
  modelsDir: string;
  device: 'cpu' | 'cuda';
}

type Factory = (opts: TranscriberOptions) => Promise<Transcriber>;

const factories: Record<string, Factory> = {
  pocketsphinx: async () => (await import('./pocketsphinx.ts')).createPocketsphinxTranscriber(),
  whisper: async (opts) => (await import('./whisper.ts')).createWhisperTranscriber(opts),
};

export const TRANSCRIBERS = Object.keys(factories);

export async function createTranscriber(name: string, opts: TranscriberOptions): Promise<Transcriber> {
  const factory = factories[name];
  if (!factory) throw new Error(`unknown transcription engine "${name}" (known: ${TRANSCRIBERS.join(', ')})`);
  return factory(opts);
}
