// The recording's files, decoded once to 16 kHz mono 16-bit PCM on disk: the recogniser reads
// windows of them by frame range and the per-segment aligner reads only the segment it aligns,
// so memory stays bounded however many hours the recording lasts (an hour is 115 MB on disk).
import fs from 'node:fs';
import path from 'node:path';
import { ffmpeg, ffprobe } from '../../../media/ffmpeg.ts';
import { LecternError } from '../../../core/errors.ts';

export const RATE = 16000;
const BYTES_PER_SECOND = RATE * 2;

export interface RecordingChapter {
  title: string | null;
  start: number;
  end: number;
}

export interface DecodedFile {
  /** Position in the input list. */
  index: number;
  source: string;
  /** Raw s16le mono PCM at RATE. */
  pcm: string;
  duration: number;
  /** Chapter marks the container carries (M4B, MKV, some MP3s). */
  chapters: RecordingChapter[];
  /** The source's own sample rate: below RATE, the audio has no content above half of it (telephone, old recordings). */
  sourceRate: number;
}

/** An input file that is not audio ffmpeg can decode (→ 415 for the upload or job that brought it). */
export class RecordingInputError extends LecternError {
  override name = 'RecordingInputError';
  constructor(message: string) {
    super('UNSUPPORTED_TYPE', message);
  }
}

/** Checks that a file is audio ffmpeg reads (cheap: a probe, no decode); for refusing an upload early. */
export async function probeRecordingFile(source: string, index = 0): Promise<{ duration: number; sampleRate: number; chapters: RecordingChapter[] }> {
  const name = path.basename(source);
  const probe = await ffprobe(source).catch((e: Error) => {
    throw new RecordingInputError(`audio file ${index + 1} (${name}) cannot be read: ${e.message}`);
  });
  const stream = probe.streams.find((s) => s.codec_type === 'audio');
  if (!stream) throw new RecordingInputError(`file ${index + 1} (${name}) has no audio stream`);
  const chapters = probe.chapters.map((c) => ({ title: c.tags?.title ?? null, start: Number(c.start_time), end: Number(c.end_time) }));
  return { duration: probe.durationSeconds, sampleRate: Number(stream.sample_rate) || RATE, chapters };
}

export async function decodeRecordingFile(source: string, index: number, workDir: string, signal?: AbortSignal): Promise<DecodedFile> {
  const name = path.basename(source);
  const probe = await probeRecordingFile(source, index);
  const pcm = path.join(workDir, `f${index}.raw`);
  await ffmpeg(['-y', '-i', source, '-map', '0:a:0', '-vn', '-ac', '1', '-ar', String(RATE), '-f', 's16le', '-c:a', 'pcm_s16le', pcm], { signal }).catch((e: Error) => {
    if (signal?.aborted) throw e;
    throw new RecordingInputError(`audio file ${index + 1} (${name}) cannot be decoded: ${e.message}`);
  });
  const duration = fs.statSync(pcm).size / BYTES_PER_SECOND;
  if (duration < 0.1) throw new RecordingInputError(`audio file ${index + 1} (${name}) holds no audio`);
  return { index, source, pcm, duration, chapters: probe.chapters, sourceRate: probe.sampleRate };
}

/** PCM bytes (s16le) of [start, end) seconds of a decoded file. */
export function readPcm(file: DecodedFile, start: number, end: number): Buffer {
  const from = Math.max(0, Math.floor(start * RATE));
  const to = Math.min(Math.floor(file.duration * RATE), Math.ceil(end * RATE));
  const n = Math.max(0, to - from);
  const buf = Buffer.alloc(n * 2);
  const fd = fs.openSync(file.pcm, 'r');
  try {
    fs.readSync(fd, buf, 0, n * 2, from * 2);
  } finally {
    fs.closeSync(fd);
  }
  return buf;
}

/** Samples [start, end) seconds of a decoded file, as floats in -1..1. */
export function readSamples(file: DecodedFile, start: number, end: number): Float32Array {
  return pcmSamples(readPcm(file, start, end));
}

/** The first `count` samples (default all) of PCM bytes (s16le, at an even offset, as readPcm and its subarrays are), as floats in -1..1. */
export function pcmSamples(pcm: Buffer, count = pcm.length >> 1): Float32Array {
  return Float32Array.from(new Int16Array(pcm.buffer, pcm.byteOffset, count), (x) => x / 32768);
}
