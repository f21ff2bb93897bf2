// POST /synthesize, /align, /transcribe (spec §C): check the request against the loaded
// backend, then hand it to the runtime (batcher → pool). Multipart is registered here only,
// with every part in memory: these files are short clips.
import multipart from '@fastify/multipart';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { badRequest, invalid, isLecternError, tooLarge, unsupportedType } from '../../core/errors.ts';
import { fileTooLarge } from '../../http/server.ts';
import { decodeAudio } from '../../media/ffmpeg.ts';
import type { SynthesisRequest } from '../../speech/types.ts';
import { utf8Bytes } from '../../speech/words.ts';
import { clientGone } from '../model-process/pool.ts';
import { MODEL_SAMPLE_RATE, type GpuRuntime } from '../runtime.ts';
import { AlignBody, fieldErrorFormatter, SynthesizeBody, TranscribeBody, typeBoxValidator } from '../schemas.ts';
import type { BackendInfo } from '../tasks.ts';

const DEFAULT_LANGUAGE = 'en-US';

/** `lang` is one of `known` (BCP-47), or its primary language is; an empty list means any. */
export function languageMatches(lang: string, known: string[]): boolean {
  if (known.length === 0) return true;
  const l = lang.toLowerCase();
  const primary = l.split(/[-_]/)[0];
  return known.some((k) => {
    const kk = k.toLowerCase().replace(/_/g, '-');
    return kk === l || kk.split('-')[0] === primary;
  });
}

/** Decodes an uploaded clip to mono samples at the models' rate; 415 when ffmpeg cannot. */
export async function decodeUpload(bytes: Buffer, field: string): Promise<Float32Array> {
  if (bytes.length === 0) throw invalid(`missing file "${field}"`);
  try {
    const samples = await decodeAudio(bytes, MODEL_SAMPLE_RATE);
    if (samples.length === 0) throw new Error('no samples');
    return samples;
  } catch (e) {
    if (isLecternError(e) && e.code === 'TOOL_MISSING') throw e;
    throw unsupportedType(`file "${field}" is not audio that ffmpeg can decode`);
  }
}

/** What the backend can do with this request: size, language and cloning are checked here, before any queueing. */
async function synthesisRequest(body: SynthesizeBody, be: BackendInfo, runtime: GpuRuntime): Promise<SynthesisRequest> {
  const { text } = body;
  const language = body.language ?? DEFAULT_LANGUAGE;
  if (!text.trim()) throw invalid('text is empty');
  const bytes = utf8Bytes(text);
  if (bytes > be.maxChunkBytes) throw tooLarge(`text is ${bytes} UTF-8 bytes; backend ${be.name} accepts at most ${be.maxChunkBytes} per request (max_chunk_bytes)`);
  if (!languageMatches(language, be.languages.map((l) => l.code))) throw invalid(`backend ${be.name} does not support language "${language}"`);
  let refAudio = body.ref_audio && body.ref_audio.length > 0 ? body.ref_audio : null;
  let refText = body.ref_text ?? null;
  if (refAudio) {
    if (!be.canClone) throw invalid(`backend ${be.name} cannot clone voices; ref_audio is not supported (send no reference, or use a voice-cloning backend)`);
    if (!runtime.referenceChecked(refAudio)) await decodeUpload(refAudio, 'ref_audio');
  } else {
    refAudio = null;
    if (refText && !be.canClone) refText = null; // a transcript alone changes nothing
  }
  return { text, language, voice: body.voice ?? null, refAudio, refText };
}

async function multipartOnly(req: FastifyRequest): Promise<void> {
  if (!req.isMultipart()) throw badRequest('expected a multipart/form-data body');
}

export async function speechRoutes(app: FastifyInstance, { runtime }: { runtime: GpuRuntime }): Promise<void> {
  const limit = runtime.config.maxUploadBytes;
  await app.register(multipart, {
    attachFieldsToBody: 'keyValues',
    limits: { fileSize: limit, files: 4, fields: 16, fieldSize: 1024 * 1024 },
    onFile: async (part) => void (await part.toBuffer().catch(fileTooLarge(limit))),
  });
  app.removeContentTypeParser('text/plain'); // JSON or multipart only: anything else is 415
  app.setValidatorCompiler(typeBoxValidator);
  app.setSchemaErrorFormatter(fieldErrorFormatter);
  app.addHook('onRequest', runtime.acceptingWork);
  app.addHook('onRequest', async () => void runtime.requireBackend());

  app.post<{ Body: SynthesizeBody }>(
    '/synthesize',
    {
      schema: {
        summary: 'Speech for one chunk of text',
        description: 'JSON, or multipart/form-data with a ref_audio file for voice cloning. Compatible requests (backend, voice, language, reference) are batched into one model call. Audio in the backend\'s output_format; X-Audio-Duration seconds; X-Word-Timings (base64 JSON) when the engine gives timings.',
        consumes: ['application/json', 'multipart/form-data'],
        body: SynthesizeBody,
      },
    },
    async (req, reply) => {
      const item = await synthesisRequest(req.body, runtime.requireBackend(), runtime);
      // A client that goes away takes its request out of the batcher, or cancels it in a model process.
      const gone = new AbortController();
      reply.raw.once('close', () => {
        if (!reply.raw.writableFinished) gone.abort(clientGone());
      });
      const out = await runtime.synthesize({ ...item, requestId: req.id, signal: gone.signal });
      reply.header('Content-Type', out.contentType);
      reply.header('X-Audio-Duration', out.durationSeconds.toFixed(3));
      if (out.words) reply.header('X-Word-Timings', Buffer.from(JSON.stringify(out.words)).toString('base64'));
      return reply.send(Buffer.from(out.audio.buffer, out.audio.byteOffset, out.audio.byteLength));
    },
  );

  app.post<{ Body: TranscribeBody }>(
    '/transcribe',
    { schema: { summary: 'Text of a speech clip', consumes: ['multipart/form-data'], body: TranscribeBody }, preValidation: multipartOnly },
    async (req) => {
      const audio = await decodeUpload(req.body.audio, 'audio');
      return { text: await runtime.transcribe(audio, req.body.language ?? DEFAULT_LANGUAGE) };
    },
  );

  app.post<{ Body: AlignBody }>(
    '/align',
    { schema: { summary: 'Word timings of known text in a speech clip', consumes: ['multipart/form-data'], body: AlignBody }, preValidation: multipartOnly },
    async (req) => {
      const { text } = req.body;
      if (!text.trim()) throw invalid('text is empty');
      const audio = await decodeUpload(req.body.audio, 'audio');
      const words = await runtime.align(audio, text, req.body.language ?? DEFAULT_LANGUAGE, req.body.provider);
      // Times are sums of frame steps: 1.1949999999999998 is 1.195 to any client; a microsecond keeps every digit that means something.
      return { words: words.map((w) => ({ ...w, start: toMicroseconds(w.start), end: toMicroseconds(w.end) })) };
    },
  );
}

const toMicroseconds = (t: number) => Math.round(t * 1e6) / 1e6;
