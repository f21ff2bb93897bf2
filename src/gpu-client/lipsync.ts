// The lip-sync job protocol against one GPU server (spec §C "Client behaviour", §7, §8):
// submit → poll → download → always DELETE. Each HTTP operation has its own timeout;
// the generation itself has none, so a long job completes as long as the server answers.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../log.ts';
import {
  GpuServerError,
  GpuServerLost,
  LipsyncCancelled,
  LipsyncFailed,
  isTransient,
} from './errors.ts';
import { call, filePart, readJson, requestName, saveBodyAtomically } from './http.ts';
import { DEFAULT_REQUEST_TIMEOUT_MS } from './speech.ts';

export const DEFAULT_POLL_INTERVAL_MS = 5_000;
/** Spec §8: up to 4 consecutive transient failures are tolerated; the 5th is fatal. */
export const MAX_CONSECUTIVE_FAILURES = 5;

export type LipsyncStatus = 'queued' | 'running' | 'done' | 'failed' | 'cancelled';
const STATUSES: readonly string[] = ['queued', 'running', 'done', 'failed', 'cancelled'];

export interface LipsyncOptions {
  audioPath: string;
  referenceVideoPath: string;
  outputPath: string;
  serverUrl: string;
  /** Provider override; the server's setting when absent. */
  provider?: string;
  lipsyncPreset?: string;
  /** Pause between polls; default 5 s. */
  pollIntervalMs?: number;
  /** Limit on each HTTP operation (submit, each poll, download, cancel, delete); default 120 s. */
  requestTimeoutMs?: number;
  /** Checked before every poll; true → best-effort cancel on the server, then LipsyncCancelled. */
  shouldCancel?: () => boolean | Promise<boolean>;
  /** Called after each successful poll with the server's elapsed generation seconds. */
  onStatus?: (elapsedSeconds: number, status: LipsyncStatus) => void;
  /**
   * Aborting (e.g. the worker shutting down) stops the job like a cancel: best-effort cancel
   * on the server, DELETE, then LipsyncCancelled; the wait between polls ends at once.
   */
  signal?: AbortSignal;
  /** Called once the server has accepted the job (not for the legacy protocol). */
  onAccepted?: (lipsyncId: string) => void;
  token?: string;
  log?: Logger;
}

export interface LipsyncResult {
  outputPath: string;
  bytes: number;
  /** Null for the legacy protocol (the server answered the POST with the video itself). */
  lipsyncId: string | null;
  legacy: boolean;
  /** Generation seconds as last reported by the server (client-measured when it reports none). */
  elapsedSeconds: number;
  /** Whether the cleanup DELETE was acknowledged (false for legacy: there is nothing to delete). */
  deleted: boolean;
}

interface StatusBody {
  status?: unknown;
  elapsed?: unknown;
  elapsed_seconds?: unknown;
  error?: unknown;
  detail?: unknown;
}

export async function generateLipsync(opts: LipsyncOptions): Promise<LipsyncResult> {
  const { serverUrl, token } = opts;
  const pollIntervalMs = opts.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS;
  const timeoutMs = opts.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  const shouldCancel = async () => Boolean(opts.signal?.aborted) || (opts.shouldCancel ? Boolean(await opts.shouldCancel()) : false);

  const submitReq = { method: 'POST', path: '/lipsync' } as const;
  // Nothing was sent yet: nothing to cancel or delete on the server.
  if (await shouldCancel()) throw new LipsyncCancelled(serverUrl, requestName(submitReq), null);

  const form = new FormData();
  const audio = await filePart(opts.audioPath);
  const video = await filePart(opts.referenceVideoPath);
  form.append('audio', audio.blob, audio.name);
  form.append('reference_video', video.blob, video.name);
  if (opts.provider) form.append('provider', opts.provider);
  if (opts.lipsyncPreset) form.append('lipsync_preset', opts.lipsyncPreset);

  const started = Date.now();
  // Submission is not retried: a request that timed out may still have created a job, and
  // a second POST would start a duplicate generation. The caller (pool) may try another server
  // only when the connection itself failed.
  const submitted = await call(serverUrl, { ...submitReq, body: form, timeoutMs, token }, async (res) => {
    const type = (res.headers.get('content-type') ?? '').toLowerCase();
    if (type.includes('json')) {
      const body = (await readJson(serverUrl, requestName(submitReq), res)) as { lipsync_id?: unknown };
      if (typeof body?.lipsync_id !== 'string' || !body.lipsync_id) {
        throw new GpuServerError(serverUrl, requestName(submitReq), res.status, 'response has no "lipsync_id"');
      }
      return { id: body.lipsync_id, bytes: 0 };
    }
    // Legacy protocol: the POST answers with the finished video itself.
    if (type.startsWith('video/') || type.startsWith('application/octet-stream')) {
      return { id: null, bytes: await saveBodyAtomically(res, opts.outputPath, serverUrl, requestName(submitReq)) };
    }
    throw new GpuServerError(serverUrl, requestName(submitReq), res.status, `unexpected content type "${type}" (expected a JSON handle or video bytes)`);
  });

  if (submitted.id === null) {
    // The legacy server keeps no job record and gave no id: there is nothing to poll or DELETE.
    opts.log?.debug({ serverUrl, bytes: submitted.bytes }, 'legacy lip-sync server returned the video directly');
    return { outputPath: opts.outputPath, bytes: submitted.bytes, lipsyncId: null, legacy: true, elapsedSeconds: (Date.now() - started) / 1000, deleted: false };
  }

  const id = submitted.id;
  const enc = encodeURIComponent(id);
  let deleted = false;
  try {
    opts.onAccepted?.(id);
    const { elapsed, bytes } = await pollAndDownload(opts, id, enc, started, pollIntervalMs, timeoutMs, shouldCancel);
    deleted = await cleanup(opts, id, enc, timeoutMs);
    return { outputPath: opts.outputPath, bytes, lipsyncId: id, legacy: false, elapsedSeconds: elapsed, deleted };
  } catch (err) {
    await cleanup(opts, id, enc, timeoutMs);
    throw err;
  }
}

async function pollAndDownload(
  opts: LipsyncOptions,
  id: string,
  enc: string,
  started: number,
  pollIntervalMs: number,
  timeoutMs: number,
  shouldCancel: () => Promise<boolean>,
): Promise<{ elapsed: number; bytes: number }> {
  const { serverUrl, token } = opts;
  const pollReq = { method: 'GET', path: `/lipsync/${enc}` } as const;
  const resultReq = { method: 'GET', path: `/lipsync/${enc}/result` } as const;
  let failures = 0;
  let elapsed = 0;
  let done = false;

  // Transient failures of polls and of the download share one consecutive count: the job
  // and its result stay on the server until we DELETE them, so retrying either is safe.
  const transient = (err: unknown, request: string) => {
    if (!isTransient(err)) throw err;
    failures++;
    opts.log?.warn({ serverUrl, lipsyncId: id, failures, err: (err as Error).message }, 'transient GPU server failure');
    if (failures >= MAX_CONSECUTIVE_FAILURES) throw new GpuServerLost(serverUrl, request, failures, err as Error);
  };

  for (let first = true; ; first = false) {
    if (!first) await sleep(pollIntervalMs, undefined, { signal: opts.signal }).catch(() => {}); // an abort is seen just below
    if (!done || opts.signal?.aborted) {
      if (await shouldCancel()) {
        await requestCancel(opts, id, enc, timeoutMs);
        throw new LipsyncCancelled(serverUrl, requestName(pollReq), id);
      }
      let body: StatusBody;
      try {
        body = (await call(serverUrl, { ...pollReq, timeoutMs, token }, (res) => readJson(serverUrl, requestName(pollReq), res))) as StatusBody;
      } catch (err) {
        transient(err, requestName(pollReq));
        continue;
      }
      failures = 0;
      const status = typeof body?.status === 'string' ? body.status : '';
      if (!STATUSES.includes(status)) {
        throw new GpuServerError(serverUrl, requestName(pollReq), 200, `unknown lip-sync status "${status}"`);
      }
      const reported = typeof body.elapsed === 'number' ? body.elapsed : typeof body.elapsed_seconds === 'number' ? body.elapsed_seconds : null;
      elapsed = reported ?? (Date.now() - started) / 1000;
      opts.onStatus?.(elapsed, status as LipsyncStatus);
      if (status === 'failed') {
        const msg = typeof body.error === 'string' && body.error ? body.error : typeof body.detail === 'string' && body.detail ? body.detail : 'the server gave no reason';
        throw new LipsyncFailed(serverUrl, requestName(pollReq), id, msg);
      }
      if (status === 'cancelled') throw new LipsyncCancelled(serverUrl, requestName(pollReq), id, true);
      if (status !== 'done') continue;
      done = true;
    }
    try {
      const bytes = await call(serverUrl, { ...resultReq, timeoutMs, token }, (res) => saveBodyAtomically(res, opts.outputPath, serverUrl, requestName(resultReq)));
      return { elapsed, bytes };
    } catch (err) {
      transient(err, requestName(resultReq));
    }
  }
}

/** Best effort: the job is abandoned either way, and DELETE follows. */
async function requestCancel(opts: LipsyncOptions, id: string, enc: string, timeoutMs: number): Promise<void> {
  try {
    await call(opts.serverUrl, { method: 'POST', path: `/lipsync/${enc}/cancel`, timeoutMs, token: opts.token }, async (res) => {
      await res.arrayBuffer();
    });
  } catch (err) {
    opts.log?.warn({ serverUrl: opts.serverUrl, lipsyncId: id, err: (err as Error).message }, 'lip-sync cancel request failed');
  }
}

/**
 * Always sent, whatever happened. A failure here never replaces the job's own outcome; the
 * server's TTL eviction removes what a lost DELETE leaves behind.
 */
async function cleanup(opts: LipsyncOptions, id: string, enc: string, timeoutMs: number): Promise<boolean> {
  try {
    await call(opts.serverUrl, { method: 'DELETE', path: `/lipsync/${enc}`, timeoutMs, token: opts.token }, async (res) => {
      await res.arrayBuffer();
    });
    return true;
  } catch (err) {
    // Already gone (e.g. evicted) is as good as deleted.
    if (err instanceof GpuServerError && err.status === 404) return true;
    opts.log?.warn({ serverUrl: opts.serverUrl, lipsyncId: id, err: (err as Error).message }, 'lip-sync cleanup DELETE failed');
    return false;
  }
}
