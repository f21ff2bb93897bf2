// Voice previews and whole jobs with a reference clip, through the service → a real GPU server
// with `--backend process` → the test model process (test/helpers/espeak-pitch-rate-adapter.py:
// eSpeak NG following the clip's measured pitch and speaking rate; not a cloning model, none
// can be installed here). The audio that comes back must measurably follow the clip: its
// median pitch (YIN, test/helpers/pitch.ts) within 1.5 semitones of the clip's. And the
// service says cloning is available exactly when a healthy GPU server declares it.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningService } from '../src/service.ts';
import { DEFAULT_VOICES_DIR } from '../src/voices/manifest.ts';
import { startTestGpuServer, type RunningGpuServer } from './helpers/gpu-server-fixture.ts';
import { measureSpeech, semitones } from './helpers/pitch.ts';
import { jobFinished, json, testEnv, upload, type TestEnv } from './helpers/service.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const TEST_ADAPTER = path.join(ROOT, 'test', 'helpers', 'espeak-pitch-rate-adapter.py');
const REFERENCE_ADAPTER = path.join(ROOT, 'examples', 'tts-process', 'adapter.py');
const JFK = fs.readFileSync(path.join(ROOT, 'test', 'fixtures', 'speech', 'jfk.wav'));
const JFK_TEXT = 'And so my fellow Americans, ask not what your country can do for you, ask what you can do for your country.';
const MANIFEST = JSON.parse(fs.readFileSync(path.join(DEFAULT_VOICES_DIR, 'manifest.json'), 'utf8')) as { voices: Array<{ id: string; ref_audio?: string }> };
const AUSTEN_VOICE = 'librivox-austen-reader-a';
const AUSTEN = fs.readFileSync(path.join(DEFAULT_VOICES_DIR, MANIFEST.voices.find((v) => v.id === AUSTEN_VOICE)!.ref_audio!));
const TOLERANCE = 1.5; // semitones

async function bytes(url: string, init?: RequestInit) {
  const r = await fetch(url, init);
  return { status: r.status, headers: r.headers, body: Buffer.from(await r.arrayBuffer()) };
}
const preview = (url: string, body: Record<string, unknown>) => bytes(`${url}/api/voices/preview`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

async function pitchGap(audio: Buffer, clip: Buffer): Promise<{ out: number; clip: number; semitones: number }> {
  const [o, c] = await Promise.all([measureSpeech(audio), measureSpeech(clip)]);
  return { out: o.f0!, clip: c.f0!, semitones: semitones(o.f0!, c.f0!) };
}


describe('previews and jobs with a reference clip through the process backend', () => {
  let gpu: RunningGpuServer;
  let t: TestEnv;
  let svc: RunningService;
  beforeAll(async () => {
    gpu = await startTestGpuServer({ backend: 'process', ttsProcess: `python3 ${TEST_ADAPTER}`, workers: 1, transcriber: 'pocketsphinx', aligner: 'dtw' });
    t = testEnv('embedded', 'process_clone');
    svc = await t.start({ LECTERN_GPU_SERVER_URL: gpu.url, LECTERN_LEASE_MS: '60000' });
  }, 180_000);
  afterAll(async () => {
    await svc?.close();
    await gpu?.close();
    await t?.cleanup();
  }, 60_000);

  it('cloning is available: GET /api/voices/cloning and the clone voices say so', async () => {
    expect((await json(svc.url, 'GET', '/api/voices/cloning')).body).toEqual({ available: true, detail: null });
    const voices = (await json(svc.url, 'GET', '/api/voices')).body as Array<{ id: string; available: boolean }>;
    expect(voices.find((v) => v.id === AUSTEN_VOICE)!.available).toBe(true);
  });

  it(`a preview with an uploaded clip, and one with a bundled clone voice, follow their clip's pitch (within ${TOLERANCE} semitones)`, async () => {
    const clip = await upload(svc.url, 'jfk.wav', JFK, 'audio/wav');
    const high = await preview(svc.url, { ref_audio_file_id: clip.body.id, ref_text: JFK_TEXT, text: 'A preview in the voice of the uploaded clip, long enough to measure.' });
    expect(high.status).toBe(200);
    expect(high.headers.get('content-type')).toBe('audio/wav');
    const g1 = await pitchGap(high.body, JFK);
    expect(Math.abs(g1.semitones)).toBeLessThan(TOLERANCE);
    const low = await preview(svc.url, { voice_id: AUSTEN_VOICE, text: 'A preview in the voice of the bundled reader, long enough to measure.' });
    expect(low.status).toBe(200);
    const g2 = await pitchGap(low.body, AUSTEN);
    expect(Math.abs(g2.semitones)).toBeLessThan(TOLERANCE);
    expect(g1.out / g2.out).toBeGreaterThan(2); // the clips are 254 Hz and 104 Hz: the previews differ as much
  }, 120_000);

  it('a whole job with ref_audio_file_id narrates in audio that follows the clip; the aligner times its words', async () => {
    const text = 'The first paragraph of the document is read in the voice of the clip.\n\nA second paragraph follows, so the job narrates more than one chunk.';
    const doc = await upload(svc.url, 'doc.md', text, 'text/markdown');
    const clip = await upload(svc.url, 'jfk.wav', JFK, 'audio/wav');
    const created = await json(svc.url, 'POST', '/api/jobs', { pipeline_type: 'audio', uploaded_file_id: doc.body.id, ref_audio_file_id: clip.body.id, ref_text: JFK_TEXT, options: { format: 'mp3' } });
    expect(created.status).toBe(201);
    const job = await jobFinished(svc.url, created.body.id as string, 240_000);
    expect(job.error).toBeNull();
    expect(job.status).toBe('completed');
    const audio = await bytes(`${svc.url}/api/jobs/${job.id}/download`);
    expect(audio.status).toBe(200);
    const g = await pitchGap(audio.body, JFK);
    expect(Math.abs(g.semitones)).toBeLessThan(TOLERANCE);
    // word timings come from the aligner (the process declared word_timings: false): every word, in order
    const timeline = await bytes(`${svc.url}/api/jobs/${job.id}/files/timeline.json`);
    expect(timeline.status).toBe(200);
    const words = (JSON.parse(timeline.body.toString()) as { words: Array<{ word: string; start: number; end: number }> }).words;
    expect(words.map((w) => w.word).join(' ')).toBe(text.replace(/\s+/g, ' '));
    for (let i = 1; i < words.length; i++) expect(words[i]!.start).toBeGreaterThanOrEqual(words[i - 1]!.start);
  }, 300_000);

  it('a job with a bundled clone voice_id follows that voice\'s clip', async () => {
    const doc = await upload(svc.url, 'doc2.md', 'Read in the bundled reader\'s voice, a low and steady one, for the whole of this sentence.', 'text/markdown');
    const created = await json(svc.url, 'POST', '/api/jobs', { pipeline_type: 'audio', uploaded_file_id: doc.body.id, voice_id: AUSTEN_VOICE });
    expect(created.status).toBe(201);
    const job = await jobFinished(svc.url, created.body.id as string, 240_000);
    expect(job.error).toBeNull();
    const audio = await bytes(`${svc.url}/api/jobs/${job.id}/download`);
    const g = await pitchGap(audio.body, AUSTEN);
    expect(Math.abs(g.semitones)).toBeLessThan(TOLERANCE);
  }, 300_000);
});

describe('cloning availability follows what the GPU server declares', () => {
  it('no GPU server, or one whose process declares voice_cloning false: not available, with why', async () => {
    const t = testEnv('embedded', 'process_noclone');
    const gpu = await startTestGpuServer({ backend: 'process', ttsProcess: `python3 ${REFERENCE_ADAPTER}`, workers: 1 });
    try {
      const alone = await t.start({ LECTERN_NO_EMBEDDED_WORKER: '1' });
      expect((await json(alone.url, 'GET', '/api/voices/cloning')).body).toEqual({ available: false, detail: expect.stringMatching(/needs a GPU server with a cloning backend/) });
      await alone.close();
      const svc = await t.start({ LECTERN_NO_EMBEDDED_WORKER: '1', LECTERN_GPU_SERVER_URL: gpu.url });
      const r = (await json(svc.url, 'GET', '/api/voices/cloning')).body;
      expect(r).toEqual({ available: false, detail: `no configured GPU server (${gpu.url}) is up with a voice-cloning backend` });
      const voices = (await json(svc.url, 'GET', '/api/voices')).body as Array<{ id: string; available: boolean }>;
      expect(voices.find((v) => v.id === AUSTEN_VOICE)!.available).toBe(false);
      // A job that would clone is refused at creation, naming why, and nothing is created.
      const doc = (await upload(svc.url, 'doc.md', 'A sentence.', 'text/markdown')).body;
      const clip = (await upload(svc.url, 'jfk.wav', JFK, 'audio/wav')).body;
      const before = ((await json(svc.url, 'GET', '/api/jobs')).body as { total: number }).total;
      const byClip = await json(svc.url, 'POST', '/api/jobs', { pipeline_type: 'audio', uploaded_file_id: doc.id, ref_audio_file_id: clip.id, ref_text: JFK_TEXT });
      expect(byClip.status).toBe(422);
      expect((byClip.body as { detail: string }).detail).toMatch(/have no voice-cloning backend \(voice_cloning is false/);
      const byVoice = await json(svc.url, 'POST', '/api/jobs', { pipeline_type: 'audio', uploaded_file_id: doc.id, voice_id: AUSTEN_VOICE });
      expect(byVoice.status).toBe(422);
      expect((byVoice.body as { detail: string }).detail).toMatch(new RegExp(`voice_id ${AUSTEN_VOICE} clones a reference clip: .*no voice-cloning backend`));
      expect(((await json(svc.url, 'GET', '/api/jobs')).body as { total: number }).total).toBe(before);
      await svc.close();
    } finally {
      await gpu.close();
      await t.cleanup();
    }
  }, 120_000);
});
