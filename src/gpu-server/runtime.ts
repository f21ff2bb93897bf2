// The GPU server's runtime: the state every route shares, built once per server and handed
// to each route plugin as `{ runtime }`. Routes parse and check their input, then read state
// and submit work only through this interface:
//
//   runtime.requireBackend()          BackendInfo of the loaded TTS backend, or 503 while it loads / after it failed
//   runtime.synthesize(request)       one sentence → audio; coalesced by the micro-batcher, run in the pool
//                                     (or, with --backend process, in the operator's model processes)
//   runtime.referenceChecked(clip)    true when a model process already took this reference clip (it decodes)
//   runtime.align(audio, text, lang)  word timings for 16 kHz mono samples (aligner: the request's or --aligner)
//   runtime.transcribe(audio, lang)   text of 16 kHz mono samples
//   runtime.lipsync                   the job table, the installed providers and the default one
//   runtime.health()                  the /health body (spec fields first, then operator extras)
//   runtime.metrics                   prom-client registry and the instruments
//   runtime.acceptingWork             onRequest hook for routes that start model work: 503 while shutting down
//   runtime.config, runtime.log       the settings and the server's logger
//
// Every model call goes through one back-pressure gate (at most maxPendingRequests waiting,
// then 503) and runs in a worker thread, so /health answers while the device is busy.
// load() and the shutdown steps are called by app.ts, never by routes.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ServerSecurity } from '../security/tokens.ts';
import { invalid, LecternError, notReady, overloaded } from '../core/errors.ts';
import type { Logger } from '../log.ts';
import { ALIGNERS, alignerCoverage } from '../speech/align/aligners.ts';
import { hmmDecoderBuild } from '../speech/align/soundswallower-wasm.ts';
import { createLipsyncProvider, installedLipsyncProviders, lipsyncUnavailableReason, type LipsyncProviderOptions } from '../speech/lipsync/providers.ts';
import type { LipsyncProvider } from '../speech/lipsync/types.ts';
import type { SynthesisRequest, WordTiming } from '../speech/types.ts';
import { MicroBatcher } from './batcher.ts';
import { LipsyncJobTable } from './lipsync-jobs.ts';
import { createMetrics, type GpuMetrics } from './metrics.ts';
import { encodeAudio } from './audio-format.ts';
import { ModelProcessPool, type ProcessRequest } from './model-process/pool.ts';
import type { ProcessHello } from './model-process/protocol.ts';
import { SpeechPool } from './thread-pool.ts';
import type { BackendInfo, BackendSpec, SynthesizedAudio } from './tasks.ts';

/** What `lectern gpu-server` runs with (config.ts makes it from flags and LECTERN_GPU_* variables). */
export interface GpuServerConfig {
  host: string;
  port: number;
  backend: string | null;
  device: 'cpu' | 'cuda';
  maxBatch: number;
  batchWindowMs: number;
  aligner: string;
  lipsyncProvider: string;
  modelsDir: string;
  workers: number;
  dataDir: string;
  /** Finished lip-sync results nobody fetched are removed after this long. */
  lipsyncTtlMs: number;
  maxUploadBytes: number;
  /** The `command` lip-sync provider: an operator's generator, with {audio} {video} {output} {preset} placeholders. */
  lipsyncCommand: string | null;
  lipsyncCommandPresets: string[];
  lipsyncCommandTimeoutMs: number;
  /** Transcription engine (`auto` → whisper when its model is installed, else pocketsphinx). */
  transcriber: string;
  /** JSON table of OpenAI voice names → Lectern voice ids for /v1/audio/speech (voices/openai-voices.json). */
  openaiVoices: string;
  logLevel: string;
  security: ServerSecurity;
  /** Records in the lip-sync table before POST /lipsync answers 503. */
  maxLipsyncJobs: number;
  /** SIGTERM: how long running lip-sync jobs may finish before they are cancelled. */
  shutdownGraceMs: number;
  /** `--backend process`: the operator's model program (a shell command line), started once per pool slot. */
  ttsProcess: string | null;
  /** Longest a request waits for a free model process, and longest a process may take to answer a batch. */
  ttsProcessTimeoutMs: number;
  /** Longest a model process may take to load its model and say hello. */
  ttsProcessStartTimeoutMs: number;
}

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
  /** The voice manifest's folder (default voices/): the Lectern voice ids /v1/audio/speech takes. */
  voicesDir?: string;
  /** Compute type part of the engine-cache key (default fp32). */
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

/** Audio handed to align/transcribe: mono samples at this rate (decodeUpload resamples to it). */
export const MODEL_SAMPLE_RATE = 16000;

export interface GpuHealth {
  status: 'ok' | 'loading' | 'error';
  [field: string]: unknown;
}

export interface GpuLipsync {
  table: LipsyncJobTable;
  /** The provider a request without `provider` (or with `auto`) gets; null when none is installed. */
  readonly default: LipsyncProvider | null;
  /** Installed providers by name. */
  readonly installed: ReadonlyMap<string, LipsyncProvider>;
  /** The named provider (absent or `auto`: the default); 422 naming why when it is not installed. */
  provider(name?: string | null): LipsyncProvider;
}

export interface GpuRuntime {
  readonly config: GpuServerSettings;
  readonly log: Logger;
  /** The TTS backend's name (from --backend, else chosen by what is installed). */
  readonly backendName: string;
  /** What the loaded backend reports; null while loading or after a failed load. */
  readonly backend: BackendInfo | null;
  requireBackend(): BackendInfo;
  /** `requestId` tags a model process's log lines; `signal` (the client went away) drops or cancels the request. */
  synthesize(request: SynthesisRequest & ProcessRequest): Promise<SynthesizedAudio>;
  referenceChecked(clip: Buffer): boolean;
  align(audio: Float32Array, text: string, language: string, aligner?: string | null): Promise<WordTiming[]>;
  transcribe(audio: Float32Array, language: string): Promise<string>;
  readonly lipsync: GpuLipsync;
  readonly metrics: GpuMetrics;
  /** Capabilities /health lists: synthesize once loaded, transcribe/align when their registries exist, lipsync with a provider. */
  capabilities(): string[];
  /** The /health body: `status` ok | loading | error, the spec's fields, then operator extras. */
  health(): GpuHealth;
  /** Fastify onRequest hook for routes that start model work: 503 once the server is shutting down. */
  acceptingWork(req: FastifyRequest, reply: FastifyReply): Promise<void>;
}

/** The runtime plus what only app.ts calls: start-up and the shutdown steps. */
export interface GpuRuntimeControl extends GpuRuntime {
  /** Loads the lip-sync providers and the backend in every worker; /health says `loading` until it resolves. */
  load(): Promise<void>;
  /** Stops taking model work (acceptingWork answers 503 from now on). */
  startDraining(): void;
  /** Rejects requests still waiting in the batcher. */
  stopBatching(): void;
  /** Closes the lip-sync table, the model processes and the worker pool. */
  close(): Promise<void>;
}

/** What /health shows of a model process's hello. */
function helloFields(h: ProcessHello) {
  return {
    protocol: h.protocol,
    name: h.name,
    languages: h.languages.map((l) => l.code),
    voice_cloning: h.voiceCloning,
    max_chunk_bytes: h.maxChunkBytes,
    sample_rate: h.sampleRate,
    word_timings: h.wordTimings,
    max_batch: h.maxBatch,
    reference_sample_rate: h.referenceSampleRate,
  };
}

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

/** Requests with the same key may share one model call: same backend, voice, language and reference clip. */
function batchKey(backend: string, r: SynthesisRequest): string {
  const refHash = r.refAudio ? createHash('sha256').update(r.refAudio).update('\0').update(r.refText ?? '').digest('hex') : '';
  return JSON.stringify([backend, r.voice ?? '', r.language.toLowerCase(), refHash]);
}

/** Worker-thread settings derived from the device: onnxruntime threads and batch per session. */
interface PoolTuning {
  intraOpThreads: number | undefined;
  sessionBatch: number | undefined;
}

function poolTuning(config: GpuServerSettings): PoolTuning {
  return {
    // Each pool worker has its own onnxruntime session and thread pool; left at the default
    // (every core each), N workers oversubscribe the CPU N-fold and spin against each other.
    intraOpThreads: config.intraOpThreads ?? (config.device === 'cpu' ? Math.max(1, Math.floor(availableParallelism() / config.workers)) : undefined),
    sessionBatch: config.sessionBatch ?? (config.device === 'cpu' ? 1 : undefined),
  };
}

function createSpeechPool(config: GpuServerSettings, tuning: PoolTuning): SpeechPool {
  return new SpeechPool({
    workers: config.workers,
    device: config.device,
    modelsDir: config.modelsDir,
    computeType: config.computeType ?? 'fp32',
    intraOpThreads: tuning.intraOpThreads,
    sessionBatch: tuning.sessionBatch,
    maxQueue: Number.MAX_SAFE_INTEGER, // back-pressure is applied per request (admitted)
  });
}

/**
 * `--backend process`: the operator's model program, one per pool slot, owned by this thread
 * (the pool's worker threads would only relay bytes; they stay free for /align and /transcribe).
 * Null for every other backend.
 */
function createModelProcesses(config: GpuServerSettings, backendName: string, log: Logger, onBatchMs: (ms: number) => void): ModelProcessPool | null {
  if (backendName !== 'process') return null;
  if (!config.ttsProcess) throw new Error('--backend process needs the model program (--tts-process or LECTERN_TTS_PROCESS)');
  return new ModelProcessPool({
    command: config.ttsProcess,
    slots: config.workers,
    device: config.device,
    scratchDir: path.join(config.dataDir, 'tts-process'),
    requestTimeoutMs: config.ttsProcessTimeoutMs,
    maxBatch: config.maxBatch,
    startTimeoutMs: config.ttsProcessStartTimeoutMs,
    log,
    onBatch: (_size, ms) => onBatchMs(ms),
  });
}

/** The lip-sync side of the runtime: the job table, the providers, and their loading at start-up. */
function createLipsync(config: GpuServerSettings, log: Logger): { lipsync: GpuLipsync; loadProviders(): Promise<void> } {
  const opts: LipsyncProviderOptions = {
    modelsDir: config.modelsDir,
    device: config.device,
    command: config.lipsyncCommand ?? null,
    commandPresets: config.lipsyncCommandPresets,
    commandTimeoutMs: config.lipsyncCommandTimeoutMs,
  };
  const installed = new Map<string, LipsyncProvider>();
  let fallback: LipsyncProvider | null = null;
  const table = new LipsyncJobTable({
    dir: path.join(config.dataDir, 'lipsync'),
    ttlMs: config.lipsyncTtlMs,
    maxJobs: config.maxLipsyncJobs,
    concurrency: config.lipsyncConcurrency ?? 1,
    onError: (id, err) => log.warn({ lipsync_id: id, err: (err as Error).message }, 'lip-sync generation failed'),
  });
  const lipsync: GpuLipsync = {
    table,
    get default() {
      return fallback;
    },
    installed,
    provider(name) {
      if (!name || name === 'auto') {
        if (!fallback) throw notReady('no lip-sync provider is installed on this server (set LECTERN_LIPSYNC_COMMAND for the command provider)');
        return fallback;
      }
      const p = installed.get(name);
      if (p) return p;
      const why = lipsyncUnavailableReason(name, opts);
      throw invalid(`lip-sync provider "${name}" is not installed (installed: ${[...installed.keys()].join(', ') || 'none'})${why ? `: ${why}` : ''}`);
    },
  };
  async function loadProviders(): Promise<void> {
    for (const name of installedLipsyncProviders(opts)) installed.set(name, await createLipsyncProvider(name, opts));
    if (config.lipsyncProvider === 'auto') {
      fallback = installed.values().next().value ?? null;
    } else {
      fallback = await createLipsyncProvider(config.lipsyncProvider, opts); // a named provider that is missing stops start-up
      installed.set(fallback.name, fallback);
    }
  }
  return { lipsync, loadProviders };
}

/**
 * Coalesces synthesis requests with the same batchKey into one model call: in the pool, or
 * in the model processes (whose raw samples are encoded to WAV here).
 */
function createSynthesisBatcher(
  config: GpuServerSettings,
  backend: BackendSpec,
  pool: SpeechPool,
  processes: ModelProcessPool | null,
  metrics: GpuMetrics,
): MicroBatcher<SynthesisRequest & ProcessRequest, SynthesizedAudio> {
  return new MicroBatcher<SynthesisRequest & ProcessRequest, SynthesizedAudio>({
    maxBatch: config.maxBatch,
    windowMs: config.batchWindowMs,
    run: (key, items) =>
      processes
        ? processes.synthesize(items, key).map(async (p) => {
            const o = await p;
            return { audio: await encodeAudio(o.samples, o.sampleRate, 'wav'), contentType: 'audio/wav', durationSeconds: o.samples.length / o.sampleRate, words: o.words };
          })
        : pool.synthesize(backend, items).then((r) => r.outputs),
    onDispatch: (b) => {
      metrics.batchSize.observe({ backend: backend.name }, b.size);
      for (const w of b.waitsMs) metrics.queueWait.observe({ stage: 'batcher' }, w);
    },
  });
}

/** What the pool's workers report, kept for /health (and counted in the metrics). */
interface PoolStats {
  cacheHits: number;
  cacheMisses: number;
  /** Models each worker has loaded, by worker id. */
  modelsLoaded: Map<number, string[]>;
}

function recordPoolStats(pool: SpeechPool, metrics: GpuMetrics): PoolStats {
  const stats: PoolStats = { cacheHits: 0, cacheMisses: 0, modelsLoaded: new Map() };
  pool.onStats = (s, waitMs) => {
    metrics.cache.inc({ model: s.model, result: s.cacheHit ? 'hit' : 'miss' });
    if (s.cacheHit) stats.cacheHits++;
    else stats.cacheMisses++;
    if (s.modelMs > 0) metrics.modelTime.observe({ model: s.model }, s.modelMs);
    metrics.queueWait.observe({ stage: 'pool' }, waitMs);
    stats.modelsLoaded.set(s.workerId, s.loaded);
  };
  return stats;
}

/** The back-pressure gate: at most `maxPending` model requests waiting, then 503. */
function createAdmission(maxPending: number) {
  let pending = 0;
  return {
    get pending() {
      return pending;
    },
    async admitted<T>(work: () => Promise<T>): Promise<T> {
      if (pending >= maxPending) throw overloaded('the inference server is overloaded; retry shortly');
      pending++;
      try {
        return await work();
      } finally {
        pending--;
      }
    },
  };
}

/** The TTS backend's state: what it reported once loaded, why it failed, and the batch size it takes. */
interface BackendState {
  info: BackendInfo | null;
  loadError: string | null;
  /** Requests per model call: --max-batch, or less when a model process declared less. */
  maxBatch: number;
}

/** Capabilities /health lists: none until the backend loads; lipsync with a provider. */
function capabilitiesOf(info: BackendInfo | null, lipsync: GpuLipsync): string[] {
  if (!info) return [];
  // Align and transcribe engines load lazily in the pool threads, on first use.
  const caps = ['synthesize', 'transcribe', 'align'];
  if (lipsync.default) caps.push('lipsync');
  return caps;
}

/** --aligner names a known aligner, or start-up stops. */
function checkAligner(aligner: string): void {
  if (!ALIGNERS.includes(aligner)) throw new LecternError('CONFIG', `unknown aligner "${aligner}" (--aligner; known: ${ALIGNERS.join(', ')})`);
}

/** Everything /health reads. */
interface HealthSources {
  config: GpuServerSettings;
  backendName: string;
  backend: BackendState;
  tuning: PoolTuning;
  pool: SpeechPool;
  batcher: MicroBatcher<SynthesisRequest & ProcessRequest, SynthesizedAudio>;
  processes: ModelProcessPool | null;
  stats: PoolStats;
  pending: number;
  lipsync: GpuLipsync;
  capabilities: string[];
}

/** The /health body: `status`, the spec's fields, then operator extras. */
function healthBody(h: HealthSources): GpuHealth {
  const { info, loadError } = h.backend;
  const lipsyncDefault = h.lipsync.default;
  // With model processes, healthy means one of them can take work now.
  const up = info !== null && (h.processes?.serving ?? true);
  return {
    status: up ? 'ok' : loadError || info ? 'error' : 'loading',
    backend: info?.name ?? h.backendName,
    output_format: info?.outputFormat ?? null,
    max_chunk_bytes: info?.maxChunkBytes ?? null,
    device: h.config.device,
    aligner: h.config.aligner,
    // operator extra: the languages each installed aligner covers (auto picks hmm where it can)
    aligners: alignerCoverage(),
    // operator extra: Lectern's build of the hmm aligner's decoder, or why it is missing (round 19)
    hmm_decoder: hmmDecoderBuild(),
    lipsync_provider: h.config.lipsyncProvider,
    capabilities: h.capabilities,
    // operator extras
    error: loadError,
    voice_cloning: info?.canClone ?? false,
    batched_backend: info?.batched ?? false,
    max_batch: h.backend.maxBatch,
    batch_window_ms: h.config.batchWindowMs,
    pool_size: h.pool.size,
    intra_op_threads: h.tuning.intraOpThreads ?? null,
    session_batch: h.tuning.sessionBatch ?? null,
    pool_queue: h.pool.queueSize,
    batcher_queue: h.batcher.queued,
    pending_requests: h.pending,
    models_loaded: [...new Set([...h.stats.modelsLoaded.values()].flat())].sort(),
    model_cache: { hits: h.stats.cacheHits, misses: h.stats.cacheMisses },
    lipsync_active_provider: lipsyncDefault?.name ?? null,
    lipsync_presets: lipsyncDefault?.presets() ?? [],
    lipsync_jobs: h.lipsync.table.counts(),
    model_process: h.processes?.hello ? { ...helloFields(h.processes.hello), ...h.processes.status() } : null,
  };
}

export function createGpuRuntime(config: GpuServerSettings, log: Logger): GpuRuntimeControl {
  const backendName = config.backend ?? chooseBackend(config.modelsDir);
  const backendSpec: BackendSpec = { name: backendName, module: config.extraBackends?.[backendName] };
  const tuning = poolTuning(config);
  const pool = createSpeechPool(config, tuning);
  const processes = createModelProcesses(config, backendName, log, (ms) => metrics.modelTime.observe({ model: 'tts:process' }, ms));
  const { lipsync, loadProviders } = createLipsync(config, log);
  // The batcher reports to the metrics and the metrics read the batcher: both only when called.
  const metrics = createMetrics({
    maxBatch: config.maxBatch,
    poolSize: () => pool.size,
    poolUtilization: () => pool.utilization,
    poolQueue: () => pool.queueSize,
    batcherQueue: () => batcher.queued,
    lipsyncStates: () => lipsync.table.counts(),
  });
  const batcher = createSynthesisBatcher(config, backendSpec, pool, processes, metrics);
  const stats = recordPoolStats(pool, metrics);
  const gate = createAdmission(config.maxPendingRequests ?? Math.max(256, config.workers * config.maxBatch * 16));
  const backend: BackendState = { info: null, loadError: null, maxBatch: config.maxBatch };
  let draining = false;

  /** Loads the backend in every worker, or starts the model processes and takes their batch size. */
  async function loadBackend(): Promise<BackendInfo> {
    if (!processes) return pool.loadEverywhere(backendSpec);
    const hello = await processes.start();
    backend.maxBatch = Math.min(config.maxBatch, hello.maxBatch);
    batcher.setMaxBatch(backend.maxBatch);
    return { name: `process:${hello.name}`, outputFormat: 'wav', maxChunkBytes: hello.maxChunkBytes, canClone: hello.voiceCloning, batched: hello.maxBatch > 1, languages: hello.languages };
  }

  const runtime: GpuRuntimeControl = {
    config,
    log,
    backendName,
    get backend() {
      return backend.info;
    },
    requireBackend() {
      if (backend.info) return backend.info;
      throw notReady(backend.loadError ? `backend ${backendName} failed to load: ${backend.loadError}` : `backend ${backendName} is still loading`);
    },
    synthesize: (request) => gate.admitted(() => batcher.submit(batchKey(backendName, request), request, request.signal)),
    referenceChecked: (clip) => processes?.knowsReference(clip) ?? false,
    align: (audio, text, language, aligner) =>
      gate.admitted(async () => (await pool.align(aligner || config.aligner, audio, MODEL_SAMPLE_RATE, text, language)).words),
    transcribe: (audio, language) =>
      gate.admitted(async () => (await pool.transcribe(config.transcriber ?? 'auto', audio, MODEL_SAMPLE_RATE, language)).text),
    lipsync,
    metrics,
    capabilities: () => capabilitiesOf(backend.info, lipsync),
    health: () =>
      healthBody({ config, backendName, backend, tuning, pool, batcher, processes, stats, pending: gate.pending, lipsync, capabilities: runtime.capabilities() }),
    async acceptingWork() {
      if (draining) throw notReady('the server is shutting down; send the request to another server');
    },

    async load() {
      try {
        checkAligner(config.aligner);
        await loadProviders();
        const t0 = performance.now();
        backend.info = await loadBackend();
        log.info({ backend: backend.info.name, workers: pool.size, ms: Math.round(performance.now() - t0) }, 'backend loaded');
      } catch (e) {
        backend.loadError = (e as Error).message;
        throw e;
      }
    },
    startDraining() {
      draining = true;
    },
    stopBatching() {
      batcher.close();
    },
    async close() {
      batcher.close();
      await lipsync.table.close();
      await processes?.close();
      await pool.close();
    },
  };
  return runtime;
}
