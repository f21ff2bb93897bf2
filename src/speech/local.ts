// The speech services a pipeline uses. Locally these are the TTS backends of the registry;
// with LECTERN_GPU_SERVER_URL set, the same interface is served by the GPU client.
//
// Local speech is one named backend (`espeak`, `piper`), or `auto`: the engine is chosen per
// voice by the resolver the caller gives (src/voices/resolve.ts localVoice): a job with no voice gets its language's default
// (the Piper voice installed for it, else eSpeak NG), a bundled voice its own engine. A chunk
// whose engine gave no word timings (Piper, where its phoneme words could not be matched to
// the text) is aligned locally with the configured aligner (LECTERN_ALIGNER, default auto).
import { ALIGNERS, createAligner, UnknownAlignerError, type ClosableAligner } from './align/aligners.ts';
import type { SynthesisOutput, SynthesisRequest, TtsBackend } from './types.ts';
import { createTtsBackend, type TtsBackendOptions } from './tts/backends.ts';
import { engineWordsOrAligned } from './word-timings.ts';

export interface Speech {
  /** Engine name, part of every cache key (a different engine makes different audio). */
  readonly engine: string;
  maxChunkBytes(): Promise<number>;
  /** Chunks worth keeping in flight at once (a GPU server batches them); absent → the pipeline's default. */
  readonly concurrency?: number;
  synthesize(req: SynthesisRequest): Promise<SynthesisOutput>;
  /** Speech → text, where the service has it (GPU servers' /transcribe): a clone reference's missing ref_text. */
  transcribe?(audio: Buffer, language: string): Promise<string>;
  /**
   * Speech that picks its engine per voice (local `auto`): the speech of one engine and the
   * engine voice a job with `voiceId` (a bundled voice, an engine voice id, or null for the
   * language's default) narrates with. The returned speech is owned by this one: its close() does nothing.
   */
  forVoice?(voiceId: string | null, language: string): Promise<{ speech: Speech; voiceId: string | null }>;
  close(): Promise<void>;
}

/** The local engines `auto` chooses between. */
export type LocalEngine = 'espeak' | 'piper';

/** A voice id (bundled, engine, or null for the language's default) → the engine and voice that narrate it. */
export type LocalVoiceResolver = (voiceId: string | null, language: string) => Promise<{ engine: LocalEngine; voice: string }>;

export interface LocalSpeechOptions extends TtsBackendOptions {
  /** Aligner for chunks the engine gave no word timings for (registry name; default `auto`). */
  aligner?: string;
  /** `auto` only: which engine and voice a voice id means (the voice library's localVoice, src/voices/resolve.ts). */
  resolveVoice?: LocalVoiceResolver;
}

/** The aligner, created on the first chunk that needs it. */
function lazyAligner(name: string, opts: LocalSpeechOptions) {
  let made: Promise<ClosableAligner> | null = null;
  return {
    get(): Promise<ClosableAligner> {
      if (!made) {
        made = createAligner(name, { modelsDir: opts.modelsDir, device: opts.device });
        made.catch(() => (made = null));
      }
      return made;
    },
    async close() {
      const a = await made?.catch(() => null);
      made = null;
      await a?.close();
    },
  };
}

type Aligning = ReturnType<typeof lazyAligner>;

/** One backend as Speech; words it did not give are aligned. */
function backendSpeech(backend: TtsBackend, aligner: Aligning, close: () => Promise<void>): Speech {
  return {
    engine: backend.name,
    maxChunkBytes: async () => backend.maxChunkBytes,
    async synthesize(req) {
      const [out] = await backend.synthesize([req]);
      if (!out) throw new Error(`${backend.name} returned no audio`);
      const words = await engineWordsOrAligned(out.words, req.text, async () => (await aligner.get()).align(out.samples, out.sampleRate, req.text, req.language));
      return { ...out, words };
    },
    close,
  };
}

/**
 * Local speech: `auto` (the engine per voice), or one named backend. Piper runs one sentence
 * per session run here unless `maxBatch` says otherwise: on the CPU, padded batches cost time
 * and memory (bench/whole-book.bench.ts, 1,000 words: RTF 0.078 and 1.1 GB peak RSS at 1
 * against 0.122 and 3.2 GB at 16 in the same session); the chunks in flight keep the cores busy.
 */
export async function createLocalSpeech(backendName: string, options: LocalSpeechOptions): Promise<Speech> {
  const opts = { ...options, maxBatch: options.maxBatch ?? 1 };
  const alignerName = opts.aligner ?? 'auto';
  // An unknown aligner is a start-up error, not a failure of the first job that needs it.
  if (!ALIGNERS.includes(alignerName)) throw new UnknownAlignerError(`unknown aligner "${alignerName}" (LECTERN_ALIGNER; known: ${ALIGNERS.join(', ')})`);
  const aligner = lazyAligner(alignerName, opts);
  if (backendName === 'auto') {
    if (!opts.resolveVoice) throw new Error('local speech "auto" needs a voice resolver (resolveVoice)');
    return createAutoSpeech(opts, opts.resolveVoice, aligner);
  }
  const backend = await createTtsBackend(backendName, opts);
  return backendSpeech(backend, aligner, async () => {
    await backend.close();
    await aligner.close();
  });
}

function createAutoSpeech(opts: LocalSpeechOptions, resolveVoice: LocalVoiceResolver, aligner: Aligning): Speech {
  const backends = new Map<LocalEngine, Promise<TtsBackend>>();
  const speeches = new Map<LocalEngine, Promise<Speech>>();
  const backend = (engine: LocalEngine) => {
    let b = backends.get(engine);
    if (!b) {
      // The voice is always given per request, so the backend needs no default of its own.
      b = createTtsBackend(engine, { modelsDir: opts.modelsDir, device: opts.device, maxBatch: opts.maxBatch });
      b.catch(() => backends.delete(engine));
      backends.set(engine, b);
    }
    return b;
  };
  const speechOf = (engine: LocalEngine) => {
    let s = speeches.get(engine);
    if (!s) {
      s = backend(engine).then((b) => backendSpeech(b, aligner, async () => undefined));
      s.catch(() => speeches.delete(engine));
      speeches.set(engine, s);
    }
    return s;
  };
  const forVoice = async (voiceId: string | null, language: string) => {
    const v = await resolveVoice(voiceId ?? opts.voice ?? null, language);
    return { speech: await speechOf(v.engine), voiceId: v.voice };
  };
  return {
    engine: 'auto',
    // Chunks sized for the engine that takes the least (piper), unless a job's speech is bound.
    maxChunkBytes: async () => Math.min(...(await Promise.all([...backends.values()].map(async (b) => (await b).maxChunkBytes))), 1000),
    forVoice,
    async synthesize(req) {
      const { speech, voiceId } = await forVoice(req.voice ?? null, req.language);
      return speech.synthesize({ ...req, voice: voiceId });
    },
    async close() {
      const all = [...backends.values()];
      backends.clear();
      speeches.clear();
      await Promise.all(all.map(async (b) => (await b.catch(() => null))?.close()));
      await aligner.close();
    },
  };
}
