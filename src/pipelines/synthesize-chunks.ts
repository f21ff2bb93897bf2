// Stage: chunks → narration. Many chunks in flight; each finished chunk is cached by
// content hash, so a re-run or a job restarted after a crash redoes no finished chunk.
// Memory stays flat whatever the book's length: a chunk's audio is held only until it is in
// the cache, and the narration is joined from the cache into a PCM file, one chunk at a time.
import { createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import PQueue from 'p-queue';
import { PcmWriter } from '../media/pcm-file.ts';
import { decodeWav, encodeWav } from '../media/wav.ts';
import { CHUNK_GAP_SECONDS } from '../speech/sentences.ts';
import type { WordTiming } from '../speech/types.ts';
import { tokenizeWords } from '../speech/words.ts';
import { writeFileAtomic } from '../storage.ts';
import { JobCancelled, type PipelineContext } from './types.ts';

export interface Narration {
  /**
   * The audio: 16-bit mono PCM (`pcmInput` gives ffmpeg's arguments) in a file of the job's
   * output dir, which its consumer removes once the narration is encoded.
   */
  pcmPath: string;
  sampleRate: number;
  /** Length in samples. */
  length: number;
  /** Every word of every chunk, in order, with times in the whole narration. */
  words: Array<WordTiming & { chunk: number }>;
  /** Start time of each chunk in the narration. */
  chunkStarts: number[];
}

/** A finished chunk: its audio in the cache, its words in memory. */
interface ChunkDone {
  wavPath: string;
  words: WordTiming[];
}

/** Chunks in flight: the speech service's own figure (a GPU server's max_batch × servers), else 2. */
export async function synthesizeChunks(ctx: PipelineContext, chunks: string[], concurrency = ctx.speech.concurrency ?? 2): Promise<Narration> {
  const { speech, input } = ctx;
  const cacheDir = path.join(ctx.cacheDir, 'tts');
  await fs.promises.mkdir(cacheDir, { recursive: true });
  const queue = new PQueue({ concurrency });
  const results: ChunkDone[] = new Array(chunks.length);
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
  return joinChunks(ctx, results);
}

async function synthesizeCached(ctx: PipelineContext, cacheDir: string, text: string): Promise<ChunkDone> {
  const { input, speech } = ctx;
  const key = createHash('sha256')
    .update(JSON.stringify({ v: 1, engine: speech.engine, voice: input.voiceId, language: input.language, text, ...(input.referenceAudio ? { ref: input.referenceAudio.sha256, refText: input.referenceAudio.text } : {}) }))
    .digest('hex');
  const wavPath = path.join(cacheDir, `${key}.wav`);
  const metaPath = path.join(cacheDir, `${key}.json`);
  try {
    // The metadata is written last: with it present, the audio is complete.
    const [meta] = await Promise.all([fs.promises.readFile(metaPath, 'utf8'), fs.promises.access(wavPath)]);
    return { wavPath, words: (JSON.parse(meta) as { words: WordTiming[] }).words };
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
  return { wavPath, words: out.words };
}

/** The chunks' audio, read back from the cache in order with a gap between chunks, into one PCM file. */
async function joinChunks(ctx: PipelineContext, chunks: ChunkDone[]): Promise<Narration> {
  const pcm = await PcmWriter.create(path.join(ctx.outputDir, `.narration-${randomUUID()}.pcm`));
  try {
    let sampleRate = 0;
    const words: Narration['words'] = [];
    const chunkStarts: number[] = [];
    for (const [i, c] of chunks.entries()) {
      const audio = decodeWav(await fs.promises.readFile(c.wavPath));
      if (i === 0) sampleRate = audio.sampleRate;
      else if (audio.sampleRate !== sampleRate) throw new Error('chunks came back at different sample rates');
      else await pcm.silence(Math.round(CHUNK_GAP_SECONDS * sampleRate));
      const t0 = pcm.length / sampleRate;
      chunkStarts.push(t0);
      await pcm.samples(audio.samples);
      for (const w of c.words) words.push({ word: w.word, start: t0 + w.start, end: t0 + w.end, chunk: i });
    }
    await pcm.close();
    return { pcmPath: pcm.path, sampleRate: sampleRate || 22050, length: pcm.length, words, chunkStarts };
  } catch (e) {
    await pcm.discard();
    throw e;
  }
}
