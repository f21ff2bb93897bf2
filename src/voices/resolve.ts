// A job's voice_id → the voice string its speech engine takes. voice_id may name a
// bundled voice (voices/manifest.json) or be an engine voice id as it is (en-us,
// en_US-joe-medium#0); only the first needs mapping.
import { espeakVoiceFile, espeakVoiceForLanguage, type LocalEngine } from './engines.ts';
import { LecternError } from '../core/errors.ts';
import type { LocalVoiceResolver, Speech } from '../speech/local.ts';
import { listPiperVoices, parseVoiceId, piperVoiceForLanguage } from '../speech/tts/piper/voices.ts';
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

/** An engine and the voice it takes, as local speech runs it. */
export interface LocalVoice {
  engine: LocalEngine;
  voice: string;
}

/**
 * The default voice of a language on this install: the Piper voice installed for it (same
 * language, the exact region first), else eSpeak NG's voice for it.
 */
export async function defaultLocalVoice(language: string, modelsDir: string): Promise<LocalVoice> {
  const piper = piperVoiceForLanguage(modelsDir, language);
  return piper ? { engine: 'piper', voice: piper } : { engine: 'espeak', voice: await espeakVoiceForLanguage(language) };
}

/**
 * The engine and voice local speech (LECTERN_TTS_BACKEND=auto) narrates `voiceId` with: no
 * voice → the language's default; a bundled voice → its engine and voice; an installed
 * Piper model id (`en_US-joe-medium`, `…#speaker`) → piper; any other id → an eSpeak voice.
 */
export async function localVoice(voiceId: string | null, language: string, modelsDir: string, manifest: VoiceManifest = (shared ??= new VoiceManifest())): Promise<LocalVoice> {
  if (!voiceId) return defaultLocalVoice(language, modelsDir);
  const v = await manifest.get(voiceId);
  if (v) {
    const b = v.backing;
    if (b.engine === 'clone') throw new VoiceResolutionError(`voice ${v.id} clones a reference clip, which needs a voice-cloning backend on a GPU server (LECTERN_GPU_SERVER_URL); local speech cannot clone`);
    if (b.engine === 'piper') return { engine: 'piper', voice: b.speaker !== undefined ? `${b.model}#${b.speaker}` : b.model };
    const file = await espeakVoiceFile(b.voice);
    if (!file) throw new VoiceResolutionError(`voice ${v.id}: eSpeak NG has no voice "${b.voice}"`);
    return { engine: 'espeak', voice: file };
  }
  const model = parseVoiceId(voiceId).id;
  if (listPiperVoices(modelsDir).some((p) => p.id === model)) return { engine: 'piper', voice: voiceId };
  return { engine: 'espeak', voice: voiceId };
}

/** localVoice for the models in `modelsDir`, as createLocalSpeech('auto') takes it. */
export function localVoiceResolver(modelsDir: string): LocalVoiceResolver {
  return (voiceId, language) => localVoice(voiceId, language, modelsDir);
}

/**
 * The speech and engine voice one job narrates with. Local speech that picks its engine per
 * voice (`auto`) binds one; any other speech keeps its engine, and a bundled voice id is
 * mapped to that engine's voice (engineVoice).
 */
export async function speechForVoice(speech: Speech, voiceId: string | null, language: string): Promise<{ speech: Speech; voiceId: string | null }> {
  if (speech.forVoice) return speech.forVoice(voiceId, language);
  return { speech, voiceId: await engineVoice(voiceId, speech.engine) };
}
