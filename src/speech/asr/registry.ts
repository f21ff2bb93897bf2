// Transcription engines by name. Modules load only when their engine is asked for.
import fs from 'node:fs';
import path from 'node:path';
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

/** `auto`: a Whisper model when one is installed (better, every language it knows), else PocketSphinx. */
function resolveAuto(opts: TranscriberOptions): string {
  const dir = path.join(opts.modelsDir, 'asr');
  const whisper = fs.existsSync(dir) && fs.readdirSync(dir).some((d) => d.startsWith('whisper-') && fs.existsSync(path.join(dir, d, 'encoder.onnx')));
  return whisper ? 'whisper' : 'pocketsphinx';
}

export async function createTranscriber(name: string, opts: TranscriberOptions): Promise<Transcriber> {
  if (name === 'auto') name = resolveAuto(opts);
  const factory = factories[name];
  if (!factory) throw new Error(`unknown transcription engine "${name}" (known: ${TRANSCRIBERS.join(', ')})`);
  return factory(opts);
}
