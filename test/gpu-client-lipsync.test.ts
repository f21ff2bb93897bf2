// The lip-sync client against a fault-injecting server (real HTTP on loopback): every
// failure mode of spec §C "Client behaviour", §7 and §8, with short intervals and timeouts.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  generateLipsync,
  GpuServerError,
  GpuServerLost,
  GpuServerTimeout,
  GpuServerUnreachable,
  LipsyncCancelled,
  LipsyncFailed,
  type LipsyncOptions,
} from '../src/gpu-client/index.ts';
import { lipsyncHandler, startFaultServer, type FaultServer, type LipsyncScript, type Step } from './helpers/client-fault-server.ts';

const FIXTURES = path.resolve(import.meta.dirname, 'fixtures');
const AUDIO = path.join(FIXTURES, 'speech', 'jfk.wav');
const VIDEO = path.join(FIXTURES, 'video', 'presenter.mp4');
const POLL_MS = 20;
// Per-request timeout: long enough that a loaded 2-core CI machine answers a healthy
// request in time, short enough that the hanging-server cases stay quick.
const TIMEOUT_MS = 1500;

let video: Buffer;
let dir: string;
let server: FaultServer | null = null;

beforeAll(() => {
  video = fs.readFileSync(VIDEO);
});

afterEach(async () => {
  await server?.close();
  server = null;
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

async function setup(script: Omit<LipsyncScript, 'video'>) {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lectern-gpu-client-'));
  server = await startFaultServer(lipsyncHandler({ video, ...script }));
  return server;
}

function opts(extra: Partial<LipsyncOptions> = {}): LipsyncOptions {
  return {
    audioPath: AUDIO,
    referenceVideoPath: VIDEO,
    outputPath: path.join(dir, 'out.mp4'),
    serverUrl: server?.url ?? '',
    provider: 'command',
    lipsyncPreset: 'fast',
    pollIntervalMs: POLL_MS,
    requestTimeoutMs: TIMEOUT_MS,
    ...extra,
  };
}

const s = (status: 'queued' | 'running' | 'done' | 'failed' | 'cancelled', elapsed?: number, error?: string): Step => ({ status, elapsed, error });
const GET = 'GET /lipsync/job-1';
const DELETE = 'DELETE /lipsync/job-1';
const CANCEL = 'POST /lipsync/job-1/cancel';
/** No output and no temporary file left beside it. */
const dirEntries = () => fs.readdirSync(dir);

describe('lip-sync client: the job protocol', () => {
  it('submits multipart audio + reference video + provider + preset, polls, downloads, then DELETEs', async () => {
    const srv = await setup({ polls: [s('queued', 0), s('running', 1.5), s('done', 3.25)] });
    const seen: [number, string][] = [];
    const r = await generateLipsync(opts({ onStatus: (e, st) => seen.push([e, st]) }));

    const post = srv.requests.find((x) => x.method === 'POST' && x.path === '/lipsync')!;
    expect(post.fields.audio).toMatchObject({ filename: 'jfk.wav', size: fs.statSync(AUDIO).size });
    expect(post.fields.reference_video).toMatchObject({ filename: 'presenter.mp4', size: video.length });
    expect(post.fields.provider).toBe('command');
    expect(post.fields.lipsync_preset).toBe('fast');

    expect(fs.readFileSync(r.outputPath).equals(video)).toBe(true);
    expect(r).toMatchObject({ lipsyncId: 'job-1', legacy: false, elapsedSeconds: 3.25, deleted: true, bytes: video.length });
    // onStatus gets the server's elapsed seconds after each successful poll.
    expect(seen).toEqual([[0, 'queued'], [1.5, 'running'], [3.25, 'done']]);
    expect(srv.count(GET)).toBe(3);
    expect(srv.count('GET /lipsync/job-1/result')).toBe(1);
    expect(srv.count(DELETE)).toBe(1);
    // DELETE is the last thing sent.
    expect(srv.requests.at(-1)!.method).toBe('DELETE');
    expect(dirEntries()).toEqual(['out.mp4']);
  });

  it('tolerates 4 consecutive transient poll failures (5xx, timeout, dropped connection), then succeeds', async () => {
    const srv = await setup({ polls: [s('running', 1), { http: 500 }, { hang: true }, { reset: true }, { http: 503 }, s('done', 2)] });
    const r = await generateLipsync(opts());
    expect(fs.readFileSync(r.outputPath).equals(video)).toBe(true);
    expect(srv.count(GET)).toBe(6);
    expect(srv.count(DELETE)).toBe(1);
  });

  it('the count is of consecutive failures: a success in between starts it over', async () => {
    const f: Step = { http: 502 };
    const srv = await setup({ polls: [f, f, f, f, s('running', 1), f, f, f, f, s('done', 2)] });
    await generateLipsync(opts());
    expect(srv.count(GET)).toBe(10);
    expect(srv.count(DELETE)).toBe(1);
  });

  it('the 5th consecutive transient failure is lost contact with the server; DELETE is still sent', async () => {
    const srv = await setup({ polls: [s('running', 1), { http: 500 }, { http: 502 }, { reset: true }, { hang: true }, { http: 500 }, s('done')] });
    const err = await generateLipsync(opts()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GpuServerLost);
    const lost = err as GpuServerLost;
    expect(lost.message).toMatch(/contact with the GPU server .* was lost/);
    expect(lost.message).toContain(srv.url);
    expect(lost.message).toContain('GET /lipsync/job-1');
    expect(lost.failures).toBe(5);
    expect(srv.count(GET)).toBe(6); // 1 good + 5 failed; the 6th answer is never asked for
    expect(srv.count(DELETE)).toBe(1);
    expect(dirEntries()).toEqual([]);
  });

  it('responses slower than the per-request timeout count as transient failures', async () => {
    const srv = await setup({ polls: [{ hang: true }] });
    const t0 = Date.now();
    const err = (await generateLipsync(opts()).catch((e: unknown) => e)) as GpuServerLost;
    expect(err).toBeInstanceOf(GpuServerLost);
    expect(err.lastError).toBeInstanceOf(GpuServerTimeout);
    expect(err.lastError.message).toContain(`within ${TIMEOUT_MS} ms`);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(5 * TIMEOUT_MS);
    expect(srv.count(GET)).toBe(5);
    expect(srv.count(DELETE)).toBe(1);
  });

  it('a 4xx while polling is not transient: it fails at once, and DELETE is sent', async () => {
    const srv = await setup({ polls: [s('running'), { http: 404, detail: 'unknown lip-sync job' }] });
    const err = (await generateLipsync(opts()).catch((e: unknown) => e)) as GpuServerError;
    expect(err).toBeInstanceOf(GpuServerError);
    expect(err).toMatchObject({ status: 404, detail: 'unknown lip-sync job', serverUrl: srv.url, request: GET });
    expect(srv.count(GET)).toBe(2);
    expect(srv.count(DELETE)).toBe(1);
  });

  it('no overall timeout: a generation lasting many times the per-request timeout completes', async () => {
    const timeout = 400;
    const srv = await setup({ polls: [...Array<Step>(40).fill(s('running')), s('done', 9)] });
    const t0 = Date.now();
    const r = await generateLipsync(opts({ requestTimeoutMs: timeout, pollIntervalMs: 120 }));
    expect(Date.now() - t0).toBeGreaterThan(10 * timeout);
    expect(r.elapsedSeconds).toBe(9);
    expect(fs.readFileSync(r.outputPath).equals(video)).toBe(true);
    expect(srv.count(DELETE)).toBe(1);
  });

  it('a job the server fails raises LipsyncFailed carrying the server message; DELETE is sent, no output', async () => {
    const srv = await setup({ polls: [s('running', 1), s('failed', 2, 'no face found in the reference video')] });
    const err = (await generateLipsync(opts()).catch((e: unknown) => e)) as LipsyncFailed;
    expect(err).toBeInstanceOf(LipsyncFailed);
    expect(err.serverMessage).toBe('no face found in the reference video');
    expect(err.message).toContain('no face found in the reference video');
    expect(err.message).toContain(srv.url);
    expect(srv.count('GET /lipsync/job-1/result')).toBe(0);
    expect(srv.count(DELETE)).toBe(1);
    expect(dirEntries()).toEqual([]);
  });

  it('a job cancelled on the server (by someone else) raises LipsyncCancelled; DELETE is sent', async () => {
    const srv = await setup({ polls: [s('running', 1), s('cancelled', 1)] });
    const err = (await generateLipsync(opts()).catch((e: unknown) => e)) as LipsyncCancelled;
    expect(err).toBeInstanceOf(LipsyncCancelled);
    expect(err.byServer).toBe(true);
    expect(srv.count(CANCEL)).toBe(0);
    expect(srv.count(DELETE)).toBe(1);
  });

  it('a submission the server refuses is a GpuServerError with its status and detail; there is nothing to DELETE', async () => {
    const srv = await setup({ polls: [s('done')], submit: { http: 422, detail: 'unknown lipsync_preset "ultra"' } });
    const err = (await generateLipsync(opts()).catch((e: unknown) => e)) as GpuServerError;
    expect(err).toBeInstanceOf(GpuServerError);
    expect(err).toMatchObject({ status: 422, detail: 'unknown lipsync_preset "ultra"', request: 'POST /lipsync' });
    expect(err.message).toBe(`GPU server ${srv.url} answered POST /lipsync with HTTP 422: unknown lipsync_preset "ultra"`);
    expect(srv.requests.map((r) => r.method)).toEqual(['POST']);
  });

  it('an unreachable server is GpuServerUnreachable naming it and the request', async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lectern-gpu-client-'));
    const dead = await startFaultServer(() => {});
    const url = dead.url;
    await dead.close();
    const err = (await generateLipsync({ ...opts({ serverUrl: url }) }).catch((e: unknown) => e)) as GpuServerUnreachable;
    expect(err).toBeInstanceOf(GpuServerUnreachable);
    expect(err.message).toContain(url);
    expect(err.message).toContain('POST /lipsync');
  });
});

describe('lip-sync client: legacy protocol', () => {
  it('an initial POST answering with MP4 bytes is written to the output path, with no polling and nothing to DELETE', async () => {
    const srv = await setup({ polls: [s('done')], submit: 'legacy' });
    const statuses: number[] = [];
    const r = await generateLipsync(opts({ onStatus: (e) => statuses.push(e) }));
    expect(r).toMatchObject({ legacy: true, lipsyncId: null, deleted: false, bytes: video.length });
    expect(fs.readFileSync(r.outputPath).equals(video)).toBe(true);
    expect(srv.requests.map((x) => `${x.method} ${x.path}`)).toEqual(['POST /lipsync']);
    expect(statuses).toEqual([]);
  });
});

describe('lip-sync client: cancellation', () => {
  it('cancelled before submission: nothing is sent at all', async () => {
    const srv = await setup({ polls: [s('done')] });
    const err = await generateLipsync(opts({ shouldCancel: () => true })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LipsyncCancelled);
    expect((err as LipsyncCancelled).lipsyncId).toBeNull();
    expect(srv.requests).toEqual([]);
  });

  it('cancelled after submission, before the first poll: cancel then DELETE, no poll', async () => {
    const srv = await setup({ polls: [s('queued')] });
    let calls = 0;
    const err = await generateLipsync(opts({ shouldCancel: () => ++calls > 1 })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LipsyncCancelled);
    expect((err as LipsyncCancelled).lipsyncId).toBe('job-1');
    expect(srv.requests.map((x) => `${x.method} ${x.path}`)).toEqual(['POST /lipsync', CANCEL, DELETE]);
  });

  it('cancelled while queued (async predicate, as the worker reads its KV flag): cancel, then DELETE', async () => {
    const srv = await setup({ polls: [s('queued', 0)] });
    let last = '';
    const err = await generateLipsync(
      opts({ onStatus: (_e, st) => (last = st), shouldCancel: async () => last === 'queued' && srv.count(GET) >= 2 }),
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LipsyncCancelled);
    expect(err).toMatchObject({ byServer: false, lipsyncId: 'job-1' });
    expect(srv.count(GET)).toBe(2);
    expect(srv.count(CANCEL)).toBe(1);
    expect(srv.count(DELETE)).toBe(1);
    const names = srv.requests.map((x) => `${x.method} ${x.path}`);
    expect(names.indexOf(CANCEL)).toBeLessThan(names.indexOf(DELETE));
    expect(dirEntries()).toEqual([]);
  });

  it('cancelled while running: cancel, then DELETE', async () => {
    const srv = await setup({ polls: [s('queued', 0), s('running', 0.5), s('running', 1), s('done', 2)] });
    let last = '';
    const err = await generateLipsync(opts({ onStatus: (_e, st) => (last = st), shouldCancel: () => last === 'running' })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LipsyncCancelled);
    expect(err).toMatchObject({ lipsyncId: 'job-1', request: GET });
    expect(srv.count(GET)).toBe(2);
    expect(srv.count(CANCEL)).toBe(1);
    expect(srv.count(DELETE)).toBe(1);
    expect(srv.count('GET /lipsync/job-1/result')).toBe(0);
  });

  it('an aborted signal (worker shutting down) ends the wait between polls at once: cancel, then DELETE', async () => {
    const srv = await setup({ polls: [s('running', 1)] });
    const ac = new AbortController();
    const t0 = Date.now();
    setTimeout(() => ac.abort(), 100);
    const err = await generateLipsync(opts({ pollIntervalMs: 30_000, signal: ac.signal })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LipsyncCancelled);
    expect(Date.now() - t0).toBeLessThan(5000);
    expect(srv.count(GET)).toBe(1);
    expect(srv.count(CANCEL)).toBe(1);
    expect(srv.count(DELETE)).toBe(1);
  });

  it('a throwing callback still leads to DELETE', async () => {
    const srv = await setup({ polls: [s('running', 1)] });
    const err = await generateLipsync(opts({ onStatus: () => { throw new Error('callback broke'); } })).catch((e: unknown) => e);
    expect((err as Error).message).toBe('callback broke');
    expect(srv.count(DELETE)).toBe(1);
  });

  it('a cancel request that fails is best-effort: still LipsyncCancelled, still DELETE', async () => {
    const srv = await setup({ polls: [s('running', 1)] });
    const inner = srv.handler;
    srv.handler = (req, res) => (req.path.endsWith('/cancel') ? void res.socket?.destroy() : inner(req, res));
    const err = await generateLipsync(opts({ shouldCancel: () => srv.count(GET) >= 1 })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LipsyncCancelled);
    expect(srv.count(CANCEL)).toBe(1);
    expect(srv.count(DELETE)).toBe(1);
  });
});

describe('lip-sync client: download', () => {
  it('a download cut off mid-body leaves no partial file, and the earlier output stays intact', async () => {
    const srv = await setup({ polls: [s('done', 1)], results: [{ partial: true }, { http: 404 }] });
    fs.writeFileSync(path.join(dir, 'out.mp4'), 'previous output');
    const err = (await generateLipsync(opts()).catch((e: unknown) => e)) as GpuServerError;
    expect(err).toBeInstanceOf(GpuServerError);
    expect(err.status).toBe(404);
    expect(srv.count('GET /lipsync/job-1/result')).toBe(2); // the cut-off one was retried as transient
    expect(dirEntries()).toEqual(['out.mp4']);
    expect(fs.readFileSync(path.join(dir, 'out.mp4'), 'utf8')).toBe('previous output');
    expect(srv.count(DELETE)).toBe(1);
  });

  it('transient download failures are retried within the same tolerance and the complete file lands', async () => {
    const srv = await setup({ polls: [s('done', 1)], results: [{ partial: true }, { http: 500 }, { hang: true }, { status: 'done' }] });
    const r = await generateLipsync(opts());
    expect(fs.readFileSync(r.outputPath).equals(video)).toBe(true);
    expect(srv.count('GET /lipsync/job-1/result')).toBe(4);
    expect(srv.count(GET)).toBe(1);
    expect(dirEntries()).toEqual(['out.mp4']);
    expect(srv.count(DELETE)).toBe(1);
  });

  it('a failing cleanup DELETE does not undo a finished download', async () => {
    const srv = await setup({ polls: [s('done', 1)] });
    const inner = srv.handler;
    srv.handler = (req, res) => (req.method === 'DELETE' ? void res.writeHead(500).end() : inner(req, res));
    const r = await generateLipsync(opts());
    expect(r.deleted).toBe(false);
    expect(fs.readFileSync(r.outputPath).equals(video)).toBe(true);
    expect(srv.count(DELETE)).toBe(1);
  });
});
