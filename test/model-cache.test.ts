import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ModelCache, createSession, cudaProviderInstalled, getSession, stats } from '../src/speech/model-cache.ts';
import { MissingModelError } from '../src/speech/types.ts';

const FACE = path.resolve('models/face/blazeface_front_128x128.onnx');

describe('model cache', () => {
  it('shares one load between concurrent callers of a key and keeps keys apart by device and compute type', async () => {
    const cache = new ModelCache();
    let loads = 0;
    const load = async () => {
      loads++;
      await new Promise((r) => setTimeout(r, 20));
      return { id: loads };
    };
    const key = { name: 'm', device: 'cpu' as const, computeType: 'fp32' };
    const [a, b, c] = await Promise.all([cache.getOrLoad(key, load), cache.getOrLoad(key, load), cache.getOrLoad(key, load)]);
    expect(loads).toBe(1);
    expect(a).toBe(b);
    expect(b).toBe(c);
    const d = await cache.getOrLoad({ ...key, computeType: 'fp16' }, load);
    const e = await cache.getOrLoad({ ...key, device: 'cuda' }, load);
    expect(loads).toBe(3);
    expect(d).not.toBe(a);
    expect(e).not.toBe(d);
    const s = cache.stats();
    expect(s.misses).toBe(3);
    expect(s.hits).toBe(2);
    expect(s.loaded.sort()).toEqual(['m|cpu|fp16', 'm|cpu|fp32', 'm|cuda|fp32']);
  });

  it('does not cache a failed load', async () => {
    const cache = new ModelCache();
    let n = 0;
    const key = { name: 'flaky', device: 'cpu' as const, computeType: 'fp32' };
    await expect(
      cache.getOrLoad(key, async () => {
        n++;
        throw new Error('disk on fire');
      }),
    ).rejects.toThrow('disk on fire');
    expect(cache.stats().loaded).toEqual([]);
    const v = await cache.getOrLoad(key, async () => ++n);
    expect(v).toBe(2);
    expect(cache.stats().loaded).toEqual(['flaky|cpu|fp32']);
  });

  it('loads a real onnxruntime session once per (file, device, compute type)', async () => {
    const before = stats();
    const s1 = await getSession(FACE, { device: 'cpu' });
    const s2 = await getSession(FACE, { device: 'cpu' });
    expect(s1).toBe(s2);
    expect(s1.inputNames.length).toBeGreaterThan(0);
    const after = stats();
    expect(after.misses - before.misses).toBe(1);
    expect(after.hits - before.hits).toBe(1);
    expect(after.loaded).toContain(`${FACE}|cpu|fp32`);
  });

  it('names the missing file', async () => {
    await expect(createSession('/nonexistent/model.onnx', { device: 'cpu' })).rejects.toThrow(MissingModelError);
  });

  it.skipIf(cudaProviderInstalled())('device cuda (no CUDA provider installed here) fails clearly instead of falling back to the CPU', async () => {
    await expect(createSession(FACE, { device: 'cuda' })).rejects.toThrow(/CUDA execution provider is not installed/);
    await expect(getSession(FACE, { device: 'cuda' })).rejects.toThrow(/ONNXRUNTIME_NODE_INSTALL/);
  });
});
