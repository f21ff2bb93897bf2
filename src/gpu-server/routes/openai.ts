// OpenAI's audio API on the GPU server (registered under /v1): speech with word timings,
// transcriptions, models and voices, so Open WebUI and every `openai` SDK can use the
// server with a base URL and a key. Work goes through the runtime like /synthesize does.
import { PassThrough } from 'node:stream';
import multipart from '@fastify/multipart';
import { Type, type Static } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { fileTooLarge } from '../../http/server.ts';
import { notFound } from '../../core/errors.ts';
import { transcriberName } from '../../speech/asr/transcribers.ts';
import type { WordTiming } from '../../speech/types.ts';
import { tokenizeWords } from '../../speech/words.ts';
import { VoiceManifest } from '../../voices/manifest.ts';
import { VoiceResolutionError } from '../../voices/resolve.ts';
import { AUDIO_FORMATS, CONTENT_TYPES, encodeAudio, streamAudio } from '../audio-format.ts';
import { badParam, OpenAIRequestError, openaiErrors } from '../openai/errors.ts';
import { inputWords, SentenceJoiner, speakSentences, speechSentences, type SpokenSentence } from '../openai/speech.ts';
import { languageName, segmentsOf, TRANSCRIPT_FORMATS, transcriptSrt, transcriptVtt, type TranscriptFormat } from '../openai/transcripts.ts';
import { DEFAULT_LANGUAGE, readVoiceTable, SpeechVoices } from '../openai/voices.ts';
import { clientGone } from '../model-process/pool.ts';
import { MODEL_SAMPLE_RATE, type GpuRuntime } from '../runtime.ts';
import { File, fieldErrorFormatter, typeBoxValidator } from '../schemas.ts';
import type { BackendInfo } from '../tasks.ts';
import { decodeUpload, languageMatches } from './speech.ts';

/** OpenAI's speech model names: all speak with the loaded backend (the best installed, unless --backend chose). */
const SPEECH_ALIASES = ['tts-1', 'tts-1-hd', 'gpt-4o-mini-tts'];
/** OpenAI's transcription model names: all transcribe with the server's transcriber. */
const TRANSCRIPTION_ALIASES = ['whisper-1', 'gpt-4o-transcribe', 'gpt-4o-mini-transcribe'];

const Nullable = <T extends ReturnType<typeof Type.String>>(t: T) => Type.Optional(Type.Union([t, Type.Null()]));

const SpeechBody = Type.Object(
  {
    model: Type.String({ description: `${SPEECH_ALIASES.join(', ')} (the loaded backend), or the backend's own name (GET /v1/models)` }),
    input: Type.String({ description: 'Text of any length (the JSON body limit applies); spoken sentence by sentence' }),
    voice: Type.Union([Type.String(), Type.Object({ id: Type.String() })], {
      description: 'A Lectern voice id, an OpenAI voice name mapped by the voice table, or a voice the backend lists (GET /v1/audio/voices)',
    }),
    response_format: Nullable(Type.String({ description: `${AUDIO_FORMATS.join(', ')} (default mp3); pcm is 16-bit little-endian mono at 24 kHz` })),
    speed: Type.Optional(Type.Union([Type.Number({ description: '0.25–4 (default 1); the audio is time-stretched with its pitch kept, word timings scaled with it' }), Type.Null()])),
    instructions: Nullable(Type.String({ description: 'Accepted and ignored: no installed backend takes style instructions' })),
    stream_format: Nullable(Type.String({ description: 'absent: one whole file; `audio`: chunked, sentence by sentence; `sse`: speech.audio.delta / speech.audio.done events' })),
    timestamps: Type.Optional(Type.Union([Type.Boolean({ description: 'Lectern: answer JSON {audio (base64), format, duration, words:[{word,start,end}]} (one entry per input word), or words in every SSE delta' }), Type.Null()])),
    language: Nullable(Type.String({ description: 'Lectern: BCP-47 language (default: the voice\'s own)' })),
  },
  { description: 'OpenAI\'s speech body; fields this server does not know are ignored (the SDKs add fields over time)' },
);
type SpeechBody = Static<typeof SpeechBody>;

const TranscriptionBody = Type.Object(
  {
    file: File({ description: 'Speech in any format ffmpeg decodes' }),
    model: Type.String({ description: `${TRANSCRIPTION_ALIASES.join(', ')}, or the transcriber's own name` }),
    language: Type.Optional(Type.String({ description: 'ISO-639-1 or BCP-47 (default en-US; no language detection)' })),
    prompt: Type.Optional(Type.String({ description: 'Accepted and ignored: the transcribers take no prompt' })),
    response_format: Type.Optional(Type.String({ description: `${TRANSCRIPT_FORMATS.join(', ')} (default json)` })),
    temperature: Type.Optional(Type.String({ description: 'Accepted and ignored' })),
    'timestamp_granularities[]': Type.Optional(Type.Union([Type.String(), Type.Array(Type.String())], { description: 'word and/or segment (verbose_json only; default segment)' })),
  },
  { description: 'Fields this server does not know are ignored' },
);
type TranscriptionBody = Static<typeof TranscriptionBody>;

function concat(parts: Float32Array[]): Float32Array {
  const out = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

const round = (t: number) => Math.round(t * 1000) / 1000;
const scaled = (words: WordTiming[], speed: number) => words.map((w) => ({ word: w.word, start: round(w.start / speed), end: round(w.end / speed) }));

interface SpeechPlan {
  sentences: AsyncGenerator<SpokenSentence>;
  input: string;
  format: string;
  speed: number;
  timestamps: boolean;
}

/** The whole input spoken, encoded once: exact headers and Content-Length. */
async function answerWhole(reply: FastifyReply, plan: SpeechPlan) {
  const joiner = new SentenceJoiner();
  const parts: Float32Array[] = [];
  for await (const s of plan.sentences) parts.push(joiner.add(s).samples);
  const audio = Buffer.from(await encodeAudio(concat(parts), joiner.sampleRate, plan.format, plan.speed));
  const duration = round(joiner.durationSeconds / plan.speed);
  if (plan.timestamps) return { audio: audio.toString('base64'), format: plan.format, duration, words: inputWords(plan.input, joiner.words, plan.speed) };
  return reply.header('Content-Type', CONTENT_TYPES[plan.format]).header('X-Audio-Duration', duration.toFixed(3)).send(audio);
}

/**
 * Sentence by sentence as each is made: raw audio (chunked) or SSE events. The first
 * sentence is awaited before the headers go out, so an error in it still gets its status.
 */
async function answerStream(req: FastifyRequest, reply: FastifyReply, plan: SpeechPlan, sse: boolean) {
  const first = await plan.sentences.next();
  const out = new PassThrough();
  let stopped = false;
  const events = sse ? sseEvents(out, plan) : null;
  const joiner = new SentenceJoiner();
  const encoder = streamAudio(plan.format, (first.value as SpokenSentence).sampleRate, plan.speed, events ? events.audio : (b) => void out.write(b));
  reply.raw.once('close', () => {
    if (reply.raw.writableFinished) return;
    stopped = true; // the client went away: send no more sentences, stop the encoder
    encoder.kill();
    void plan.sentences.return(undefined);
  });
  void (async () => {
    try {
      for (let s: SpokenSentence | undefined = first.value as SpokenSentence; s && !stopped; ) {
        const placed = joiner.add(s);
        await encoder.write(placed.samples);
        events?.words(placed.words); // the next delta's
        const r = await plan.sentences.next();
        s = r.done ? undefined : r.value;
      }
      if (stopped) return;
      await encoder.end();
      events?.done();
      out.end();
    } catch (e) {
      if (stopped) return;
      req.log.error({ err: e }, 'speech stream failed after its first sentence');
      encoder.kill();
      if (events) {
        events.error(e as Error);
        out.end();
      } else out.destroy(e as Error);
    }
  })();
  reply.header('Content-Type', sse ? 'text/event-stream' : CONTENT_TYPES[plan.format]).header('Cache-Control', 'no-cache');
  return reply.send(out);
}

/**
 * OpenAI's speech SSE events written to `out`: encoder output is gathered for 20 ms per
 * speech.audio.delta (an MP3 frame per event would be ~200 bytes of base64 each), with the
 * words placed since the last delta; then speech.audio.done, or an error event.
 */
function sseEvents(out: PassThrough, plan: SpeechPlan) {
  const send = (event: object) => out.write(`data: ${JSON.stringify(event)}\n\n`);
  let pending: Buffer[] = [];
  let words: WordTiming[] = [];
  let timer: NodeJS.Timeout | null = null;
  const flush = () => {
    if (timer) clearTimeout(timer);
    timer = null;
    if (pending.length === 0 && words.length === 0) return;
    send({ type: 'speech.audio.delta', audio: Buffer.concat(pending).toString('base64'), ...(plan.timestamps ? { words: scaled(words, plan.speed) } : {}) });
    pending = [];
    words = [];
  };
  return {
    audio(b: Buffer) {
      pending.push(b);
      timer ??= setTimeout(flush, 20);
    },
    words(placed: WordTiming[]) {
      words.push(...placed);
    },
    done() {
      flush();
      const n = tokenizeWords(plan.input).length;
      send({ type: 'speech.audio.done', usage: { input_tokens: n, output_tokens: 0, total_tokens: n } });
    },
    error(e: Error) {
      send({ type: 'error', error: { message: e.message.split('\n')[0], type: 'server_error', param: null, code: null } });
    },
  };
}

/** What every OpenAI route reads: the runtime, the voices, the start time and the model names. */
interface OpenAIContext {
  runtime: GpuRuntime;
  voices: SpeechVoices;
  /** `created` of every model in GET /v1/models: when the routes were registered. */
  started: number;
  /** The transcriber's own name (the one `auto` resolves to). */
  transcriber(): string;
  /** The loaded backend's own names for itself: what it reports and what --backend said. */
  speechModels(be: BackendInfo): string[];
}

export async function openaiRoutes(app: FastifyInstance, { runtime }: { runtime: GpuRuntime }): Promise<void> {
  await useOpenAIConventions(app, runtime.config.maxUploadBytes);
  const ctx: OpenAIContext = {
    runtime,
    voices: new SpeechVoices(new VoiceManifest(runtime.config.voicesDir), readVoiceTable(runtime.config.openaiVoices)),
    started: Math.floor(Date.now() / 1000),
    transcriber: () => transcriberName(runtime.config.transcriber, { modelsDir: runtime.config.modelsDir, device: runtime.config.device }),
    speechModels: (be) => [...new Set([be.name, runtime.backendName])],
  };
  modelListRoutes(app, ctx);
  speechRoute(app, ctx);
  transcriptionRoute(app, ctx);
  translationRoute(app, ctx);
}

/**
 * What the SDKs expect of every /v1 route: form uploads of one file (the JSON body limit
 * elsewhere), TypeBox checks reported as OpenAI's {"error": {…}}, and a 404 in that shape.
 */
async function useOpenAIConventions(app: FastifyInstance, limit: number): Promise<void> {
  await app.register(multipart, {
    attachFieldsToBody: 'keyValues',
    limits: { fileSize: limit, files: 1, fields: 32, fieldSize: 1024 * 1024 },
    onFile: async (part) => {
      await part.toBuffer().catch(fileTooLarge(limit));
    },
  });
  app.removeContentTypeParser('text/plain');
  app.setValidatorCompiler(typeBoxValidator);
  app.setSchemaErrorFormatter(fieldErrorFormatter);
  openaiErrors(app);
  app.setNotFoundHandler(async (req) => {
    throw notFound(`no route for ${req.method} ${req.url.split('?')[0]}`);
  });
}

/** onRequest hooks of the routes that start model work: 503 while shutting down or while the backend loads. */
const modelWork = (runtime: GpuRuntime) => ({ onRequest: [runtime.acceptingWork, async () => void runtime.requireBackend()] });

/** The speech models once the backend is loaded, the transcription models where a transcriber is installed. */
function models(ctx: OpenAIContext) {
  const be = ctx.runtime.backend;
  const model = (id: string, task: string) => ({ id, object: 'model', created: ctx.started, owned_by: 'lectern', task });
  const data = [];
  if (be) for (const id of [...ctx.speechModels(be), ...SPEECH_ALIASES]) data.push(model(id, 'speech'));
  if (ctx.runtime.capabilities().includes('transcribe')) for (const id of [ctx.transcriber(), ...TRANSCRIPTION_ALIASES]) data.push(model(id, 'transcription'));
  return data;
}

/** GET /models, /models/:id, /audio/models and /audio/voices: what a client may ask for. */
function modelListRoutes(app: FastifyInstance, ctx: OpenAIContext): void {
  const { runtime } = ctx;
  app.get('/models', { schema: { summary: 'Models this server answers to (OpenAI list)', tags: ['openai'] } }, async () => ({ object: 'list', data: models(ctx) }));

  app.get<{ Params: { id: string } }>('/models/:id', { schema: { summary: 'One model of GET /v1/models', tags: ['openai'] } }, async (req) => {
    const found = models(ctx).find((m) => m.id === req.params.id);
    if (!found) throw new OpenAIRequestError('NOT_FOUND', `model "${req.params.id}" is not served here (see GET /v1/models)`, 'model', 'model_not_found');
    return found;
  });

  app.get('/audio/models', { schema: { summary: 'Speech models as {models:[{id}]} (the convention Open WebUI reads)', tags: ['openai'] } }, async () => {
    const be = runtime.requireBackend();
    return { models: [...ctx.speechModels(be), ...SPEECH_ALIASES].map((id) => ({ id })) };
  });

  app.get('/audio/voices', { schema: { summary: 'Voices /v1/audio/speech takes: {voices:[{id, name, language, kind, alias_of}]}', tags: ['openai'] } }, async () => ({
    voices: await ctx.voices.list(runtime.requireBackend()),
  }));
}

/** The speech body's output settings, each checked: 400 naming the field that is off. */
interface SpeechOutput {
  format: string;
  speed: number;
  /** null: one whole answer. */
  stream: 'audio' | 'sse' | null;
  timestamps: boolean;
}

function checkSpeechModel(ctx: OpenAIContext, model: string, be: BackendInfo): void {
  const own = ctx.speechModels(be);
  if (!own.includes(model) && !SPEECH_ALIASES.includes(model)) {
    throw new OpenAIRequestError('INVALID', `model "${model}" is not served here; speech models: ${[...SPEECH_ALIASES, ...own].join(', ')}`, 'model', 'model_not_found');
  }
}

function speechOutput(b: SpeechBody): SpeechOutput {
  if (!b.input.trim()) throw badParam('input', 'input is empty');
  const format = b.response_format ?? 'mp3';
  if (!AUDIO_FORMATS.includes(format)) throw badParam('response_format', `response_format must be one of ${AUDIO_FORMATS.join(', ')}; got "${format}"`);
  const speed = b.speed ?? 1;
  if (!(speed >= 0.25 && speed <= 4)) throw badParam('speed', `speed must be between 0.25 and 4; got ${speed}`);
  const stream = b.stream_format ?? null;
  if (stream !== null && stream !== 'audio' && stream !== 'sse') throw badParam('stream_format', `stream_format must be audio or sse; got "${stream}"`);
  const timestamps = b.timestamps === true;
  if (timestamps && stream === 'audio') throw badParam('timestamps', 'timestamps need a place for the words: use stream_format "sse", or no stream_format for one JSON answer');
  return { format, speed, stream, timestamps };
}

/** The body's voice (and language) as the backend speaks it: 400 when unknown or in a language the backend lacks. */
async function speechVoice(ctx: OpenAIContext, b: SpeechBody, be: BackendInfo) {
  const voiceId = typeof b.voice === 'string' ? b.voice : b.voice.id;
  const voice = await ctx.voices.resolve(voiceId, be, b.language ?? null).catch((e: unknown) => {
    throw e instanceof VoiceResolutionError ? badParam('voice', e.message, 'voice_not_found') : e;
  });
  if (!languageMatches(voice.language, be.languages.map((l) => l.code))) {
    throw badParam(b.language ? 'language' : 'voice', `backend ${be.name} does not speak language "${voice.language}"`, 'unsupported_language');
  }
  return voice;
}

/** Aborted when the client goes away before the answer is finished. */
function clientGoneSignal(reply: FastifyReply): AbortSignal {
  const gone = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) gone.abort(clientGone());
  });
  return gone.signal;
}

/** POST /audio/speech: the input spoken sentence by sentence, answered whole or streamed. */
function speechRoute(app: FastifyInstance, ctx: OpenAIContext): void {
  const { runtime } = ctx;
  app.post<{ Body: SpeechBody }>(
    '/audio/speech',
    {
      ...modelWork(runtime),
      schema: {
        summary: 'OpenAI text-to-speech, with word timings on request',
        description:
          'Answers audio in response_format (whole, or streamed with stream_format). Sentences go through the same micro-batcher and pool as /synthesize. With timestamps: true, JSON {audio, format, duration, words} (or words in each SSE delta). Errors: OpenAI\'s {"error": {message, type, param, code}}.',
        tags: ['openai'],
        consumes: ['application/json'],
        body: SpeechBody,
      },
    },
    async (req, reply) => {
      const be = runtime.requireBackend();
      const b = req.body;
      checkSpeechModel(ctx, b.model, be);
      const { format, speed, stream, timestamps } = speechOutput(b);
      const voice = await speechVoice(ctx, b, be);
      // A client that goes away takes its sentences out of the batcher (or cancels them in a model process).
      const signal = clientGoneSignal(reply);
      const sentences = speakSentences(
        runtime,
        speechSentences(b.input, be.maxChunkBytes),
        { language: voice.language, voice: voice.voice, refAudio: voice.refAudio, refText: voice.refText, requestId: req.id, signal },
        // Enough sentences in flight to fill every worker's batches twice over, and no more.
        { timestamps, firstAlone: stream !== null, ahead: Math.max(4, runtime.config.maxBatch * runtime.config.workers * 2) },
      );
      const plan = { sentences, input: b.input, format, speed, timestamps };
      return stream === null ? answerWhole(reply, plan) : answerStream(req, reply, plan, stream === 'sse');
    },
  );
}

function checkTranscriptionModel(ctx: OpenAIContext, model: string): void {
  const own = ctx.transcriber();
  if (model !== own && model !== ctx.runtime.config.transcriber && !TRANSCRIPTION_ALIASES.includes(model)) {
    throw new OpenAIRequestError('INVALID', `model "${model}" is not served here; transcription models: ${[own, ...TRANSCRIPTION_ALIASES].join(', ')}`, 'model', 'model_not_found');
  }
}

/** The transcription body's response_format and timestamp_granularities[], each checked. */
function transcriptOutput(b: TranscriptionBody): { format: TranscriptFormat; granularities: string[] } {
  const format = (b.response_format ?? 'json') as TranscriptFormat;
  if (!TRANSCRIPT_FORMATS.includes(format)) throw badParam('response_format', `response_format must be one of ${TRANSCRIPT_FORMATS.join(', ')}; got "${format}"`);
  const raw = b['timestamp_granularities[]'];
  const granularities = raw === undefined ? [] : Array.isArray(raw) ? raw : [raw];
  for (const g of granularities) if (g !== 'word' && g !== 'segment') throw badParam('timestamp_granularities', `timestamp_granularities must be word and/or segment; got "${g}"`);
  if (granularities.length > 0 && format !== 'verbose_json') throw badParam('timestamp_granularities', 'timestamp_granularities need response_format verbose_json');
  return { format, granularities };
}

/** verbose_json: the transcript with segments and/or words, times from the aligner. */
function verboseTranscript(text: string, language: string, duration: number, words: WordTiming[], granularities: string[]) {
  const segments = segmentsOf(words);
  return {
    task: 'transcribe',
    language: languageName(language),
    duration: round(duration),
    text,
    ...(granularities.length === 0 || granularities.includes('segment') ? { segments: segments.map((s) => ({ ...s, start: round(s.start), end: round(s.end) })) } : {}),
    ...(granularities.includes('word') ? { words: scaled(words, 1) } : {}),
  };
}

/** POST /audio/transcriptions: the transcriber's text; the formats with times align it against the audio. */
function transcriptionRoute(app: FastifyInstance, ctx: OpenAIContext): void {
  const { runtime } = ctx;
  app.post<{ Body: TranscriptionBody }>(
    '/audio/transcriptions',
    {
      ...modelWork(runtime),
      schema: {
        summary: 'OpenAI speech-to-text; verbose_json carries word timings from the aligner',
        description: 'multipart/form-data. Segment and word times come from aligning the transcript against the audio.',
        tags: ['openai'],
        consumes: ['multipart/form-data'],
        body: TranscriptionBody,
      },
      preValidation: async (req) => {
        if (!req.isMultipart()) throw new OpenAIRequestError('BAD_REQUEST', 'expected a multipart/form-data body with a file', 'file', 'invalid_request');
      },
    },
    async (req, reply) => {
      const b = req.body;
      checkTranscriptionModel(ctx, b.model);
      const { format, granularities } = transcriptOutput(b);
      const language = b.language?.trim() || DEFAULT_LANGUAGE;
      const audio = await decodeUpload(b.file, 'file');
      const duration = audio.length / MODEL_SAMPLE_RATE;
      // transcribe() hands its samples to a worker thread (transferred): keep this copy for the aligner.
      const text = (await runtime.transcribe(audio.slice(), language)).trim();
      if (format === 'json') return { text };
      if (format === 'text') return reply.type('text/plain; charset=utf-8').send(`${text}\n`);
      const words = text ? await runtime.align(audio, text, language) : [];
      if (format === 'srt') return reply.type('text/plain; charset=utf-8').send(transcriptSrt(segmentsOf(words)));
      if (format === 'vtt') return reply.type('text/vtt; charset=utf-8').send(transcriptVtt(segmentsOf(words)));
      return verboseTranscript(text, language, duration, words, granularities);
    },
  );
}

/** POST /audio/translations: answered before the upload is read: nothing here translates, however the form looks. */
function translationRoute(app: FastifyInstance, ctx: OpenAIContext): void {
  app.post(
    '/audio/translations',
    {
      schema: { summary: 'Not available: no installed model translates speech (400 with OpenAI\'s error body)', tags: ['openai'] },
      onRequest: async (_req, reply) => {
        reply.header('Connection', 'close');
        throw new OpenAIRequestError(
          'INVALID',
          `this server has no model that translates speech to English (its transcriber, ${ctx.transcriber()}, transcribes in the language spoken); use /v1/audio/transcriptions`,
          'model',
          'translation_not_supported',
        );
      },
    },
    async () => ({}),
  );
}
