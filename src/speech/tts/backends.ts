// TTS backends by name. Each module is imported only when its backend is asked for,
// so a GPU server running piper never loads what espeak needs and vice versa.
import type { TtsBackend, TtsBackendOptions } from '../types.ts';

export type { TtsBackendOptions } from '../types.ts';


type Factory = (opts: TtsBackendOptions) => Promise<TtsBackend>;

const factories: Record<string, Factory> = {
  espeak: async (opts) => (await import('./espeak.ts')).createEspeakBackend(opts),
  piper: async (opts) => (await import('./piper.ts')).createPiperBackend(opts),
};

export const TTS_BACKENDS = Object.keys(factories);

export async function createTtsBackend(name: string, opts: TtsBackendOptions): Promise<TtsBackend> {
  const factory = factories[name];
  if (!factory) throw new Error(`unknown TTS backend "${name}" (known: ${TTS_BACKENDS.join(', ')})`);
  return factory(opts);
}
