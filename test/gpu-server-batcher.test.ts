// MicroBatcher in isolation, on fake timers: window bound, max-batch split, per-key queues.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { MicroBatcher } from '../src/gpu-server/batcher.ts';

describe('MicroBatcher', () => {
  let clock = 0;
  beforeEach(() => {
    vi.useFakeTimers();
    clock = 0;
  });
  afterEach(() => vi.useRealTimers());

  const make = (maxBatch: number, windowMs: number) => {
    const calls: Array<{ key: string; items: string[]; at: number }> = [];
    const b = new MicroBatcher<string, string>({
      maxBatch,
      windowMs,
      now: () => clock,
      run: async (key, items) => {
        calls.push({ key, items, at: clock });
        return items.map((i) => i.toUpperCase());
      },
    });
    return { b, calls };
  };
  const advance = async (ms: number) => {
    clock += ms;
    await vi.advanceTimersByTimeAsync(ms);
  };

  it('dispatches a partial batch exactly when its oldest request has waited the window', async () => {
    const { b, calls } = make(8, 30);
    const p1 = b.submit('k', 'a');
    await advance(20);
    const p2 = b.submit('k', 'b');
    await advance(9);
    expect(calls).toHaveLength(0);
    await advance(1);
    expect(calls).toEqual([{ key: 'k', items: ['a', 'b'], at: 30 }]); // b waited 10 ms, a exactly the window
    expect(await Promise.all([p1, p2])).toEqual(['A', 'B']);
  });

  it('dispatches full batches immediately and the remainder after the window', async () => {
    const { b, calls } = make(3, 30);
    const ps = ['a', 'b', 'c', 'd', 'e', 'f', 'g'].map((x) => b.submit('k', x));
    expect(calls.map((c) => c.items)).toEqual([['a', 'b', 'c'], ['d', 'e', 'f']]);
    expect(b.queued).toBe(1);
    await advance(30);
    expect(calls.map((c) => c.items.length)).toEqual([3, 3, 1]);
    expect(await Promise.all(ps)).toEqual(['A', 'B', 'C', 'D', 'E', 'F', 'G']);
  });

  it('keeps keys apart: an incompatible head never delays another key', async () => {
    const { b, calls } = make(2, 30);
    const slow = b.submit('de', 'x');
    await advance(10);
    const fast = [b.submit('en', 'y'), b.submit('en', 'z')];
    expect(calls).toEqual([{ key: 'en', items: ['y', 'z'], at: 10 }]);
    await Promise.all(fast);
    await advance(20);
    expect(calls[1]).toEqual({ key: 'de', items: ['x'], at: 30 });
    await slow;
  });

  it('a remainder keeps its original deadline after a full batch leaves', async () => {
    const { b, calls } = make(2, 30);
    b.submit('k', 'a');
    await advance(25);
    b.submit('k', 'b'); // fills the batch: a, b go now
    b.submit('k', 'c');
    expect(calls).toHaveLength(1);
    await advance(29);
    expect(calls).toHaveLength(1);
    await advance(1);
    expect(calls[1]).toEqual({ key: 'k', items: ['c'], at: 55 });
  });

  it('rejects every request of a failed batch and keeps working', async () => {
    let fail = true;
    const b = new MicroBatcher<string, string>({
      maxBatch: 2,
      windowMs: 5,
      now: () => clock,
      run: async (_k, items) => {
        if (fail) throw new Error('model exploded');
        return items;
      },
    });
    const ps = [b.submit('k', 'a'), b.submit('k', 'b')].map((p) => p.catch((e: Error) => e.message));
    expect(await Promise.all(ps)).toEqual(['model exploded', 'model exploded']);
    fail = false;
    const ok = b.submit('k', 'c');
    await advance(5);
    expect(await ok).toBe('c');
  });
  it('a request whose signal aborts while it waits leaves the queue and is never dispatched', async () => {
    const { b, calls } = make(8, 30);
    const ac = new AbortController();
    const p1 = b.submit('k', 'a');
    const p2 = b.submit('k', 'b', ac.signal);
    ac.abort(new Error('client went away'));
    await expect(p2).rejects.toThrow('client went away');
    expect(b.queued).toBe(1);
    await advance(30);
    expect(calls).toEqual([{ key: 'k', items: ['a'], at: 30 }]);
    expect(await p1).toBe('A');
    // already aborted: refused at once
    await expect(b.submit('k', 'c', AbortSignal.abort(new Error('gone')))).rejects.toThrow('gone');
  });

  it('a run that returns a promise per item settles each request on its own; setMaxBatch changes the split', async () => {
    const b = new MicroBatcher<string, string>({
      maxBatch: 8,
      windowMs: 10,
      now: () => clock,
      run: (_key, items) => items.map((i) => (i === 'bad' ? Promise.reject(new Error(`no ${i}`)) : Promise.resolve(i.toUpperCase()))),
    });
    b.setMaxBatch(2);
    const ps = ['a', 'bad', 'c'].map((i) => b.submit('k', i).catch((e: Error) => e.message));
    await advance(10);
    expect(await Promise.all(ps)).toEqual(['A', 'no bad', 'C']);
    expect(b.inFlight).toBe(0);
  });
});
