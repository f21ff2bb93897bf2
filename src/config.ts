// Environment + command-line flags → typed configuration.
// This is the only module that reads process.env; everything else receives a Config.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { LecternError } from './core/errors.ts';
import type { ToolPaths } from './media/tools.ts';
import { JobOptions, OUTPUT_FORMATS } from './pipelines/options.ts';

export type { ToolPaths } from './media/tools.ts';
import { isLoopback, parseTokens, tokenEntry, type ServerSecurity, type ServiceSecurity, type TokenEntry } from './security/tokens.ts';
import type { GpuServerConfig } from './gpu-server/runtime.ts';
import type { StorageConfig } from './storage.ts';

export type { ServerSecurity, ServiceSecurity } from './security/tokens.ts';
export type { GpuServerConfig } from './gpu-server/runtime.ts';
export type { StorageConfig } from './storage.ts';

export { PROJECT_ROOT } from './core/paths.ts';
import { PROJECT_ROOT } from './core/paths.ts';

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
  /** How often the process's GPU client checks every server's /health (LECTERN_GPU_HEALTH_MS). */
  gpuHealthIntervalMs: number;
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

/** How an error names an option: the flag and the environment variable that set it. */
export const optionName = (flag: string, envName: string) => `--${flag} (${envName})`;

/** An integer option in [min, max]; an error naming the option otherwise. */
function int(flags: Flags, env: Env, flag: string, envName: string, fallback: number, min = 0, max = Number.MAX_SAFE_INTEGER): number {
  const value = str(flags, flag, env, envName);
  if (value === undefined) return fallback;
  if (!/^-?\d+$/.test(value.trim())) throw new ConfigError(`${optionName(flag, envName)} must be an integer, got "${value}"`);
  const n = Number(value);
  if (n < min || n > max) throw new ConfigError(`${optionName(flag, envName)} must be between ${min} and ${max}, got ${n}`);
  return n;
}

/** One of a fixed set of words. */
function oneOf<T extends string>(flags: Flags, env: Env, flag: string, envName: string, allowed: readonly T[], fallback: T): T {
  const value = str(flags, flag, env, envName) ?? fallback;
  const choices = `${allowed.slice(0, -1).join(', ')} or ${allowed.at(-1)}`;
  if (!(allowed as readonly string[]).includes(value)) throw new ConfigError(`${optionName(flag, envName)} must be ${choices}, got "${value}"`);
  return value as T;
}

/** A comma-separated list of http(s) URLs, trailing slashes dropped. */
function urlList(flags: Flags, env: Env, flag: string, envName: string, allowStar = false): string[] {
  const items = (str(flags, flag, env, envName) ?? '').split(',').map((u) => u.trim().replace(/\/+$/, '')).filter(Boolean);
  for (const u of items) {
    if (allowStar && u === '*') continue;
    if (!/^https?:\/\/[^/\s]+(\/\S*)?$/.test(u)) throw new ConfigError(`${optionName(flag, envName)} must be a comma-separated list of http:// or https:// URLs${allowStar ? ' (or *)' : ''}, got "${u}"`);
  }
  return items;
}

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

const TRUE = ['1', 'true', 'yes'];
const FALSE = ['0', 'false', 'no'];

/** A switch: a bare flag, or 1/0, true/false, yes/no; anything else is an error naming the option. */
function bool(flags: Flags, flag: string, env: Env, envName: string, fallback: boolean): boolean {
  const f = flags[flag];
  const e = env[envName];
  const value = f !== undefined ? f : e === undefined || e === '' ? undefined : e;
  if (value === undefined) return fallback;
  if (typeof value === 'boolean') return value;
  const v = value.toLowerCase();
  if (TRUE.includes(v)) return true;
  if (FALSE.includes(v)) return false;
  throw new ConfigError(`${optionName(flag, envName)} is a switch: give it alone, or 1/0, true/false, yes/no, got "${value}"`);
}

function namespace(ns: string): string {
  if (!/^[a-z][a-z0-9_]{0,62}$/.test(ns)) throw new ConfigError(`${optionName('namespace', 'LECTERN_NAMESPACE')} must match [a-z][a-z0-9_]*, got "${ns}"`);
  return ns;
}

export function loadServiceConfig(flags: Flags = {}, env: Env = process.env): ServiceConfig {
  const dataDir = path.resolve(str(flags, 'data-dir', env, 'LECTERN_DATA_DIR') ?? path.join(PROJECT_ROOT, 'data'));
  const databaseUrl = str(flags, 'database-url', env, 'LECTERN_DATABASE_URL') ?? null;
  if (databaseUrl && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError(`${optionName('database-url', 'LECTERN_DATABASE_URL')} must be a postgres:// URL, got "${databaseUrl}"`);
  }
  const redisUrl = str(flags, 'redis-url', env, 'LECTERN_REDIS_URL') ?? null;
  if (redisUrl && !/^rediss?:\/\//.test(redisUrl)) {
    throw new ConfigError(`${optionName('redis-url', 'LECTERN_REDIS_URL')} must be a redis:// URL, got "${redisUrl}"`);
  }
  if (Boolean(databaseUrl) !== Boolean(redisUrl)) {
    throw new ConfigError('the distributed mode needs both LECTERN_DATABASE_URL and LECTERN_REDIS_URL (or neither, for the embedded default)');
  }
  const host = str(flags, 'host', env, 'LECTERN_HOST') ?? '127.0.0.1';
  const apiSecurity = serverSecurity(flags, env, host, 'LECTERN_API_TOKENS', 'lectern serve');
  const leaseMs = int(flags, env, 'lease-ms', 'LECTERN_LEASE_MS', 30_000, 500);
  const heartbeatMs = int(flags, env, 'heartbeat-ms', 'LECTERN_HEARTBEAT_MS', 10_000, 100);
  // A lease renewed no more often than it lasts would lapse while its worker is alive.
  if (heartbeatMs >= leaseMs) throw new ConfigError(`${optionName('heartbeat-ms', 'LECTERN_HEARTBEAT_MS')} (${heartbeatMs}) must be shorter than ${optionName('lease-ms', 'LECTERN_LEASE_MS')} (${leaseMs})`);
  return {
    dataDir,
    host,
    port: int(flags, env, 'port', 'LECTERN_PORT', 8000, 0, 65535),
    databaseUrl,
    redisUrl,
    namespace: namespace(str(flags, 'namespace', env, 'LECTERN_NAMESPACE') ?? 'lectern'),
    gpuServerUrls: urlList(flags, env, 'gpu-server-url', 'LECTERN_GPU_SERVER_URL'),
    gpuHealthIntervalMs: int(flags, env, 'gpu-health-ms', 'LECTERN_GPU_HEALTH_MS', 10_000, 100),
    modelsDir: path.resolve(str(flags, 'models-dir', env, 'LECTERN_MODELS_DIR') ?? path.join(PROJECT_ROOT, 'models')),
    // 2 GiB: an audiobook is often one M4B or WAV of several hundred MB (a read-along job's
    // recording); uploads are streamed to the store, so the limit bounds disk, not memory.
    maxUploadBytes: int(flags, env, 'max-upload-bytes', 'LECTERN_MAX_UPLOAD_BYTES', 2 * 1024 * 1024 * 1024, 1),
    webDir: path.resolve(str(flags, 'web-dir', env, 'LECTERN_WEB_DIR') ?? path.join(PROJECT_ROOT, 'web', 'dist')),
    workerConcurrency: int(flags, env, 'concurrency', 'LECTERN_WORKER_CONCURRENCY', 2, 1, 64),
    embeddedWorker: !bool(flags, 'no-worker', env, 'LECTERN_NO_EMBEDDED_WORKER', false),
    leaseMs,
    heartbeatMs,
    tts: {
      backend: str(flags, 'tts-backend', env, 'LECTERN_TTS_BACKEND') ?? 'auto',
      voice: str(flags, 'voice', env, 'LECTERN_TTS_VOICE') ?? null,
      aligner: str(flags, 'aligner', env, 'LECTERN_ALIGNER') ?? 'auto',
    },
    lipsync: {
      provider: str(flags, 'lipsync-provider', env, 'LECTERN_LIPSYNC_PROVIDER') ?? 'auto',
      command: str(flags, 'lipsync-command', env, 'LECTERN_LIPSYNC_COMMAND') ?? null,
      commandPresets: (str(flags, 'lipsync-presets', env, 'LECTERN_LIPSYNC_PRESETS') ?? 'default').split(',').map((p) => p.trim()).filter(Boolean),
      commandTimeoutMs: int(flags, env, 'lipsync-timeout-s', 'LECTERN_LIPSYNC_TIMEOUT_S', 3600, 1) * 1000,
      // How often the worker polls a GPU server's lip-sync job (spec default 5 s).
      pollIntervalMs: int(flags, env, 'lipsync-poll-ms', 'LECTERN_LIPSYNC_POLL_MS', 5000, 50),
    },
    logLevel: oneOf(flags, env, 'log-level', 'LECTERN_LOG_LEVEL', LOG_LEVELS, 'info'),
    security: {
      ...apiSecurity,
      admins: adminNames(env, apiSecurity.tokens),
      // From the environment only, like the tokens.
      corsOrigins: urlList({}, env, 'cors-origins', 'LECTERN_CORS_ORIGINS', true),
      rateLimitPerMinute: int(flags, env, 'rate-limit', 'LECTERN_RATE_LIMIT_PER_MINUTE', 1200, 0),
      maxActiveJobsPerToken: int(flags, env, 'max-active-jobs', 'LECTERN_MAX_ACTIVE_JOBS', 20, 0),
      maxBodyBytes: int(flags, env, 'max-body-bytes', 'LECTERN_MAX_BODY_BYTES', 1024 * 1024, 1024),
    },
    gpuServerToken: env.LECTERN_GPU_SERVER_TOKEN || null,
    shutdownGraceMs: int(flags, env, 'shutdown-grace-ms', 'LECTERN_SHUTDOWN_GRACE_MS', 10_000, 0),
    storage: storageConfig(flags, env),
  };
}

function storageConfig(flags: Flags, env: Env): StorageConfig {
  const url = str(flags, 'storage-url', env, 'LECTERN_STORAGE_URL');
  const common = {
    download: oneOf(flags, env, 'storage-download', 'LECTERN_STORAGE_DOWNLOAD', ['redirect', 'proxy'] as const, 'redirect'),
    // At most 7 days: the longest a SigV4 presigned URL may live.
    linkExpiresSeconds: int(flags, env, 'storage-link-expires-s', 'LECTERN_STORAGE_LINK_EXPIRES_S', 300, 1, 7 * 24 * 3600),
    sweepIntervalSeconds: int(flags, env, 'storage-sweep-interval-s', 'LECTERN_STORAGE_SWEEP_INTERVAL_S', 3600, 0),
  };
  if (!url) return { s3: null, ...common };
  // Bucket names (S3's rules): 3-63 lower-case letters, digits, dots and hyphens.
  const m = /^s3:\/\/([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(?:\/(.*))?$/.exec(url);
  if (!m) throw new ConfigError(`LECTERN_STORAGE_URL must be s3://BUCKET or s3://BUCKET/PREFIX (flag --storage-url), got "${url}"`);
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
  const device = oneOf(flags, env, 'device', 'LECTERN_GPU_DEVICE', ['cpu', 'cuda'] as const, 'cpu');
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
    port: int(flags, env, 'port', 'LECTERN_GPU_PORT', 8100, 0, 65535),
    backend,
    device,
    maxBatch: int(flags, env, 'max-batch', 'LECTERN_GPU_MAX_BATCH', 8, 1, 256),
    batchWindowMs: int(flags, env, 'batch-window-ms', 'LECTERN_GPU_BATCH_WINDOW_MS', 30, 0, 10_000),
    aligner: str(flags, 'aligner', env, 'LECTERN_GPU_ALIGNER') ?? 'auto',
    lipsyncProvider: str(flags, 'lipsync-provider', env, 'LECTERN_GPU_LIPSYNC_PROVIDER') ?? 'auto',
    modelsDir: path.resolve(str(flags, 'models-dir', env, 'LECTERN_MODELS_DIR') ?? path.join(PROJECT_ROOT, 'models')),
    workers: int(flags, env, 'workers', 'LECTERN_GPU_WORKERS', cores, 1, 256),
    dataDir: path.resolve(str(flags, 'data-dir', env, 'LECTERN_GPU_DATA_DIR') ?? path.join(PROJECT_ROOT, 'data', 'gpu-server')),
    lipsyncTtlMs: int(flags, env, 'lipsync-ttl-s', 'LECTERN_GPU_LIPSYNC_TTL_S', 3600, 1) * 1000,
    maxUploadBytes: int(flags, env, 'max-upload-bytes', 'LECTERN_GPU_MAX_UPLOAD_BYTES', 200 * 1024 * 1024, 1),
    lipsyncCommand: str(flags, 'lipsync-command', env, 'LECTERN_LIPSYNC_COMMAND') ?? null,
    lipsyncCommandPresets: (str(flags, 'lipsync-presets', env, 'LECTERN_LIPSYNC_PRESETS') ?? 'default').split(',').map((p) => p.trim()).filter(Boolean),
    lipsyncCommandTimeoutMs: int(flags, env, 'lipsync-timeout-s', 'LECTERN_LIPSYNC_TIMEOUT_S', 3600, 1) * 1000,
    transcriber: str(flags, 'transcriber', env, 'LECTERN_GPU_TRANSCRIBER') ?? 'auto',
    openaiVoices: path.resolve(str(flags, 'openai-voices', env, 'LECTERN_OPENAI_VOICES') ?? path.join(PROJECT_ROOT, 'voices', 'openai-voices.json')),
    logLevel: oneOf(flags, env, 'log-level', 'LECTERN_LOG_LEVEL', LOG_LEVELS, 'info'),
    security: serverSecurity(flags, env, host, 'LECTERN_GPU_TOKENS', 'lectern gpu-server'),
    maxLipsyncJobs: int(flags, env, 'max-lipsync-jobs', 'LECTERN_GPU_MAX_LIPSYNC_JOBS', 1000, 1),
    shutdownGraceMs: int(flags, env, 'shutdown-grace-ms', 'LECTERN_SHUTDOWN_GRACE_MS', 10_000, 0),
    ttsProcess,
    ttsProcessTimeoutMs: int(flags, env, 'tts-process-timeout-s', 'LECTERN_TTS_PROCESS_TIMEOUT_S', 120, 1) * 1000,
    ttsProcessStartTimeoutMs: int(flags, env, 'tts-process-start-timeout-s', 'LECTERN_TTS_PROCESS_START_TIMEOUT_S', 600, 1) * 1000,
  };
}

/**
 * `lectern run`'s own flags, checked before anything runs: each bad value is an error naming
 * the flag (the video bounds are the job API's, from the same schema).
 */
export function checkRunFlags(flags: Flags): void {
  const value = (name: string): string | undefined => {
    const v = flags[name];
    if (v === undefined) return undefined;
    if (typeof v !== 'string' || v === '') throw new ConfigError(`--${name} needs a value`);
    return v;
  };
  for (const name of ['out', 'language', 'voice']) value(name);
  const speed = value('speed');
  if (speed !== undefined) {
    const n = Number(speed);
    const { minimum, maximum } = JobOptions.properties.speed;
    if (!/^\d+(\.\d+)?$/.test(speed) || n < minimum! || n > maximum!) throw new ConfigError(`--speed must be a number between ${minimum} and ${maximum}, got "${speed}"`);
  }
  const format = value('format');
  if (format !== undefined && !(OUTPUT_FORMATS as readonly string[]).includes(format)) throw new ConfigError(`--format must be one of ${OUTPUT_FORMATS.join(', ')}, got "${format}"`);
  for (const name of ['width', 'height', 'fps'] as const) {
    const v = value(name);
    if (v === undefined) continue;
    const { minimum, maximum } = JobOptions.properties[name];
    if (!/^\d+$/.test(v) || Number(v) < minimum! || Number(v) > maximum!) throw new ConfigError(`--${name} must be an integer between ${minimum} and ${maximum}, got "${v}"`);
  }
  oneOf(flags, {}, 'log-level', 'LECTERN_LOG_LEVEL', LOG_LEVELS, 'warn');
}

/** External programs: an explicit path wins, then PATH. The entry point hands them to media/tools.ts. */
export function loadToolPaths(env: Env = process.env): ToolPaths {
  return {
    ffmpeg: env.LECTERN_FFMPEG || 'ffmpeg',
    ffprobe: env.LECTERN_FFPROBE || 'ffprobe',
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
