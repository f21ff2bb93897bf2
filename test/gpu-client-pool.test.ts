// The multi-server client against fault-injecting loopback servers: least outstanding
// work, health skipping and recovery, failover before work is accepted, lip-sync jobs
// pinned to the server that accepted them; plus the request/response mapping of the
// synchronous calls (align, synthesize, transcribe) and their typed errors.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type http from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import {
  align,
  createGpuClient,
  GpuServerError,
  GpuServerLost,
  GpuServerTimeout,
  GpuServerUnreachable,
  synthesize,
  transcribe,
  type GpuClient,
} from '../src/gpu-client/index.ts';
import { lipsyncHandler, sendJson, startFaultServer, type FaultServer, type RecordedRequest } from './helpers/client-fault-server.ts';

const FIXTURES = path.resolve(import.meta.dirname, 'fixtures');
const AUDIO = path.join(FIXTURES, 'speech', 'sense_and_sensibility_01_austen_64kb-0880.wav');
const VIDEO = path.join(FIXTURES, 'video', 'presenter.mp4');
const WAV = Buffer.concat([Buffer.from('RIFF\x24\x00\x00\x00WAVEfmt ', 'latin1'), Buffer.alloc(32)]);

const servers: FaultServer[] = [];
const clients: GpuClient[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

const HEALTH = { status: 'ok', backend: 'fault', output_format: 'wav', max_chunk_bytes: 500, device: 'cpu', aligner: 'dtw', lipsync_provider: 'auto', capabilities: ['synthesize', 'align', 'transcribe', 'lipsync'] };

/** A speech server: /health per `healthy()`, /synthesize held until `release()` when gated. */
async function speechServer(opts: { healthy?: () => boolean; gated?: boolean } = {}) {
  const held: http.ServerResponse[] = [];
  let gated = opts.gated ?? false;
  const srv = await startFaultServer((req, res) => {
    if (req.path === '/health') return sendJson(res, opts.healthy?.() === false ? 503 : 200, opts.healthy?.() === false ? { status: 'loading' } : HEALTH);
    if (req.path === '/synthesize') {
      const answer = () => {
        res.writeHead(200, { 'content-type': 'audio/wav' });
        res.end(WAV);
      };
      if (gated) held.push(res);
      else answer();
      return;
    }
    sendJson(res, 404, { detail: 'no route' });
  });
  servers.push(srv);
  const release = () => {
    gated = false;
    for (const res of held.splice(0)) {
      res.writeHead(200, { 'content-type': 'audio/wav' });
      res.end(WAV);
    }
  };
  return { srv, release, held };
}

function client(urls: string[], extra: Parameters<typeof createGpuClient>[0] extends infer O ? Partial<O> : never = {}) {
  const c = createGpuClient({ urls, healthIntervalMs: 50, requestTimeoutMs: 10_000, ...extra });
  clients.push(c);
  return c;
}

const until = async (cond: () => boolean, ms = 3000) => {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > ms) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 5));
  }
};

describe('GPU client pool', () => {
  it('sends each request to the healthy server with the least outstanding work', async () => {
    const a = await speechServer({ gated: true });
    const b = await speechServer({ gated: true });
    const c = client([a.srv.url, b.srv.url]);
    // Two held requests: one each (ties rotate rather than pile on the first server).
    const first = [c.synthesize('one', { language: 'en-US' }), c.synthesize('two', { language: 'en-US' })];
    await until(() => a.held.length === 1 && b.held.length === 1);
    b.release();
    await until(() => c.servers()[1]!.outstanding === 0);
    // A still has one in flight, B none: the next three, one after another, all go to B.
    for (const t of ['three', 'four', 'five']) await c.synthesize(t, { language: 'en-US' });
    expect(a.srv.count('POST /synthesize')).toBe(1);
    expect(b.srv.count('POST /synthesize')).toBe(4);
    expect(c.servers().map((s) => s.outstanding)).toEqual([1, 0]);
    a.release();
    await Promise.all(first);
    expect(c.servers().map((s) => s.outstanding)).toEqual([0, 0]);
  });

  it('spreads concurrent requests evenly over equally loaded servers', async () => {
    const a = await speechServer({ gated: true });
    const b = await speechServer({ gated: true });
    const s3 = await speechServer({ gated: true });
    const c = client([a.srv.url, b.srv.url, s3.srv.url]);
    const all = Array.from({ length: 9 }, (_, i) => c.synthesize(`t${i}`, { language: 'en-US' }));
    await until(() => a.held.length + b.held.length + s3.held.length === 9);
    expect([a.held.length, b.held.length, s3.held.length]).toEqual([3, 3, 3]);
    [a, b, s3].forEach((x) => x.release());
    await Promise.all(all);
  });

  it('skips a server failing /health until a periodic re-check finds it recovered', async () => {
    let aHealthy = false;
    const a = await speechServer({ healthy: () => aHealthy });
    const b = await speechServer();
    const c = client([a.srv.url, b.srv.url]);
    for (let i = 0; i < 4; i++) await c.synthesize(`t${i}`, { language: 'en-US' });
    expect(a.srv.count('POST /synthesize')).toBe(0);
    expect(b.srv.count('POST /synthesize')).toBe(4);
    expect(c.servers()[0]).toMatchObject({ healthy: false });
    expect(c.servers()[0]!.lastError).toMatch(/HTTP 503/);

    aHealthy = true;
    const checks = a.srv.count('GET /health');
    await until(() => a.srv.count('GET /health') > checks && c.servers()[0]!.healthy);
    for (let i = 0; i < 4; i++) await c.synthesize(`u${i}`, { language: 'en-US' });
    expect(a.srv.count('POST /synthesize')).toBeGreaterThan(0);
  });

  it('a server that stops answering is marked down and the request goes to another', async () => {
    const a = await speechServer();
    const b = await speechServer();
    const c = client([a.srv.url, b.srv.url], { healthIntervalMs: 60_000 });
    await c.checkHealth();
    await a.srv.close(); // healthy at the last check, gone now
    for (let i = 0; i < 3; i++) await c.synthesize(`t${i}`, { language: 'en-US' });
    expect(b.srv.count('POST /synthesize')).toBe(3);
    expect(c.servers()[0]!.healthy).toBe(false);
    expect(c.servers()[0]!.lastError).toContain('could not be reached');
  });

  it('with no healthy server, the error names every server and why', async () => {
    const a = await speechServer({ healthy: () => false });
    const dead = await startFaultServer(() => {});
    const deadUrl = dead.url;
    await dead.close();
    const c = client([a.srv.url, deadUrl]);
    const err = (await c.synthesize('x', { language: 'en-US' }).catch((e: unknown) => e)) as GpuServerUnreachable;
    expect(err).toBeInstanceOf(GpuServerUnreachable);
    expect(err.message).toContain('no healthy GPU server');
    expect(err.message).toContain(a.srv.url);
    expect(err.message).toContain(deadUrl);
    expect(err.request).toBe('POST /synthesize');
  });

  it('a lip-sync job stays on the server that accepted it, even when that server is then lost', async () => {
    const video = fs.readFileSync(VIDEO);
    const a = await startFaultServer(lipsyncHandler({ video, polls: [{ status: 'running', elapsed: 1 }, { http: 500 }] }));
    const b = await startFaultServer(lipsyncHandler({ video, polls: [{ status: 'done', elapsed: 1 }] }));
    servers.push(a, b);
    const c = client([a.url, b.url], { healthIntervalMs: 60_000 });
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lectern-gpu-pool-'));
    try {
      const err = await c
        .generateLipsync({ audioPath: AUDIO, referenceVideoPath: VIDEO, outputPath: path.join(dir, 'o.mp4'), pollIntervalMs: 10, requestTimeoutMs: 10_000 })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(GpuServerLost);
      expect(a.count('GET /lipsync/job-1')).toBe(6);
      expect(a.count('DELETE /lipsync/job-1')).toBe(1);
      expect(b.requests.filter((r) => r.path.startsWith('/lipsync'))).toEqual([]);

      // The next job goes to the least-loaded server and reports where it ran.
      const r = await c.generateLipsync({ audioPath: AUDIO, referenceVideoPath: VIDEO, outputPath: path.join(dir, 'o.mp4'), pollIntervalMs: 10, requestTimeoutMs: 10_000 });
      expect(r.serverUrl).toBe(b.url);
      expect(b.count('DELETE /lipsync/job-1')).toBe(1);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('sends the token as a bearer Authorization header on every request', async () => {
    const a = await speechServer();
    const c = client([a.srv.url], { token: 's3cret' });
    await c.synthesize('x', { language: 'en-US' });
    expect(a.srv.requests.map((r) => r.headers.authorization)).toEqual(a.srv.requests.map(() => 'Bearer s3cret'));
  });

  it('rejects a configuration without servers or with a non-http URL', () => {
    expect(() => createGpuClient({ urls: [] })).toThrow(/no GPU server URL/);
    expect(() => createGpuClient({ urls: ['gpu-box:8100'] })).toThrow(/not an http/);
  });
});

describe('GPU client speech calls (request and response mapping)', () => {
  async function server(handle: (req: RecordedRequest, res: http.ServerResponse) => void) {
    const s = await startFaultServer(handle);
    servers.push(s);
    return s;
  }

  it('align sends multipart audio/text/language/provider and maps {words} to an array', async () => {
    const words = [
      { word: 'he', start: 0.1, end: 0.2 },
      { word: 'was', start: 0.2, end: 0.4 },
    ];
    const s = await server((_req, res) => sendJson(res, 200, { words }));
    const out = await align(AUDIO, 'he was', { serverUrl: s.url, language: 'en-US', provider: 'ctc', timeoutMs: 10_000 });
    expect(out).toEqual(words);
    const req = s.requests[0]!;
    expect(`${req.method} ${req.path}`).toBe('POST /align');
    expect(req.fields).toMatchObject({ text: 'he was', language: 'en-US', provider: 'ctc', audio: { filename: path.basename(AUDIO), size: fs.statSync(AUDIO).size } });
  });

  it('align without a provider leaves the server default; a malformed answer is a GpuServerError', async () => {
    const s = await server((_req, res) => sendJson(res, 200, { words: [{ word: 'he', start: 'soon' }] }));
    const err = (await align(AUDIO, 'he', { serverUrl: s.url, language: 'en-US' }).catch((e: unknown) => e)) as GpuServerError;
    expect(err).toBeInstanceOf(GpuServerError);
    expect(err.message).toContain('word 0 is not {word, start, end}');
    expect(s.requests[0]!.fields.provider).toBeUndefined();
  });

  it('a 4xx carries the server detail, status, server and request', async () => {
    const s = await server((_req, res) => sendJson(res, 415, { detail: 'the audio is not audio' }));
    const err = (await align(Buffer.from('nope'), 'x', { serverUrl: s.url, language: 'en-US' }).catch((e: unknown) => e)) as GpuServerError;
    expect(err).toMatchObject({ status: 415, detail: 'the audio is not audio', serverUrl: s.url, request: 'POST /align', transient: false });
    expect(err.message).toBe(`GPU server ${s.url} answered POST /align with HTTP 415: the audio is not audio`);
  });

  it('a response slower than the timeout is a GpuServerTimeout naming the server and request', async () => {
    const s = await server(() => {});
    const err = (await transcribe(AUDIO, 'en-US', { serverUrl: s.url, timeoutMs: 100 }).catch((e: unknown) => e)) as GpuServerTimeout;
    expect(err).toBeInstanceOf(GpuServerTimeout);
    expect(err.message).toBe(`GPU server ${s.url} did not complete POST /transcribe within 100 ms`);
  });

  it('synthesize sends JSON without a reference, and reports the format from the content type', async () => {
    const s = await server((_req, res) => {
      res.writeHead(200, { 'content-type': 'audio/mpeg' });
      res.end(Buffer.from([0xff, 0xfb, 0x90, 0x00, 1, 2, 3]));
    });
    const r = await synthesize('Hello there.', { serverUrl: s.url, language: 'en-GB', voice: 'joe' });
    expect(r).toMatchObject({ format: 'mp3', contentType: 'audio/mpeg' });
    expect(r.audio.length).toBe(7);
    expect(s.requests[0]!.headers['content-type']).toBe('application/json');
    expect(s.requests[0]!.json).toEqual({ text: 'Hello there.', language: 'en-GB', voice: 'joe' });
  });

  it('synthesize sends multipart with ref_audio (bytes or a path) and ref_text for cloning', async () => {
    const s = await server((_req, res) => {
      res.writeHead(200, { 'content-type': 'audio/wav' });
      res.end(WAV);
    });
    const ref = fs.readFileSync(AUDIO);
    const r1 = await synthesize('Clone me.', { serverUrl: s.url, language: 'en-US', refAudio: ref, refText: 'he was not an ill disposed young man' });
    await synthesize('Clone me.', { serverUrl: s.url, language: 'en-US', refAudio: AUDIO });
    expect(r1.format).toBe('wav');
    expect(s.requests[0]!.fields).toMatchObject({ text: 'Clone me.', language: 'en-US', ref_text: 'he was not an ill disposed young man', ref_audio: { size: ref.length, type: 'audio/wav' } });
    expect(s.requests[1]!.fields).toMatchObject({ ref_audio: { filename: path.basename(AUDIO), size: ref.length } });
    expect(s.requests[1]!.fields.ref_text).toBeUndefined();
  });

  it('transcribe sends multipart audio with language (default en-US) and returns the text', async () => {
    const s = await server((_req, res) => sendJson(res, 200, { text: 'he was not an ill disposed young man' }));
    expect(await transcribe(AUDIO, undefined, { serverUrl: s.url })).toBe('he was not an ill disposed young man');
    expect(s.requests[0]!.fields).toMatchObject({ language: 'en-US', audio: { size: fs.statSync(AUDIO).size } });
  });
});
