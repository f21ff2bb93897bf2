// Security and operations through real HTTP: bearer tokens (service and GPU server), request
// ids from the API through the queue to the worker and the GPU server, safe file serving,
// limits (413/429, nothing written), CORS, the listen-address rule and the GPU server's
// shutdown of lip-sync jobs. Rules that touch the stores run in both modes.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadGpuServerConfig, loadServiceConfig } from '../src/config.ts';
import { createGpuClient } from '../src/gpu-client/index.ts';
import { createLogger, type Logger } from '../src/log.ts';
import { withRequestId } from '../src/request-context.ts';
import { startService, startStandaloneWorker, type RunningService } from '../src/service.ts';
import { startTestGpuServer, type RunningGpuServer } from './helpers/gpu-server-fixture.ts';
import { MODES, testEnv, waitFor, type TestEnv } from './helpers/service.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const FIX = path.join(import.meta.dirname, 'fixtures');
const ALICE = 'alice-token-0123456789abcdef';
const BOB = 'bob-token-fedcba9876543210xyz';
const WRONG = 'mallory-token-00000000000000';
const TOKENS = `alice:${ALICE},bob:${BOB}`;

/** A logger whose JSON lines the test can read. */
function capturedLogger(level = 'info'): { log: Logger; text: () => string; lines: () => any[] } {
  const chunks: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      chunks.push(chunk.toString());
      cb();
    },
  });
  const log = createLogger(level, 'test', sink as never);
  const text = () => chunks.join('');
  return { log, text, lines: () => text().split('\n').filter(Boolean).map((l) => JSON.parse(l)) };
}

async function call(url: string, method: string, p: string, opts: { token?: string; body?: unknown; headers?: Record<string, string> } = {}) {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  let body: RequestInit['body'];
  if (opts.body instanceof FormData) body = opts.body;
  else if (opts.body !== undefined) {
    headers['content-type'] = 'application/json';
    body = typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
  }
  const res = await fetch(`${url}${p}`, { method, headers, body });
  const text = await res.text();
  let parsed: any = text;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    /* not JSON */
  }
  return { status: res.status, body: parsed, headers: res.headers };
}

function form(name: string, data: string | Buffer, type = 'application/octet-stream'): FormData {
  const f = new FormData();
  f.append('file', new Blob([typeof data === 'string' ? Buffer.from(data) : data], { type }), name);
  return f;
}

const files = (dir: string) => (fs.existsSync(dir) ? fs.readdirSync(dir) : []);

describe.each(MODES)('service authentication, limits and request ids (%s)', (mode) => {
  let t: TestEnv;
  let svc: RunningService;
  let url: string;
  let logs: ReturnType<typeof capturedLogger>;

  beforeAll(async () => {
    t = testEnv(mode, `sec_${mode}`);
    logs = capturedLogger('info');
    // No embedded worker: created jobs stay pending, so the active-job limit is deterministic.
    const config = t.config({ LECTERN_API_TOKENS: TOKENS, LECTERN_NO_EMBEDDED_WORKER: '1', LECTERN_MAX_ACTIVE_JOBS: '2' });
    svc = await startService(config, logs.log);
    url = svc.url;
  });
  afterAll(async () => {
    await svc?.close();
    await t?.cleanup();
  });

  it('401 without or with a wrong token, 200 with a right one; /health and /openapi.json stay open', async () => {
    expect((await call(url, 'GET', '/health')).status).toBe(200);
    expect((await call(url, 'GET', '/openapi.json')).status).toBe(200);
    const none = await call(url, 'GET', '/api/jobs');
    expect(none.status).toBe(401);
    expect(none.body.detail).toMatch(/Authorization: Bearer/);
    expect(none.headers.get('www-authenticate')).toBe('Bearer');
    const wrong = await call(url, 'GET', '/api/jobs', { token: WRONG });
    expect(wrong.status).toBe(401);
    expect(wrong.body).toEqual({ detail: 'invalid bearer token' });
    const basic = await call(url, 'GET', '/api/jobs', { headers: { authorization: `Basic ${Buffer.from(`x:${ALICE}`).toString('base64')}` } });
    expect(basic.status).toBe(401);
    for (const token of [ALICE, BOB]) expect((await call(url, 'GET', '/api/jobs', { token })).status).toBe(200);
    expect((await call(url, 'GET', '/api/voices', { token: WRONG })).status).toBe(401);
    expect((await call(url, 'GET', '/api/languages', { token: BOB })).status).toBe(200);
  });

  it('an upload without a token is refused before a byte is written', async () => {
    const before = files(path.join(t.dataDir, 'uploads')).length;
    const r = await call(url, 'POST', '/api/uploads', { body: form('notes.txt', 'Some text to narrate.') });
    expect(r.status).toBe(401);
    const w = await call(url, 'POST', '/api/uploads', { body: form('notes.txt', 'Some text to narrate.'), token: WRONG });
    expect(w.status).toBe(401);
    expect(files(path.join(t.dataDir, 'uploads')).length).toBe(before);
    expect(files(path.join(t.dataDir, 'tmp'))).toEqual([]);
  });

  it('echoes a valid x-request-id, replaces an invalid one, and stores it with the job and its creator', async () => {
    const echoed = await call(url, 'GET', '/api/jobs', { token: ALICE, headers: { 'x-request-id': 'client-req.42' } });
    expect(echoed.headers.get('x-request-id')).toBe('client-req.42');
    const replaced = await call(url, 'GET', '/api/jobs', { token: ALICE, headers: { 'x-request-id': 'bad id "with quotes"' } });
    expect(replaced.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    const fresh = await call(url, 'GET', '/health');
    expect(fresh.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    // A 401 carries one too, so a refused client can quote it.
    expect((await call(url, 'GET', '/api/jobs')).headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('counts active jobs per token: 429 over the limit with nothing created, other tokens unaffected', async () => {
    const docs: Record<string, string> = {};
    for (const token of [ALICE, BOB]) {
      const doc = await call(url, 'POST', '/api/uploads', { body: form('short.txt', 'A short text for the limit.'), token });
      expect(doc.status).toBe(201);
      docs[token] = doc.body.id;
    }
    const create = (token: string, rid: string) =>
      call(url, 'POST', '/api/jobs', { token, body: { pipeline_type: 'audio', uploaded_file_id: docs[token] }, headers: { 'x-request-id': rid } });
    const a1 = await create(ALICE, 'limit-a1');
    expect(a1.status).toBe(201);
    expect(a1.body.config_json).toMatchObject({ created_by: 'alice', request_id: 'limit-a1' });
    expect((await create(ALICE, 'limit-a2')).status).toBe(201);
    const over = await create(ALICE, 'limit-a3');
    expect(over.status).toBe(429);
    expect(over.body.detail).toMatch(/too many active jobs: 2 .*"alice".*limit is 2/);
    const b1 = await create(BOB, 'limit-b1');
    expect(b1.status).toBe(201);
    expect(b1.body.config_json.created_by).toBe('bob');
    // Each token lists (and counts) its own.
    expect((await call(url, 'GET', '/api/jobs', { token: BOB })).body.total).toBe(1);
    expect((await call(url, 'GET', '/api/jobs', { token: ALICE })).body.total).toBe(2);
    // A finished (here: deleted) job frees its slot.
    expect((await call(url, 'DELETE', `/api/jobs/${a1.body.id}`, { token: ALICE })).status).toBe(200);
    const again = await create(ALICE, 'limit-a4');
    expect(again.status).toBe(201);
    for (const token of [ALICE, BOB]) {
      for (const j of (await call(url, 'GET', '/api/jobs', { token })).body.jobs) expect((await call(url, 'DELETE', `/api/jobs/${j.id}`, { token })).status).toBe(200);
    }
  });

  it('the request id reaches the worker through the queue; tokens never reach the logs', { timeout: 90_000 }, async () => {
    const workerLogs = capturedLogger('info');
    const worker = await startStandaloneWorker(t.config({ LECTERN_API_TOKENS: TOKENS }), workerLogs.log);
    try {
      const doc = await call(url, 'POST', '/api/uploads', { body: form('hello.txt', 'Hello from the request id test.'), token: BOB });
      const job = await call(url, 'POST', '/api/jobs', {
        token: BOB,
        body: { pipeline_type: 'audio', uploaded_file_id: doc.body.id },
        headers: { 'x-request-id': 'trace-me-7' },
      });
      expect(job.status).toBe(201);
      const done = await waitFor(async () => {
        const j = (await call(url, 'GET', `/api/jobs/${job.body.id}`, { token: BOB })).body;
        return j.status === 'completed' || j.status === 'failed' ? j : null;
      }, 60_000, 'the job');
      expect(done.status).toBe('completed');
      const completed = workerLogs.lines().find((l) => l.msg === 'job completed' && l.job_id === job.body.id);
      expect(completed?.request_id).toBe('trace-me-7');
      // The API side: the creation line names the request and the token's holder.
      const created = logs.lines().find((l) => l.msg === 'job created' && l.job_id === job.body.id);
      expect(created).toMatchObject({ request_id: 'trace-me-7', token_name: 'bob' });
      expect(logs.lines().some((l) => l.reqId === 'trace-me-7')).toBe(true);
      expect(logs.lines().some((l) => l.auth === 'wrong token')).toBe(true);
    } finally {
      await worker.close();
    }
    for (const secret of [ALICE, BOB, WRONG]) {
      expect(logs.text()).not.toContain(secret);
      expect(workerLogs.text()).not.toContain(secret);
    }
  });
});

describe('service: rate limit, body limit, safe file serving, CORS (embedded)', () => {
  let t: TestEnv;
  let svc: RunningService;
  let url: string;

  beforeAll(async () => {
    t = testEnv('embedded', 'sec_limits');
    svc = await t.start({
      LECTERN_API_TOKENS: TOKENS,
      LECTERN_RATE_LIMIT_PER_MINUTE: '12',
      LECTERN_MAX_BODY_BYTES: '4096',
      LECTERN_MAX_UPLOAD_BYTES: '65536',
      LECTERN_NO_EMBEDDED_WORKER: '1',
      LECTERN_CORS_ORIGINS: 'http://ui.example:5173',
    });
    url = svc.url;
  });
  afterAll(async () => {
    await svc?.close();
    await t?.cleanup();
  });

  it('serves an upload as an attachment typed from its bytes, with nosniff; HTML markup is refused; traversal ids are 404', async () => {
    // Text with markup inside is accepted as text, whatever name and type the client claimed…
    const sneaky = await call(url, 'POST', '/api/uploads', { token: ALICE, body: form('evil.html', 'Notes\n<script>alert(document.cookie)</script>\n', 'text/html') });
    expect(sneaky.status).toBe(201);
    expect(sneaky.body.content_type).toBe('text/plain; charset=utf-8');
    const res = await fetch(`${url}/api/uploads/${sneaky.body.id}/file`, { headers: { authorization: `Bearer ${ALICE}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('content-disposition')).toMatch(/^attachment; filename="evil\.txt"/);
    expect(res.headers.get('content-security-policy')).toMatch(/sandbox/);
    expect(await res.text()).toContain('<script>');
    // …and a document that is HTML is not stored at all.
    const before = files(path.join(t.dataDir, 'uploads')).length;
    for (const markup of ['<!DOCTYPE html><html><script>alert(1)</script>', '<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>']) {
      const r = await call(url, 'POST', '/api/uploads', { token: ALICE, body: form('page.txt', markup, 'text/plain') });
      expect(r.status).toBe(415);
    }
    expect(files(path.join(t.dataDir, 'uploads')).length).toBe(before);
    for (const p of ['/api/uploads/..%2F..%2Fetc%2Fpasswd/file', '/api/uploads/..%2Flectern.db/file', '/api/jobs/..%2F..%2Fetc/download', '/api/voices/..%2F..%2F..%2Fetc%2Fpasswd/audio']) {
      const r = await call(url, 'GET', p, { token: ALICE });
      expect(r.status, p).toBe(404);
      expect(typeof r.body.detail).toBe('string');
    }
  });

  it('413 for a JSON body over LECTERN_MAX_BODY_BYTES and an upload over LECTERN_MAX_UPLOAD_BYTES; nothing written', async () => {
    const before = (await call(url, 'GET', '/api/jobs', { token: BOB })).body.total;
    const big = await call(url, 'POST', '/api/jobs', { token: BOB, body: { pipeline_type: 'audio', uploaded_file_id: 'x', title: 'x'.repeat(8000) } });
    expect(big.status).toBe(413);
    expect(big.body.detail).toMatch(/larger than the limit of 4096 bytes/);
    expect((await call(url, 'GET', '/api/jobs', { token: BOB })).body.total).toBe(before);
    const uploadsBefore = files(path.join(t.dataDir, 'uploads')).length;
    const up = await call(url, 'POST', '/api/uploads', { token: BOB, body: form('big.txt', 'a'.repeat(200_000)) });
    expect(up.status).toBe(413);
    expect(up.body.detail).toMatch(/limit of 65536 bytes/);
    expect(files(path.join(t.dataDir, 'uploads')).length).toBe(uploadsBefore);
    expect(files(path.join(t.dataDir, 'tmp'))).toEqual([]);
  });

  it('CORS: preflights answered for configured origins only; no CORS headers for others', async () => {
    const pre = await fetch(`${url}/api/jobs`, {
      method: 'OPTIONS',
      headers: { origin: 'http://ui.example:5173', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization,content-type' },
    });
    expect(pre.status).toBe(204);
    expect(pre.headers.get('access-control-allow-origin')).toBe('http://ui.example:5173');
    expect(pre.headers.get('access-control-allow-headers')).toMatch(/authorization/);
    const other = await fetch(`${url}/api/jobs`, { headers: { origin: 'http://evil.example', authorization: `Bearer ${ALICE}` } });
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
    const ok = await fetch(`${url}/api/jobs`, { headers: { origin: 'http://ui.example:5173', authorization: `Bearer ${ALICE}` } });
    expect(ok.headers.get('access-control-allow-origin')).toBe('http://ui.example:5173');
    expect(ok.headers.get('access-control-expose-headers')).toMatch(/x-request-id/);
    // The event stream (read with fetch and the header, as the web UI does) carries them too.
    const doc = await call(url, 'POST', '/api/uploads', { token: BOB, body: form('events.txt', 'Events carry headers.') });
    const job = await call(url, 'POST', '/api/jobs', { token: BOB, body: { pipeline_type: 'audio', uploaded_file_id: doc.body.id } });
    expect(job.status).toBe(201);
    expect((await fetch(`${url}/api/jobs/${job.body.id}/events`)).status).toBe(401);
    const ac = new AbortController();
    const ev = await fetch(`${url}/api/jobs/${job.body.id}/events`, {
      headers: { origin: 'http://ui.example:5173', authorization: `Bearer ${BOB}`, 'x-request-id': 'sse-1' },
      signal: ac.signal,
    });
    expect(ev.status).toBe(200);
    expect(ev.headers.get('content-type')).toMatch(/text\/event-stream/);
    expect(ev.headers.get('x-request-id')).toBe('sse-1');
    expect(ev.headers.get('access-control-allow-origin')).toBe('http://ui.example:5173');
    ac.abort();
  });

  it('429 with Retry-After past the per-token requests per minute; other tokens and /health are not affected; a refused upload writes nothing', async () => {
    let status = 0;
    let last: Awaited<ReturnType<typeof call>> | null = null;
    for (let i = 0; i < 20 && status !== 429; i++) {
      last = await call(url, 'GET', '/api/jobs', { token: ALICE });
      status = last.status;
    }
    expect(status).toBe(429);
    expect(last!.body.detail).toMatch(/rate limit exceeded: at most 12 requests per minute for token "alice"/);
    expect(Number(last!.headers.get('retry-after'))).toBeGreaterThan(0);
    const before = files(path.join(t.dataDir, 'uploads')).length;
    const up = await call(url, 'POST', '/api/uploads', { token: ALICE, body: form('late.txt', 'Too late.') });
    expect(up.status).toBe(429);
    expect(files(path.join(t.dataDir, 'uploads')).length).toBe(before);
    expect((await call(url, 'GET', '/api/jobs', { token: BOB })).status).toBe(200);
    for (let i = 0; i < 15; i++) expect((await call(url, 'GET', '/health')).status).toBe(200);
  });
});

describe('listen address rule', () => {
  it('refuses a non-loopback listener without tokens unless --insecure; tokens come from env or a file, hashed', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lectern-sec-cfg-'));
    try {
      expect(() => loadServiceConfig({ host: '0.0.0.0' }, {})).toThrow(ConfigError);
      expect(() => loadServiceConfig({ host: '0.0.0.0' }, {})).toThrow(/--insecure/);
      expect(() => loadGpuServerConfig({ host: '::' }, {})).toThrow(/LECTERN_GPU_TOKENS/);
      expect(loadServiceConfig({ host: '0.0.0.0', insecure: true }, {}).security.tokens).toEqual([]);
      expect(loadServiceConfig({ host: 'localhost' }, {}).security.loopback).toBe(true);
      const file = path.join(dir, 'tokens');
      fs.writeFileSync(file, `# operators\nops:${'o'.repeat(24)}\n\nci:${'c'.repeat(20)}\n`);
      const cfg = loadServiceConfig({ host: '0.0.0.0', 'tokens-file': file }, { LECTERN_API_TOKENS: TOKENS });
      expect(cfg.security.tokens.map((x) => x.name)).toEqual(['alice', 'bob', 'ops', 'ci']);
      expect(JSON.stringify(cfg)).not.toContain(ALICE);
      expect(() => loadServiceConfig({}, { LECTERN_API_TOKENS: 'alice:short' })).toThrow(/shorter than 16/);
      expect(() => loadServiceConfig({}, { LECTERN_API_TOKENS: `alice:${ALICE}x,alice:${BOB}` })).toThrow(/appears twice/);
      try {
        loadServiceConfig({}, { LECTERN_API_TOKENS: `${ALICE}` });
      } catch (e) {
        expect((e as Error).message).not.toContain(ALICE.slice(6));
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('`lectern serve --host 0.0.0.0` without tokens exits with the reason', { timeout: 30_000 }, async () => {
    const child = spawn(process.execPath, [path.join(ROOT, 'bin/lectern.js'), 'serve', '--host', '0.0.0.0', '--port', '0'], {
      env: { ...process.env, LECTERN_API_TOKENS: '', LECTERN_INSECURE: '' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let err = '';
    child.stderr!.on('data', (b: Buffer) => (err += b.toString()));
    const code = await new Promise<number | null>((r) => child.on('exit', r));
    expect(code).toBe(1);
    expect(err).toMatch(/without authentication.*--insecure/);
  });
});

describe('GPU server: tokens, metrics token, request ids, lip-sync table limit and shutdown', () => {
  let s: RunningGpuServer;
  let logs: ReturnType<typeof capturedLogger>;
  let scripts: string;
  const GPU = 'gpu-worker-token-abcdef0123456';
  const METRICS = 'metrics-token-0123456789abcd';

  beforeAll(async () => {
    scripts = fs.mkdtempSync(path.join(os.tmpdir(), 'lectern-sec-lipsync-'));
    const script = path.join(scripts, 'lipsync.sh');
    // preset "slow" sleeps 30 s (to be cancelled), "quick" 0.3 s; then the video is copied as the result.
    fs.writeFileSync(script, ['#!/bin/sh', 'if [ "$4" = slow ]; then sleep 30; else sleep 0.3; fi', 'cp "$2" "$3"'].join('\n'));
    logs = capturedLogger('info');
    const base = loadGpuServerConfig({}, { LECTERN_GPU_TOKENS: `worker:${GPU}`, LECTERN_METRICS_TOKEN: METRICS });
    s = await startTestGpuServer({
      security: base.security,
      lipsyncCommand: `sh '${script}' {audio} {video} {output} {preset}`,
      lipsyncCommandPresets: ['quick', 'slow'],
      maxLipsyncJobs: 2,
    }, { log: logs.log });
  });
  afterAll(async () => {
    await s?.close().catch(() => undefined); // the last test already shut it down
    fs.rmSync(scripts, { recursive: true, force: true });
  });

  const synth = (token?: string) =>
    fetch(`${s.url}/synthesize`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify({ text: 'Hello there.', language: 'en-US' }),
    });
  const submit = (preset: string) => {
    const f = new FormData();
    f.set('audio', new Blob([fs.readFileSync(path.join(FIX, 'speech/jfk.wav'))]), 'jfk.wav');
    f.set('reference_video', new Blob([fs.readFileSync(path.join(FIX, 'video/presenter.mp4'))]), 'presenter.mp4');
    f.set('lipsync_preset', preset);
    return fetch(`${s.url}/lipsync`, { method: 'POST', body: f, headers: { authorization: `Bearer ${GPU}` } });
  };

  it('401 without or with a wrong token on model routes; /health open; /metrics needs its own token', async () => {
    expect((await fetch(`${s.url}/health`)).status).toBe(200);
    const none = await synth();
    expect(none.status).toBe(401);
    expect(((await none.json()) as { detail: string }).detail).toMatch(/Bearer/);
    expect((await synth(WRONG)).status).toBe(401);
    expect((await fetch(`${s.url}/lipsync/00000000-0000-4000-8000-000000000000`)).status).toBe(401);
    const ok = await synth(GPU);
    expect(ok.status).toBe(200);
    await ok.arrayBuffer();
    expect((await fetch(`${s.url}/metrics`)).status).toBe(401);
    expect((await fetch(`${s.url}/metrics`, { headers: { authorization: `Bearer ${GPU}` } })).status).toBe(401);
    const m = await fetch(`${s.url}/metrics`, { headers: { authorization: `Bearer ${METRICS}` } });
    expect(m.status).toBe(200);
    expect(await m.text()).toMatch(/lectern_/);
  });

  it('the client sends the token and the current request id; the server logs the id, never a token', async () => {
    const client = createGpuClient({ urls: [s.url], token: GPU, healthIntervalMs: 60_000 });
    try {
      const out = await withRequestId('job-req-9f', () => client.synthesize('Request ids travel.', { language: 'en-US' }));
      expect(out.audio.length).toBeGreaterThan(44);
    } finally {
      client.close();
    }
    const line = logs.lines().find((l) => l.reqId === 'job-req-9f' && l.msg === 'request completed');
    expect(line).toMatchObject({ url: '/synthesize', status: 200, token_name: 'worker' });
    expect(logs.text()).not.toContain(GPU);
    expect(logs.text()).not.toContain(WRONG);
    expect(logs.text()).not.toContain(METRICS);
  });

  it('a full lip-sync table answers 503 with a detail; shutdown past the grace cancels running and queued jobs and logs which', { timeout: 60_000 }, async () => {
    const slow = await submit('slow');
    expect(slow.status).toBe(202);
    const slowId = ((await slow.json()) as { lipsync_id: string }).lipsync_id;
    const quick = await submit('quick');
    expect(quick.status).toBe(202);
    const quickId = ((await quick.json()) as { lipsync_id: string }).lipsync_id;
    const full = await submit('quick');
    expect(full.status).toBe(503);
    expect(((await full.json()) as { detail: string }).detail).toMatch(/lip-sync job table is full \(2 jobs\)/);
    // One generation at a time: the quick job waits behind the slow one (30 s). A grace of 1 s
    // ends with both still in flight, so both are cancelled; the next test covers "finished".
    const t0 = Date.now();
    await s.server.close(1000);
    expect(Date.now() - t0).toBeLessThan(10_000);
    const cancelled = logs.lines().find((l) => l.msg === 'shutdown: lip-sync jobs cancelled (grace period over)');
    expect(cancelled?.lipsync_ids.sort()).toEqual([slowId, quickId].sort());
  });
});

describe('GPU server shutdown: a job that finishes within the grace period is reported as finished', () => {
  it('finished, not cancelled', { timeout: 60_000 }, async () => {
    const scripts = fs.mkdtempSync(path.join(os.tmpdir(), 'lectern-sec-lipsync2-'));
    const script = path.join(scripts, 'lipsync.sh');
    fs.writeFileSync(script, ['#!/bin/sh', 'sleep 0.5', 'cp "$2" "$3"'].join('\n'));
    const logs = capturedLogger('info');
    const s = await startTestGpuServer({ lipsyncCommand: `sh '${script}' {audio} {video} {output} {preset}` }, { log: logs.log });
    try {
      const f = new FormData();
      f.set('audio', new Blob([fs.readFileSync(path.join(FIX, 'speech/jfk.wav'))]), 'jfk.wav');
      f.set('reference_video', new Blob([fs.readFileSync(path.join(FIX, 'video/presenter.mp4'))]), 'presenter.mp4');
      const r = await fetch(`${s.url}/lipsync`, { method: 'POST', body: f });
      expect(r.status).toBe(202);
      const id = ((await r.json()) as { lipsync_id: string }).lipsync_id;
      const closing = s.server.close(4000);
      // While draining, new work goes elsewhere; the running job's status stays readable.
      const during = await fetch(`${s.url}/synthesize`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"text":"x"}' });
      expect(during.status).toBe(503);
      expect(((await during.json()) as { detail: string }).detail).toMatch(/shutting down/);
      await waitFor(async () => ((await (await fetch(`${s.url}/lipsync/${id}`)).json()) as { status: string }).status === 'done', 10_000, 'the job');
      const res = await fetch(`${s.url}/lipsync/${id}/result`);
      expect(res.status).toBe(200);
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      await res.arrayBuffer();
      await closing;
      const finished = logs.lines().find((l) => l.msg === 'shutdown: lip-sync jobs finished before exit');
      expect(finished?.lipsync_jobs).toEqual([{ id, status: 'done' }]);
      expect(logs.lines().some((l) => l.msg?.startsWith('shutdown: lip-sync jobs cancelled'))).toBe(false);
    } finally {
      await s.close().catch(() => undefined);
      fs.rmSync(scripts, { recursive: true, force: true });
    }
  });
});
