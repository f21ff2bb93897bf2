// Environment + command-line flags → typed configuration.
// This is the only module that reads process.env; everything else receives a Config.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { LecternError } from './core/errors.ts';
import { isLoopback, parseTokens, tokenEntry, type TokenEntry } from './security/tokens.ts';

export const PROJECT_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

export type Env = Record<string, string | undefined>;

/** Flags parsed from the command line: `--data-dir x` → { 'data-dir': 'x' }, `--insecure` → { insecure: true }. */
export type Flags = Record<string, string | boolean>;

export interface ServiceConfig {
  /** Where SQLite, uploads, outputs and caches live. */
  dataDir: string;
  host: string;
  port: number;
  /** postgres://… → PostgreSQL store; unset → SQLite in dataDir. */
  databaseUrl: string | null;
  /** redis://… → BullMQ queue, Redis KV and pub/sub; unset → embedded queue/KV/events. */
  redisUrl: string | null;
  /** PostgreSQL schema and Redis key prefix, so several installs (or test runs) share one server. */
  namespace: string;
  /** Comma-separated GPU inference servers; empty → speech runs locally. */
  gpuServerUrls: string[];
  modelsDir: string;
  /** Largest accepted upload in bytes (413 above). */
  maxUploadBytes: number;
  /** The built web app served at `/` (LECTERN_WEB_DIR; default web/dist of this checkout). */
  webDir: string;
  /** Pipeline jobs one worker process runs at once. */
  workerConcurrency: number;
  /** `serve` runs the worker in-process (embedded default) unless told not to. */
  embeddedWorker: boolean;
  /** Embedded queue: how long a lease lasts without a heartbeat before another worker may take the task. */
  leaseMs: number;
  heartbeatMs: number;
  /** Local speech: `auto` (the engine per voice; no voice → Piper where installed for the language, else eSpeak NG), `espeak` or `piper`; the aligner for chunks an engine gave no word timings for. */
  tts: { backend: string; voice: string | null; aligner: string };
  /** Lip-sync on the worker (no GPU server): provider (`auto` → best installed) and the command provider's settings. */
  lipsync: { provider: string; command: string | null; commandPresets: string[]; commandTimeoutMs: number; pollIntervalMs: number };
  logLevel: string;
  security: ServiceSecurity;
  /** Bearer token the worker and the voice library send to the GPU servers (LECTERN_GPU_SERVER_TOKEN). */
  gpuServerToken: string | null;
  /** SIGTERM: how long requests in flight (and running tasks) get before connections are cut. */
  shutdownGraceMs: number;
  storage: StorageConfig;
}

/** Where uploads and outputs live: the data dir, or an S3-compatible bucket (LECTERN_STORAGE_URL). */
export interface StorageConfig {
  /** null → the local data dir. */
  s3: {
    bucket: string;
    prefix: string;
    /** AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL; set → path-style addressing. */
    endpoint: string | null;
    region: string | null;
    /** From AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY(/AWS_SESSION_TOKEN); null → the SDK's chain (profiles, instance roles). */
    credentials: { accessKeyId: string; secretAccessKey: string; sessionToken?: string } | null;
  } | null;
  /** LECTERN_STORAGE_DOWNLOAD: `redirect` to a presigned URL (default) or `proxy` through the API. */
  download: 'redirect' | 'proxy';
  /** LECTERN_STORAGE_LINK_EXPIRES_S: lifetime of presigned download URLs (default 300). */
  linkExpiresSeconds: number;
  /** LECTERN_STORAGE_SWEEP_INTERVAL_S: how often `serve` removes orphaned objects (default 3600; 0 → start-up only). */
  sweepIntervalSeconds: number;
}

/** Who may call a server, and how much. */
export interface ServerSecurity {
  /** Hashed bearer tokens; empty → authentication off (allowed on loopback, or with --insecure). */
  tokens: TokenEntry[];
  /** `--insecure`: listening beyond loopback without tokens was asked for explicitly. */
  insecure: boolean;
  /** Guards /metrics alone (LECTERN_METRICS_TOKEN); null → open on loopback, else the API tokens. */
  metricsToken: TokenEntry | null;
  /** Whether the listen address is loopback only. */
  loopback: boolean;
}

export interface ServiceSecurity extends ServerSecurity {
  /** Token names that see and act on every job and upload (LECTERN_API_ADMINS); every other token sees its own. */
  admins: string[];
  /** Origins allowed by CORS; empty → no CORS headers at all. */
  corsOrigins: string[];
  /** Requests per minute per token (per IP with authentication off) on /api/*; 0 → no limit. */
  rateLimitPerMinute: number;
  /** Pending + running jobs one token may have; 0 → no limit. */
  maxActiveJobsPerToken: number;
  /** Largest JSON request body in bytes. */
  maxBodyBytes: number;
}

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

export interface ToolPaths {
  ffmpeg: string;
  ffprobe: string;
  espeak: string;
}

export class ConfigError extends LecternError {
  override name = 'ConfigError';
  constructor(message: string) {
    super('CONFIG', message);
  }
}

function str(flags: Flags, flag: string, env: Env, envName: string): string | undefined {
  const f = flags[flag];
  if (typeof f === 'string') return f;
  const e = env[envName];
  return e === undefined || e === '' ? undefined : e;
}

function int(value: string | undefined, fallback: number, name: string, min = 0, max = Number.MAX_SAFE_INTEGER): number {
  if (value === undefined) return fallback;
  if (!/^-?\d+$/.test(value.trim())) throw new ConfigError(`${name} must be an integer, got "${value}"`);
  const n = Number(value);
  if (n < min || n > max) throw new ConfigError(`${name} must be between ${min} and ${max}, got ${n}`);
  return n;
}

function bool(flags: Flags, flag: string, env: Env, envName: string, fallback: boolean): boolean {
  const f = flags[flag];
  if (f !== undefined) return f === true || f === 'true' || f === '1';
  const e = env[envName];
  if (e === undefined || e === '') return fallback;
  return e === '1' || e.toLowerCase() === 'true' || e.toLowerCase() === 'yes';
}

function namespace(ns: string): string {
  if (!/^[a-z][a-z0-9_]{0,62}$/.test(ns)) throw new ConfigError(`LECTERN_NAMESPACE must match [a-z][a-z0-9_]*, got "${ns}"`);
  return ns;
}

export function loadServiceConfig(flags: Flags = {}, env: Env = process.env): ServiceConfig {
  const dataDir = path.resolve(str(flags, 'data-dir', env, 'LECTERN_DATA_DIR') ?? path.join(PROJECT_ROOT, 'data'));
  const gpu = str(flags, 'gpu-server-url', env, 'LECTERN_GPU_SERVER_URL');
  const databaseUrl = str(flags, 'database-url', env, 'LECTERN_DATABASE_URL') ?? null;
  if (databaseUrl && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError(`LECTERN_DATABASE_URL must be a postgres:// URL, got "${databaseUrl}"`);
  }
  const redisUrl = str(flags, 'redis-url', env, 'LECTERN_REDIS_URL') ?? null;
  if (redisUrl && !/^rediss?:\/\//.test(redisUrl)) {
    throw new ConfigError(`LECTERN_REDIS_URL must be a redis:// URL, got "${redisUrl}"`);
  }
  if (Boolean(databaseUrl) !== Boolean(redisUrl)) {
    throw new ConfigError('the distributed mode needs both LECTERN_DATABASE_URL and LECTERN_REDIS_URL (or neither, for the embedded default)');
  }
  const host = str(flags, 'host', env, 'LECTERN_HOST') ?? '127.0.0.1';
  const apiSecurity = serverSecurity(flags, env, host, 'LECTERN_API_TOKENS', 'lectern serve');
  return {
    dataDir,
    host,
    port: int(str(flags, 'port', env, 'LECTERN_PORT'), 8000, 'port', 0, 65535),
    databaseUrl,
    redisUrl,
    namespace: namespace(str(flags, 'namespace', env, 'LECTERN_NAMESPACE') ?? 'lectern'),
    gpuServerUrls: gpu ? gpu.split(',').map((u) => u.trim().replace(/\/+$/, '')).filter(Boolean) : [],
    modelsDir: path.resolve(str(flags, 'models-dir', env, 'LECTERN_MODELS_DIR') ?? path.join(PROJECT_ROOT, 'models')),
    maxUploadBytes: int(str(flags, 'max-upload-bytes', env, 'LECTERN_MAX_UPLOAD_BYTES'), 200 * 1024 * 1024, 'max upload bytes', 1),
    webDir: path.resolve(str(flags, 'web-dir', env, 'LECTERN_WEB_DIR') ?? path.join(PROJECT_ROOT, 'web', 'dist')),
    workerConcurrency: int(str(flags, 'concurrency', env, 'LECTERN_WORKER_CONCURRENCY'), 2, 'worker concurrency', 1, 64),
    embeddedWorker: !bool(flags, 'no-worker', env, 'LECTERN_NO_EMBEDDED_WORKER', false),
    leaseMs: int(str(flags, 'lease-ms', env, 'LECTERN_LEASE_MS'), 30_000, 'lease ms', 500),
    heartbeatMs: int(str(flags, 'heartbeat-ms', env, 'LECTERN_HEARTBEAT_MS'), 10_000, 'heartbeat ms', 100),
    tts: {
      backend: str(flags, 'tts-backend', env, 'LECTERN_TTS_BACKEND') ?? 'auto',
      voice: str(flags, 'voice', env, 'LECTERN_TTS_VOICE') ?? null,
      aligner: str(flags, 'aligner', env, 'LECTERN_ALIGNER') ?? 'auto',
    },
    lipsync: {
      provider: str(flags, 'lipsync-provider', env, 'LECTERN_LIPSYNC_PROVIDER') ?? 'auto',
      command: str(flags, 'lipsync-command', env, 'LECTERN_LIPSYNC_COMMAND') ?? null,
      commandPresets: (str(flags, 'lipsync-presets', env, 'LECTERN_LIPSYNC_PRESETS') ?? 'default').split(',').map((p) => p.trim()).filter(Boolean),
      commandTimeoutMs: int(str(flags, 'lipsync-timeout-s', env, 'LECTERN_LIPSYNC_TIMEOUT_S'), 3600, '--lipsync-timeout-s', 1) * 1000,
      // How often the worker polls a GPU server's lip-sync job (spec default 5 s).
      pollIntervalMs: int(str(flags, 'lipsync-poll-ms', env, 'LECTERN_LIPSYNC_POLL_MS'), 5000, '--lipsync-poll-ms', 50),
    },
    logLevel: str(flags, 'log-level', env, 'LECTERN_LOG_LEVEL') ?? 'info',
    security: {
      ...apiSecurity,
      admins: adminNames(env, apiSecurity.tokens),
      corsOrigins: (env.LECTERN_CORS_ORIGINS ?? '').split(',').map((o) => o.trim().replace(/\/+$/, '')).filter(Boolean),
      rateLimitPerMinute: int(str(flags, 'rate-limit', env, 'LECTERN_RATE_LIMIT_PER_MINUTE'), 1200, 'LECTERN_RATE_LIMIT_PER_MINUTE', 0),
      maxActiveJobsPerToken: int(str(flags, 'max-active-jobs', env, 'LECTERN_MAX_ACTIVE_JOBS'), 20, 'LECTERN_MAX_ACTIVE_JOBS', 0),
      maxBodyBytes: int(str(flags, 'max-body-bytes', env, 'LECTERN_MAX_BODY_BYTES'), 1024 * 1024, 'LECTERN_MAX_BODY_BYTES', 1024),
    },
    gpuServerToken: env.LECTERN_GPU_SERVER_TOKEN || null,
    shutdownGraceMs: int(str(flags, 'shutdown-grace-ms', env, 'LECTERN_SHUTDOWN_GRACE_MS'), 10_000, 'LECTERN_SHUTDOWN_GRACE_MS', 0),
    storage: storageConfig(flags, env),
  };
}

function storageConfig(flags: Flags, env: Env): StorageConfig {
  const url = str(flags, 'storage-url', env, 'LECTERN_STORAGE_URL');
  const download = str(flags, 'storage-download', env, 'LECTERN_STORAGE_DOWNLOAD') ?? 'redirect';
  if (download !== 'redirect' && download !== 'proxy') throw new ConfigError(`LECTERN_STORAGE_DOWNLOAD must be redirect or proxy, got "${download}"`);
  const common = {
    download: download as StorageConfig['download'],
    // At most 7 days: the longest a SigV4 presigned URL may live.
    linkExpiresSeconds: int(str(flags, 'storage-link-expires-s', env, 'LECTERN_STORAGE_LINK_EXPIRES_S'), 300, 'LECTERN_STORAGE_LINK_EXPIRES_S', 1, 7 * 24 * 3600),
    sweepIntervalSeconds: int(str(flags, 'storage-sweep-interval-s', env, 'LECTERN_STORAGE_SWEEP_INTERVAL_S'), 3600, 'LECTERN_STORAGE_SWEEP_INTERVAL_S', 0),
  };
  if (!url) return { s3: null, ...common };
  // Bucket names (S3's rules): 3-63 lower-case letters, digits, dots and hyphens.
  const m = /^s3:\/\/([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(?:\/(.*))?$/.exec(url);
  if (!m) throw new ConfigError(`LECTERN_STORAGE_URL must be s3://BUCKET or s3://BUCKET/PREFIX, got "${url}"`);
  const prefix = (m[2] ?? '').replace(/^\/+|\/+$/g, '');
  if (prefix.split('/').some((p) => p === '.' || p === '..') || /\/\//.test(prefix)) throw new ConfigError(`LECTERN_STORAGE_URL has an invalid prefix "${prefix}"`);
  const endpoint = env.AWS_ENDPOINT_URL_S3 || env.AWS_ENDPOINT_URL || null;
  if (endpoint && !/^https?:\/\/[^/]+/.test(endpoint)) throw new ConfigError(`AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL must be an http(s):// URL, got "${endpoint}"`);
  const keyId = env.AWS_ACCESS_KEY_ID;
  const secret = env.AWS_SECRET_ACCESS_KEY;
  return {
    s3: {
      bucket: m[1]!,
      prefix,
      endpoint,
      region: env.AWS_REGION || env.AWS_DEFAULT_REGION || null,
      credentials: keyId && secret ? { accessKeyId: keyId, secretAccessKey: secret, ...(env.AWS_SESSION_TOKEN ? { sessionToken: env.AWS_SESSION_TOKEN } : {}) } : null,
    },
    ...common,
  };
}

/**
 * Tokens from `<envName>` and from a file (`--tokens-file` / `<envName>_FILE`, one `name:token`
 * per line, so tokens need not sit in the environment). Tokens are never read from flags:
 * a command line is visible to every user of the machine. Without tokens, a non-loopback
 * listener is refused unless `--insecure` says so.
 */
function serverSecurity(flags: Flags, env: Env, host: string, envName: string, command: string): ServerSecurity {
  let tokens: TokenEntry[] = [];
  try {
    tokens = parseTokens(env[envName] ?? '', envName);
    const file = str(flags, 'tokens-file', env, `${envName}_FILE`);
    if (file) {
      let text: string;
      try {
        text = fs.readFileSync(path.resolve(file), 'utf8');
      } catch (e) {
        throw new Error(`cannot read the tokens file ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
      }
      const more = parseTokens(text, `tokens file ${file}`);
      const dup = more.find((m) => tokens.some((t) => t.name === m.name));
      if (dup) throw new Error(`the token name "${dup.name}" is in both ${envName} and ${file}`);
      tokens = [...tokens, ...more];
    }
  } catch (e) {
    throw new ConfigError((e as Error).message);
  }
  const insecure = bool(flags, 'insecure', env, 'LECTERN_INSECURE', false);
  const loopback = isLoopback(host);
  if (!loopback && tokens.length === 0 && !insecure) {
    throw new ConfigError(
      `${command} would listen on ${host} without authentication: set ${envName} (or --tokens-file) to name:token entries, or pass --insecure to allow it explicitly`,
    );
  }
  const metrics = env.LECTERN_METRICS_TOKEN;
  return { tokens, insecure, metricsToken: metrics ? tokenEntry('metrics', metrics) : null, loopback };
}

/**
 * LECTERN_API_ADMINS: comma-separated token names that see every job and upload. Each must
 * name a configured token (a typo would otherwise leave the admin seeing only their own).
 */
function adminNames(env: Env, tokens: readonly TokenEntry[]): string[] {
  const names = [...new Set((env.LECTERN_API_ADMINS ?? '').split(',').map((n) => n.trim()).filter(Boolean))];
  if (names.length > 0 && tokens.length === 0) {
    throw new ConfigError('LECTERN_API_ADMINS is set but there are no tokens (LECTERN_API_TOKENS): without authentication everyone sees everything already');
  }
  const unknown = names.filter((n) => !tokens.some((t) => t.name === n));
  if (unknown.length > 0) throw new ConfigError(`LECTERN_API_ADMINS names ${unknown.map((n) => `"${n}"`).join(', ')}, which no token in LECTERN_API_TOKENS (or its file) is called`);
  return names;
}

export function loadGpuServerConfig(flags: Flags = {}, env: Env = process.env): GpuServerConfig {
  const device = str(flags, 'device', env, 'LECTERN_GPU_DEVICE') ?? 'cpu';
  if (device !== 'cpu' && device !== 'cuda') throw new ConfigError(`--device must be cpu or cuda, got "${device}"`);
  const cores = Math.max(1, (globalThis as { navigator?: { hardwareConcurrency?: number } }).navigator?.hardwareConcurrency ?? 2);
  const host = str(flags, 'host', env, 'LECTERN_GPU_HOST') ?? '127.0.0.1';
  const ttsProcess = str(flags, 'tts-process', env, 'LECTERN_TTS_PROCESS')?.trim() || null;
  // A model program given alone means the process backend.
  const backend = str(flags, 'backend', env, 'LECTERN_GPU_BACKEND') ?? (ttsProcess ? 'process' : null);
  if (backend === 'process' && !ttsProcess) {
    throw new ConfigError("--backend process needs the model program: --tts-process 'python3 my_adapter.py' or LECTERN_TTS_PROCESS (see examples/tts-process/)");
  }
  return {
    host,
    port: int(str(flags, 'port', env, 'LECTERN_GPU_PORT'), 8100, 'port', 0, 65535),
    backend,
    device,
    maxBatch: int(str(flags, 'max-batch', env, 'LECTERN_GPU_MAX_BATCH'), 8, '--max-batch', 1, 256),
    batchWindowMs: int(str(flags, 'batch-window-ms', env, 'LECTERN_GPU_BATCH_WINDOW_MS'), 30, '--batch-window-ms', 0, 10_000),
    aligner: str(flags, 'aligner', env, 'LECTERN_GPU_ALIGNER') ?? 'auto',
    lipsyncProvider: str(flags, 'lipsync-provider', env, 'LECTERN_GPU_LIPSYNC_PROVIDER') ?? 'auto',
    modelsDir: path.resolve(str(flags, 'models-dir', env, 'LECTERN_MODELS_DIR') ?? path.join(PROJECT_ROOT, 'models')),
    workers: int(str(flags, 'workers', env, 'LECTERN_GPU_WORKERS'), cores, '--workers', 1, 256),
    dataDir: path.resolve(str(flags, 'data-dir', env, 'LECTERN_GPU_DATA_DIR') ?? path.join(PROJECT_ROOT, 'data', 'gpu-server')),
    lipsyncTtlMs: int(str(flags, 'lipsync-ttl-s', env, 'LECTERN_GPU_LIPSYNC_TTL_S'), 3600, '--lipsync-ttl-s', 1) * 1000,
    maxUploadBytes: int(str(flags, 'max-upload-bytes', env, 'LECTERN_GPU_MAX_UPLOAD_BYTES'), 200 * 1024 * 1024, 'max upload bytes', 1),
    lipsyncCommand: str(flags, 'lipsync-command', env, 'LECTERN_LIPSYNC_COMMAND') ?? null,
    lipsyncCommandPresets: (str(flags, 'lipsync-presets', env, 'LECTERN_LIPSYNC_PRESETS') ?? 'default').split(',').map((p) => p.trim()).filter(Boolean),
    lipsyncCommandTimeoutMs: int(str(flags, 'lipsync-timeout-s', env, 'LECTERN_LIPSYNC_TIMEOUT_S'), 3600, '--lipsync-timeout-s', 1) * 1000,
    transcriber: str(flags, 'transcriber', env, 'LECTERN_GPU_TRANSCRIBER') ?? 'auto',
    openaiVoices: path.resolve(str(flags, 'openai-voices', env, 'LECTERN_OPENAI_VOICES') ?? path.join(PROJECT_ROOT, 'voices', 'openai-voices.json')),
    logLevel: str(flags, 'log-level', env, 'LECTERN_LOG_LEVEL') ?? 'info',
    security: serverSecurity(flags, env, host, 'LECTERN_GPU_TOKENS', 'lectern gpu-server'),
    maxLipsyncJobs: int(str(flags, 'max-lipsync-jobs', env, 'LECTERN_GPU_MAX_LIPSYNC_JOBS'), 1000, 'LECTERN_GPU_MAX_LIPSYNC_JOBS', 1),
    shutdownGraceMs: int(str(flags, 'shutdown-grace-ms', env, 'LECTERN_SHUTDOWN_GRACE_MS'), 10_000, 'LECTERN_SHUTDOWN_GRACE_MS', 0),
    ttsProcess,
    ttsProcessTimeoutMs: int(str(flags, 'tts-process-timeout-s', env, 'LECTERN_TTS_PROCESS_TIMEOUT_S'), 120, '--tts-process-timeout-s', 1) * 1000,
    ttsProcessStartTimeoutMs: int(str(flags, 'tts-process-start-timeout-s', env, 'LECTERN_TTS_PROCESS_START_TIMEOUT_S'), 600, '--tts-process-start-timeout-s', 1) * 1000,
  };
}

/** External programs: an explicit path wins, then PATH. */
export function loadToolPaths(env: Env = process.env): ToolPaths {
  return {
    ffmpeg: env.LECTERN_FFMPEG || 'ffmpeg',
    ffprobe: env.LECTERN_FFPROBE || 'ffprobe',
    espeak: env.LECTERN_ESPEAK || 'espeak-ng',
  };
}

/** Parses `--key value`, `--key=value` and bare `--flag`; the rest are positional. */
export function parseArgs(argv: string[]): { positional: string[]; flags: Flags } {
  const positional: string[] = [];
  const flags: Flags = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a.startsWith('--')) {
      const eq = a.indexOf('=');
      if (eq > 0) {
        flags[a.slice(2, eq)] = a.slice(eq + 1);
      } else {
        const next = argv[i + 1];
        if (next !== undefined && !next.startsWith('--')) {
          flags[a.slice(2)] = next;
          i++;
        } else {
          flags[a.slice(2)] = true;
        }
      }
    } else {
      positional.push(a);
    }
  }
  return { positional, flags };
}
