// Jobs that clone the narrator's voice from a reference clip (ref_audio_file_id): refused at
// creation without a GPU server; with one, every chunk goes to /synthesize as multipart with
// the clip, and a missing ref_text is transcribed by the worker — once, when the job runs.
// No cloning model can be installed here, so the GPU server runs the test backend
// "clone-test" (test/helpers/gpu-clone-test-backend.ts), which answers with the clip itself
// and records what it received.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningService } from '../src/service.ts';
import { DEFAULT_VOICES_DIR } from '../src/voices/manifest.ts';
import { readReceived } from './helpers/gpu-clone-test-backend.ts';
import { startTestGpuServer, type RunningGpuServer } from './helpers/gpu-server-fixture.ts';
import { jobFinished, json, testEnv, upload, type TestEnv } from './helpers/service.ts';

const CLONE_BACKEND_URL = new URL('./helpers/gpu-clone-test-backend.ts', import.meta.url).href;
const JFK = fs.readFileSync(path.join(import.meta.dirname, 'fixtures', 'speech', 'jfk.wav'));
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');


describe('voice cloning jobs without a GPU server', () => {
  let t: TestEnv;
  let svc: RunningService;
  beforeAll(async () => {
    t = testEnv('embedded', 'clone_local');
    svc = await t.start({ LECTERN_NO_EMBEDDED_WORKER: '1' });
  });
  afterAll(async () => {
    await svc?.close();
    await t?.cleanup();
  });

  it('refuses ref_audio_file_id with 422 saying a GPU server is needed, and creates nothing', async () => {
    const doc = await upload(svc.url, 'a.md', 'One short sentence to narrate.', 'text/markdown');
    const ref = await upload(svc.url, 'jfk.wav', JFK, 'audio/wav');
    const r = await json(svc.url, 'POST', '/api/jobs', { pipeline_type: 'audio', uploaded_file_id: doc.body.id, ref_audio_file_id: ref.body.id });
    expect(r.status).toBe(422);
    expect(r.body.detail).toMatch(/GPU server/);
    // so is a bundled clone voice (a LibriVox clip), which is the same thing
    const v = await json(svc.url, 'POST', '/api/jobs', { pipeline_type: 'audio', uploaded_file_id: doc.body.id, voice_id: 'librivox-austen-reader-a' });
    expect(v.status).toBe(422);
    expect(v.body.detail).toMatch(/librivox-austen-reader-a clones a reference clip.*GPU server/);
    expect((await json(svc.url, 'GET', '/api/jobs')).body.total).toBe(0);
  });
});

describe('voice cloning jobs through a real GPU server (clone-test backend, no cloning model here)', () => {
  let gpu: RunningGpuServer;
  let t: TestEnv;
  let svc: RunningService;
  beforeAll(async () => {
    gpu = await startTestGpuServer({ backend: 'clone-test', extraBackends: { 'clone-test': CLONE_BACKEND_URL }, transcriber: 'pocketsphinx', aligner: 'dtw' });
    t = testEnv('embedded', 'clone_gpu');
    svc = await t.start({ LECTERN_GPU_SERVER_URL: gpu.url, LECTERN_LEASE_MS: '60000' });
  }, 180_000);
  afterAll(async () => {
    await svc?.close();
    await gpu?.close();
    await t?.cleanup();
  });

  it('without ref_text: the worker transcribes the clip once, then every chunk carries the clip and that text', async () => {
    const doc = await upload(svc.url, 'a.md', 'The first sentence is here.\n\nA second paragraph follows it.', 'text/markdown');
    const ref = await upload(svc.url, 'jfk.wav', JFK, 'audio/wav');
    const transcribedBefore = await gpu.metric('lectern_gpu_requests_total', { route: '/transcribe' });
    const created = await json(svc.url, 'POST', '/api/jobs', { pipeline_type: 'audio', uploaded_file_id: doc.body.id, ref_audio_file_id: ref.body.id });
    expect(created.status).toBe(201);
    // creating the job transcribed nothing
    expect(await gpu.metric('lectern_gpu_requests_total', { route: '/transcribe' })).toBe(transcribedBefore);
    const job = await jobFinished(svc.url, created.body.id as string);
    expect(job.error).toBeNull();
    expect(job.status).toBe('completed');
    expect(job.config_json.ref_text_source).toBe('transcribed');
    expect(job.config_json.ref_text).toMatch(/country/i);
    expect(await gpu.metric('lectern_gpu_requests_total', { route: '/transcribe' })).toBe(transcribedBefore + 1);
    const got = readReceived(gpu.tmp).filter((r) => r.text.includes('sentence') || r.text.includes('paragraph'));
    expect(got.map((r) => r.text).sort()).toEqual(['A second paragraph follows it.', 'The first sentence is here.']);
    for (const r of got) {
      expect(r.refAudioSha256).toBe(sha(JFK));
      expect(r.refText).toBe(job.config_json.ref_text);
    }
  }, 240_000); // its waits allow 180 s: a transcription and every chunk on a busy machine

  it('a bundled clone voice_id sends its clip and exact ref_text from the manifest', async () => {
    const manifest = JSON.parse(fs.readFileSync(path.join(DEFAULT_VOICES_DIR, 'manifest.json'), 'utf8')) as { voices: Array<{ id: string; ref_text: string; ref_audio?: string }> };
    const voice = manifest.voices.find((v) => v.id === 'librivox-austen-reader-b')!;
    const clip = fs.readFileSync(path.join(DEFAULT_VOICES_DIR, voice.ref_audio!));
    const doc = await upload(svc.url, 'c.md', 'Spoken in the reader’s voice.', 'text/markdown');
    const created = await json(svc.url, 'POST', '/api/jobs', { pipeline_type: 'audio', uploaded_file_id: doc.body.id, voice_id: voice.id });
    expect(created.status).toBe(201);
    const job = await jobFinished(svc.url, created.body.id as string);
    expect(job.error).toBeNull();
    const got = readReceived(gpu.tmp).filter((r) => r.text === 'Spoken in the reader’s voice.');
    expect(got.length).toBe(1);
    expect(got[0]!.refAudioSha256).toBe(sha(clip));
    expect(got[0]!.refText).toBe(voice.ref_text);
  });

  it('with ref_text: nothing is transcribed and the given text goes with the clip', async () => {
    const doc = await upload(svc.url, 'b.md', 'Only this line is spoken.', 'text/markdown');
    const ref = await upload(svc.url, 'jfk.wav', JFK, 'audio/wav');
    const transcribedBefore = await gpu.metric('lectern_gpu_requests_total', { route: '/transcribe' });
    const refText = 'And so my fellow Americans, ask not what your country can do for you.';
    const created = await json(svc.url, 'POST', '/api/jobs', { pipeline_type: 'audio', uploaded_file_id: doc.body.id, ref_audio_file_id: ref.body.id, ref_text: refText });
    const job = await jobFinished(svc.url, created.body.id as string);
    expect(job.status).toBe('completed');
    expect(job.config_json.ref_text_source).toBeUndefined();
    expect(await gpu.metric('lectern_gpu_requests_total', { route: '/transcribe' })).toBe(transcribedBefore);
    const got = readReceived(gpu.tmp).filter((r) => r.text === 'Only this line is spoken.');
    expect(got.length).toBe(1);
    expect(got[0]!.refText).toBe(refText);
  });
});
