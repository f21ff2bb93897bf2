// A job's voice_id → the voice string its speech engine takes. voice_id may name a
// bundled voice (voices/manifest.json) or be an engine voice id as it is (en-us,
// en_US-joe-medium#0); only the first needs mapping.
import { espeakVoiceFile } from './engines.ts';
import { LecternError } from '../core/errors.ts';
import { VoiceManifest } from './manifest.ts';

let shared: VoiceManifest | null = null;

export class VoiceResolutionError extends LecternError {
  override name = 'VoiceResolutionError';
  constructor(message: string) {
    super('VOICE_UNAVAILABLE', message);
  }
}

/**
 * A bundled clone voice (a reference clip with its exact transcript): the clip to clone,
 * for jobs narrated through a GPU server with a cloning backend. null for any other id.
 */
export async function cloneReference(voiceId: string | null, manifest: VoiceManifest = (shared ??= new VoiceManifest())): Promise<{ clipPath: string; refText: string } | null> {
  if (!voiceId) return null;
  const v = await manifest.get(voiceId);
  if (!v || v.backing.engine !== 'clone') return null;
  return { clipPath: manifest.clipPath(v.backing), refText: v.ref_text };
}

/**
 * The engine voice for `voiceId` under `engine` (Speech.engine: `espeak`, `piper`, or a
 * remote engine whose name ends in `:espeak`/`:piper`). Unknown ids pass through as engine
 * voice ids. A bundled voice of another engine, or a clone voice, is an error that says why.
 */
export async function engineVoice(voiceId: string | null, engine: string, manifest: VoiceManifest = (shared ??= new VoiceManifest())): Promise<string | null> {
  if (!voiceId) return null;
  const v = await manifest.get(voiceId);
  if (!v) return voiceId;
  const b = v.backing;
  const sameEngine = engine === b.engine || engine.endsWith(`:${b.engine}`);
  if (b.engine === 'clone') {
    throw new VoiceResolutionError(`voice ${v.id} clones a reference clip, which needs a voice-cloning backend; this worker narrates with ${engine}`);
  }
  if (!sameEngine) {
    throw new VoiceResolutionError(`voice ${v.id} is a ${b.engine} voice, but this worker narrates with ${engine} (LECTERN_TTS_BACKEND); pick a ${engine} voice`);
  }
  if (b.engine === 'espeak') {
    const file = await espeakVoiceFile(b.voice);
    if (!file) throw new VoiceResolutionError(`voice ${v.id}: eSpeak NG has no voice "${b.voice}"`);
    return file;
  }
  return b.speaker !== undefined ? `${b.model}#${b.speaker}` : b.model;
}
