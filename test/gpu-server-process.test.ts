// The `process` speech backend: the GPU server starts an operator's model program once per
// pool slot and speaks protocol 1 with it (examples/tts-process/PROTOCOL.md). These tests run
// the real protocol with real programs: the reference adapter (examples/tts-process/adapter.py,
// plain eSpeak NG) and the test adapter (test/helpers/espeak-pitch-rate-adapter.py: eSpeak NG
// whose pitch and speaking rate follow the reference clip's measured ones; not a cloning model,
// none can be installed here). Nothing is faked: HTTP on an ephemeral port, real processes,
// real audio measured with YIN (test/helpers/pitch.ts).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadGpuServerConfig } from '../src/config.ts';
import { buildGpuServer } from '../src/gpu-server/index.ts';
import { createLogger } from '../src/log.ts';
import { decodeWav } from '../src/media/wav.ts';
import { startTestGpuServer, tempModelsDir, type RunningGpuServer } from './helpers/gpu-server-fixture.ts';
import { measureSpeech, semitones } from './helpers/pitch.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const REFERENCE_ADAPTER = path.join(ROOT, 'examples', 'tts-process', 'adapter.py');
const TEST_ADAPTER = path.join(ROOT, 'test', 'helpers', 'espeak-pitch-rate-adapter.py');
const SPEECH = path.join(ROOT, 'test', 'fixtures', 'speech');
const JFK = fs.readFileSync(path.join(SPEECH, 'jfk.wav'));
const JFK_TEXT = 'And so my fellow Americans, ask not what your country can do for you, ask what you can do for your country.';
const AUSTEN = fs.readFileSync(path.join(SPEECH, 'sense_and_sensibility_01_austen_64kb-0870.wav'));
const AUSTEN_TEXT = 'and mister john dashwood had then leisure to consider how much there might be prudently in his power to do for them';
/** Stated tolerance: the output's median pitch within 1.5 semitones (about 9 %) of the clip's. */
const PITCH_TOLERANCE_SEMITONES = 1.5;

interface Captured {
  lines: Array<Record<string, unknown>>;
  log: ReturnType<typeof createLogger>;
}
function capturingLogger(): Captured {
  const lines: Array<Record<string, unknown>> = [];
  const log = createLogger('info', 'gpu-process-test', { write: (s: string) => void lines.push(JSON.parse(s) as Record<string, unknown>) });
  return { lines, log };
}

async function synthesize(url: string, text: string, opts: { ref?: Buffer; refText?: string; language?: string; voice?: string; requestId?: string; signal?: AbortSignal } = {}) {
  const form = new FormData();
  form.append('text', text);
  form.append('language', opts.language ?? 'en-US');
  if (opts.voice) form.append('voice', opts.voice);
  if (opts.ref) form.append('ref_audio', new Blob([opts.ref]), 'ref.wav');
  if (opts.refText) form.append('ref_text', opts.refText);
  const res = await fetch(`${url}/synthesize`, { method: 'POST', body: form, headers: opts.requestId ? { 'x-request-id': opts.requestId } : {}, signal: opts.signal });
  const body = Buffer.from(await res.arrayBuffer());
  return { status: res.status, body, headers: res.headers, detail: res.headers.get('content-type')?.includes('json') ? (JSON.parse(body.toString()) as { detail: string }).detail : null };
}

const health = async (url: string) => (await (await fetch(`${url}/health`)).json()) as Record<string, any>;
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
const waitUntil = async (cond: () => boolean | Promise<boolean>, ms: number, what: string) => {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
};

describe('the reference adapter (examples/tts-process/adapter.py) behind the GPU server', () => {
  let gpu: RunningGpuServer;
  beforeAll(async () => {
    gpu = await startTestGpuServer({ backend: 'process', ttsProcess: `python3 ${REFERENCE_ADAPTER}`, workers: 1 });
  }, 60_000);
  afterAll(async () => gpu?.close());

  it('/health reports what the process declared; voice_cloning follows it (false)', async () => {
    const h = await health(gpu.url);
    expect(h.status).toBe('ok');
    expect(h.backend).toBe('process:espeak');
    expect(h.voice_cloning).toBe(false);
    expect(h.max_chunk_bytes).toBe(1000);
    expect(h.max_batch).toBe(1); // the batcher takes the process's max_batch when it is lower than --max-batch
    expect(h.model_process).toMatchObject({ protocol: 1, name: 'espeak', voice_cloning: false, sample_rate: 22050, word_timings: false, max_batch: 1, reference_sample_rate: 24000, slots: 1, ready: 1 });
  });

  it('speaks: /synthesize answers WAV from the process; a clip is refused (it cannot clone); other languages are refused', async () => {
    const r = await synthesize(gpu.url, 'The reference adapter speaks through eSpeak NG.');
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('audio/wav');
    const wav = decodeWav(r.body);
    expect(wav.sampleRate).toBe(22050);
    expect(wav.samples.length / wav.sampleRate).toBeGreaterThan(1.5);
    expect(Number(r.headers.get('x-audio-duration'))).toBeCloseTo(wav.samples.length / wav.sampleRate, 2);
    expect(r.headers.get('x-word-timings')).toBeNull();
    const clip = await synthesize(gpu.url, 'Hello.', { ref: JFK, refText: JFK_TEXT });
    expect(clip.status).toBe(422);
    expect(clip.detail).toMatch(/process:espeak cannot clone/);
    const lang = await synthesize(gpu.url, 'Hallo.', { language: 'ja' });
    expect(lang.status).toBe(422);
    expect(lang.detail).toMatch(/does not support language "ja"/);
    // the process itself refuses a voice eSpeak NG does not have: 422 with its message
    const voice = await synthesize(gpu.url, 'Hello.', { voice: 'no-such-voice' });
    expect(voice.status).toBe(422);
    expect(voice.detail).toMatch(/^espeak: /);
  });
});

describe('the pitch-and-rate-following test adapter behind the GPU server', () => {
  let gpu: RunningGpuServer;
  let captured: Captured;
  let batchLog: string;
  beforeAll(async () => {
    captured = capturingLogger();
    batchLog = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'lectern-batches-')), 'sizes.txt');
    gpu = await startTestGpuServer(
      {
        backend: 'process',
        ttsProcess: `LECTERN_TEST_ADAPTER_FAULTS=1 LECTERN_TEST_ADAPTER_BATCH_LOG=${batchLog} python3 ${TEST_ADAPTER}`,
        workers: 1,
        maxBatch: 4,
        batchWindowMs: 100,
        ttsProcessTimeoutMs: 6000,
        maxPendingRequests: 16,
      },
      { log: captured.log },
    );
  }, 90_000);
  afterAll(async () => gpu?.close());

  const batches = () => (fs.existsSync(batchLog) ? fs.readFileSync(batchLog, 'utf8').split('\n').filter(Boolean).map((l) => Number(l.split(' ')[0])) : []);

  it('/health: voice_cloning true as declared, max_batch = min(--max-batch 4, declared 8)', async () => {
    const h = await health(gpu.url);
    expect(h).toMatchObject({ status: 'ok', backend: 'process:espeak-pitch-rate', voice_cloning: true, max_batch: 4, max_chunk_bytes: 600 });
    expect(h.model_process).toMatchObject({ reference_sample_rate: 8000, max_batch: 8, word_timings: false });
  });

  it(`the audio follows the reference clip: median pitch within ${PITCH_TOLERANCE_SEMITONES} semitones of the clip's, for a high and a low voice`, async () => {
    const text = 'This sentence is spoken in a voice that follows the reference clip, both its pitch and its pace.';
    for (const [clip, refText] of [
      [JFK, JFK_TEXT],
      [AUSTEN, AUSTEN_TEXT],
    ] as const) {
      const r = await synthesize(gpu.url, text, { ref: clip, refText });
      expect(r.status).toBe(200);
      const [out, ref] = await Promise.all([measureSpeech(r.body), measureSpeech(clip)]);
      expect(Math.abs(semitones(out.f0!, ref.f0!))).toBeLessThan(PITCH_TOLERANCE_SEMITONES);
    }
    // and the two clips (254 Hz vs 104 Hz) give audibly different voices for the same text
    const [hi, lo] = await Promise.all([synthesize(gpu.url, text, { ref: JFK, refText: JFK_TEXT }), synthesize(gpu.url, text, { ref: AUSTEN, refText: AUSTEN_TEXT })]);
    expect(semitones((await measureSpeech(hi.body)).f0!, (await measureSpeech(lo.body)).f0!)).toBeGreaterThan(12);
  });

  it('the batcher\'s batches reach the process as one message: 12 concurrent requests arrive in batches of at most 4, each answered with its own text', async () => {
    const before = batches().length;
    const texts = Array.from({ length: 12 }, (_, i) => `Request number ${i + 1}.${' And more words.'.repeat(i % 4)}`);
    const out = await Promise.all(texts.map((t) => synthesize(gpu.url, t, { ref: JFK, refText: JFK_TEXT })));
    expect(out.map((o) => o.status)).toEqual(texts.map(() => 200));
    const sizes = batches().slice(before);
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(12);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(4);
    expect(Math.max(...sizes)).toBeGreaterThan(1);
    // longer texts → longer audio: each request got its own answer back
    const seconds = out.map((o) => Number(o.headers.get('x-audio-duration')));
    for (let i = 0; i < 12; i++) for (let j = 0; j < 12; j++) if (i % 4 < j % 4) expect(seconds[i]).toBeLessThan(seconds[j]!);
  });

  it('an error the model reports fails only its request; the process\'s stderr reaches the log with the request id', async () => {
    expect((await synthesize(gpu.url, 'Warm up: the clip is converted once.', { ref: JFK, refText: JFK_TEXT })).status).toBe(200);
    const before = batches().length;
    const [bad, good] = await Promise.all([
      synthesize(gpu.url, 'This one fails [[fail]]', { ref: JFK, refText: JFK_TEXT }),
      synthesize(gpu.url, 'This one is fine [[log:note from the model]]', { ref: JFK, refText: JFK_TEXT, requestId: 'req-stderr-check' }),
    ]);
    expect(batches().slice(before)).toEqual([2]); // one batch, one message
    expect(bad.status).toBe(502);
    expect(bad.detail).toBe('the model process failed on this request: the model failed, as asked');
    expect(good.status).toBe(200);
    const line = captured.lines.find((l) => l.msg === 'espeak-pitch-rate: note from the model');
    expect(line).toMatchObject({ component: 'tts-process', slot: 0 });
    // the batch held both requests: the line names both request ids
    expect(String(line!.reqId).split(',')).toContain('req-stderr-check');
  });

  it('a crashed process: its requests fail with 503 at once, it is restarted, and the next request is served', async () => {
    const pid = (await health(gpu.url)).model_process.pids[0] as number;
    const r = await synthesize(gpu.url, 'Going down [[crash]]', { ref: JFK, refText: JFK_TEXT });
    expect(r.status).toBe(503);
    expect(r.detail).toMatch(/model process \(slot 0, pid \d+\) exited with code 7.*crashing, as asked.* while synthesizing; it is being restarted/);
    expect(alive(pid)).toBe(false);
    await waitUntil(async () => (await health(gpu.url)).model_process.ready === 1, 60_000, 'the restarted process');
    const h = await health(gpu.url);
    expect(h.model_process.restarts).toBe(1);
    expect(h.model_process.pids[0]).not.toBe(pid);
    expect((await synthesize(gpu.url, 'Back again.', { ref: JFK, refText: JFK_TEXT })).status).toBe(200);
  }, 90_000);

  it('a hung process: its requests fail with 504 after the timeout (never a hang), it is killed and restarted', async () => {
    const pid = (await health(gpu.url)).model_process.pids[0] as number;
    const t0 = Date.now();
    const r = await synthesize(gpu.url, 'Stuck forever [[hang]]', { ref: JFK, refText: JFK_TEXT });
    expect(r.status).toBe(504);
    expect(r.detail).toMatch(/did not answer within 6 s; it was killed and is being restarted/);
    expect(Date.now() - t0).toBeLessThan(15_000);
    await waitUntil(() => !alive(pid), 5000, 'the hung process to be gone');
    await waitUntil(async () => (await health(gpu.url)).model_process.ready === 1, 60_000, 'the restarted process');
    expect((await synthesize(gpu.url, 'Unstuck.', { ref: JFK, refText: JFK_TEXT })).status).toBe(200);
  }, 90_000);

  it('cancellation: a request whose client goes away while it waits never reaches the process', async () => {
    const before = batches().length;
    // occupy the only process, then queue a second (incompatible key: no clip) request and abort it
    const busy = synthesize(gpu.url, 'Busy for a while [[slow:2500]]', { ref: JFK, refText: JFK_TEXT });
    await new Promise((r) => setTimeout(r, 300));
    const ac = new AbortController();
    const gone = synthesize(gpu.url, 'Nobody waits for this.', { signal: ac.signal }).catch((e: Error) => e);
    await new Promise((r) => setTimeout(r, 300));
    ac.abort();
    expect(await gone).toBeInstanceOf(Error);
    expect((await busy).status).toBe(200);
    await new Promise((r) => setTimeout(r, 300));
    expect(batches().slice(before)).toEqual([1]);
    expect((await health(gpu.url)).pending_requests).toBe(0);
  }, 30_000);

  it('back-pressure: past the pending limit new requests get 503 at once, the admitted ones finish', async () => {
    const texts = Array.from({ length: 24 }, (_, i) => `Slow request ${i} [[slow:150]]`);
    const out = await Promise.all(texts.map((t) => synthesize(gpu.url, t, { ref: JFK, refText: JFK_TEXT })));
    const codes = out.map((o) => o.status);
    expect(codes.filter((c) => c === 200).length).toBeGreaterThanOrEqual(16);
    expect(codes.filter((c) => c === 503).length).toBeGreaterThan(0);
    expect(out.find((o) => o.status === 503)!.detail).toMatch(/overloaded/);
  }, 60_000);
});

describe('word timings and inline audio from the process, two processes', () => {
  let gpu: RunningGpuServer;
  beforeAll(async () => {
    gpu = await startTestGpuServer({ backend: 'process', ttsProcess: `LECTERN_TEST_ADAPTER_WORDS=1 LECTERN_TEST_ADAPTER_BASE64=1 python3 ${TEST_ADAPTER}`, workers: 2 });
  }, 90_000);
  afterAll(async () => gpu?.close());

  it('X-Word-Timings carries the model\'s timings, one per word, inside the audio; two slots run two processes', async () => {
    const h = await health(gpu.url);
    expect(h.model_process).toMatchObject({ word_timings: true, slots: 2, ready: 2 });
    expect(new Set(h.model_process.pids).size).toBe(2);
    const text = 'Every word here has its own timing.';
    const r = await synthesize(gpu.url, text, { ref: AUSTEN, refText: AUSTEN_TEXT });
    expect(r.status).toBe(200);
    const words = JSON.parse(Buffer.from(r.headers.get('x-word-timings')!, 'base64').toString()) as Array<{ word: string; start: number; end: number }>;
    expect(words.map((w) => w.word)).toEqual(text.split(' '));
    const duration = Number(r.headers.get('x-audio-duration'));
    for (let i = 0; i < words.length; i++) {
      expect(words[i]!.end).toBeGreaterThan(words[i]!.start);
      if (i > 0) expect(words[i]!.start).toBeGreaterThanOrEqual(words[i - 1]!.end);
    }
    expect(words.at(-1)!.end).toBeLessThanOrEqual(duration + 1e-3);
  });
});

describe('model processes that fail to start stop the GPU server with a clear message', () => {
  const start = async (env: string, startTimeoutMs = 20_000) => {
    const tmp = tempModelsDir(false);
    const config = { ...loadGpuServerConfig({}, {}), port: 0, backend: 'process', ttsProcess: `${env} python3 ${TEST_ADAPTER}`, workers: 1, modelsDir: tmp, dataDir: path.join(tmp, 'data'), ttsProcessStartTimeoutMs: startTimeoutMs };
    const server = await buildGpuServer(config, createLogger('silent', 't'));
    try {
      await server.load();
      return null;
    } catch (e) {
      return (e as Error).message;
    } finally {
      await server.close();
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  };

  it('a model that fails to load, a process that exits, a protocol it does not speak, one that never says hello', async () => {
    expect(await start('LECTERN_TEST_ADAPTER_START=error')).toMatch(/failed before its hello: loading the model failed: RuntimeError: model file \/models\/missing.pt not found/);
    expect(await start('LECTERN_TEST_ADAPTER_START=exit')).toMatch(/exited with code 3 before its hello; its stderr ended: espeak-pitch-rate: exiting before the hello, as asked/);
    expect(await start('LECTERN_TEST_ADAPTER_START=protocol')).toMatch(/broke the protocol: the process speaks protocol 99; this server speaks 1/);
    expect(await start('LECTERN_TEST_ADAPTER_START=slow:30000', 1500)).toMatch(/did not say hello within 2 s/);
    expect(() => loadGpuServerConfig({ backend: 'process' }, {})).toThrow(/--backend process needs the model program: --tts-process/);
    expect(loadGpuServerConfig({}, { LECTERN_TTS_PROCESS: 'python3 x.py' }).backend).toBe('process');
  }, 60_000);
});

describe('lectern gpu-server --backend process under SIGTERM', () => {
  it('stops its model processes cleanly and exits 0', async () => {
    const data = fs.mkdtempSync(path.join(os.tmpdir(), 'lectern-gpu-sigterm-'));
    const child = spawn(process.execPath, [path.join(ROOT, 'bin', 'lectern.js'), 'gpu-server', '--backend', 'process', '--tts-process', `python3 ${REFERENCE_ADAPTER}`, '--port', '0', '--workers', '2', '--data-dir', data, '--log-level', 'warn'], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    try {
      await waitUntil(() => /GPU inference server on (http\S+)/.test(stderr), 60_000, 'the server to listen');
      const url = /GPU inference server on (http\S+)/.exec(stderr)![1]!;
      const pids = (await health(url)).model_process.pids as number[];
      expect(pids.length).toBe(2);
      expect(pids.every(alive)).toBe(true);
      expect((await synthesize(url, 'Before the signal.')).status).toBe(200);
      const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      expect(pids.some(alive)).toBe(false);
      expect(fs.existsSync(path.join(data, 'tts-process'))).toBe(false);
    } finally {
      child.kill('SIGKILL');
      fs.rmSync(data, { recursive: true, force: true });
    }
  }, 90_000);
});
