// What the long-recording benches share to build their audiobooks and measure them: a seeded
// shuffle, chapter audio joined from its parts and written as MP3, and CPU time of the process
// with its finished children.
import fs from 'node:fs';
import { ffmpegInput } from '../src/media/ffmpeg.ts';
import type { Scorer } from '../src/speech/align/soundswallower-wasm.ts';
import type { RecognizerScorer } from '../src/speech/align/long/pocketsphinx-scorer.ts';

/** A seeded generator in [0, 1): the same book for the same seed. */
export function rng(seed: number): () => number {
  return () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
}

export function shuffle<T>(xs: T[], rand: () => number): T[] {
  const a = [...xs];
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [a[i], a[j]] = [a[j]!, a[i]!];
  }
  return a;
}

/** The parts one after another. */
export function joinParts(parts: Float32Array[]): Float32Array {
  const out = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
  let off = 0;
  for (const p of parts) (out.set(p, off), (off += p.length));
  return out;
}

/** Mono MP3 at the samples' rate, streamed to ffmpeg ten seconds at a time. */
export async function writeMp3(samples: Float32Array, rate: number, bitrate: string, out: string): Promise<void> {
  const enc = ffmpegInput(['-y', '-f', 'f32le', '-ar', String(rate), '-ac', '1', '-i', 'pipe:0', '-c:a', 'libmp3lame', '-b:a', bitrate, out]);
  for (let i = 0; i < samples.length; i += rate * 10) await enc.write(Buffer.from(samples.buffer, samples.byteOffset + i * 4, Math.min(rate * 10, samples.length - i) * 4));
  await enc.end();
}

/** CPU seconds of this process and of its finished children (recognisers, ffmpeg, eSpeak helpers once closed): what a loaded machine does not inflate as it does wall time. */
export function cpuSeconds(): number {
  const f = fs.readFileSync('/proc/self/stat', 'utf8').split(') ')[1]!.split(' ');
  return (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) / 100;
}

/** Wall and CPU seconds of each phase alignRecording reports (decode, locate, align): pass `onProgress` to it, then call `done()` once it returns. */
export function phaseClock(): { onProgress: (p: { phase: string }) => void; done: () => { phase: string; wall: number; cpu: number }[] } {
  const marks: { phase: string; at: number; cpu: number }[] = [];
  const mark = (phase: string) => marks.push({ phase, at: performance.now(), cpu: cpuSeconds() });
  return {
    onProgress: (p) => void (marks.at(-1)?.phase !== p.phase && mark(p.phase)),
    done: () => {
      mark('');
      return marks.slice(0, -1).map((m, i) => ({ phase: m.phase, wall: (marks[i + 1]!.at - m.at) / 1000, cpu: marks[i + 1]!.cpu - m.cpu }));
    },
  };
}

/** `--recognizer stock`: the long-recording recogniser (pocketsphinx_batch) on the library's own acoustic scorer instead of Lectern's (the same words; the CPU baseline of the locate phase). */
export function recognizerArg(args: string[]): RecognizerScorer {
  const v = args.includes('--recognizer') ? args[args.indexOf('--recognizer') + 1] : 'simd';
  if (v !== 'simd' && v !== 'stock') throw new Error(`--recognizer takes simd or stock, not ${v}`);
  return v;
}

/** `--scorer stock`: the hmm aligner on soundswallower's own build instead of its SIMD scorer (the same alignments; the CPU baseline). */
export function scorerArg(args: string[]): Scorer {
  const v = args.includes('--scorer') ? args[args.indexOf('--scorer') + 1] : 'simd';
  if (v !== 'simd' && v !== 'stock') throw new Error(`--scorer takes simd or stock, not ${v}`);
  return v;
}
