// Stage: chunks → narration. Many chunks in flight; each finished chunk is cached by
// content hash, so a re-run or a job restarted after a crash redoes no finished chunk.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import PQueue from 'p-queue';
import { decodeWav, encodeWav } from '../media/wav.ts';
import { CHUNK_GAP_SECONDS } from '../speech/sentences.ts';
import type { WordTiming } from '../speech/types.ts';
import { tokenizeWords } from '../speech/words.ts';
import { writeFileAtomic } from '../storage.ts';
import { JobCancelled, type PipelineContext } from './types.ts';

export interface Narration {
  samples: Float32Array;
  sampleRate: number;
  /** Every word of every chunk, in order, with times in the whole narration. */
  words: Array<WordTiming & { chunk: number }>;
  /** Start time of each chunk in the narration. */
  chunkStarts: number[];
}

interface ChunkAudio {
  samples: Float32Array;
  sampleRate: number;
  words: WordTiming[];
}

/** Chunks in flight: the speech service's own figure (a GPU server's max_batch × servers), else 2. */
export async function synthesizeChunks(ctx: PipelineContext, chunks: string[], concurrency = ctx.speech.concurrency ?? 2): Promise<Narration> {
  const { speech, input } = ctx;
  const cacheDir = path.join(ctx.cacheDir, 'tts');
  await fs.promises.mkdir(cacheDir, { recursive: true });
  const queue = new PQueue({ concurrency });
  const results: ChunkAudio[] = new Array(chunks.length);
  let done = 0;
  let cancelled = false;
  ctx.progress('synthesize', 0, chunks.length);

  // onIdle(), not Promise.all over add(): clear() drops queued tasks without settling
  // their promises, and a failed chunk must still let the chunks in flight finish.
  let failure: unknown = null;
  chunks.forEach((text, i) => {
    void queue
      .add(async () => {
        if (cancelled || failure || ctx.signal.aborted) return;
        if (await ctx.cancelled()) {
          cancelled = true;
          queue.clear();
          return;
        }
        results[i] = await synthesizeCached(ctx, cacheDir, text);
        ctx.progress('synthesize', ++done, chunks.length);
      })
      .catch((err: unknown) => {
        failure ??= err;
        queue.clear();
      });
  });
  await queue.onIdle();
  if (failure) throw failure;
  if (ctx.signal.aborted) throw ctx.signal.reason ?? new Error('aborted');
  if (cancelled) throw new JobCancelled();
  void input;
  return concatenate(results);
}

async function synthesizeCached(ctx: PipelineContext, cacheDir: string, text: string): Promise<ChunkAudio> {
  const { input, speech } = ctx;
  const key = createHash('sha256')
    .update(JSON.stringify({ v: 1, engine: speech.engine, voice: input.voiceId, language: input.language, text, ...(input.referenceAudio ? { ref: input.referenceAudio.sha256, refText: input.referenceAudio.text } : {}) }))
    .digest('hex');
  const wavPath = path.join(cacheDir, `${key}.wav`);
  const metaPath = path.join(cacheDir, `${key}.json`);
  try {
    const [wav, meta] = await Promise.all([fs.promises.readFile(wavPath), fs.promises.readFile(metaPath, 'utf8')]);
    const { samples, sampleRate } = decodeWav(wav);
    return { samples, sampleRate, words: (JSON.parse(meta) as { words: WordTiming[] }).words };
  } catch {
    // not cached (or a half-written entry from a crash): synthesize
  }
  const ref = input.referenceAudio;
  const out = await speech.synthesize({ text, language: input.language, voice: input.voiceId, ...(ref ? { refAudio: ref.bytes, refText: ref.text } : {}) });
  const tokens = tokenizeWords(text);
  if (!out.words || out.words.length !== tokens.length) {
    throw new Error(`${speech.engine} gave no word timings for a chunk (${out.words?.length ?? 0} of ${tokens.length} words)`);
  }
  // Write the audio first and the metadata last: the metadata file is the "complete" marker.
  await writeFileAtomic(wavPath, encodeWav(out.samples, out.sampleRate));
  await writeFileAtomic(metaPath, JSON.stringify({ text, words: out.words }));
  return { samples: out.samples, sampleRate: out.sampleRate, words: out.words };
}

function concatenate(chunks: ChunkAudio[]): Narration {
  const sampleRate = chunks[0]?.sampleRate ?? 22050;
  if (chunks.some((c) => c.sampleRate !== sampleRate)) throw new Error('chunks came back at different sample rates');
  const gap = Math.round(CHUNK_GAP_SECONDS * sampleRate);
  const total = chunks.reduce((n, c) => n + c.samples.length, 0) + gap * Math.max(0, chunks.length - 1);
  const samples = new Float32Array(total);
  const words: Narration['words'] = [];
  const chunkStarts: number[] = [];
  let offset = 0;
  chunks.forEach((c, i) => {
    if (i > 0) offset += gap;
    const t0 = offset / sampleRate;
    chunkStarts.push(t0);
    samples.set(c.samples, offset);
    for (const w of c.words) words.push({ word: w.word, start: t0 + w.start, end: t0 + w.end, chunk: i });
    offset += c.samples.length;
  });
  return { samples, sampleRate, words, chunkStarts };
}
