// The speech services of a worker served by GPU inference servers (LECTERN_GPU_SERVER_URL):
// the same `Speech` interface as a local backend, so pipelines do not know the difference.
// Each chunk is its own /synthesize request; the pipeline keeps several in flight, and the
// server's micro-batcher coalesces them into shared model calls.
import { GpuServerUnreachable, type GpuClient, type SynthesizedAudio } from '../gpu-client/index.ts';
import { decodeAudio } from '../media/ffmpeg.ts';
import { decodeWav, isWav } from '../media/wav.ts';
import type { Speech } from './local.ts';
import type { SynthesisOutput, WordTiming } from './types.ts';
import { engineWordsOrAligned } from './word-timings.ts';

export interface RemoteSpeechOptions {
  /** Aligner override sent with /align (the server's default otherwise). */
  alignProvider?: string;
  /** Per-request timeout for /synthesize and /align (the client's default otherwise). */
  timeoutMs?: number;
  /** Sample rate for decoding non-WAV output formats (MP3/Opus); default 22050. */
  decodeSampleRate?: number;
}

/** What the client returns, plus the words a client that reads `X-Word-Timings` adds. */
type SynthesizedWithWords = SynthesizedAudio & { words?: WordTiming[] };

/**
 * Speech through `client`. Resolves once a server answers /health with status ok; when none
 * does, rejects with the client's error naming every server and why, so the job that needed
 * speech fails with that line (there is no fallback to local engines).
 * The client stays its caller's: `close()` leaves its health checks running (the process
 * shares one client between speech, lip-sync and the voice library, and closes it last).
 */
export async function createRemoteSpeech(client: GpuClient, opts: RemoteSpeechOptions = {}): Promise<Speech> {
  const states = await client.checkHealth();
  const up = states.find((s) => s.healthy && s.health);
  if (!up) {
    const why = states.map((s) => `${s.url}: ${s.lastError ?? 'unhealthy'}`).join('; ');
    throw new GpuServerUnreachable(states.map((s) => s.url).join(','), 'GET /health', `no healthy GPU server (${why})`);
  }
  const health = up.health!;
  // Several servers may run different backends; chunks could then mix voices, so refuse.
  const backends = new Set(states.filter((s) => s.health?.status === 'ok').map((s) => s.health!.backend));
  if (backends.size > 1) throw new Error(`the GPU servers run different TTS backends (${[...backends].join(', ')}); point LECTERN_GPU_SERVER_URL at servers with one backend`);
  const engine = health.backend;
  const maxChunkBytes = Number(health.max_chunk_bytes);
  if (!Number.isFinite(maxChunkBytes) || maxChunkBytes <= 0) throw new Error(`GPU server ${up.url} reported no max_chunk_bytes in /health`);
  const decodeRate = opts.decodeSampleRate ?? 22050;

  async function decode(out: SynthesizedAudio): Promise<{ samples: Float32Array; sampleRate: number }> {
    if (out.format === 'wav' && isWav(out.audio)) return decodeWav(out.audio);
    return { samples: await decodeAudio(out.audio, decodeRate), sampleRate: decodeRate };
  }

  // Enough chunks in flight to fill a batch on every healthy server.
  const healthy = states.filter((s) => s.healthy).length;
  const concurrency = Math.max(2, (Number(health.max_batch) || 1) * healthy);

  return {
    engine,
    concurrency,
    maxChunkBytes: async () => maxChunkBytes,
    async synthesize(req): Promise<SynthesisOutput> {
      const out = (await client.synthesize(req.text, {
        language: req.language,
        voice: req.voice ?? null,
        refAudio: req.refAudio ?? null,
        refText: req.refAudio ? (req.refText ?? null) : null,
        timeoutMs: opts.timeoutMs,
      })) as SynthesizedWithWords;
      const { samples, sampleRate } = await decode(out);
      // Timings the engine knew (X-Word-Timings) are exact; otherwise the server aligns the source text.
      const words = await engineWordsOrAligned(out.words, req.text, () =>
        client.align(out.audio, req.text, { language: req.language, provider: opts.alignProvider, timeoutMs: opts.timeoutMs }),
      );
      return { samples, sampleRate, words };
    },
    transcribe: (audio, language) => client.transcribe(audio, language, { timeoutMs: opts.timeoutMs }),
    close: async () => undefined,
  };
}
