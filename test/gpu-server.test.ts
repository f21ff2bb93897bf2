// The GPU server against a real Fastify listener on an ephemeral port, real worker threads
// and the tiny hand-written ONNX model (the "onnx-test" backend) for batching.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadGpuServerConfig } from '../src/config.ts';
import { createLogger } from '../src/log.ts';
import { startGpuServer } from '../src/gpu-server/index.ts';
import { TEST_BACKEND_URL, startTestGpuServer, tempModelsDir, type RunningGpuServer } from './helpers/gpu-server-fixture.ts';

const WINDOW = 250;
const SPEC_HEALTH_FIELDS = ['status', 'backend', 'output_format', 'max_chunk_bytes', 'device', 'aligner', 'lipsync_provider', 'capabilities'];

const synth = (url: string, body: unknown) =>
  fetch(`${url}/synthesize`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

describe('GPU server with the tiny ONNX test backend (max-batch 4, one worker)', () => {
  let s: RunningGpuServer;
  const batches = () => s.metric('lectern_gpu_batch_size_count');
  const batched = () => s.metric('lectern_gpu_batch_size_sum');
  const bucket = (le: string) => s.metric('lectern_gpu_batch_size_bucket', { le });

  beforeAll(async () => {
    s = await startTestGpuServer({ maxBatch: 4, batchWindowMs: WINDOW, workers: 1 });
  });
  afterAll(async () => s?.close());

  it('reports every spec health field, with lipsync absent when no provider is installed', async () => {
    const res = await fetch(`${s.url}/health`);
    expect(res.status).toBe(200);
    const h = (await res.json()) as Record<string, unknown>;
    for (const f of SPEC_HEALTH_FIELDS) expect(h).toHaveProperty(f);
    expect(h).toMatchObject({ status: 'ok', backend: 'onnx-test', output_format: 'wav', max_chunk_bytes: 200, device: 'cpu', aligner: 'auto', lipsync_provider: 'auto' });
    expect(h.capabilities).toContain('synthesize');
    expect(h.capabilities).not.toContain('lipsync');
    expect(h).toMatchObject({ pool_size: 1, voice_cloning: false, max_batch: 4 });
    expect(h.models_loaded).toEqual(['tts:onnx-test|cpu|fp32']);
  });

  it('synthesizes WAV with word timings', async () => {
    const res = await synth(s.url, { text: 'Hello there world', language: 'en-US' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('audio/wav');
    const wav = Buffer.from(await res.arrayBuffer());
    expect(wav.subarray(0, 4).toString('latin1')).toBe('RIFF');
    const words = JSON.parse(Buffer.from(res.headers.get('x-word-timings')!, 'base64').toString('utf8')) as Array<{ word: string }>;
    expect(words.map((w) => w.word)).toEqual(['Hello', 'there', 'world']);
  });

  it('coalesces concurrent compatible requests into one model call', async () => {
    const [n0, sum0, le2] = [await batches(), await batched(), await bucket('2')];
    const res = await Promise.all([1, 2, 3].map((i) => synth(s.url, { text: `sentence number ${i}`, language: 'en-US' })));
    expect(res.map((r) => r.status)).toEqual([200, 200, 200]);
    expect(await batches()).toBe(n0 + 1);
    expect(await batched()).toBe(sum0 + 3);
    expect(await bucket('2')).toBe(le2); // the one batch was not of size ≤ 2
  });

  it('splits at max-batch', async () => {
    const [n0, sum0, le4, le3] = [await batches(), await batched(), await bucket('4'), await bucket('3')];
    const res = await Promise.all(Array.from({ length: 10 }, (_, i) => synth(s.url, { text: `item ${i}`, language: 'en-US' })));
    expect(res.every((r) => r.status === 200)).toBe(true);
    expect(await batches()).toBe(n0 + 3); // 4 + 4 + 2
    expect(await batched()).toBe(sum0 + 10);
    expect((await bucket('4')) - le4).toBe(3);
    expect((await bucket('3')) - le3).toBe(1);
  });

  it('never lets an incompatible head block compatible requests, and never holds one past the window', async () => {
    const n0 = await batches();
    const t0 = performance.now();
    const german = synth(s.url, { text: 'Guten Tag', language: 'de-DE' }).then((r) => ({ r, t: performance.now() - t0 }));
    const english = [1, 2, 3].map((i) => synth(s.url, { text: `english ${i}`, language: 'en-US' }).then((r) => ({ r, t: performance.now() - t0 })));
    const all = await Promise.all([german, ...english]);
    expect(all.every((x) => x.r.status === 200)).toBe(true);
    expect(await batches()).toBe(n0 + 2);
    for (const x of all) {
      expect(x.t).toBeGreaterThanOrEqual(WINDOW - 5);
      expect(x.t).toBeLessThan(WINDOW + 400); // window + one tiny model call + HTTP
    }
  });

  it('a full batch goes out at once, without waiting for the window', async () => {
    const t0 = performance.now();
    await Promise.all([1, 2, 3, 4].map((i) => synth(s.url, { text: `full ${i}`, language: 'en-US' })));
    expect(performance.now() - t0).toBeLessThan(WINDOW);
  });

  it('loads the model once per worker: later requests are cache hits', async () => {
    const h0 = (await (await fetch(`${s.url}/health`)).json()) as { model_cache: { hits: number; misses: number } };
    await synth(s.url, { text: 'cache check', language: 'en-US' });
    const h1 = (await (await fetch(`${s.url}/health`)).json()) as { model_cache: { hits: number; misses: number } };
    expect(h0.model_cache.misses).toBe(1); // the start-up load
    expect(h1.model_cache.misses).toBe(1);
    expect(h1.model_cache.hits).toBe(h0.model_cache.hits + 1);
    expect(await s.metric('lectern_gpu_model_cache_total', { result: 'miss' })).toBe(1);
  });

  it('answers bad input with 4xx {detail} and keeps serving', async () => {
    const cases: Array<[RequestInit & { path?: string }, number, RegExp]> = [
      [{ body: JSON.stringify({ text: '', language: 'en-US' }) }, 422, /empty/],
      [{ body: JSON.stringify({ text: '   ', language: 'en-US' }) }, 422, /empty/],
      [{ body: JSON.stringify({ language: 'en-US' }) }, 422, /missing field "text"/],
      [{ body: JSON.stringify({ text: 42, language: 'en-US' }) }, 422, /"text" must be a string/],
      [{ body: JSON.stringify({ text: 'x'.repeat(201), language: 'en-US' }) }, 413, /201 UTF-8 bytes.*200/],
      [{ body: JSON.stringify({ text: 'hi', language: 'xx-YY' }) }, 422, /language "xx-YY"/],
      [{ body: '{"text": ' }, 400, /./],
      [{ body: 'hello', headers: { 'content-type': 'text/plain' } }, 415, /./],
    ];
    for (const [init, status, detail] of cases) {
      const res = await fetch(`${s.url}/synthesize`, { method: 'POST', headers: { 'content-type': 'application/json' }, ...init });
      expect(res.status, String(init.body)).toBe(status);
      const body = (await res.json()) as { detail: string };
      expect(body.detail).toMatch(detail);
      expect(JSON.stringify(body)).not.toMatch(/at .*\.ts:\d+/);
    }

    const clone = new FormData();
    clone.set('text', 'clone me');
    clone.set('language', 'en-US');
    clone.set('ref_audio', new Blob([readFileSync('test/fixtures/speech/jfk.wav')]), 'ref.wav');
    clone.set('ref_text', 'and so my fellow americans');
    const cr = await fetch(`${s.url}/synthesize`, { method: 'POST', body: clone });
    expect(cr.status).toBe(422);
    expect(((await cr.json()) as { detail: string }).detail).toMatch(/onnx-test cannot clone/);

    const align = new FormData();
    align.set('text', 'hello world');
    align.set('audio', new Blob([Buffer.from('this is not audio at all, just text bytes')]), 'a.wav');
    const ar = await fetch(`${s.url}/align`, { method: 'POST', body: align });
    expect(ar.status).toBe(415);
    expect(((await ar.json()) as { detail: string }).detail).toMatch(/not audio/);

    const noText = new FormData();
    noText.set('audio', new Blob([readFileSync('test/fixtures/speech/jfk.wav')]), 'a.wav');
    expect((await fetch(`${s.url}/align`, { method: 'POST', body: noText })).status).toBe(422);

    const nolip = new FormData();
    nolip.set('audio', new Blob([readFileSync('test/fixtures/speech/jfk.wav')]), 'a.wav');
    const lr = await fetch(`${s.url}/lipsync`, { method: 'POST', body: nolip });
    expect(lr.status).toBe(503);
    expect(((await lr.json()) as { detail: string }).detail).toMatch(/no lip-sync provider is installed/);

    expect((await fetch(`${s.url}/nope`)).status).toBe(404);
    expect((await synth(s.url, { text: 'still alive', language: 'en-US' })).status).toBe(200);
  });

  it('answers /health within 50 ms while every worker is busy', async () => {
    const busy = synth(s.url, { text: 'busy:1500 a long model call', language: 'en-US' });
    await new Promise((r) => setTimeout(r, WINDOW + 150)); // the batch is now inside the worker
    const times: number[] = [];
    for (let i = 0; i < 5; i++) {
      const t0 = performance.now();
      const res = await fetch(`${s.url}/health`);
      await res.json();
      times.push(performance.now() - t0);
    }
    const h = (await (await fetch(`${s.url}/health`)).json()) as { status: string };
    expect(h.status).toBe('ok');
    expect(Math.max(...times)).toBeLessThan(50);
    expect((await busy).status).toBe(200);
    expect(await s.metric('lectern_gpu_pool_workers')).toBe(1);
  });
});

describe('GPU server start-up', () => {
  it('answers 503 until the backend is loaded, then serves', async () => {
    const s = await startTestGpuServer({}, { load: false });
    try {
      const h = await fetch(`${s.url}/health`);
      expect(h.status).toBe(503);
      expect(((await h.json()) as { status: string }).status).toBe('loading');
      const r = await synth(s.url, { text: 'too early', language: 'en-US' });
      expect(r.status).toBe(503);
      expect(((await r.json()) as { detail: string }).detail).toMatch(/still loading/);
      await s.server.load();
      expect((await synth(s.url, { text: 'now ready', language: 'en-US' })).status).toBe(200);
    } finally {
      await s.close();
    }
  });

  it('a missing model file stops start-up with a message naming the file', async () => {
    const empty = tempModelsDir(false);
    const config = {
      ...loadGpuServerConfig({}, {}),
      port: 0,
      backend: 'onnx-test',
      workers: 2,
      modelsDir: empty,
      dataDir: path.join(empty, 'data'),
      extraBackends: { 'onnx-test': TEST_BACKEND_URL },
    };
    await expect(startGpuServer(config, createLogger('silent', 'gpu-test'))).rejects.toThrow(path.join(empty, 'tiny-square.onnx'));
  });
});
