// The worker using a real GPU server (LECTERN_GPU_SERVER_URL): an audio job through the
// real service (embedded mode) whose speech comes from a real GPU server on an ephemeral
// port (Piper when its voice is installed, else eSpeak), the server's batcher coalescing
// the job's chunks; and a job failing with the server's name once the server is gone.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT, loadGpuServerConfig } from '../src/config.ts';
import { createGpuClient } from '../src/gpu-client/index.ts';
import { chooseBackend, startGpuServer } from '../src/gpu-server/index.ts';
import { createLogger } from '../src/log.ts';
import { ffprobe } from '../src/media/ffmpeg.ts';
import { decodeWav } from '../src/media/wav.ts';
import type { RunningService } from '../src/service.ts';
import { createRemoteSpeech } from '../src/speech/remote.ts';
import { tokenizeWords } from '../src/speech/words.ts';
import { json, testEnv, upload, waitFor, type TestEnv } from './helpers/service.ts';

const MODELS = path.join(PROJECT_ROOT, 'models');
const BACKEND = chooseBackend(MODELS);

// One paragraph per chunk (chunks never cross a block), so the job has several requests in flight.
const DOC = [
  'The river ran quietly past the old mill at the edge of town.',
  'Every morning the baker opened his shop before the sun came up.',
  'Children walked to school along the narrow road by the water.',
  'In the evening the lamps were lit and the streets grew calm.',
].join('\n\n');
const DOC2 = 'A second document that no cache has seen, narrated after the server stopped.';

async function metric(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return [...text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'gm'))].reduce((n, m) => n + Number(m[1]), 0);
}

async function runJob(url: string, name: string, text: string) {
  const doc = await upload(url, name, text, 'text/markdown');
  expect(doc.status).toBe(201);
  const created = await json(url, 'POST', '/api/jobs', { pipeline_type: 'audio', uploaded_file_id: doc.body.id, language: 'en-US' });
  expect(created.status).toBe(201);
  return waitFor(
    async () => {
      const j = (await json(url, 'GET', `/api/jobs/${created.body.id}`)).body;
      return j.status === 'completed' || j.status === 'failed' ? j : null;
    },
    120_000,
    `job ${created.body.id} to finish`,
  );
}

describe(`worker speech through a real GPU server (${BACKEND})`, () => {
  let gpu: { url: string; close(): Promise<void> } | null = null;
  let gpuUrl: string;
  let t: TestEnv;
  let svc: RunningService;
  const gpuData = fs.mkdtempSync(path.join(os.tmpdir(), 'lectern-remote-gpu-'));

  beforeAll(async () => {
    gpu = await startGpuServer(
      // A wide window so the job's concurrent chunks coalesce even on a loaded test machine.
      { ...loadGpuServerConfig({}, {}), host: '127.0.0.1', port: 0, backend: BACKEND, workers: 1, maxBatch: 8, batchWindowMs: 200, modelsDir: MODELS, dataDir: gpuData, lipsyncCommand: null },
      createLogger('silent', 'gpu-test'),
    );
    gpuUrl = gpu.url;
    t = testEnv('embedded', 'remote_speech');
    // A long lease: a loaded test machine must not hand the job to a second attempt mid-way.
    svc = await t.start({ LECTERN_GPU_SERVER_URL: gpuUrl, LECTERN_LEASE_MS: '30000', LECTERN_HEARTBEAT_MS: '1000' });
  }, 60_000);
  afterAll(async () => {
    await svc?.close();
    await gpu?.close();
    await t?.cleanup();
    fs.rmSync(gpuData, { recursive: true, force: true });
  });

  it('takes the engine, chunk limit and batch size from the server\'s /health', async () => {
    const h = (await (await fetch(`${gpuUrl}/health`)).json()) as { max_chunk_bytes: number };
    const speech = await createRemoteSpeech(createGpuClient({ urls: [gpuUrl] }));
    try {
      expect(speech.engine).toBe(BACKEND);
      expect(await speech.maxChunkBytes()).toBe(h.max_chunk_bytes);
      expect(speech.concurrency).toBe(8);
    } finally {
      await speech.close();
    }
  });

  it('narrates an audio job with the server, its chunks coalesced into batches', async () => {
    const job = await runJob(svc.url, 'river.md', DOC);
    expect(job.error).toBeNull();
    expect(job.status).toBe('completed');

    // Every chunk went to the server, with the engine's own word timings (Piper's phoneme durations too), so none was aligned.
    expect(await metric(gpuUrl, 'lectern_gpu_batch_size_sum')).toBe(4);
    const batches = await metric(gpuUrl, 'lectern_gpu_batch_size_count');
    expect(batches).toBeGreaterThanOrEqual(1);
    expect(batches).toBeLessThan(4); // at least one model call carried more than one chunk
    if (BACKEND === 'piper') {
      const aligned = /lectern_gpu_requests_total\{route="\/align",method="POST",status="200"\} (\d+)/.exec(await (await fetch(`${gpuUrl}/metrics`)).text());
      expect(Number(aligned?.[1] ?? 0)).toBe(0);
    }

    // The MP3 lasts as long as the server's chunk audio plus the gaps between chunks.
    const result = job.config_json.result;
    const mp3 = Buffer.from(await (await fetch(`${svc.url}/api/jobs/${job.id}/download`)).arrayBuffer());
    const file = path.join(t.dataDir, 'check.mp3');
    fs.writeFileSync(file, mp3);
    const probe = await ffprobe(file);
    expect(probe.streams[0]!.codec_name).toBe('mp3');
    expect(Math.abs(probe.durationSeconds - result.duration_seconds)).toBeLessThan(0.1);
    const chunkWavs = fs.readdirSync(path.join(t.dataDir, 'cache', 'tts')).filter((f) => f.endsWith('.wav'));
    expect(chunkWavs).toHaveLength(4);
    const chunkSeconds = chunkWavs.reduce((s, f) => {
      const w = decodeWav(fs.readFileSync(path.join(t.dataDir, 'cache', 'tts', f)));
      return s + w.samples.length / w.sampleRate;
    }, 0);
    expect(Math.abs(result.duration_seconds - (chunkSeconds + 3 * 0.25))).toBeLessThan(0.05);
    expect(result.duration_seconds).toBeGreaterThan(8); // ~48 words of English

    // Word timeline: every source word, in order, inside the audio.
    const timeline = JSON.parse(fs.readFileSync(path.join(t.dataDir, 'outputs', job.id, 'timeline.json'), 'utf8'));
    expect(timeline.words.map((w: { word: string }) => w.word)).toEqual(tokenizeWords(DOC.replace(/\n\n/g, ' ')).map((w) => w.word));
    for (const w of timeline.words) expect(w.end).toBeLessThanOrEqual(result.duration_seconds + 0.01);
  }, 150_000);

  it('fails the job with the server named when the GPU server is down (no local fallback)', async () => {
    await gpu!.close();
    gpu = null;
    const job = await runJob(svc.url, 'second.md', DOC2);
    expect(job.status).toBe('failed');
    expect(job.error).toContain(gpuUrl);
    expect(job.error).not.toContain('\n');
    expect(fs.existsSync(path.join(t.dataDir, 'outputs', job.id, 'narration.mp3'))).toBe(false);
  }, 60_000);

  it('fails the job with the server named when no GPU server answers at start', async () => {
    const dead = testEnv('embedded', 'remote_speech_dead');
    const deadUrl = 'http://127.0.0.1:9'; // discard port: nothing listens
    const s = await dead.start({ LECTERN_GPU_SERVER_URL: deadUrl });
    try {
      const job = await runJob(s.url, 'third.md', DOC2);
      expect(job.status).toBe('failed');
      expect(job.error).toContain(deadUrl);
      expect(job.error).toMatch(/could not be reached/);
    } finally {
      await s.close();
      await dead.cleanup();
    }
  }, 60_000);
});
