// The speech interfaces shared by the worker (local speech) and the GPU server.
import { LecternError } from '../core/errors.ts';

import type { WordTiming } from '../core/timeline.ts';

export type { WordTiming } from '../core/timeline.ts';

export interface PhonemeTiming {
  /** The engine's phoneme symbol (eSpeak mnemonic or IPA, as the backend says). */
  phoneme: string;
  start: number;
  end: number;
}

export interface Language {
  /** BCP-47 code, e.g. en-US. */
  code: string;
  name: string;
}

export interface SynthesisRequest {
  text: string;
  /** BCP-47 language code. */
  language: string;
  /** Backend-specific voice id (eSpeak voice, Piper model name[#speaker]); null → the backend's default for the language. */
  voice?: string | null;
  /** Reference clip for voice cloning (only for backends with canClone). */
  refAudio?: Buffer | null;
  refText?: string | null;
}

export interface SynthesisOutput {
  /** Mono PCM, -1..1. */
  samples: Float32Array;
  sampleRate: number;
  /** One entry per whitespace-separated word of the request text (see tokenizeWords), when the engine knows them. */
  words?: WordTiming[];
  phonemes?: PhonemeTiming[];
}

/** What a TTS engine is created with (tts/backends.ts picks the engine by name). */
export interface TtsBackendOptions {
  modelsDir: string;
  device: 'cpu' | 'cuda';
  /** Default voice (backend-specific id); null → the backend's default. */
  voice?: string | null;
  /** Most sentences in one model call, for backends that batch (piper); absent → the backend's default. */
  maxBatch?: number;
}

export interface TtsBackend {
  readonly name: string;
  /** Audio format the GPU server returns for this backend (`wav`, `mp3`, `opus`). */
  readonly outputFormat: string;
  /** Largest text, in UTF-8 bytes, one request may carry. */
  readonly maxChunkBytes: number;
  readonly canClone: boolean;
  /** True when one synthesize() call with several requests runs them in one model call (the batcher's gain). */
  readonly batched: boolean;
  languages(): Promise<Language[]>;
  /** Voice ids `SynthesisRequest.voice` takes, where the engine can list them. */
  voices?(): Promise<string[]>;
  /**
   * Synthesizes compatible requests (same voice, language and reference) together.
   * Returns one output per request, in order.
   */
  synthesize(batch: SynthesisRequest[]): Promise<SynthesisOutput[]>;
  close(): Promise<void>;
}

export interface Aligner {
  readonly name: string;
  /** How many align() calls it runs at once (worker threads); absent: one (calls wait for each other). */
  readonly concurrency?: number;
  /** Word timings for every word of `text` (tokenizeWords), in order, against the audio. */
  align(samples: Float32Array, sampleRate: number, text: string, language: string, options?: AlignOptions): Promise<AlignedWord[]>;
  /** Whether align() honours `skippable` and `repeatable` (AlignOptions) in this language, given `borrowModel` where it has no model of its own (absent: it does not; it times every word where the text has it). */
  skips?(language: string): boolean;
}

/** What an aligner may be told besides the text. */
export interface AlignOptions {
  /**
   * Token ranges [first, last] (indices into tokenizeWords(text)) that the audio may leave out
   * as a whole: sentences a narrator may have skipped. An aligner that can tell (hmm) gives the
   * words of a range it finds unspoken `skipped: true` and zero length; others time every word.
   */
  skippable?: [number, number][];
  /**
   * Token ranges the audio may read more than once: an earlier reading of the range, whole or
   * in part (a narrator's retake), before the one that counts. The words get the last reading's
   * times; the earlier one's sound is no word's. An aligner that cannot tell (dtw) ignores them.
   */
  repeatable?: [number, number][];
  /**
   * For a language no installed acoustic model covers: align with another language's model
   * (acoustic-models.ts borrowedModel, eSpeak's pronunciations in its phones) rather than refuse
   * (hmm) or use dtw (auto). The long-recording pipeline asks for it on its segments, where it
   * placed fewer words outside their sentence than dtw; on short clips it is no better (README).
   */
  borrowModel?: boolean;
  /**
   * The rate the audio was recorded at, where it was resampled up to the `sampleRate` given (a
   * telephone recording decoded at 16 kHz): only that band carries sound. hmm picks its
   * acoustic model by it; dtw caps its mel bands at that band's edge. Default:
   * the sampleRate given.
   */
  sourceRate?: number;
  /**
   * hmm: when to decode with a second acoustic model of the language too (English wide-band
   * audio: Debian's 16 kHz model beside the 8 kHz one) and average the two decodes' word edges.
   * `always` (default; twice the decode, a few milliseconds on a sentence), `in-noise` (where the
   * audio's loud frames lie under 30 dB over its noise floor; the long-recording pipeline's
   * choice, so an hour of clean narration is decoded once) or `never`. Other aligners ignore it.
   */
  secondModel?: SecondModel;
}

export type SecondModel = 'always' | 'in-noise' | 'never';

/** A word's timing from an aligner; `skipped`: in a skippable range the audio leaves out (no time of its own). */
export interface AlignedWord extends WordTiming {
  skipped?: true;
}

/** What a transcription engine is created with (asr/transcribers.ts picks the engine by name). */
export interface TranscriberOptions {
  modelsDir: string;
  device: 'cpu' | 'cuda';
}

export interface Transcriber {
  readonly name: string;
  supports(language: string): boolean;
  transcribe(samples: Float32Array, sampleRate: number, language: string): Promise<string>;
}

/** A request the client made wrongly for this engine (→ HTTP 422 with this message). */
export class SpeechInputError extends LecternError {
  override name = 'SpeechInputError';
  constructor(message: string) {
    super('SPEECH_INPUT', message);
  }
}

/** A model file or program the engine needs is not installed (→ start-up error or HTTP 503). */
export class MissingModelError extends LecternError {
  override name = 'MissingModelError';
  constructor(message: string) {
    super('MISSING_MODEL', message);
  }
}
