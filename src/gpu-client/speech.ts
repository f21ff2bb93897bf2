// Synchronous speech calls to one GPU server: /align, /synthesize, /transcribe, /health.
// Each is one HTTP operation with its own timeout; the pool (pool.ts) picks the server.
import { sniff } from '../media/sniff.ts';
import type { WordTiming } from '../core/timeline.ts';
import { GpuServerError } from './errors.ts';
import { call, filePart, readJson, requestName } from './http.ts';

export const DEFAULT_REQUEST_TIMEOUT_MS = 120_000;
export const DEFAULT_HEALTH_TIMEOUT_MS = 5_000;

/** What every call needs to reach a server. */
export interface ServerTarget {
  serverUrl: string;
  /** Per-request timeout; default 120 s. */
  timeoutMs?: number;
  /** Sent as `Authorization: Bearer …` when set. */
  token?: string;
}

export interface AlignOptions extends ServerTarget {
  language: string;
  /** Aligner override (the server's default otherwise). */
  provider?: string;
}

export interface SynthesizeOptions extends ServerTarget {
  language: string;
  voice?: string | null;
  /** Reference clip for voice cloning: bytes or a file path. Sent as multipart. */
  refAudio?: Buffer | string | null;
  refText?: string | null;
}

export interface SynthesizedAudio {
  audio: Buffer;
  /** `wav`, `mp3`, `opus`, … */
  format: string;
  contentType: string;
  /** The engine's own word timings, when the server sent them (X-Word-Timings). */
  words?: WordTiming[];
}

export interface HealthRecord {
  status: string;
  backend: string;
  output_format: string;
  max_chunk_bytes: number;
  device: string;
  aligner: string;
  lipsync_provider: string;
  capabilities: string[];
  [extra: string]: unknown;
}

const timeout = (t: ServerTarget) => t.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;

/** An audio input as a multipart part: a path is streamed from disk, bytes are sent as they are. */
async function audioPart(audio: string | Buffer): Promise<{ blob: Blob; name: string }> {
  if (typeof audio === 'string') return filePart(audio);
  const kind = sniff(audio.subarray(0, 64), '');
  return { blob: new Blob([audio], { type: kind?.contentType ?? 'application/octet-stream' }), name: `audio.${kind?.ext ?? 'bin'}` };
}

/** Word timings of `text` against the audio (POST /align); the server's `{words}` as an array. */
export async function align(audioPath: string | Buffer, text: string, opts: AlignOptions): Promise<WordTiming[]> {
  const req = { method: 'POST', path: '/align' } as const;
  const form = new FormData();
  const part = await audioPart(audioPath);
  form.append('audio', part.blob, part.name);
  form.append('text', text);
  form.append('language', opts.language);
  if (opts.provider) form.append('provider', opts.provider);
  return call(opts.serverUrl, { ...req, body: form, timeoutMs: timeout(opts), token: opts.token }, async (res) => {
    const body = (await readJson(opts.serverUrl, requestName(req), res)) as { words?: unknown };
    return parseWords(body?.words, opts.serverUrl, requestName(req), res.status);
  });
}

function parseWords(words: unknown, serverUrl: string, request: string, status: number): WordTiming[] {
  if (!Array.isArray(words)) throw new GpuServerError(serverUrl, request, status, 'response has no "words" array');
  return words.map((w: unknown, i) => {
    const o = w as Partial<WordTiming> | null;
    if (!o || typeof o.word !== 'string' || typeof o.start !== 'number' || typeof o.end !== 'number') {
      throw new GpuServerError(serverUrl, request, status, `word ${i} is not {word, start, end}`);
    }
    return { word: o.word, start: o.start, end: o.end };
  });
}

/**
 * Speech for `text` (POST /synthesize): a JSON body, or multipart when a reference clip
 * is sent for voice cloning. Returns the bytes in the server's output format.
 */
export async function synthesize(text: string, opts: SynthesizeOptions): Promise<SynthesizedAudio> {
  const req = { method: 'POST', path: '/synthesize' } as const;
  let body: FormData | string;
  const headers: Record<string, string> = {};
  if (opts.refAudio) {
    const form = new FormData();
    form.append('text', text);
    form.append('language', opts.language);
    if (opts.voice) form.append('voice', opts.voice);
    const part = await audioPart(opts.refAudio);
    form.append('ref_audio', part.blob, part.name);
    if (opts.refText) form.append('ref_text', opts.refText);
    body = form;
  } else {
    if (opts.refText) throw new TypeError('synthesize: refText was given without refAudio');
    body = JSON.stringify({ text, language: opts.language, ...(opts.voice ? { voice: opts.voice } : {}) });
    headers['content-type'] = 'application/json';
  }
  return call(opts.serverUrl, { ...req, body, headers, timeoutMs: timeout(opts), token: opts.token }, async (res) => {
    const audio = Buffer.from(await res.arrayBuffer());
    if (audio.length === 0) throw new GpuServerError(opts.serverUrl, requestName(req), res.status, 'empty audio body');
    const contentType = res.headers.get('content-type') ?? 'application/octet-stream';
    const header = res.headers.get('x-word-timings');
    let words: WordTiming[] | undefined;
    if (header) {
      try {
        words = parseWords(JSON.parse(Buffer.from(header, 'base64').toString('utf8')), opts.serverUrl, requestName(req), res.status);
      } catch {
        words = undefined; // a malformed header only costs an /align call
      }
    }
    return { audio, format: audioFormat(contentType, audio), contentType, words };
  });
}

const FORMATS: Record<string, string> = {
  'audio/wav': 'wav',
  'audio/wave': 'wav',
  'audio/x-wav': 'wav',
  'audio/vnd.wave': 'wav',
  'audio/mpeg': 'mp3',
  'audio/mp3': 'mp3',
  'audio/ogg': 'opus',
  'audio/opus': 'opus',
  'audio/flac': 'flac',
};

/** The format name from the Content-Type, else from the bytes themselves. */
function audioFormat(contentType: string, audio: Buffer): string {
  const mime = contentType.split(';')[0]!.trim().toLowerCase();
  if (FORMATS[mime]) return FORMATS[mime];
  const s = sniff(audio.subarray(0, 64), '');
  if (s?.kind === 'audio') return s.ext === 'ogg' ? 'opus' : s.ext;
  return mime.split('/')[1] ?? 'bin';
}

/** Text of the speech in `audio` (POST /transcribe). */
export async function transcribe(audio: string | Buffer, language: string | undefined, opts: ServerTarget): Promise<string> {
  const req = { method: 'POST', path: '/transcribe' } as const;
  const form = new FormData();
  const part = await audioPart(audio);
  form.append('audio', part.blob, part.name);
  form.append('language', language ?? 'en-US');
  return call(opts.serverUrl, { ...req, body: form, timeoutMs: timeout(opts), token: opts.token }, async (res) => {
    const body = (await readJson(opts.serverUrl, requestName(req), res)) as { text?: unknown };
    if (typeof body?.text !== 'string') throw new GpuServerError(opts.serverUrl, requestName(req), res.status, 'response has no "text" string');
    return body.text;
  });
}

/** The server's health record (GET /health). Throws unless it answers 2xx with a record. */
export async function health(serverUrl: string, opts: { timeoutMs?: number; token?: string } = {}): Promise<HealthRecord> {
  const req = { method: 'GET', path: '/health' } as const;
  return call(serverUrl, { ...req, timeoutMs: opts.timeoutMs ?? DEFAULT_HEALTH_TIMEOUT_MS, token: opts.token }, async (res) => {
    const body = (await readJson(serverUrl, requestName(req), res)) as HealthRecord | null;
    if (!body || typeof body.status !== 'string') throw new GpuServerError(serverUrl, requestName(req), res.status, 'response has no "status"');
    return body;
  });
}
