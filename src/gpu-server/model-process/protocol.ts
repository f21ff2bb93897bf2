// The speech model process protocol, version 1 (examples/tts-process/PROTOCOL.md): JSON
// lines over the process's stdin/stdout. This module holds the message shapes and checks
// what the process sends, so a wrong message becomes one clear sentence.
import type { Language, WordTiming } from '../../speech/types.ts';

export const PROTOCOL_VERSION = 1;

/** What the process declared in its hello. */
export interface ProcessHello {
  protocol: number;
  name: string;
  /** Empty: any language. */
  languages: Language[];
  voiceCloning: boolean;
  maxChunkBytes: number;
  sampleRate: number;
  wordTimings: boolean;
  maxBatch: number;
  referenceSampleRate: number;
}

/** Server → process. */
export interface InitMessage {
  type: 'init';
  protocol: number;
  slot: number;
  slots: number;
  device: 'cpu' | 'cuda';
  scratch_dir: string;
}

export interface WireRequest {
  id: string;
  text: string;
  language: string;
  voice: string | null;
  ref_audio: string | null;
  ref_text: string | null;
  output: string;
}

export interface SynthesizeMessage {
  type: 'synthesize';
  batch: string;
  requests: WireRequest[];
}

export type ServerMessage = InitMessage | SynthesizeMessage | { type: 'cancel'; ids: string[] } | { type: 'shutdown' };

/** Process → server, after parsing. */
export type ProcessMessage =
  | { type: 'hello'; hello: ProcessHello }
  | { type: 'result'; id: string; audioPath: string | null; audioBase64: string | null; words: unknown }
  | { type: 'error'; id: string | null; message: string; input: boolean };

export class ProtocolError extends Error {
  override name = 'ProtocolError';
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const positiveInt = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v > 0;

function languagesOf(v: unknown): Language[] {
  if (!Array.isArray(v)) throw new ProtocolError('hello.languages must be an array of BCP-47 codes or {code, name} objects');
  return v.map((l) => {
    if (typeof l === 'string' && l.trim()) return { code: l, name: l };
    if (isObject(l) && typeof l.code === 'string' && l.code.trim()) return { code: l.code, name: typeof l.name === 'string' ? l.name : l.code };
    throw new ProtocolError(`hello.languages has an entry that is neither a code nor {code, name}: ${JSON.stringify(l)}`);
  });
}

export function parseHello(m: Record<string, unknown>): ProcessHello {
  if (m.protocol !== PROTOCOL_VERSION) {
    throw new ProtocolError(`the process speaks protocol ${JSON.stringify(m.protocol)}; this server speaks ${PROTOCOL_VERSION}`);
  }
  if (typeof m.name !== 'string' || !/^[\w.-]{1,64}$/.test(m.name)) throw new ProtocolError('hello.name must be 1-64 letters, digits, dots, dashes or underscores');
  if (!positiveInt(m.max_chunk_bytes)) throw new ProtocolError('hello.max_chunk_bytes must be a positive integer');
  if (!positiveInt(m.sample_rate)) throw new ProtocolError('hello.sample_rate must be a positive integer');
  for (const k of ['voice_cloning', 'word_timings'] as const) {
    if (m[k] !== undefined && typeof m[k] !== 'boolean') throw new ProtocolError(`hello.${k} must be true or false`);
  }
  for (const k of ['max_batch', 'reference_sample_rate'] as const) {
    if (m[k] !== undefined && !positiveInt(m[k])) throw new ProtocolError(`hello.${k} must be a positive integer`);
  }
  return {
    protocol: PROTOCOL_VERSION,
    name: m.name,
    languages: languagesOf(m.languages),
    voiceCloning: m.voice_cloning === true,
    maxChunkBytes: m.max_chunk_bytes,
    sampleRate: m.sample_rate,
    wordTimings: m.word_timings === true,
    maxBatch: (m.max_batch as number | undefined) ?? 1,
    referenceSampleRate: (m.reference_sample_rate as number | undefined) ?? 24000,
  };
}

/**
 * One stdout line → a message. Returns null for a line that is not a JSON object (a library
 * that printed to stdout): the caller logs it and goes on. A JSON object that breaks the
 * protocol throws ProtocolError.
 */
export function parseProcessLine(line: string): ProcessMessage | null {
  let m: unknown;
  try {
    m = JSON.parse(line);
  } catch {
    return null;
  }
  if (!isObject(m)) return null;
  switch (m.type) {
    case 'hello':
      return { type: 'hello', hello: parseHello(m) };
    case 'result': {
      if (typeof m.id !== 'string') throw new ProtocolError('a result message needs a string "id"');
      const audioPath = typeof m.audio === 'string' ? m.audio : null;
      const audioBase64 = typeof m.audio_base64 === 'string' ? m.audio_base64 : null;
      if (!audioPath && !audioBase64) throw new ProtocolError(`result ${m.id} has neither "audio" (a file path) nor "audio_base64"`);
      return { type: 'result', id: m.id, audioPath, audioBase64, words: m.words };
    }
    case 'error':
      return {
        type: 'error',
        id: typeof m.id === 'string' ? m.id : null,
        message: typeof m.message === 'string' && m.message.trim() ? m.message.trim() : 'no message',
        input: m.input === true,
      };
    default:
      throw new ProtocolError(`unknown message type ${JSON.stringify(m.type)}`);
  }
}

/**
 * The process's word timings when they are usable: one {word, start, end} per word of the
 * text (`wordCount`), times in seconds, in order. Anything else → null (the aligner times them).
 */
export function usableWords(words: unknown, wordCount: number): WordTiming[] | null {
  if (!Array.isArray(words) || words.length !== wordCount) return null;
  const out: WordTiming[] = [];
  let last = 0;
  for (const w of words) {
    if (!isObject(w) || typeof w.word !== 'string') return null;
    const { start, end } = w;
    if (typeof start !== 'number' || typeof end !== 'number' || !Number.isFinite(start) || !Number.isFinite(end)) return null;
    if (start < 0 || end < start || start + 1e-6 < last) return null;
    last = start;
    out.push({ word: w.word, start, end });
  }
  return out;
}

/** Capabilities that must match across the processes of one server (the hello of a restarted one too). */
export function sameCapabilities(a: ProcessHello, b: ProcessHello): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
