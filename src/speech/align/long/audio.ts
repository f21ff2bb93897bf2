// The recording's files, decoded once to 16 kHz mono 16-bit PCM on disk: the recogniser reads
// windows of them by frame range and the per-segment aligner reads only the segment it aligns,
// so memory stays bounded however many hours the recording lasts (an hour is 115 MB on disk).
import fs from 'node:fs';
import path from 'node:path';
import { ffmpeg, ffprobe } from '../../../media/ffmpeg.ts';
import { LecternError } from '../../../core/errors.ts';
import { toPcm16 } from '../../../media/wav.ts';
import { lateReverbMargin, reverbTime, withoutLateReverb } from '../reverb.ts';

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
  /** The room's reverberation time as estimated (s; reverb.ts reverbTime; 0: too little to tell or not looked at). */
  reverbTime?: number;
  /** Where the room rings (reverbTime >= HEARD_REVERB_S): the PCM with its late reverberation suppressed, which the recogniser hears (readHeardPcm). */
  heardPcm?: string;
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

/**
 * An estimated reverberation time (reverb.ts: a 1 s room reads about 0.65 s) at or over which
 * the recogniser hears the file with its late reverberation suppressed. Dry recordings read
 * 0.14-0.37 s (the hand-labelled clips, the Piper sentences, Asterisk's English, French and
 * Russian prompts, the fixtures' recordings; the noisy room highest), a room of RT60 0.6 s at a direct-to-reverberant ratio
 * of 5 dB 0.42-0.48 (bench/align-levels, round 43).
 */
export const HEARD_REVERB_S = 0.4;
/** The reverberation time is estimated on up to this many stretches of this length (s), spread over the file (about 8 ms of CPU per second read). */
const REVERB_SAMPLES = 3;
const REVERB_SAMPLE_S = 20;
/**
 * The suppression assumes a room this many times the estimate: reverbTime reads a room low (its
 * fastest decays), and 1.5 puts the bench's rooms of 0.6 s at 0.63-0.72 s and of 1 s at
 * 0.95-1.02 s. Chosen on the messy book (seed 11) before reverb.ts smoothed its spectra; 2 with
 * the smoothing timed 21 unspoken words of seed 12's book in a 1 s room (README, *Reverberation*).
 */
const REVERB_SCALE = 1.5;
/** Blocks the suppression is written in (s): memory stays bounded. */
const REVERB_BLOCK_S = 60;

/**
 * Estimates the file's reverberation time; where the room rings, writes the PCM with its late
 * reverberation suppressed beside it (`heardPcm`), for the recogniser. The aligners keep the
 * audio as recorded: on the hand-labelled clips in a 1 s room, hmm's boundaries on suppressed
 * audio lay further from the labels (ends 44.3 -> 52.3 ms) than on the reverberant audio.
 */
export async function hearThroughRoom(file: DecodedFile, signal?: AbortSignal): Promise<DecodedFile> {
  // a file of up to all the stretches' length is read whole (overlapping stretches would count its decays twice)
  const stretches: Float32Array[] = [];
  if (file.duration <= REVERB_SAMPLES * REVERB_SAMPLE_S) stretches.push(readSamples(file, 0, file.duration));
  else for (let i = 0; i < REVERB_SAMPLES; i++) {
    const start = ((file.duration - REVERB_SAMPLE_S) * i) / (REVERB_SAMPLES - 1);
    stretches.push(readSamples(file, start, start + REVERB_SAMPLE_S));
  }
  const joined = new Float32Array(stretches.reduce((n, s) => n + s.length, 0));
  stretches.reduce((at, s) => (joined.set(s, at), at + s.length), 0);
  const rt60 = reverbTime(joined, RATE).rt60;
  if (rt60 < HEARD_REVERB_S) return { ...file, reverbTime: rt60 };
  const heardPcm = file.pcm.replace(/\.raw$/, '.heard.raw');
  const fd = fs.openSync(heardPcm, 'w');
  try {
    const margin = lateReverbMargin(RATE) / RATE;
    for (let start = 0; start < file.duration; start += REVERB_BLOCK_S) {
      if (signal?.aborted) throw signal.reason ?? new Error('aborted');
      const end = Math.min(file.duration, start + REVERB_BLOCK_S);
      const from = Math.max(0, start - margin);
      const x = readSamples(file, from, end + margin);
      const at = Math.round((start - from) * RATE);
      const y = withoutLateReverb(x, RATE, REVERB_SCALE * rt60, Math.round(from * RATE), at, at + Math.round((end - start) * RATE));
      fs.writeSync(fd, toPcm16(y));
      // a turn of the event loop between blocks: progress and stop requests are seen
      await new Promise((r) => setImmediate(r));
    }
  } finally {
    fs.closeSync(fd);
  }
  return { ...file, reverbTime: rt60, heardPcm };
}

/** PCM bytes (s16le) of [start, end) seconds of what the recogniser hears of a decoded file: its late reverberation suppressed where the room rings (hearThroughRoom), else the file as decoded. */
export function readHeardPcm(file: DecodedFile, start: number, end: number): Buffer {
  return readPcm(file.heardPcm ? { ...file, pcm: file.heardPcm } : file, start, end);
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
