// One GPU client per process: `serve` with an embedded worker, against a real GPU server
// (eSpeak, the viseme lip-sync provider), counts the server's own /health requests
// (lectern_gpu_requests_total{route="/health"}) to see how many clients talk to it.
// - With checks every 60 s (none fall inside the test), every /health request is a client's
//   first check or an explicit look; a lip-sync job then sends none: its clips go through
//   the client the worker's speech already uses, not a new one per job.
// - With checks every 300 ms, the process polls at one client's rate once the worker's
//   speech and the voice library have both been used (they used to poll with one each).
// The behaviour around it stays: cloning refused at job creation naming the server, and a
// job failing with the server's name once it is down.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT, loadGpuServerConfig } from '../src/config.ts';
import { startGpuServer } from '../src/gpu-server/index.ts';
import { createLogger } from '../src/log.ts';
import type { RunningService } from '../src/service.ts';
import { makePdf } from './helpers/make-documents.ts';
import { json, testEnv, upload, waitFor, type TestEnv } from './helpers/service.ts';

const VIDEO = fs.readFileSync(path.join(import.meta.dirname, 'fixtures/video/presenter.mp4'));
const JFK = fs.readFileSync(path.join(import.meta.dirname, 'fixtures/speech/jfk.wav'));
const PDF = makePdf({ pages: [[{ text: 'Hello from the only page.', x: 72, y: 700, size: 14 }]] });

async function healthRequests(gpuUrl: string): Promise<number> {
  const text = await (await fetch(`${gpuUrl}/metrics`)).text();
  return [...text.matchAll(/^lectern_gpu_requests_total\{route="\/health",[^}]*\} (\S+)$/gm)].reduce((n, m) => n + Number(m[1]), 0);
}

async function finished(url: string, id: string) {
  return waitFor(
    async () => {
      const j = (await json(url, 'GET', `/api/jobs/${id}`)).body;
      return ['completed', 'failed', 'stopped'].includes(j.status) ? j : null;
    },
    240_000,
    `job ${id} to finish`,
  );
}

async function audioJob(url: string, text: string) {
  const doc = await upload(url, 'doc.md', text, 'text/markdown');
  const created = await json(url, 'POST', '/api/jobs', { pipeline_type: 'audio', uploaded_file_id: doc.body.id, language: 'en-US' });
  expect(created.status).toBe(201);
  return finished(url, created.body.id);
}

describe('one GPU client per process, shared by the worker and the voice library', () => {
  let gpu: { url: string; close(): Promise<void> } | null = null;
  let gpuUrl: string;
  const gpuData = fs.mkdtempSync(path.join(os.tmpdir(), 'lectern-shared-gpu-'));
  const envs: TestEnv[] = [];
  const services: RunningService[] = [];
  const start = async (extra: Record<string, string>) => {
    const t = testEnv('embedded', 'gpu_shared');
    envs.push(t);
    const svc = await t.start({ LECTERN_GPU_SERVER_URL: gpuUrl, LECTERN_LIPSYNC_POLL_MS: '200', LECTERN_LEASE_MS: '60000', LECTERN_HEARTBEAT_MS: '1000', ...extra });
    services.push(svc);
    return svc;
  };

  beforeAll(async () => {
    gpu = await startGpuServer(
      { ...loadGpuServerConfig({}, {}), host: '127.0.0.1', port: 0, backend: 'espeak', workers: 1, modelsDir: path.join(PROJECT_ROOT, 'models'), dataDir: gpuData, lipsyncCommand: null, lipsyncProvider: 'viseme' },
      createLogger('silent', 'gpu-test'),
    );
    gpuUrl = gpu.url;
  }, 60_000);
  afterAll(async () => {
    for (const s of services) await s.close();
    await gpu?.close();
    for (const t of envs) await t.cleanup();
    fs.rmSync(gpuData, { recursive: true, force: true });
  });

  it('speech, a lip-sync job and the voice library: /health only from the one client and explicit looks', async () => {
    const before = await healthRequests(gpuUrl);
    const svc = await start({ LECTERN_GPU_HEALTH_MS: '60000' });
    // The client's first check, made once at start-up.
    await waitFor(async () => (await healthRequests(gpuUrl)) - before === 1, 10_000, 'the first /health check');

    let n = await healthRequests(gpuUrl);
    const audio = await audioJob(svc.url, 'A short document narrated by the GPU server.');
    expect(audio.error).toBeNull();
    expect(audio.status).toBe('completed');
    // Remote speech asks /health once, through the client (engine, chunk size, batch size).
    expect((await healthRequests(gpuUrl)) - n).toBe(1);

    n = await healthRequests(gpuUrl);
    const doc = await upload(svc.url, 'one.pdf', PDF);
    const video = await upload(svc.url, 'presenter.mp4', VIDEO);
    const created = await json(svc.url, 'POST', '/api/jobs', { pipeline_type: 'lipsync', uploaded_file_id: doc.body.id, ref_video_file_id: video.body.id, options: { lipsync_preset: 'fast' } });
    expect(created.status).toBe(201);
    const lipsync = await finished(svc.url, created.body.id);
    expect(lipsync.error).toBeNull();
    expect(lipsync.status).toBe('completed');
    expect(lipsync.config_json).toMatchObject({ pages_done: 1, pages_total: 1 });
    // A client made for this job would have checked /health before its first clip.
    expect((await healthRequests(gpuUrl)) - n).toBe(0);

    // The voice library looks through the same client: one request each, and cloning is refused at creation.
    n = await healthRequests(gpuUrl);
    const cloning = (await json(svc.url, 'GET', '/api/voices/cloning')).body;
    expect(cloning.available).toBe(false);
    expect(cloning.detail).toContain(gpuUrl);
    const clip = await upload(svc.url, 'jfk.wav', JFK, 'audio/wav');
    const refused = await json(svc.url, 'POST', '/api/jobs', { pipeline_type: 'audio', uploaded_file_id: doc.body.id, ref_audio_file_id: clip.body.id, ref_text: 'ask not' });
    expect(refused.status).toBe(422);
    expect(refused.body.detail).toContain(gpuUrl);
    expect((await healthRequests(gpuUrl)) - n).toBe(2);
  }, 300_000);

  it('checks every 300 ms: the process polls at one client\'s rate after its speech and its voice library were used', async () => {
    const svc = await start({ LECTERN_GPU_HEALTH_MS: '300' });
    const audio = await audioJob(svc.url, 'Another short document, so the worker makes its speech.');
    expect(audio.status).toBe('completed');
    expect((await json(svc.url, 'GET', '/api/voices/cloning')).body.available).toBe(false);
    // The first service has stopped polling (its client was closed on shutdown).
    await services[0]!.close();
    services.shift();
    await new Promise((r) => setTimeout(r, 500));
    const n = await healthRequests(gpuUrl);
    const windowMs = 3000;
    await new Promise((r) => setTimeout(r, windowMs));
    const polled = (await healthRequests(gpuUrl)) - n;
    // One client: 10 checks in 3 s (fewer when timers run late on a loaded machine); two would make about 20.
    expect(polled).toBeGreaterThanOrEqual(3);
    expect(polled).toBeLessThanOrEqual(windowMs / 300 + 2);
  }, 300_000);
});
