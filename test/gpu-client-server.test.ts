// The GPU client against the real GPU server (src/gpu-server) on an ephemeral port:
// the onnx-test backend (a real tiny ONNX model the server suite builds), the real dtw
// aligner, and the `command` lip-sync provider running a real ffmpeg mux.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  align,
  createGpuClient,
  generateLipsync,
  GpuServerError,
  health,
  LipsyncCancelled,
  synthesize,
  transcribe,
} from '../src/gpu-client/index.ts';
import { ffprobe } from '../src/media/ffmpeg.ts';
import { tokenizeWords } from '../src/speech/words.ts';
import { startTestGpuServer, type RunningGpuServer } from './helpers/gpu-server-fixture.ts';

const FIXTURES = path.resolve(import.meta.dirname, 'fixtures');
const AUDIO = path.join(FIXTURES, 'speech', 'sense_and_sensibility_01_austen_64kb-0880.wav');
const TEXT = 'He was not an ill-disposed young man.';
const VIDEO = path.join(FIXTURES, 'video', 'presenter.mp4');
// The preset is a number of seconds the generator waits first, so a job can be caught running.
const COMMAND = 'sleep {preset} && ffmpeg -nostdin -loglevel error -y -stream_loop -1 -i {video} -i {audio} -map 0:v:0 -map 1:a:0 -shortest -c:v copy -c:a aac -f mp4 {output}';

let s: RunningGpuServer;
let dir: string;

beforeAll(async () => {
  // pocketsphinx (Debian) is the transcriber every machine here has.
  s = await startTestGpuServer({ lipsyncCommand: COMMAND, lipsyncCommandPresets: ['0', '20'], transcriber: 'pocketsphinx' });
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lectern-gpu-client-real-'));
});
afterAll(async () => {
  await s?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe('GPU client against the real GPU server', () => {
  it('health returns the server record', async () => {
    const h = await health(s.url);
    expect(h).toMatchObject({ status: 'ok', backend: 'onnx-test', device: 'cpu', aligner: 'auto' });
    expect(h.capabilities).toEqual(expect.arrayContaining(['synthesize', 'align', 'lipsync']));
  });

  it('synthesize returns audio bytes in the output format', async () => {
    const r = await synthesize('Hello from the client.', { serverUrl: s.url, language: 'en-US' });
    expect(r.format).toBe('wav');
    expect(r.contentType).toMatch(/^audio\/(x-)?wav/);
    expect(r.audio.subarray(0, 4).toString('latin1')).toBe('RIFF');
    expect(r.audio.length).toBeGreaterThan(44);
  });

  it('a reference clip to a backend that cannot clone is a 422 GpuServerError naming the backend', async () => {
    const err = (await synthesize('Clone me.', { serverUrl: s.url, language: 'en-US', refAudio: AUDIO, refText: 'he was' }).catch((e: unknown) => e)) as GpuServerError;
    expect(err).toBeInstanceOf(GpuServerError);
    expect(err.status).toBe(422);
    expect(err.detail).toMatch(/onnx-test cannot clone/);
    expect(err.message).toContain(`${s.url} answered POST /synthesize`);
  });

  it('align returns one timing per word of the source text, in order, inside the audio', async () => {
    const words = await align(AUDIO, TEXT, { serverUrl: s.url, language: 'en-US', timeoutMs: 60_000 });
    expect(words.map((w) => w.word)).toEqual(tokenizeWords(TEXT).map((t) => t.word));
    const duration = (await ffprobe(AUDIO)).durationSeconds;
    for (let i = 0; i < words.length; i++) {
      expect(words[i]!.end).toBeGreaterThanOrEqual(words[i]!.start);
      expect(words[i]!.end).toBeLessThanOrEqual(duration + 0.05);
      if (i > 0) expect(words[i]!.start).toBeGreaterThanOrEqual(words[i - 1]!.start);
    }
  });

  it('transcribe returns the text of the speech', async () => {
    const out = await transcribe(AUDIO, 'en-US', { serverUrl: s.url, timeoutMs: 60_000 });
    expect(out.toLowerCase()).toMatch(/young man/);
  });

  it('generateLipsync runs a real job to an MP4, and the record is gone afterwards', async () => {
    const out = path.join(dir, 'presenter-lipsync.mp4');
    const elapsed: number[] = [];
    let id = '';
    const r = await generateLipsync({
      audioPath: AUDIO,
      referenceVideoPath: VIDEO,
      outputPath: out,
      serverUrl: s.url,
      lipsyncPreset: '0',
      pollIntervalMs: 100,
      requestTimeoutMs: 10_000,
      onStatus: (e) => elapsed.push(e),
      onAccepted: (x) => (id = x),
    });
    expect(r).toMatchObject({ legacy: false, deleted: true, lipsyncId: id });
    const probe = await ffprobe(out);
    expect(probe.durationSeconds).toBeGreaterThan(1);
    expect(probe.streams.map((x) => x.codec_type).sort()).toEqual(["audio", "video"]);
    expect(elapsed.length).toBeGreaterThan(0);
    expect(elapsed.every((e) => typeof e === 'number' && e >= 0)).toBe(true);
    expect((await fetch(`${s.url}/lipsync/${id}`)).status).toBe(404);
  });

  it('cancelling a running real job raises LipsyncCancelled and removes the record', async () => {
    let id = '';
    let last = '';
    const t0 = Date.now();
    const err = await generateLipsync({
      audioPath: AUDIO,
      referenceVideoPath: VIDEO,
      outputPath: path.join(dir, 'never.mp4'),
      serverUrl: s.url,
      lipsyncPreset: '20',
      pollIntervalMs: 50,
      requestTimeoutMs: 10_000,
      onStatus: (_e, st) => (last = st),
      onAccepted: (x) => (id = x),
      shouldCancel: () => last === 'running',
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LipsyncCancelled);
    expect(Date.now() - t0).toBeLessThan(15_000);
    expect((await fetch(`${s.url}/lipsync/${id}`)).status).toBe(404);
    expect(fs.existsSync(path.join(dir, 'never.mp4'))).toBe(false);
  });

  it('the pool routes to the live server past a dead one', async () => {
    const c = createGpuClient({ urls: ['http://127.0.0.1:9', s.url], healthIntervalMs: 60_000, healthTimeoutMs: 1000 });
    try {
      const r = await c.synthesize('Routed.', { language: 'en-US' });
      expect(r.format).toBe('wav');
      expect(c.servers().map((x) => x.healthy)).toEqual([false, true]);
    } finally {
      c.close();
    }
  });
});
