// Per-worker cache of loaded engines keyed by (model name, device, compute type), so a
// second request for the same model loads nothing. Concurrent first requests share one load.
// (The engines' own model files and onnx sessions are cached below them, in speech/model-cache.ts.)

export interface CacheKey {
  /** tts:piper, align:dtw, asr:whisper… */
  model: string;
  device: string;
  computeType: string;
}

export function cacheKeyString(k: CacheKey): string {
  return `${k.model}|${k.device}|${k.computeType}`;
}

export class EngineCache {
  private readonly entries = new Map<string, Promise<unknown>>();
  hits = 0;
  misses = 0;

  /** Returns the cached engine, or loads it; `hit` says which. A failed load is not cached. */
  async get<T>(key: CacheKey, load: () => Promise<T>): Promise<{ value: T; hit: boolean }> {
    const k = cacheKeyString(key);
    const existing = this.entries.get(k);
    if (existing) {
      this.hits++;
      return { value: (await existing) as T, hit: true };
    }
    this.misses++;
    const p = load();
    this.entries.set(k, p);
    try {
      return { value: await p, hit: false };
    } catch (e) {
      this.entries.delete(k);
      throw e;
    }
  }

  keys(): string[] {
    return [...this.entries.keys()];
  }

  async closeAll(close: (value: unknown) => Promise<void>): Promise<void> {
    const all = [...this.entries.values()];
    this.entries.clear();
    await Promise.allSettled(all.map(async (p) => close(await p)));
  }
}
