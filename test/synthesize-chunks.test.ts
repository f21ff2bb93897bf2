// synthesizeChunks with real eSpeak NG: the narration is joined from the chunk cache into a PCM
// file (never one buffer of the whole book), each chunk at its start with the gap between, and
// a second run from the cache gives the same file.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../src/log.ts';
import { decodeWav } from '../src/media/wav.ts';
import { fillOptions } from '../src/pipelines/options.ts';
import { synthesizeChunks } from '../src/pipelines/synthesize-chunks.ts';
import type { PipelineContext } from '../src/pipelines/types.ts';
import { CHUNK_GAP_SECONDS } from '../src/speech/sentences.ts';
import { createLocalSpeech, type Speech } from '../src/speech/local.ts';

const CHUNKS = ['The first chunk is short.', 'A second chunk, which is a little longer than the first one.', 'And a third.'];

describe('synthesizeChunks (eSpeak NG, real chunk cache)', () => {
  let speech: Speech;
  let dir: string;
  const ctx = (outputDir: string): PipelineContext => ({
    input: { jobId: 't', document: { path: '/dev/null', originalName: 'x.md', contentType: 'text/markdown' }, language: 'en-US', voiceId: null, options: fillOptions({ format: 'mp3', speed: 1 }), title: null },
    outputDir,
    cacheDir: path.join(dir, 'cache'),
    speech,
    log: createLogger('warn', 'test'),
    progress: () => undefined,
    cancelled: async () => false,
    signal: new AbortController().signal,
  });

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lectern-chunks-'));
    speech = await createLocalSpeech('espeak', { modelsDir: path.join(import.meta.dirname, '..', 'models'), device: 'cpu' });
  });
  afterAll(async () => {
    await speech.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('joins the cached chunks in order into a 16-bit PCM file in the output dir, with the gap between chunks', async () => {
    const out = path.join(dir, 'out1');
    fs.mkdirSync(out);
    const n = await synthesizeChunks(ctx(out), CHUNKS);
    expect(path.dirname(n.pcmPath)).toBe(out);
    const pcm = fs.readFileSync(n.pcmPath);
    expect(pcm.length).toBe(n.length * 2);

    const cached = fs.readdirSync(path.join(dir, 'cache', 'tts')).filter((f) => f.endsWith('.wav'));
    expect(cached).toHaveLength(CHUNKS.length);
    const gap = Math.round(CHUNK_GAP_SECONDS * n.sampleRate);
    // every chunk's audio sits at its start (chunk i's words are from chunk i)
    let expectedLength = 0;
    for (let i = 0; i < CHUNKS.length; i++) {
      const start = Math.round(n.chunkStarts[i]! * n.sampleRate);
      expect(start).toBe(expectedLength + (i > 0 ? gap : 0));
      const words = n.words.filter((w) => w.chunk === i);
      expect(words.length).toBe(CHUNKS[i]!.split(/\s+/).length);
      expect(words[0]!.start).toBeGreaterThanOrEqual(n.chunkStarts[i]!);
      const chunkLen = (i + 1 < CHUNKS.length ? Math.round(n.chunkStarts[i + 1]! * n.sampleRate) - gap : n.length) - start;
      expectedLength = start + chunkLen;
      // the gap is silence
      if (i > 0) expect(pcm.subarray((start - gap) * 2, start * 2).every((b) => b === 0)).toBe(true);
      // the chunk's samples are one of the cached chunks' (16-bit, as cached)
      const own = cached.map((f) => decodeWav(fs.readFileSync(path.join(dir, 'cache', 'tts', f)))).find((a) => a.samples.length === chunkLen);
      expect(own, `chunk ${i}: a cached chunk of ${chunkLen} samples`).toBeDefined();
      const got = new Int16Array(pcm.buffer.slice(pcm.byteOffset + start * 2, pcm.byteOffset + (start + chunkLen) * 2));
      let maxDiff = 0;
      for (let k = 0; k < chunkLen; k++) maxDiff = Math.max(maxDiff, Math.abs(got[k]! / 32768 - own!.samples[k]!));
      expect(maxDiff).toBeLessThan(2 / 32768);
    }
    expect(expectedLength).toBe(n.length);
    expect(n.words.every((w, k) => k === 0 || w.start >= n.words[k - 1]!.start)).toBe(true);
  });

  it('a second run comes from the cache and writes the same narration', async () => {
    const a = path.join(dir, 'out2'), b = path.join(dir, 'out3');
    fs.mkdirSync(a);
    fs.mkdirSync(b);
    const first = await synthesizeChunks(ctx(a), CHUNKS);
    let calls = 0;
    const counting: Speech = { ...speech, synthesize: (req) => (calls++, speech.synthesize(req)) };
    const second = await synthesizeChunks({ ...ctx(b), speech: counting }, CHUNKS);
    expect(calls).toBe(0);
    expect(fs.readFileSync(second.pcmPath).equals(fs.readFileSync(first.pcmPath))).toBe(true);
    expect(second.words).toEqual(first.words);
  });

  it('a cache entry whose audio is missing is synthesized again', async () => {
    const cache = path.join(dir, 'cache', 'tts');
    const wav = fs.readdirSync(cache).find((f) => f.endsWith('.wav'))!;
    fs.rmSync(path.join(cache, wav));
    const out = path.join(dir, 'out4');
    fs.mkdirSync(out);
    let calls = 0;
    const counting: Speech = { ...speech, synthesize: (req) => (calls++, speech.synthesize(req)) };
    const n = await synthesizeChunks({ ...ctx(out), speech: counting }, CHUNKS);
    expect(calls).toBe(1);
    expect(fs.existsSync(path.join(cache, wav))).toBe(true);
    expect(n.length).toBeGreaterThan(0);
  });
});
