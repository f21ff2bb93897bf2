// Encodes synthesized PCM in an audio format, whole (one file with exact headers) or
// streamed (pieces handed over as they are made). WAV is written in-process; the
// compressed formats, raw PCM's resampling and speed changes go through ffmpeg.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ffmpeg, ffmpegInput } from '../media/ffmpeg.ts';
import { encodeWav, toPcm16, wavHeader } from '../media/wav.ts';

export const CONTENT_TYPES: Record<string, string> = {
  wav: 'audio/wav',
  mp3: 'audio/mpeg',
  opus: 'audio/ogg',
  aac: 'audio/aac',
  flac: 'audio/flac',
  pcm: 'audio/pcm',
};

export const AUDIO_FORMATS = Object.keys(CONTENT_TYPES);

/** Raw `pcm` is 16-bit little-endian mono at this rate: what OpenAI's `pcm` is, so its clients play it right. */
export const PCM_SAMPLE_RATE = 24000;

/** ffmpeg output options of each compressed format (muxers that write to a pipe without seeking back). */
const CODEC_ARGS: Record<string, string[]> = {
  mp3: ['-c:a', 'libmp3lame', '-b:a', '64k', '-f', 'mp3'],
  opus: ['-c:a', 'libopus', '-b:a', '32k', '-f', 'ogg'],
  aac: ['-c:a', 'aac', '-b:a', '64k', '-f', 'adts'],
  flac: ['-c:a', 'flac', '-f', 'flac'],
};

export function contentTypeFor(format: string): string {
  const t = CONTENT_TYPES[format];
  if (!t) throw new Error(`unsupported output format "${format}" (known: ${AUDIO_FORMATS.join(', ')})`);
  return t;
}

/** atempo takes 0.5–2 per instance; a chain reaches 0.25–4 (OpenAI's speed range) with the pitch kept. */
function tempoFilter(speed: number): string[] {
  if (speed === 1) return [];
  const steps: number[] = [];
  let rest = speed;
  while (rest > 2) {
    steps.push(2);
    rest /= 2;
  }
  while (rest < 0.5) {
    steps.push(0.5);
    rest /= 0.5;
  }
  steps.push(rest);
  return ['-af', steps.map((s) => `atempo=${s.toFixed(6)}`).join(',')];
}

/** ffmpeg arguments from mono float PCM on stdin to `format` on stdout; WAV comes out as bare PCM16 (its header is ours). */
function ffmpegArgs(format: string, sampleRate: number, speed: number, streaming: boolean): string[] {
  const input = ['-f', 'f32le', '-ar', String(sampleRate), '-ac', '1', '-i', 'pipe:0', ...tempoFilter(speed)];
  let output: string[];
  if (format === 'wav') output = ['-c:a', 'pcm_s16le', '-f', 's16le'];
  else if (format === 'pcm') output = ['-ar', String(PCM_SAMPLE_RATE), '-c:a', 'pcm_s16le', '-f', 's16le'];
  else if (CODEC_ARGS[format]) output = [...CODEC_ARGS[format]!];
  else throw new Error(`unsupported output format "${format}" (known: ${AUDIO_FORMATS.join(', ')})`);
  // Streaming: write each packet at once, and Ogg pages every 100 ms instead of every second.
  if (streaming) output.push('-flush_packets', '1', ...(format === 'opus' ? ['-page_duration', '100000'] : []));
  return [...input, ...output, 'pipe:1'];
}

const floatBytes = (samples: Float32Array) => Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength);

/** One whole file of `format` (speed 1 unless given: 0.25–4, pitch kept). */
export async function encodeAudio(samples: Float32Array, sampleRate: number, format: string, speed = 1): Promise<Uint8Array> {
  if (format === 'wav' && speed === 1) return encodeWav(samples, sampleRate);
  const args = ffmpegArgs(format, sampleRate, speed, false);
  if (format === 'wav' || format === 'pcm') {
    const { stdout } = await ffmpeg(args, { input: floatBytes(samples) });
    return format === 'wav' ? Buffer.concat([wavHeader(sampleRate, stdout.length), stdout]) : stdout;
  }
  // Into a file, so the muxer can go back and write what it knows only at the end (FLAC's length, MP3's frame count).
  const dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'lectern-encode-'));
  try {
    const file = path.join(dir, `audio.${format}`);
    await ffmpeg([...args.slice(0, -1), file], { input: floatBytes(samples) });
    return await fs.promises.readFile(file);
  } finally {
    await fs.promises.rm(dir, { recursive: true, force: true });
  }
}

export interface AudioStream {
  /** Resolves once the encoder took the samples (waits while its pipe is full). */
  write(samples: Float32Array): Promise<void>;
  /** Flushes the encoder; resolves once every byte has been handed to onOutput. */
  end(): Promise<void>;
  /** Stops the encoder (the client went away). */
  kill(): void;
}

/**
 * Encodes samples written one piece at a time, handing the output over as it is made.
 * A streamed WAV's header says "unknown length" (players read to the end).
 */
export function streamAudio(format: string, sampleRate: number, speed: number, onOutput: (bytes: Buffer) => void): AudioStream {
  if (format === 'wav') onOutput(wavHeader(sampleRate, null));
  if (format === 'wav' && speed === 1) {
    return { write: async (samples) => onOutput(toPcm16(samples)), end: async () => {}, kill: () => {} };
  }
  const proc = ffmpegInput(ffmpegArgs(format, sampleRate, speed, true), { onOutput });
  return {
    write: (samples) => proc.write(floatBytes(samples)),
    end: async () => void (await proc.end()),
    kill: () => proc.kill(),
  };
}
