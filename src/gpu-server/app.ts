// The GPU inference server (spec §C): Fastify routes → micro-batcher → piscina pool.
import { createHash } from 'node:crypto';
import { createReadStream, existsSync, readdirSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import multipart from '@fastify/multipart';
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import type { GpuServerConfig } from '../config.ts';
import { HttpError, invalid, notReady, tooLarge, unsupportedType } from '../errors.ts';
import type { Logger } from '../log.ts';
import { requestIdFrom } from '../request-context.ts';
import { installSecurity } from '../security/http.ts';
import { decodeAudio, ffprobe } from '../media/ffmpeg.ts';
import { LipsyncUnavailableError, createLipsyncProvider, installedLipsyncProviders, lipsyncUnavailableReason, type LipsyncProviderOptions } from '../speech/lipsync/registry.ts';
import type { LipsyncProvider } from '../speech/lipsync/types.ts';
import { MissingModelError, SpeechInputError, type SynthesisRequest } from '../speech/types.ts';
import { utf8Bytes } from '../speech/words.ts';
import { MicroBatcher } from './batcher.ts';
import { LipsyncJobTable } from './lipsync-jobs.ts';
import { createMetrics } from './metrics.ts';
import { SpeechPool } from './pool.ts';
import type { BackendInfo, BackendSpec, SynthesizedAudio } from './tasks.ts';
import { readMultipart } from './uploads.ts';

/** Options beyond GpuServerConfig (tests, and settings config.ts does not carry yet). */
export interface GpuServerOptions {
  /** Extra TTS backends by name → file:// URL of a module exporting `createBackend(opts)`. */
  extraBackends?: Record<string, string>;
  /** The `command` lip-sync provider's template ({audio} {video} {output} {preset}); from LECTERN_LIPSYNC_COMMAND. */
  lipsyncCommand?: string | null;
  lipsyncCommandPresets?: string[];
  lipsyncCommandTimeoutMs?: number;
  /** Lip-sync generations at once (default 1: a generator usually fills the device). */
  lipsyncConcurrency?: number;
  /** Model requests waiting (batcher + pool) before new ones get 503 (default max(256, workers × max-batch × 16)). */
  maxPendingRequests?: number;
  /** Transcriber registry name (default `auto`). */
  transcriber?: string;
  /** Compute type part of the model-cache key (default fp32). */
  computeType?: string;
  /** onnxruntime intra-op threads per worker session; default on CPU max(1, floor(cores ÷ workers)). */
  intraOpThreads?: number;
  /**
   * Most sentences per session run inside a batched backend (Piper's maxBatch). Default on CPU 1:
   * onnxruntime's CPU convolutions loop over the batch, so the VITS decoder costs B× and padding
   * plus bigger working sets made a B=8 run 10% slower per sentence than eight B=1 runs
   * (368 vs 408 ms, 1 thread, this 2-core machine). Default on CUDA: the backend's own (16).
   */
  sessionBatch?: number;
}

export type GpuServerSettings = GpuServerConfig & GpuServerOptions;

export interface GpuServer {
  app: FastifyInstance;
  /** Loads the backend in every worker and the lip-sync provider; /health says `loading` until it resolves. */
  load(): Promise<void>;
  /**
   * Stops taking work. With `graceMs` > 0 (SIGTERM), lip-sync jobs and requests in flight
   * get that long to finish before the rest is cancelled; 0 cancels at once. The log says
   * which lip-sync jobs finished and which were cancelled.
   */
  close(graceMs?: number): Promise<void>;
}

type SynthItem = SynthesisRequest;

/** `piper` when a Piper voice is installed, else `espeak`. */
export function chooseBackend(modelsDir: string): string {
  const dir = path.join(modelsDir, 'voices', 'piper');
  try {
    if (existsSync(dir) && readdirSync(dir).some((f) => f.endsWith('.onnx'))) return 'piper';
  } catch {
    /* unreadable → not installed */
  }
  return 'espeak';
}

function str(v: unknown, name: string, opts: { required?: boolean; fallback?: string } = {}): string | undefined {
  if (v === undefined || v === null) {
    if (opts.required) throw invalid(`missing field "${name}"`);
    return opts.fallback;
  }
  if (typeof v !== 'string') throw invalid(`field "${name}" must be a string`);
  return v;
}

function languageMatches(lang: string, known: string[]): boolean {
  if (known.length === 0) return true;
  const l = lang.toLowerCase();
  const primary = l.split(/[-_]/)[0];
  return known.some((k) => {
    const kk = k.toLowerCase().replace(/_/g, '-');
    return kk === l || kk.split('-')[0] === primary;
  });
}

async function decodeUpload(bytes: Buffer | undefined, field: string): Promise<Float32Array> {
  if (!bytes || bytes.length === 0) throw invalid(`missing file "${field}"`);
  try {
    const samples = await decodeAudio(bytes, 16000);
    if (samples.length === 0) throw new Error('no samples');
    return samples;
  } catch (e) {
    if ((e as Error).name === 'ToolMissingError') throw e;
    throw unsupportedType(`file "${field}" is not audio that ffmpeg can decode`);
  }
}

export async function buildGpuServer(config: GpuServerSettings, log: Logger): Promise<GpuServer> {
  const backendName = config.backend ?? chooseBackend(config.modelsDir);
  const backendSpec: BackendSpec = { name: backendName, module: config.extraBackends?.[backendName] };
  // Each pool worker has its own onnxruntime session and thread pool; left at the default
  // (every core each), N workers oversubscribe the CPU N-fold and spin against each other.
  const intraOpThreads =
    config.intraOpThreads ?? (config.device === 'cpu' ? Math.max(1, Math.floor(availableParallelism() / config.workers)) : undefined);
  const pool = new SpeechPool({
    workers: config.workers,
    device: config.device,
    modelsDir: config.modelsDir,
    computeType: config.computeType ?? 'fp32',
    intraOpThreads,
    sessionBatch: config.sessionBatch ?? (config.device === 'cpu' ? 1 : undefined),
    maxQueue: Number.MAX_SAFE_INTEGER, // back-pressure is applied per request below
  });
  const maxPending = config.maxPendingRequests ?? Math.max(256, config.workers * config.maxBatch * 16);
  let pending = 0;

  let info: BackendInfo | null = null;
  let loadError: string | null = null;
  const lipsyncOpts: LipsyncProviderOptions = {
    modelsDir: config.modelsDir,
    device: config.device,
    command: config.lipsyncCommand ?? null,
    commandPresets: config.lipsyncCommandPresets,
    commandTimeoutMs: config.lipsyncCommandTimeoutMs,
  };
  const lipsyncProviders = new Map<string, LipsyncProvider>();
  let lipsyncDefault: LipsyncProvider | null = null;
  const modelsLoaded = new Map<number, string[]>();
  let cacheHits = 0;
  let cacheMisses = 0;

  const lipsync = new LipsyncJobTable({
    dir: path.join(config.dataDir, 'lipsync'),
    ttlMs: config.lipsyncTtlMs,
    maxJobs: config.maxLipsyncJobs,
    concurrency: config.lipsyncConcurrency ?? 1,
    onError: (id, err) => log.warn({ lipsync_id: id, err: (err as Error).message }, 'lip-sync generation failed'),
  });

  let batcher: MicroBatcher<SynthItem, SynthesizedAudio>;
  const metrics = createMetrics({
    maxBatch: config.maxBatch,
    poolSize: () => pool.size,
    poolUtilization: () => pool.utilization,
    poolQueue: () => pool.queueSize,
    batcherQueue: () => batcher?.queued ?? 0,
    lipsyncStates: () => lipsync.counts(),
  });

  pool.onStats = (s, waitMs) => {
    metrics.cache.inc({ model: s.model, result: s.cacheHit ? 'hit' : 'miss' });
    if (s.cacheHit) cacheHits++;
    else cacheMisses++;
    if (s.modelMs > 0) metrics.modelTime.observe({ model: s.model }, s.modelMs);
    metrics.queueWait.observe({ stage: 'pool' }, waitMs);
    modelsLoaded.set(s.workerId, s.loaded);
  };

  batcher = new MicroBatcher<SynthItem, SynthesizedAudio>({
    maxBatch: config.maxBatch,
    windowMs: config.batchWindowMs,
    run: async (_key, items) => (await pool.synthesize(backendSpec, items)).outputs,
    onDispatch: (b) => {
      metrics.batchSize.observe({ backend: backendName }, b.size);
      for (const w of b.waitsMs) metrics.queueWait.observe({ stage: 'batcher' }, w);
    },
  });

  // Fastify's own per-request lines are off: one line per answer below carries the request id instead.
  const app = Fastify({ loggerInstance: log, disableRequestLogging: true, bodyLimit: 1024 * 1024, requestIdHeader: false, genReqId: (req) => requestIdFrom(req.headers) }) as unknown as FastifyInstance;
  await installSecurity(app, { security: config.security, isProtected: (p) => p !== '/health' });
  let draining = false;
  const WORK_ROUTES = new Set(['/synthesize', '/transcribe', '/align', '/lipsync']);
  app.addHook('onRequest', async (req, reply) => {
    if (draining && req.method === 'POST' && WORK_ROUTES.has(req.url.split('?')[0]!)) {
      return reply.code(503).header('Retry-After', '1').send({ detail: 'the server is shutting down; send the request to another server' });
    }
  });
  await app.register(multipart, { limits: { fileSize: config.maxUploadBytes, files: 4, fields: 16, fieldSize: 1024 * 1024 } });

  app.setErrorHandler((err: Error & { statusCode?: number; code?: string }, req, reply) => {
    let status = 500;
    let detail = 'internal server error';
    if (err instanceof HttpError) {
      status = err.statusCode;
      detail = err.detail;
    } else if (err instanceof SpeechInputError) {
      status = 422;
      detail = err.message;
    } else if (err instanceof MissingModelError || err instanceof LipsyncUnavailableError || err.name === 'ToolMissingError') {
      status = 503;
      detail = err.message;
    } else if (typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 500) {
      status = err.code === 'FST_REQ_FILE_TOO_LARGE' || err.code === 'FST_ERR_CTP_BODY_TOO_LARGE' ? 413 : err.statusCode;
      detail = status === 413 ? `upload too large (limit ${config.maxUploadBytes} bytes)` : err.message;
    }
    if (status >= 500 && status !== 503) req.log.error({ err, url: req.url }, 'request failed');
    if (status === 503) reply.header('Retry-After', '1');
    if (status === 413 && req.isMultipart()) reply.header('Connection', 'close'); // the rest of the body is not read
    void reply.status(status).send({ detail });
  });
  app.setNotFoundHandler((req, reply) => {
    void reply.status(404).send({ detail: `no route ${req.method} ${req.url.split('?')[0]}` });
  });
  app.addHook('onResponse', async (req, reply) => {
    const route = req.routeOptions.url ?? 'unmatched';
    // req.log carries reqId (the caller's x-request-id: the job's request for worker calls) and the token name.
    if (route !== '/health' && route !== '/metrics') {
      req.log.info({ method: req.method, url: req.url.split('?')[0], status: reply.statusCode, ms: Math.round(reply.elapsedTime) }, 'request completed');
    }
    metrics.requests.inc({ route, method: req.method, status: String(reply.statusCode) });
    metrics.latency.observe({ route }, reply.elapsedTime);
  });

  const requireLoaded = (): BackendInfo => {
    if (info) return info;
    throw notReady(loadError ? `backend ${backendName} failed to load: ${loadError}` : `backend ${backendName} is still loading`);
  };
  const admit = () => {
    if (pending >= maxPending) throw notReady('the inference server is overloaded; retry shortly');
    pending++;
    let done = false;
    return () => {
      if (!done) pending--;
      done = true;
    };
  };

  // Align/transcribe engines load lazily in the workers; advertise them when their registry is installed.
  const hasRegistry = (rel: string) => existsSync(new URL(rel, import.meta.url));
  const canAlign = hasRegistry('../speech/align/registry.ts');
  const canTranscribe = hasRegistry('../speech/asr/registry.ts');
  const capabilities = (): string[] => {
    if (!info) return [];
    const caps = ['synthesize'];
    if (canTranscribe) caps.push('transcribe');
    if (canAlign) caps.push('align');
    if (lipsyncDefault) caps.push('lipsync');
    return caps;
  };

  app.get('/health', async (_req, reply) => {
    const body = {
      status: info ? 'ok' : loadError ? 'error' : 'loading',
      backend: backendName,
      output_format: info?.outputFormat ?? null,
      max_chunk_bytes: info?.maxChunkBytes ?? null,
      device: config.device,
      aligner: config.aligner,
      lipsync_provider: config.lipsyncProvider,
      capabilities: capabilities(),
      // operator extras
      error: loadError,
      voice_cloning: info?.canClone ?? false,
      batched_backend: info?.batched ?? false,
      max_batch: config.maxBatch,
      batch_window_ms: config.batchWindowMs,
      pool_size: pool.size,
      intra_op_threads: intraOpThreads ?? null,
      session_batch: config.sessionBatch ?? (config.device === 'cpu' ? 1 : null),
      pool_queue: pool.queueSize,
      batcher_queue: batcher.queued,
      pending_requests: pending,
      models_loaded: [...new Set([...modelsLoaded.values()].flat())].sort(),
      model_cache: { hits: cacheHits, misses: cacheMisses },
      lipsync_active_provider: lipsyncDefault?.name ?? null,
      lipsync_presets: lipsyncDefault?.presets() ?? [],
      lipsync_jobs: lipsync.counts(),
    };
    return reply.status(info ? 200 : 503).send(body);
  });

  app.get('/metrics', async (_req, reply) => {
    const text = await metrics.registry.metrics();
    return reply.type(metrics.registry.contentType).send(text);
  });

  async function synthRequest(req: FastifyRequest, be: BackendInfo): Promise<SynthItem> {
    let text: string | undefined;
    let language: string | undefined;
    let voice: string | undefined;
    let refAudio: Buffer | null = null;
    let refText: string | null = null;
    if (req.isMultipart()) {
      const form = await readMultipart(req, config.maxUploadBytes);
      text = str(form.fields.text, 'text', { required: true });
      language = str(form.fields.language, 'language', { fallback: 'en-US' });
      voice = str(form.fields.voice, 'voice');
      refText = form.fields.ref_text ?? null;
      refAudio = form.files.ref_audio ?? null;
    } else {
      if (!/^application\/json\b/i.test(req.headers['content-type'] ?? '')) throw unsupportedType('send application/json or multipart/form-data');
      const body = req.body as Record<string, unknown> | undefined;
      if (!body || typeof body !== 'object' || Array.isArray(body)) throw invalid('expected a JSON object with "text" and "language"');
      text = str(body.text, 'text', { required: true });
      language = str(body.language, 'language', { fallback: 'en-US' });
      voice = str(body.voice, 'voice');
      if (body.ref_audio !== undefined) throw invalid('ref_audio must be sent as a multipart file');
      refText = str(body.ref_text, 'ref_text') ?? null;
    }
    if (!text!.trim()) throw invalid('text is empty');
    const bytes = utf8Bytes(text!);
    if (bytes > be.maxChunkBytes) throw tooLarge(`text is ${bytes} UTF-8 bytes; backend ${be.name} accepts at most ${be.maxChunkBytes} per request (max_chunk_bytes)`);
    if (!languageMatches(language!, be.languages.map((l) => l.code))) throw invalid(`backend ${be.name} does not support language "${language}"`);
    if (refAudio && refAudio.length > 0) {
      if (!be.canClone) throw invalid(`backend ${be.name} cannot clone voices; ref_audio is not supported (send no reference, or use a voice-cloning backend)`);
      await decodeUpload(refAudio, 'ref_audio');
    } else {
      refAudio = null;
      if (refText && !be.canClone) refText = null; // a transcript alone changes nothing
    }
    return { text: text!, language: language!, voice: voice ?? null, refAudio, refText };
  }

  app.post('/synthesize', async (req, reply) => {
    const be = requireLoaded();
    const item = await synthRequest(req, be);
    const refHash = item.refAudio
      ? createHash('sha256').update(item.refAudio).update('\0').update(item.refText ?? '').digest('hex')
      : '';
    const key = JSON.stringify([backendName, item.voice ?? '', item.language.toLowerCase(), refHash]);
    const release = admit();
    try {
      const out = await batcher.submit(key, item);
      reply.header('Content-Type', out.contentType);
      reply.header('X-Audio-Duration', out.durationSeconds.toFixed(3));
      if (out.words) reply.header('X-Word-Timings', Buffer.from(JSON.stringify(out.words)).toString('base64'));
      return reply.send(Buffer.from(out.audio.buffer, out.audio.byteOffset, out.audio.byteLength));
    } finally {
      release();
    }
  });

  app.post('/transcribe', async (req) => {
    requireLoaded();
    const form = await readMultipart(req, config.maxUploadBytes);
    const language = str(form.fields.language, 'language', { fallback: 'en-US' })!;
    const audio = await decodeUpload(form.files.audio, 'audio');
    const release = admit();
    try {
      const r = await pool.transcribe(config.transcriber ?? 'auto', audio, 16000, language);
      return { text: r.text };
    } finally {
      release();
    }
  });

  app.post('/align', async (req) => {
    requireLoaded();
    const form = await readMultipart(req, config.maxUploadBytes);
    const text = str(form.fields.text, 'text', { required: true })!;
    if (!text.trim()) throw invalid('text is empty');
    const language = str(form.fields.language, 'language', { fallback: 'en-US' })!;
    const provider = str(form.fields.provider, 'provider') || config.aligner;
    const audio = await decodeUpload(form.files.audio, 'audio');
    const release = admit();
    try {
      const r = await pool.align(provider, audio, 16000, text, language);
      return { words: r.words };
    } finally {
      release();
    }
  });

  app.post('/lipsync', async (req, reply) => {
    requireLoaded();
    if (!lipsyncDefault) throw notReady('no lip-sync provider is installed on this server (set LECTERN_LIPSYNC_COMMAND for the command provider)');
    const { id, dir } = lipsync.allocate();
    try {
      const form = await readMultipart(req, config.maxUploadBytes, { dir, fields: ['audio', 'reference_video'] });
      const audioPath = form.paths.audio;
      const videoPath = form.paths.reference_video;
      if (!audioPath) throw invalid('missing file "audio"');
      if (!videoPath) throw invalid('missing file "reference_video"');
      const requested = str(form.fields.provider, 'provider');
      let provider = lipsyncDefault;
      if (requested && requested !== 'auto') {
        const p = lipsyncProviders.get(requested);
        if (!p) {
          const why = lipsyncUnavailableReason(requested, lipsyncOpts);
          throw invalid(`lip-sync provider "${requested}" is not installed (installed: ${[...lipsyncProviders.keys()].join(', ') || 'none'})${why ? `: ${why}` : ''}`);
        }
        provider = p;
      }
      const preset = str(form.fields.lipsync_preset, 'lipsync_preset') || provider.presets()[0]!;
      if (!provider.presets().includes(preset)) throw invalid(`unknown lipsync_preset "${preset}" for provider ${provider.name} (known: ${provider.presets().join(', ')})`);
      const [a, v] = await Promise.all([ffprobe(audioPath).catch(() => null), ffprobe(videoPath).catch(() => null)]);
      if (!a || !a.streams.some((s) => s.codec_type === 'audio')) throw unsupportedType('file "audio" is not audio that ffmpeg can decode');
      if (!v || !v.streams.some((s) => s.codec_type === 'video')) throw unsupportedType('file "reference_video" is not a video that ffmpeg can decode');
      const view = lipsync.submit({ id, dir, provider, preset, audioPath, referenceVideoPath: videoPath });
      req.log.info({ lipsync_id: view.lipsync_id, provider: provider.name, preset }, 'lip-sync job accepted');
      return reply.status(202).send({ lipsync_id: view.lipsync_id, status: view.status });
    } catch (e) {
      lipsync.release(dir);
      throw e;
    }
  });

  app.get<{ Params: { id: string } }>('/lipsync/:id', async (req) => lipsync.get(req.params.id));
  app.get<{ Params: { id: string } }>('/lipsync/:id/result', async (req, reply) => {
    const file = lipsync.resultPath(req.params.id);
    return reply
      .type('video/mp4')
      .header('x-content-type-options', 'nosniff')
      .header('content-disposition', `attachment; filename="${req.params.id}.mp4"`)
      .send(createReadStream(file));
  });
  app.post<{ Params: { id: string } }>('/lipsync/:id/cancel', async (req) => lipsync.cancel(req.params.id));
  app.delete<{ Params: { id: string } }>('/lipsync/:id', async (req) => {
    lipsync.delete(req.params.id);
    return { lipsync_id: req.params.id, deleted: true };
  });

  return {
    app,
    async load() {
      try {
        for (const name of installedLipsyncProviders(lipsyncOpts)) lipsyncProviders.set(name, await createLipsyncProvider(name, lipsyncOpts));
        if (config.lipsyncProvider === 'auto') {
          lipsyncDefault = lipsyncProviders.values().next().value ?? null;
        } else {
          lipsyncDefault = await createLipsyncProvider(config.lipsyncProvider, lipsyncOpts); // a named provider that is missing stops start-up
          lipsyncProviders.set(lipsyncDefault.name, lipsyncDefault);
        }
        const t0 = performance.now();
        info = await pool.loadEverywhere(backendSpec);
        log.info({ backend: info.name, workers: pool.size, ms: Math.round(performance.now() - t0) }, 'backend loaded');
      } catch (e) {
        loadError = (e as Error).message;
        throw e;
      }
    },
    async close(graceMs = 0) {
      draining = true;
      const t0 = Date.now();
      const { finished, cancelled } = await lipsync.drain(graceMs);
      if (finished.length > 0) log.info({ lipsync_jobs: finished }, 'shutdown: lip-sync jobs finished before exit');
      if (cancelled.length > 0) log.warn({ lipsync_ids: cancelled }, 'shutdown: lip-sync jobs cancelled (grace period over)');
      if (graceMs > 0) {
        // Requests in flight keep the batcher and the pool until they finish or the grace ends.
        const force = setTimeout(() => {
          batcher.close();
          app.server.closeAllConnections();
        }, Math.max(0, graceMs - (Date.now() - t0)));
        await app.close();
        clearTimeout(force);
        batcher.close();
      } else {
        batcher.close();
        await app.close();
      }
      await lipsync.close();
      await pool.close();
    },
  };
}
