// Every command's options, one test per bad value (piscina's option-validation tests): each is
// refused before anything starts, with a ConfigError whose message names the option.
// `lectern serve` and `lectern worker` share loadServiceConfig; `lectern gpu-server` has
// loadGpuServerConfig; `lectern run` adds its own flags (checkRunFlags). Two runs of the real
// CLI check that such an error reaches the terminal as one line and exit status 1.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkRunFlags, ConfigError, loadGpuServerConfig, loadServiceConfig, PROJECT_ROOT, type Env, type Flags } from '../src/config.ts';

type Case = [what: string, flags: Flags, env: Env, message: RegExp];

const serviceCases: Case[] = [
  ['--port not a number', { port: 'eighty' }, {}, /--port \(LECTERN_PORT\) must be an integer, got "eighty"/],
  ['--port above 65535', { port: '70000' }, {}, /--port \(LECTERN_PORT\) must be between 0 and 65535, got 70000/],
  ['LECTERN_PORT negative', {}, { LECTERN_PORT: '-1' }, /--port \(LECTERN_PORT\) must be between 0 and 65535, got -1/],
  ['--concurrency 0', { concurrency: '0' }, {}, /--concurrency \(LECTERN_WORKER_CONCURRENCY\) must be between 1 and 64/],
  ['--concurrency 65', { concurrency: '65' }, {}, /--concurrency \(LECTERN_WORKER_CONCURRENCY\) must be between 1 and 64/],
  ['--concurrency a fraction', { concurrency: '1.5' }, {}, /--concurrency \(LECTERN_WORKER_CONCURRENCY\) must be an integer/],
  ['--max-upload-bytes 0', { 'max-upload-bytes': '0' }, {}, /--max-upload-bytes \(LECTERN_MAX_UPLOAD_BYTES\) must be between 1/],
  ['--lease-ms below 500', { 'lease-ms': '100' }, {}, /--lease-ms \(LECTERN_LEASE_MS\) must be between 500/],
  ['--heartbeat-ms below 100', { 'heartbeat-ms': '10' }, {}, /--heartbeat-ms \(LECTERN_HEARTBEAT_MS\) must be between 100/],
  ['--heartbeat-ms not shorter than the lease', { 'heartbeat-ms': '30000', 'lease-ms': '30000' }, {}, /--heartbeat-ms \(LECTERN_HEARTBEAT_MS\) \(30000\) must be shorter than --lease-ms/],
  ['--lipsync-timeout-s 0', { 'lipsync-timeout-s': '0' }, {}, /--lipsync-timeout-s \(LECTERN_LIPSYNC_TIMEOUT_S\) must be between 1/],
  ['--lipsync-poll-ms below 50', { 'lipsync-poll-ms': '5' }, {}, /--lipsync-poll-ms \(LECTERN_LIPSYNC_POLL_MS\) must be between 50/],
  ['--rate-limit negative', { 'rate-limit': '-5' }, {}, /--rate-limit \(LECTERN_RATE_LIMIT_PER_MINUTE\) must be between 0/],
  ['LECTERN_RATE_LIMIT_PER_MINUTE a word', {}, { LECTERN_RATE_LIMIT_PER_MINUTE: 'lots' }, /--rate-limit \(LECTERN_RATE_LIMIT_PER_MINUTE\) must be an integer, got "lots"/],
  ['--max-active-jobs a word', { 'max-active-jobs': 'many' }, {}, /--max-active-jobs \(LECTERN_MAX_ACTIVE_JOBS\) must be an integer/],
  ['--max-body-bytes below 1024', { 'max-body-bytes': '10' }, {}, /--max-body-bytes \(LECTERN_MAX_BODY_BYTES\) must be between 1024/],
  ['--shutdown-grace-ms negative', { 'shutdown-grace-ms': '-1' }, {}, /--shutdown-grace-ms \(LECTERN_SHUTDOWN_GRACE_MS\) must be between 0/],
  ['--no-worker with a value that is not a switch', { 'no-worker': 'sometimes' }, {}, /--no-worker \(LECTERN_NO_EMBEDDED_WORKER\) is a switch: .*got "sometimes"/],
  ['LECTERN_INSECURE not a switch', {}, { LECTERN_INSECURE: 'maybe' }, /--insecure \(LECTERN_INSECURE\) is a switch: .*got "maybe"/],
  ['--log-level unknown', { 'log-level': 'loud' }, {}, /--log-level \(LECTERN_LOG_LEVEL\) must be fatal, error, warn, info, debug, trace or silent, got "loud"/],
  ['--namespace with capitals', { namespace: 'Lectern' }, {}, /--namespace \(LECTERN_NAMESPACE\) must match/],
  ['--database-url not postgres', { 'database-url': 'mysql://x', 'redis-url': 'redis://127.0.0.1' }, {}, /--database-url \(LECTERN_DATABASE_URL\) must be a postgres:\/\/ URL/],
  ['--redis-url not redis', { 'database-url': 'postgres://x', 'redis-url': 'http://x' }, {}, /--redis-url \(LECTERN_REDIS_URL\) must be a redis:\/\/ URL/],
  ['--database-url without --redis-url', { 'database-url': 'postgres://x' }, {}, /needs both LECTERN_DATABASE_URL and LECTERN_REDIS_URL/],
  ['--gpu-server-url without a scheme', { 'gpu-server-url': 'gpu-box:8100' }, {}, /--gpu-server-url \(LECTERN_GPU_SERVER_URL\) must be a comma-separated list of http:\/\/ or https:\/\/ URLs, got "gpu-box:8100"/],
  ['--gpu-health-ms below 100', { 'gpu-health-ms': '10' }, {}, /--gpu-health-ms \(LECTERN_GPU_HEALTH_MS\) must be between 100/],
  ['LECTERN_GPU_SERVER_URL with one bad entry', {}, { LECTERN_GPU_SERVER_URL: 'http://a:8100,ftp://b' }, /--gpu-server-url \(LECTERN_GPU_SERVER_URL\) must be .* got "ftp:\/\/b"/],
  ['LECTERN_CORS_ORIGINS not an origin', {}, { LECTERN_CORS_ORIGINS: 'example.com' }, /LECTERN_CORS_ORIGINS\) must be a comma-separated list of http:\/\/ or https:\/\/ URLs \(or \*\), got "example.com"/],
  ['--storage-download unknown', { 'storage-download': 'stream' }, {}, /--storage-download \(LECTERN_STORAGE_DOWNLOAD\) must be redirect or proxy, got "stream"/],
  ['--storage-url not s3', { 'storage-url': 'gs://bucket' }, {}, /LECTERN_STORAGE_URL must be s3:\/\/BUCKET or s3:\/\/BUCKET\/PREFIX \(flag --storage-url\), got "gs:\/\/bucket"/],
  ['--storage-url with .. in its prefix', { 'storage-url': 's3://bucket/a/../b' }, {}, /LECTERN_STORAGE_URL has an invalid prefix/],
  ['--storage-link-expires-s over 7 days', { 'storage-link-expires-s': String(8 * 24 * 3600) }, {}, /--storage-link-expires-s \(LECTERN_STORAGE_LINK_EXPIRES_S\) must be between 1 and 604800/],
  ['--storage-sweep-interval-s negative', { 'storage-sweep-interval-s': '-1' }, {}, /--storage-sweep-interval-s \(LECTERN_STORAGE_SWEEP_INTERVAL_S\) must be between 0/],
  ['AWS_ENDPOINT_URL not http', { 'storage-url': 's3://bucket' }, { AWS_ENDPOINT_URL: 'minio:9000' }, /AWS_ENDPOINT_URL must be an http\(s\):\/\/ URL/],
  ['LECTERN_API_TOKENS malformed', {}, { LECTERN_API_TOKENS: 'no-colon-here' }, /LECTERN_API_TOKENS/],
  ['--tokens-file missing', { 'tokens-file': '/nonexistent/tokens' }, {}, /cannot read the tokens file \/nonexistent\/tokens/],
  ['--host beyond loopback without tokens', { host: '0.0.0.0' }, {}, /lectern serve would listen on 0\.0\.0\.0 without authentication/],
  ['LECTERN_API_ADMINS without tokens', {}, { LECTERN_API_ADMINS: 'root' }, /LECTERN_API_ADMINS is set but there are no tokens/],
];

const gpuCases: Case[] = [
  ['--port not a number', { port: 'x' }, {}, /--port \(LECTERN_GPU_PORT\) must be an integer/],
  ['--device unknown', { device: 'tpu' }, {}, /--device \(LECTERN_GPU_DEVICE\) must be cpu or cuda, got "tpu"/],
  ['--max-batch 0', { 'max-batch': '0' }, {}, /--max-batch \(LECTERN_GPU_MAX_BATCH\) must be between 1 and 256/],
  ['--max-batch 257', { 'max-batch': '257' }, {}, /--max-batch \(LECTERN_GPU_MAX_BATCH\) must be between 1 and 256/],
  ['--batch-window-ms above 10 s', { 'batch-window-ms': '10001' }, {}, /--batch-window-ms \(LECTERN_GPU_BATCH_WINDOW_MS\) must be between 0 and 10000/],
  ['--workers 0', { workers: '0' }, {}, /--workers \(LECTERN_GPU_WORKERS\) must be between 1 and 256/],
  ['--lipsync-ttl-s 0', { 'lipsync-ttl-s': '0' }, {}, /--lipsync-ttl-s \(LECTERN_GPU_LIPSYNC_TTL_S\) must be between 1/],
  ['--max-upload-bytes a word', { 'max-upload-bytes': 'big' }, {}, /--max-upload-bytes \(LECTERN_GPU_MAX_UPLOAD_BYTES\) must be an integer/],
  ['--lipsync-timeout-s 0', { 'lipsync-timeout-s': '0' }, {}, /--lipsync-timeout-s \(LECTERN_LIPSYNC_TIMEOUT_S\) must be between 1/],
  ['--max-lipsync-jobs 0', { 'max-lipsync-jobs': '0' }, {}, /--max-lipsync-jobs \(LECTERN_GPU_MAX_LIPSYNC_JOBS\) must be between 1/],
  ['--shutdown-grace-ms a word', { 'shutdown-grace-ms': 'soon' }, {}, /--shutdown-grace-ms \(LECTERN_SHUTDOWN_GRACE_MS\) must be an integer/],
  ['--tts-process-timeout-s 0', { 'tts-process-timeout-s': '0' }, {}, /--tts-process-timeout-s \(LECTERN_TTS_PROCESS_TIMEOUT_S\) must be between 1/],
  ['--tts-process-start-timeout-s 0', { 'tts-process-start-timeout-s': '0' }, {}, /--tts-process-start-timeout-s \(LECTERN_TTS_PROCESS_START_TIMEOUT_S\) must be between 1/],
  ['--backend process without --tts-process', { backend: 'process' }, {}, /--backend process needs the model program: --tts-process/],
  ['--log-level unknown', { 'log-level': 'verbose' }, {}, /--log-level \(LECTERN_LOG_LEVEL\) must be fatal, error, warn, info, debug, trace or silent/],
  ['--insecure with a value that is not a switch', { insecure: 'perhaps' }, {}, /--insecure \(LECTERN_INSECURE\) is a switch/],
  ['--host beyond loopback without tokens', { host: '::' }, {}, /lectern gpu-server would listen on :: without authentication: set LECTERN_GPU_TOKENS/],
];

const runCases: [what: string, flags: Flags, message: RegExp][] = [
  ['--speed a word', { speed: 'fast' }, /--speed must be a number between 0.5 and 2, got "fast"/],
  ['--speed below 0.5', { speed: '0.25' }, /--speed must be a number between 0.5 and 2, got "0.25"/],
  ['--speed above 2', { speed: '3' }, /--speed must be a number between 0.5 and 2, got "3"/],
  ['--speed without a value', { speed: true }, /--speed needs a value/],
  ['--format unknown', { format: 'wav' }, /--format must be one of mp3, m4b, mp4, reader, epub, got "wav"/],
  ['--width below 320', { width: '100' }, /--width must be an integer between 320 and 3840, got "100"/],
  ['--width a fraction', { width: '640.5' }, /--width must be an integer between 320 and 3840, got "640.5"/],
  ['--height above 2160', { height: '4320' }, /--height must be an integer between 240 and 2160, got "4320"/],
  ['--fps 0', { fps: '0' }, /--fps must be an integer between 1 and 60, got "0"/],
  ['--fps a word', { fps: 'smooth' }, /--fps must be an integer between 1 and 60, got "smooth"/],
  ['--out without a value', { out: true }, /--out needs a value/],
  ['--language without a value', { language: true }, /--language needs a value/],
  ['--voice without a value', { voice: true }, /--voice needs a value/],
  ['--log-level unknown', { 'log-level': 'chatty' }, /--log-level \(LECTERN_LOG_LEVEL\) must be fatal, error, warn, info, debug, trace or silent/],
];

/** The ConfigError a call throws (fails the test when it throws nothing or something else). */
function configError(f: () => unknown): ConfigError {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    expect((e as ConfigError).code).toBe('CONFIG');
    return e as ConfigError;
  }
  throw new Error('expected a ConfigError, nothing was thrown');
}

describe('lectern serve / worker options (loadServiceConfig)', () => {
  it('the defaults load', () => {
    const c = loadServiceConfig({}, {});
    expect(c.port).toBe(8000);
    expect(c.embeddedWorker).toBe(true);
  });
  it.each(serviceCases)('%s', (_what, flags, env, message) => {
    expect(configError(() => loadServiceConfig(flags, env)).message).toMatch(message);
  });
  it('switches take 1/0, true/false, yes/no and a bare flag', () => {
    for (const [v, worker] of [['1', false], ['0', true], ['true', false], ['FALSE', true], ['yes', false], ['no', true]] as const) {
      expect(loadServiceConfig({}, { LECTERN_NO_EMBEDDED_WORKER: v }).embeddedWorker).toBe(worker);
    }
    expect(loadServiceConfig({ 'no-worker': true }, {}).embeddedWorker).toBe(false);
  });
  it('lists keep their good entries, trailing slashes dropped', () => {
    const c = loadServiceConfig({ 'gpu-server-url': 'http://a:8100/, https://b' }, { LECTERN_CORS_ORIGINS: 'https://app.example, *' });
    expect(c.gpuServerUrls).toEqual(['http://a:8100', 'https://b']);
    expect(c.security.corsOrigins).toEqual(['https://app.example', '*']);
  });
});

describe('lectern gpu-server options (loadGpuServerConfig)', () => {
  it('the defaults load', () => {
    expect(loadGpuServerConfig({}, {}).port).toBe(8100);
  });
  it.each(gpuCases)('%s', (_what, flags, env, message) => {
    expect(configError(() => loadGpuServerConfig(flags, env)).message).toMatch(message);
  });
});

describe('lectern run options (checkRunFlags)', () => {
  it('good values pass', () => {
    expect(() => checkRunFlags({ speed: '1.5', format: 'mp4', width: '640', height: '360', fps: '30', out: 'x.mp4', language: 'en-GB', voice: 'v', 'log-level': 'info' })).not.toThrow();
  });
  it.each(runCases)('%s', (_what, flags, message) => {
    expect(configError(() => checkRunFlags(flags)).message).toMatch(message);
  });
});

describe('the CLI reports a bad option as one line and exit status 1', () => {
  const cli = (...args: string[]) => spawnSync(process.execPath, [path.join(PROJECT_ROOT, 'bin', 'lectern.js'), ...args], { encoding: 'utf8', env: { ...process.env, LECTERN_DATA_DIR: '/nonexistent-never-created' }, timeout: 60_000 });
  it('serve --port eighty', () => {
    const r = cli('serve', '--port', 'eighty');
    expect(r.status).toBe(1);
    expect(r.stderr.trim()).toBe('lectern: configuration: --port (LECTERN_PORT) must be an integer, got "eighty"');
  });
  it('run audio x.md --fps 0 (before the file is read)', () => {
    const r = cli('run', 'audio', 'x.md', '--fps', '0');
    expect(r.status).toBe(1);
    expect(r.stderr.trim()).toBe('lectern: configuration: --fps must be an integer between 1 and 60, got "0"');
  });
});
