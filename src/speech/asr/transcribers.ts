// Transcription engines by name. Modules load only when their engine is asked for.
import fs from 'node:fs';
import path from 'node:path';
import { SpeechInputError, type Transcriber, type TranscriberOptions } from '../types.ts';

export type { TranscriberOptions } from '../types.ts';


type Factory = (opts: TranscriberOptions) => Promise<Transcriber>;

const factories: Record<string, Factory> = {
  pocketsphinx: async () => (await import('./pocketsphinx.ts')).createPocketsphinxTranscriber(),
  whisper: async (opts) => (await import('./whisper.ts')).createWhisperTranscriber(opts),
};

export const TRANSCRIBERS = Object.keys(factories);

/** The engine `name` means here: `auto` is a Whisper model when one is installed (better, every language it knows), else PocketSphinx. */
export function transcriberName(name: string, opts: TranscriberOptions): string {
  return name === 'auto' ? resolveAuto(opts) : name;
}

function resolveAuto(opts: TranscriberOptions): string {
  const dir = path.join(opts.modelsDir, 'asr');
  const whisper = fs.existsSync(dir) && fs.readdirSync(dir).some((d) => d.startsWith('whisper-') && fs.existsSync(path.join(dir, d, 'encoder.onnx')));
  return whisper ? 'whisper' : 'pocketsphinx';
}

export async function createTranscriber(name: string, opts: TranscriberOptions): Promise<Transcriber> {
  name = transcriberName(name, opts);
  const factory = factories[name];
  if (!factory) throw new SpeechInputError(`unknown transcription engine "${name}" (known: ${TRANSCRIBERS.join(', ')})`);
  return factory(opts);
}
