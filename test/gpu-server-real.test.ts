// End to end through the GPU server with the real engines: Piper (when its voice is installed),
// eSpeak NG, and the DTW aligner, on real worker threads.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT, loadGpuServerConfig } from '../src/config.ts';
import { createLogger } from '../src/log.ts';
import { decodeWav } from '../src/media/wav.ts';
import { ffmpeg } from '../src/media/ffmpeg.ts';
import { startGpuServer } from '../src/gpu-server/index.ts';
import { tempModelsDir } from './helpers/gpu-server-fixture.ts';

const MODELS = path.join(PROJECT_ROOT, 'models');
const hasPiper = existsSync(path.join(MODELS, 'voices/piper/en_US-joe-medium.onnx'));
const SENTENCE = 'The quick brown fox jumps over the lazy dog near the riverbank.';

async function start(backend: string | null) {
  const tmp = tempModelsDir(false);
  return startGpuServer(
    { ...loadGpuServerConfig({}, {}), port: 0, backend, workers: 1, modelsDir: MODELS, dataDir: path.join(tmp, 'data'), batchWindowMs: 50 },
    createLogger('silent', 'gpu-real-test'),
  );
}

describe.runIf(hasPiper)('GPU server with Piper (default backend when the voice is installed)', () => {
  let srv: { url: string; close(): Promise<void> };
  beforeAll(async () => {
    srv = await start(null);
  });
  afterAll(async () => srv?.close());

  it('chooses piper, batches concurrent sentences, and returns speech-length WAV', async () => {
    const h = (await (await fetch(`${srv.url}/health`)).json()) as { backend: string; status: string };
    expect(h).toMatchObject({ backend: 'piper', status: 'ok' });
    const texts = [SENTENCE, 'A second sentence of ordinary length.', 'And a third one, to fill the batch.'];
    const res = await Promise.all(
      texts.map((text) => fetch(`${srv.url}/synthesize`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text, language: 'en-US' }) })),
    );
    for (const [i, r] of res.entries()) {
      expect(r.status).toBe(200);
      const { samples, sampleRate } = decodeWav(new Uint8Array(await r.arrayBuffer()));
      const secs = samples.length / sampleRate;
      const words = texts[i]!.split(' ').length;
      expect(secs).toBeGreaterThan(words * 0.15);
      expect(secs).toBeLessThan(words * 0.8);
    }
    const metrics = await (await fetch(`${srv.url}/metrics`)).text();
    expect(metrics).toMatch(/lectern_gpu_batch_size_sum\{backend="piper"\} 3\b/);
    expect(metrics).toMatch(/lectern_gpu_batch_size_count\{backend="piper"\} 1\b/);
  });

  it('aligns the synthesized audio to the source words with the dtw aligner, loading it once', async () => {
    const wav = await (await fetch(`${srv.url}/synthesize`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text: SENTENCE, language: 'en-US' }) })).arrayBuffer();
    for (let round = 0; round < 2; round++) {
      const form = new FormData();
      form.set('audio', new Blob([wav]), 'narration.wav');
      form.set('text', SENTENCE);
      form.set('language', 'en-US');
      form.set('provider', 'dtw');
      const r = await fetch(`${srv.url}/align`, { method: 'POST', body: form });
      expect(r.status).toBe(200);
      const { words } = (await r.json()) as { words: Array<{ word: string; start: number; end: number }> };
      expect(words.map((w) => w.word)).toEqual(SENTENCE.split(' '));
      for (let i = 1; i < words.length; i++) expect(words[i]!.start).toBeGreaterThanOrEqual(words[i - 1]!.start);
      for (const w of words) for (const t of [w.start, w.end]) expect(Number(t.toFixed(6))).toBe(t);
    }
    const metrics = await (await fetch(`${srv.url}/metrics`)).text();
    expect(metrics).toMatch(/lectern_gpu_model_cache_total\{model="align:dtw",result="miss"\} 1\b/);
    expect(metrics).toMatch(/lectern_gpu_model_cache_total\{model="align:dtw",result="hit"\} 1\b/);
  });
});

describe('GPU server with eSpeak NG', () => {
  it('synthesizes WAV with eSpeak word timings', async () => {
    const srv = await start('espeak');
    try {
      const r = await fetch(`${srv.url}/synthesize`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text: SENTENCE, language: 'en-US' }) });
      expect(r.status).toBe(200);
      expect(r.headers.get('content-type')).toBe('audio/wav');
      const { samples, sampleRate } = decodeWav(new Uint8Array(await r.arrayBuffer()));
      expect(samples.length / sampleRate).toBeGreaterThan(2);
      const timings = r.headers.get('x-word-timings');
      if (timings) expect((JSON.parse(Buffer.from(timings, 'base64').toString()) as unknown[]).length).toBe(SENTENCE.split(' ').length);
    } finally {
      await srv.close();
    }
  });
});

describe('GPU server /align input formats', () => {
  let srv: { url: string; close(): Promise<void> };
  beforeAll(async () => {
    srv = await start('espeak');
  });
  afterAll(async () => srv?.close());

  it('aligns a NIST SPHERE file (the format of TIMIT-style corpora) as it aligns the same samples in a RIFF WAV', async () => {
    const riff = readFileSync(path.join(PROJECT_ROOT, 'test/fixtures/speech/goforward.wav'));
    const { samples, sampleRate } = decodeWav(new Uint8Array(riff));
    const pcm = Buffer.alloc(samples.length * 2);
    for (let i = 0; i < samples.length; i++) pcm.writeInt16LE(Math.max(-32768, Math.min(32767, Math.round(samples[i]! * 32768))), i * 2);
    const fields = ['NIST_1A', '   1024', `sample_count -i ${samples.length}`, `sample_rate -i ${sampleRate}`, 'channel_count -i 1', 'sample_byte_format -s2 01', 'sample_n_bytes -i 2', 'sample_coding -s3 pcm', 'end_head'];
    const sphere = Buffer.concat([Buffer.from(`${fields.join('\n')}\n`.padEnd(1024, ' ')), pcm]);
    const answers: Array<Array<{ word: string; start: number; end: number }>> = [];
    for (const bytes of [riff, sphere]) {
      const form = new FormData();
      form.set('audio', new Blob([bytes]), 'goforward.wav');
      form.set('text', 'go forward ten meters');
      form.set('language', 'en-US');
      form.set('provider', 'hmm');
      const r = await fetch(`${srv.url}/align`, { method: 'POST', body: form });
      expect(r.status).toBe(200);
      answers.push(((await r.json()) as { words: Array<{ word: string; start: number; end: number }> }).words);
    }
    expect(answers[1]!.map((w) => w.word)).toEqual(['go', 'forward', 'ten', 'meters']);
    expect(answers[1]).toEqual(answers[0]);
    for (const w of answers[1]!) for (const t of [w.start, w.end]) expect(Number(t.toFixed(6))).toBe(t);
  });

  it('aligns the same speech uploaded as M4A (its index after the audio, as ffmpeg and most encoders write it), MP3, Opus and FLAC as it aligns the WAV', async () => {
    // an M4A of more than ffmpeg's read buffer through a pipe gave it no index: no samples, and a
    // 415 for a file it reads from disk
    const wav = path.join(PROJECT_ROOT, 'test/fixtures/speech/jfk.wav');
    const text = 'And so, my fellow Americans, ask not what your country can do for you, ask what you can do for your country.';
    const dir = mkdtempSync(path.join(tmpdir(), 'lectern-formats-'));
    const align = async (bytes: Buffer, name: string) => {
      const form = new FormData();
      form.set('audio', new Blob([bytes]), name);
      form.set('text', text);
      form.set('language', 'en-US');
      form.set('provider', 'hmm');
      const r = await fetch(`${srv.url}/align`, { method: 'POST', body: form });
      expect(r.status, name).toBe(200);
      return ((await r.json()) as { words: Array<{ word: string; start: number; end: number }> }).words;
    };
    try {
      const base = await align(readFileSync(wav), 'jfk.wav');
      for (const [ext, args] of [['m4a', ['-c:a', 'aac', '-b:a', '64k']], ['mp3', ['-c:a', 'libmp3lame', '-b:a', '64k']], ['ogg', ['-c:a', 'libopus', '-b:a', '48k']], ['flac', ['-c:a', 'flac']]] as const) {
        const file = path.join(dir, `jfk.${ext}`);
        await ffmpeg(['-y', '-i', wav, ...args, file]);
        const bytes = readFileSync(file);
        if (ext === 'm4a') expect(bytes.indexOf('moov')).toBeGreaterThan(bytes.indexOf('mdat'));
        const words = await align(bytes, `jfk.${ext}`);
        expect(words.map((w) => w.word)).toEqual(base.map((w) => w.word));
        // a lossy codec moves an edge by a frame or a few; none by a word
        const moved = words.flatMap((w, i) => [Math.abs(w.start - base[i]!.start), Math.abs(w.end - base[i]!.end)]).sort((a, b) => a - b);
        expect(moved[moved.length >> 1]!, `${ext}: the median edge's move`).toBeLessThan(0.015);
        expect(moved.at(-1)!, `${ext}: the largest move`).toBeLessThan(0.1);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
