// Several GPU servers behind one client (LECTERN_GPU_SERVER_URL=a,b,c): each request goes
// to the healthy server with the least outstanding work; a server failing /health is
// skipped until a periodic re-check finds it well again; a lip-sync job stays on the
// server that accepted it (its id means nothing anywhere else).
import type { Logger } from '../log.ts';
import type { WordTiming } from '../core/timeline.ts';
import { GpuServerError, GpuServerUnreachable } from './errors.ts';
import { generateLipsync, type LipsyncOptions, type LipsyncResult } from './lipsync.ts';
import {
  align,
  DEFAULT_HEALTH_TIMEOUT_MS,
  DEFAULT_REQUEST_TIMEOUT_MS,
  health,
  synthesize,
  transcribe,
  type HealthRecord,
  type SynthesizedAudio,
  type SynthesizeOptions,
} from './speech.ts';

export interface GpuClientOptions {
  urls: string[];
  token?: string;
  /** How often every server's /health is checked; default 10 s. */
  healthIntervalMs?: number;
  healthTimeoutMs?: number;
  /** Default per-request timeout for align/synthesize/transcribe; default 120 s. */
  requestTimeoutMs?: number;
  log?: Logger;
}

export interface ServerState {
  url: string;
  healthy: boolean;
  /** Requests and lip-sync jobs this client has in flight there. */
  outstanding: number;
  lastCheckedAt: number | null;
  lastError: string | null;
  health: HealthRecord | null;
}

export type PoolLipsyncOptions = Omit<LipsyncOptions, 'serverUrl' | 'token'>;

export interface GpuClient {
  align(audioPath: string | Buffer, text: string, opts: { language: string; provider?: string; timeoutMs?: number }): Promise<WordTiming[]>;
  synthesize(text: string, opts: Omit<SynthesizeOptions, 'serverUrl' | 'token'>): Promise<SynthesizedAudio>;
  transcribe(audio: string | Buffer, language?: string, opts?: { timeoutMs?: number }): Promise<string>;
  generateLipsync(opts: PoolLipsyncOptions): Promise<LipsyncResult & { serverUrl: string }>;
  /** Checks every server now and returns their states. */
  checkHealth(): Promise<ServerState[]>;
  /** Current states, without checking. */
  servers(): ServerState[];
  /** Stops the periodic health checks. */
  close(): void;
}

/** Failures that say this server cannot take work right now, so another may: no answer, or 503 not ready. */
function serverDown(err: unknown): boolean {
  return err instanceof GpuServerUnreachable || (err instanceof GpuServerError && err.status === 503);
}

/** The servers' base URLs: trimmed, without trailing slashes, each once; each must be http(s). */
function serverUrls(given: string[]): string[] {
  const urls = [...new Set(given.map((u) => u.trim().replace(/\/+$/, '')).filter(Boolean))];
  if (urls.length === 0) throw new TypeError('createGpuClient: no GPU server URL given');
  for (const u of urls) {
    if (!/^https?:\/\/[^/]/.test(u)) throw new TypeError(`createGpuClient: "${u}" is not an http(s) URL`);
  }
  return urls;
}

interface HealthChecks {
  /** Checks every server now (joining a check already under way) and returns copies of their states. */
  checkAll(): Promise<ServerState[]>;
  /** Resolves once the first check, started at creation, is done. */
  firstCheckDone(): Promise<void>;
  /** Stops the periodic checks. */
  stop(): void;
}

/** Checks every server's /health now and then every `intervalMs`, updating `states`. */
function startHealthChecks(states: ServerState[], o: { token?: string; log?: Logger; timeoutMs: number; intervalMs: number }): HealthChecks {
  const inFlightChecks = new Map<ServerState, Promise<void>>();
  const checkOne = (s: ServerState): Promise<void> => {
    const running = inFlightChecks.get(s);
    if (running) return running;
    const p = (async () => {
      try {
        const h = await health(s.url, { timeoutMs: o.timeoutMs, token: o.token });
        s.health = h;
        s.healthy = h.status === 'ok';
        s.lastError = s.healthy ? null : `GET /health status "${h.status}"`;
      } catch (err) {
        s.healthy = false;
        s.lastError = (err as Error).message;
      }
      if (!s.healthy) o.log?.warn({ serverUrl: s.url, err: s.lastError }, 'GPU server unhealthy; skipping it until it recovers');
      s.lastCheckedAt = Date.now();
    })().finally(() => inFlightChecks.delete(s));
    inFlightChecks.set(s, p);
    return p;
  };
  const checkAll = () => Promise.all(states.map(checkOne)).then(() => states.map((s) => ({ ...s })));

  let initial: Promise<unknown> | null = checkAll();
  const timer = setInterval(() => void checkAll(), o.intervalMs);
  timer.unref();
  return {
    checkAll,
    async firstCheckDone() {
      if (initial) await initial;
      initial = null;
    },
    stop: () => clearInterval(timer),
  };
}

type PickServer = (exclude: Set<ServerState>, request: string) => Promise<ServerState>;

/** Picks the healthy server with the least outstanding work, not in `exclude`; re-checks all when none looks healthy. */
function serverPicker(states: ServerState[], checks: HealthChecks): PickServer {
  let rr = 0;
  function leastOutstanding(exclude: Set<ServerState>): ServerState | null {
    let best: ServerState | null = null;
    // Start the scan after the last pick so ties rotate instead of piling onto the first server.
    for (let k = 0; k < states.length; k++) {
      const s = states[(rr + k) % states.length]!;
      if (!s.healthy || exclude.has(s)) continue;
      if (!best || s.outstanding < best.outstanding) best = s;
    }
    if (best) rr = (states.indexOf(best) + 1) % states.length;
    return best;
  }

  return async (exclude, request) => {
    await checks.firstCheckDone();
    let s = leastOutstanding(exclude);
    if (!s) {
      // Every server looked down at the last check; one may have come back since.
      await checks.checkAll();
      s = leastOutstanding(exclude);
    }
    if (!s) {
      const why = states.map((x) => `${x.url}: ${x.lastError ?? (exclude.has(x) ? 'failed this request' : 'unhealthy')}`).join('; ');
      throw new GpuServerUnreachable(states.map((x) => x.url).join(','), request, `no healthy GPU server (${why})`);
    }
    return s;
  };
}

type Dispatch = <T>(request: string, fn: (s: ServerState) => Promise<T>, retryable: (err: unknown) => boolean) => Promise<T>;

/**
 * Runs `fn` on the least-loaded healthy server; when that server turns out to be down
 * before it took the work (`retryable` says so), marks it unhealthy and tries another.
 */
function dispatcher(states: ServerState[], pick: PickServer, log?: Logger): Dispatch {
  return async (request, fn, retryable) => {
    const tried = new Set<ServerState>();
    for (;;) {
      const s = await pick(tried, request);
      tried.add(s);
      s.outstanding++;
      try {
        return await fn(s);
      } catch (err) {
        if (!serverDown(err) || !retryable(err)) throw err;
        s.healthy = false;
        s.lastError = (err as Error).message;
        log?.warn({ serverUrl: s.url, err: s.lastError }, 'GPU server down; trying another');
        if (tried.size >= states.length) throw err;
      } finally {
        s.outstanding--;
      }
    }
  };
}

/** A lip-sync job on one server: tried elsewhere only until a server has accepted it; then its failures are the job's. */
function lipsyncOnOneServer(dispatch: Dispatch, token: string | undefined, o: PoolLipsyncOptions): Promise<LipsyncResult & { serverUrl: string }> {
  let accepted = false;
  return dispatch(
    'POST /lipsync',
    async (s) => {
      const r = await generateLipsync({
        ...o,
        serverUrl: s.url,
        token,
        onAccepted: (id) => {
          accepted = true;
          o.onAccepted?.(id);
        },
      });
      return { ...r, serverUrl: s.url };
    },
    () => !accepted,
  );
}

export function createGpuClient(options: GpuClientOptions): GpuClient {
  const urls = serverUrls(options.urls);
  const { token, log } = options;
  const requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  const states: ServerState[] = urls.map((url) => ({ url, healthy: false, outstanding: 0, lastCheckedAt: null, lastError: null, health: null }));
  const checks = startHealthChecks(states, {
    token,
    log,
    timeoutMs: options.healthTimeoutMs ?? DEFAULT_HEALTH_TIMEOUT_MS,
    intervalMs: options.healthIntervalMs ?? 10_000,
  });
  const dispatch = dispatcher(states, serverPicker(states, checks), log);
  const always = () => true;

  return {
    align: (audioPath, text, o) =>
      dispatch('POST /align', (s) => align(audioPath, text, { ...o, serverUrl: s.url, token, timeoutMs: o.timeoutMs ?? requestTimeoutMs }), always),
    synthesize: (text, o) =>
      dispatch('POST /synthesize', (s) => synthesize(text, { ...o, serverUrl: s.url, token, timeoutMs: o.timeoutMs ?? requestTimeoutMs }), always),
    transcribe: (audio, language, o = {}) =>
      dispatch('POST /transcribe', (s) => transcribe(audio, language, { serverUrl: s.url, token, timeoutMs: o.timeoutMs ?? requestTimeoutMs }), always),
    generateLipsync: (o) => lipsyncOnOneServer(dispatch, token, o),
    checkHealth: checks.checkAll,
    servers: () => states.map((s) => ({ ...s })),
    close: checks.stop,
  };
}
