// Messages between the GPU server's event loop and its pool workers.
import type { WireError } from '../core/errors.ts';
import type { Language, SynthesisRequest, WordTiming } from '../speech/types.ts';

export interface BackendSpec {
  /** Registry name (espeak, piper) or the name an extra backend module registers under. */
  name: string;
  /** file:// URL of a module exporting `createBackend(opts)`; absent → src/speech/tts/backends.ts. */
  module?: string;
  voice?: string | null;
}

export interface WorkerData {
  device: 'cpu' | 'cuda';
  modelsDir: string;
  computeType: string;
  /** onnxruntime intra-op threads per session in this worker (cores ÷ workers on CPU). */
  intraOpThreads?: number;
  /** Most sentences per session run in a batched backend (absent → the backend's default). */
  sessionBatch?: number;
}

export interface BackendInfo {
  name: string;
  outputFormat: string;
  maxChunkBytes: number;
  canClone: boolean;
  batched: boolean;
  languages: Language[];
  /** Voice ids the backend takes, where it lists them (absent: any id goes to the backend to judge). */
  voices?: string[];
}

export type Task =
  /** Loads the backend; the barrier makes each of the pool's N workers take exactly one of N load tasks. */
  | { kind: 'load'; backend: BackendSpec; barrier: { counter: SharedArrayBuffer; parties: number; timeoutMs: number } }
  | { kind: 'synthesize'; backend: BackendSpec; batch: SynthesisRequest[] }
  | { kind: 'align'; aligner: string; audio: Float32Array; sampleRate: number; text: string; language: string }
  | { kind: 'transcribe'; transcriber: string; audio: Float32Array; sampleRate: number; language: string };

export interface SynthesizedAudio {
  /** Encoded in the backend's output format. */
  audio: Uint8Array;
  contentType: string;
  durationSeconds: number;
  words?: WordTiming[];
}

export interface TaskStats {
  /** The engine-cache lookup this task made. */
  model: string;
  cacheHit: boolean;
  /** Time inside the engine call (not the load), ms. */
  modelMs: number;
  loadMs: number;
  workerId: number;
  /** Models this worker holds after the task. */
  loaded: string[];
}

export type TaskResult =
  | { kind: 'load'; info: BackendInfo; stats: TaskStats }
  | { kind: 'synthesize'; outputs: SynthesizedAudio[]; stats: TaskStats }
  | { kind: 'align'; words: WordTiming[]; stats: TaskStats }
  | { kind: 'transcribe'; text: string; stats: TaskStats }
  /** Error classes do not survive structured clone: errors cross as their catalogue code and message. */
  | { kind: 'error'; error: WireError; stats?: TaskStats };
