// Loaded models, keyed by (name, device, compute type), so each worker thread loads a
// model once however many requests or backends ask for it. One module instance per
// thread: piscina workers each hold their own cache, which is what we want (an
// onnxruntime session is not shared across threads). Entries live as long as the thread:
// there is no eviction, since releasing a session that a request may still be running could abort
// the process, and the set of models a server loads is small and fixed.
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import ort from 'onnxruntime-node';
import { MissingModelError } from './types.ts';

export type Device = 'cpu' | 'cuda';

export interface ModelKey {
  name: string;
  device: Device;
  /** Numeric precision the model runs in, e.g. `fp32`, `fp16`, `int8`. */
  computeType: string;
}

export interface ModelCacheStats {
  hits: number;
  misses: number;
  /** `name|device|computeType` of every model loaded (not of loads in flight or failed). */
  loaded: string[];
}

export const modelKeyString = (k: ModelKey): string => `${k.name}|${k.device}|${k.computeType}`;

export class ModelCache {
  private readonly entries = new Map<string, { promise: Promise<unknown>; done: boolean }>();
  private hits = 0;
  private misses = 0;

  /**
   * The model for `key`, loading it with `load` on first use. Concurrent callers of one key
   * share one load; a failed load is forgotten so the next call tries again.
   */
  getOrLoad<T>(key: ModelKey, load: () => Promise<T>): Promise<T> {
    const k = modelKeyString(key);
    const found = this.entries.get(k);
    if (found) {
      this.hits++;
      return found.promise as Promise<T>;
    }
    this.misses++;
    const entry = { promise: Promise.resolve().then(load), done: false };
    this.entries.set(k, entry);
    entry.promise.then(
      () => {
        entry.done = true;
      },
      () => {
        if (this.entries.get(k) === entry) this.entries.delete(k);
      },
    );
    return entry.promise as Promise<T>;
  }

  stats(): ModelCacheStats {
    const loaded = [...this.entries.entries()].filter(([, e]) => e.done).map(([k]) => k);
    return { hits: this.hits, misses: this.misses, loaded };
  }
}

/** The cache this thread's engines share. */
export const modelCache = new ModelCache();

export function getOrLoad<T>(key: ModelKey, load: () => Promise<T>): Promise<T> {
  return modelCache.getOrLoad(key, load);
}

export function stats(): ModelCacheStats {
  return modelCache.stats();
}

/** Where onnxruntime-node keeps its native libraries (the CUDA provider goes beside them). */
function ortBinaryDir(): string {
  const require = createRequire(import.meta.url);
  const pkgDir = path.dirname(require.resolve('onnxruntime-node/package.json'));
  return path.join(pkgDir, 'bin', 'napi-v6', process.platform, process.arch);
}

/** True when onnxruntime-node was installed with its CUDA execution provider. */
export function cudaProviderInstalled(): boolean {
  return fs.existsSync(path.join(ortBinaryDir(), 'libonnxruntime_providers_cuda.so'));
}

export interface SessionOptions {
  device: Device;
  /** CUDA device ordinal. */
  deviceId?: number;
  /** CPU threads for one session run; 0 → onnxruntime's default. */
  intraOpThreads?: number;
}

/**
 * An onnxruntime session for a model file, or for a model's bytes (a graph edited in memory,
 * as Piper's with its durations output). `cuda` needs onnxruntime-node's CUDA provider,
 * which its installer only fetches when ONNXRUNTIME_NODE_INSTALL is not `skip`; without it
 * we refuse clearly rather than silently running on the CPU.
 */
export async function createSession(model: string | Uint8Array, opts: SessionOptions): Promise<ort.InferenceSession> {
  if (typeof model === 'string' && !fs.existsSync(model)) throw new MissingModelError(`model file not found: ${model}`);
  // Severity 3 (errors only): the graph-cleanup warnings some exported models trigger are noise.
  const sessionOptions: ort.InferenceSession.SessionOptions = { graphOptimizationLevel: 'all', logSeverityLevel: 3 };
  if (opts.intraOpThreads) sessionOptions.intraOpNumThreads = opts.intraOpThreads;
  if (opts.device === 'cuda') {
    if (!cudaProviderInstalled()) {
      throw new Error(
        `--device cuda: onnxruntime-node's CUDA execution provider is not installed (no libonnxruntime_providers_cuda.so in ${ortBinaryDir()}); ` +
          'reinstall onnxruntime-node on the GPU host with ONNXRUNTIME_NODE_INSTALL unset (it fetches the CUDA 12 provider), or use --device cpu',
      );
    }
    sessionOptions.executionProviders = [{ name: 'cuda', deviceId: opts.deviceId ?? 0 }];
  } else {
    sessionOptions.executionProviders = ['cpu'];
  }
  return typeof model === 'string' ? ort.InferenceSession.create(model, sessionOptions) : ort.InferenceSession.create(model, sessionOptions);
}

/** `createSession` through the shared cache, keyed by the file path. */
export function getSession(file: string, opts: SessionOptions & { computeType?: string }): Promise<ort.InferenceSession> {
  return getOrLoad({ name: path.resolve(file), device: opts.device, computeType: opts.computeType ?? 'fp32' }, () => createSession(file, opts));
}
