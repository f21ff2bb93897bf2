// The GPU server's OpenAI audio API, driven by the official `openai` npm SDK against a real
// server on an ephemeral port: Piper (when its voice is installed, else eSpeak NG) on real
// worker threads, the DTW aligner, PocketSphinx, ffmpeg, and ffprobe to read every answer.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI, { AuthenticationError, BadRequestError, NotFoundError } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT, loadGpuServerConfig, loadToolPaths } from '../src/config.ts';
import { startGpuServer } from '../src/gpu-server/index.ts';
import { createLogger } from '../src/log.ts';
import { decodeAudio, ffprobe, runTool } from '../src/media/ffmpeg.ts';

const MODELS = path.join(PROJECT_ROOT, 'models');
const JFK = path.join(PROJECT_ROOT, 'test/fixtures/speech/jfk.wav');
const hasPiper = existsSync(path.join(MODELS, 'voices/piper/en_US-joe-medium.onnx'));
const TOKEN = 'openai-test-token-0123456789';
const TEXT = 'The quick brown fox jumps over the lazy dog. It was a bright, cold day in April! Did the clocks strike thirteen?';
// Long enough that the server cannot finish it before the first chunk reaches the client, even on
// an idle machine (12 sentences were all made before the first read once, in CI on a quiet machine).
const LONG_SENTENCES = 40;
const LONG = Array.from({ length: LONG_SENTENCES }, (_, i) => `This is sentence number ${i + 1} of a longer passage, read aloud one sentence at a time.`).join(' ');

interface Words {
  words: Array<{ word: string; start: number; end: number }>;
}

async function startServer(over: Record<string, unknown> = {}) {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'lectern-openai-'));
  const base = loadGpuServerConfig({}, { LECTERN_GPU_TOKENS: `sdk:${TOKEN}` });
  const srv = await startGpuServer(
    { ...base, port: 0, backend: hasPiper ? 'piper' : 'espeak', workers: 1, modelsDir: MODELS, dataDir: path.join(tmp, 'data'), transcriber: 'pocketsphinx', aligner: 'dtw', ...over },
    createLogger('silent', 'openai-test'),
  );
  return {
    ...srv,
    tmp,
    async close() {
      await srv.close();
      rmSync(tmp, { recursive: true, force: true });
    },
  };
}

/** ffprobe of answer bytes (raw pcm told its layout, since it has no header). */
async function probe(dir: string, bytes: Buffer, format: string) {
  const file = path.join(dir, `answer.${format}`);
  writeFileSync(file, bytes);
  if (format !== 'pcm') return ffprobe(file);
  const { stdout } = await runTool(loadToolPaths().ffprobe, ['-v', 'error', '-f', 's16le', '-ar', '24000', '-ac', '1', '-print_format', 'json', '-show_format', '-show_streams', file]);
  const j = JSON.parse(stdout.toString()) as { format: { duration: string; format_name: string }; streams: Array<{ codec_name: string; sample_rate: string }> };
  return { durationSeconds: Number(j.format.duration), formatName: j.format.format_name, streams: j.streams };
}

function expectWordsOf(input: string, words: Words['words'], duration: number) {
  expect(words.map((w) => w.word)).toEqual(input.split(/\s+/).filter(Boolean));
  for (const [i, w] of words.entries()) {
    expect(w.start).toBeGreaterThanOrEqual(0);
    expect(w.end).toBeGreaterThanOrEqual(w.start);
    expect(w.end).toBeLessThanOrEqual(duration + 0.05);
    if (i > 0) expect(w.start).toBeGreaterThanOrEqual(words[i - 1]!.start);
  }
  // Timings that mean something: the words spread over the audio, not bunched at its start.
  expect(words[words.length - 1]!.end).toBeGreaterThan(duration * 0.7);
}

describe(`OpenAI audio API through the openai SDK (${hasPiper ? 'Piper' : 'eSpeak NG'} backend)`, { timeout: 240_000 }, () => {
  let srv: Awaited<ReturnType<typeof startServer>>;
  let client: OpenAI;
  beforeAll(async () => {
    srv = await startServer();
    client = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: TOKEN, maxRetries: 0 });
  });
  afterAll(async () => srv?.close());

  it('lists the loaded backend, the OpenAI aliases and the transcriber as models', async () => {
    const ids = (await client.models.list()).data.map((m) => m.id);
    expect(ids).toEqual(expect.arrayContaining([hasPiper ? 'piper' : 'espeak', 'tts-1', 'tts-1-hd', 'pocketsphinx', 'whisper-1']));
    expect((await client.models.retrieve('tts-1')).id).toBe('tts-1');
    await expect(client.models.retrieve('gpt-9')).rejects.toBeInstanceOf(NotFoundError);
    const spec = (await (await fetch(`${srv.url}/openapi.json`, { headers: { authorization: `Bearer ${TOKEN}` } })).json()) as { paths: Record<string, unknown> };
    expect(Object.keys(spec.paths)).toEqual(expect.arrayContaining(['/v1/audio/speech', '/v1/audio/transcriptions', '/v1/audio/voices', '/v1/models']));
  });

  it('speaks in every response_format with its content type, each decoded by ffprobe to the same length', async () => {
    const expected: Record<string, [string, string]> = {
      mp3: ['audio/mpeg', 'mp3'],
      opus: ['audio/ogg', 'opus'],
      aac: ['audio/aac', 'aac'],
      flac: ['audio/flac', 'flac'],
      wav: ['audio/wav', 'pcm_s16le'],
      pcm: ['audio/pcm', 'pcm_s16le'],
    };
    const durations: number[] = [];
    for (const [format, [type, codec]] of Object.entries(expected)) {
      const r = await client.audio.speech.create({ model: 'tts-1', voice: 'alloy', input: TEXT, response_format: format as 'mp3' });
      expect(r.headers.get('content-type')).toBe(type);
      const bytes = Buffer.from(await r.arrayBuffer());
      const p = await probe(srv.tmp, bytes, format);
      expect(p.streams[0]!.codec_name).toBe(codec);
      if (format === 'pcm') expect(p.streams[0]!.sample_rate).toBe('24000');
      else expect(p.durationSeconds).toBeGreaterThan(0);
      // The length decoded, not the header's estimate (ADTS has none)
      durations.push(format === 'pcm' ? bytes.length / 2 / 24000 : (await decodeAudio(bytes, 16000)).length / 16000);
    }
    const words = TEXT.split(' ').length;
    for (const d of durations) {
      expect(d).toBeGreaterThan(words * 0.15);
      expect(d).toBeLessThan(words * 0.8);
      // Piper samples its phoneme durations (noise_w), so two requests differ by a few per cent; codecs add padding only.
      expect(Math.abs(d - durations[4]!) / durations[4]!).toBeLessThan(0.15);
    }
  });

  it('goes through the same micro-batcher as /synthesize (one batch for a request\'s sentences), and speed stretches the audio', async () => {
    const before = await (await fetch(`${srv.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).text();
    const count = (text: string) => Number(/lectern_gpu_batch_size_sum\{backend="[^"]+"\} (\d+)/.exec(text)?.[1] ?? 0);
    const normal = await client.audio.speech.create({ model: hasPiper ? 'piper' : 'espeak', voice: hasPiper ? 'piper-en-us-joe' : 'espeak-en-us', input: TEXT, response_format: 'wav' });
    const fast = await client.audio.speech.create({ model: 'tts-1-hd', voice: 'alloy', input: TEXT, response_format: 'wav', speed: 2 });
    const after = await (await fetch(`${srv.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).text();
    expect(count(after) - count(before)).toBe(6); // three sentences each
    const d1 = (await probe(srv.tmp, Buffer.from(await normal.arrayBuffer()), 'wav')).durationSeconds;
    const d2 = (await probe(srv.tmp, Buffer.from(await fast.arrayBuffer()), 'wav')).durationSeconds;
    expect(d2 / d1).toBeGreaterThan(0.45);
    expect(d2 / d1).toBeLessThan(0.55);
  });

  it('gives one timing per input word inside the audio with timestamps: true, at any speed', async () => {
    for (const speed of [1, 1.5]) {
      const r = await client.audio.speech.create({ model: 'tts-1', voice: 'alloy', input: TEXT, response_format: 'mp3', speed, timestamps: true } as OpenAI.Audio.SpeechCreateParams);
      expect(r.headers.get('content-type')).toMatch(/^application\/json/);
      const j = (await r.json()) as Words & { audio: string; format: string; duration: number };
      expect(j.format).toBe('mp3');
      const p = await probe(srv.tmp, Buffer.from(j.audio, 'base64'), 'mp3');
      expect(Math.abs(p.durationSeconds - j.duration)).toBeLessThan(0.1);
      expectWordsOf(TEXT, j.words, p.durationSeconds);
    }
  });

  it('streams sentence by sentence with stream_format audio: the first chunk arrives long before the last sentence is made', async () => {
    // Sentences handed to the batcher so far (counted at dispatch). Not /health's pending_requests:
    // the rest start only once the encoder has taken the first, so right after the first chunk
    // that count can still be 0 on a loaded machine, and 0 would also mean "all done".
    const dispatched = async () => {
      const text = await (await fetch(`${srv.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).text();
      return Number(/lectern_gpu_batch_size_sum\{backend="[^"]+"\} (\d+)/.exec(text)?.[1] ?? 0);
    };
    const before = await dispatched();
    const t0 = performance.now();
    const r = await client.audio.speech.create({ model: 'tts-1', voice: 'alloy', input: LONG, response_format: 'mp3', stream_format: 'audio' });
    expect(r.headers.get('content-type')).toBe('audio/mpeg');
    expect(r.headers.get('content-length')).toBeNull(); // chunked
    const reader = r.body!.getReader();
    const chunks: Buffer[] = [];
    let first = 0;
    let dispatchedAtFirst = 0;
    for (let c = await reader.read(); !c.done; c = await reader.read()) {
      if (chunks.length === 0) {
        first = performance.now() - t0;
        dispatchedAtFirst = (await dispatched()) - before;
      }
      chunks.push(Buffer.from(c.value));
    }
    expect(dispatchedAtFirst).toBeGreaterThan(0);
    expect(dispatchedAtFirst).toBeLessThan(LONG_SENTENCES); // the last sentences were not even started
    expect((await dispatched()) - before).toBe(LONG_SENTENCES);
    const total = performance.now() - t0;
    expect(chunks.length).toBeGreaterThan(3);
    expect(first).toBeLessThan(total * 0.4);
    const p = await probe(srv.tmp, Buffer.concat(chunks), 'mp3');
    expect(p.durationSeconds).toBeGreaterThan(LONG_SENTENCES * 2);
  });

  it('streams OpenAI SSE events, each delta with its words, the deltas joining into one file', async () => {
    const r = await client.audio.speech.create({ model: 'tts-1', voice: 'alloy', input: TEXT, response_format: 'wav', stream_format: 'sse', timestamps: true } as OpenAI.Audio.SpeechCreateParams);
    expect(r.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events = (await r.text())
      .split('\n\n')
      .filter((e) => e.startsWith('data: '))
      .map((e) => JSON.parse(e.slice(6)) as { type: string; audio?: string; words?: Words['words']; usage?: { input_tokens: number } });
    const deltas = events.filter((e) => e.type === 'speech.audio.delta');
    // Deltas follow the encoder's output (gathered 20 ms), not sentences: sentences that
    // finish in one batch may share a delta. The first sentence is made alone, so it has its own.
    expect(deltas.length).toBeGreaterThanOrEqual(2);
    expect(events[events.length - 1]).toMatchObject({ type: 'speech.audio.done', usage: { input_tokens: TEXT.split(' ').length } });
    const audio = Buffer.concat(deltas.map((d) => Buffer.from(d.audio!, 'base64')));
    const p = await probe(srv.tmp, audio, 'wav');
    expectWordsOf(TEXT, deltas.flatMap((d) => d.words!), p.durationSeconds);
    expect(deltas.filter((d) => d.words!.length > 0).length).toBeGreaterThanOrEqual(1);
  });

  it('transcribes real speech in every response_format; verbose_json has word timings from the aligner', { timeout: 300_000 }, async () => {
    const file = () => new File([readFileSync(JFK)], 'jfk.wav', { type: 'audio/wav' });
    const json = await client.audio.transcriptions.create({ file: file(), model: 'whisper-1' });
    expect(json.text).toMatch(/country/);
    const text = await client.audio.transcriptions.create({ file: file(), model: 'whisper-1', response_format: 'text' });
    expect(String(text).trim()).toBe(json.text);
    const srt = String(await client.audio.transcriptions.create({ file: file(), model: 'pocketsphinx', response_format: 'srt' }));
    expect(srt).toMatch(/^1\n\d\d:\d\d:\d\d,\d{3} --> \d\d:\d\d:\d\d,\d{3}\n\S/);
    const vtt = String(await client.audio.transcriptions.create({ file: file(), model: 'whisper-1', response_format: 'vtt' }));
    expect(vtt).toMatch(/^WEBVTT\n\n1\n\d\d:\d\d:\d\d\.\d{3} --> /);
    const v = await client.audio.transcriptions.create({ file: file(), model: 'whisper-1', response_format: 'verbose_json', timestamp_granularities: ['word', 'segment'] });
    expect(v).toMatchObject({ task: 'transcribe', language: 'english', text: json.text });
    expect(v.duration).toBeCloseTo(11, 0);
    expect(v.words!.map((w) => w.word)).toEqual(json.text.split(' '));
    for (const w of v.words!) {
      expect(w.end).toBeGreaterThanOrEqual(w.start);
      expect(w.end).toBeLessThanOrEqual(v.duration + 0.05);
    }
    expect(v.segments!.map((s) => s.text).join(' ')).toBe(json.text);
    // srt cues are the segments
    expect(srt.split('\n\n').filter(Boolean).length).toBe(v.segments!.length);
  });

  it('raises BadRequestError for an unknown voice, a bad format and an unknown model, with OpenAI\'s error body', async () => {
    const bad = async (params: Partial<OpenAI.Audio.SpeechCreateParams>) =>
      client.audio.speech.create({ model: 'tts-1', voice: 'alloy', input: 'Hello.', ...params } as OpenAI.Audio.SpeechCreateParams).then(
        () => null,
        (e: unknown) => e,
      );
    const voice = await bad({ voice: 'no-such-voice' });
    expect(voice).toBeInstanceOf(BadRequestError);
    expect((voice as BadRequestError).error).toMatchObject({ type: 'invalid_request_error', param: 'voice', code: 'voice_not_found' });
    const format = await bad({ response_format: 'ogg' as 'mp3' });
    expect(format).toBeInstanceOf(BadRequestError);
    expect((format as BadRequestError).param).toBe('response_format');
    expect(await bad({ model: 'gpt-9-tts' })).toBeInstanceOf(BadRequestError);
    expect(await bad({ speed: 9 })).toBeInstanceOf(BadRequestError);
    const missing = await bad({ input: undefined as unknown as string });
    expect(missing).toBeInstanceOf(BadRequestError);
    expect((missing as BadRequestError).param).toBe('input');
    const translation = await client.audio.translations.create({ file: new File([readFileSync(JFK)], 'jfk.wav'), model: 'whisper-1' }).catch((e: unknown) => e);
    expect(translation).toBeInstanceOf(BadRequestError);
    expect((translation as BadRequestError).message).toMatch(/translat/);
  });

  it('raises AuthenticationError without the token or with a wrong one', async () => {
    const anonymous = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: 'unused', defaultHeaders: { Authorization: null }, maxRetries: 0 });
    const e1 = await anonymous.audio.speech.create({ model: 'tts-1', voice: 'alloy', input: 'Hello.' }).catch((e: unknown) => e);
    expect(e1).toBeInstanceOf(AuthenticationError);
    expect((e1 as AuthenticationError).error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_api_key' });
    const wrong = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: 'wrong-token-0123456789', maxRetries: 0 });
    await expect(wrong.models.list()).rejects.toBeInstanceOf(AuthenticationError);
    // An unknown /v1 route is OpenAI-shaped too; the rest of the server keeps {"detail"}.
    const nothing = await fetch(`${srv.url}/v1/nothing`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(nothing.status).toBe(404);
    expect(await nothing.json()).toMatchObject({ error: { type: 'invalid_request_error', code: 'not_found' } });
    const own = await fetch(`${srv.url}/synthesize`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, body: '{}' });
    expect(own.status).toBe(422);
    expect(await own.json()).toEqual({ detail: expect.any(String) });
  });

  it('lists voices as {voices: [{id, name}]} with the OpenAI names mapped, and speaks a Lectern voice id', async () => {
    const r = await fetch(`${srv.url}/v1/audio/voices`, { headers: { authorization: `Bearer ${TOKEN}` } });
    const { voices } = (await r.json()) as { voices: Array<{ id: string; name: string; kind: string; alias_of?: string | null }> };
    const own = hasPiper ? 'piper-en-us-joe' : 'espeak-en-us';
    expect(voices).toContainEqual(expect.objectContaining({ id: own, kind: 'lectern' }));
    expect(voices).toContainEqual(expect.objectContaining({ id: 'alloy', kind: 'alias', alias_of: own }));
    if (hasPiper) {
      const other = await client.audio.speech.create({ model: 'tts-1', voice: 'espeak-en-us', input: 'Hello.' }).catch((e: unknown) => e);
      expect(other).toBeInstanceOf(BadRequestError);
      expect((other as BadRequestError).message).toMatch(/espeak voice.*runs piper/);
    }
  });
});

describe('OpenAI speech with eSpeak NG: the engine\'s own word timings and an operator\'s voice table', () => {
  let srv: Awaited<ReturnType<typeof startServer>>;
  let client: OpenAI;
  beforeAll(async () => {
    const table = path.join(os.tmpdir(), `lectern-openai-voices-${process.pid}.json`);
    writeFileSync(table, JSON.stringify({ voices: { alloy: ['espeak-en-gb'], narrator: ['espeak-de', 'espeak-en-us'] } }));
    srv = await startServer({ backend: 'espeak', openaiVoices: table, security: loadGpuServerConfig({}, {}).security });
    rmSync(table);
    client = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: 'any-key-without-tokens', maxRetries: 0 });
  });
  afterAll(async () => srv?.close());

  it('maps OpenAI names through the configured table, and times words from the engine', async () => {
    const { voices } = (await (await fetch(`${srv.url}/v1/audio/voices`)).json()) as { voices: Array<{ id: string; alias_of?: string; language: string }> };
    expect(voices).toContainEqual(expect.objectContaining({ id: 'alloy', alias_of: 'espeak-en-gb', language: 'en-GB' }));
    expect(voices).toContainEqual(expect.objectContaining({ id: 'narrator', alias_of: 'espeak-de' }));
    expect(voices.some((v) => v.id === 'echo')).toBe(false); // the table replaces the bundled one
    const r = await client.audio.speech.create({ model: 'espeak', voice: 'alloy', input: TEXT, response_format: 'flac', timestamps: true } as OpenAI.Audio.SpeechCreateParams);
    const j = (await r.json()) as Words & { audio: string };
    const p = await probe(srv.tmp, Buffer.from(j.audio, 'base64'), 'flac');
    expectWordsOf(TEXT, j.words, p.durationSeconds);
    // eSpeak's own timings: nothing was aligned
    const metrics = await (await fetch(`${srv.url}/metrics`)).text();
    expect(metrics).not.toMatch(/model="align:/);
  });
});
