// An aligner run in worker threads: each thread holds its own aligner (its own decoder, its
// own eSpeak helper), so `threads` calls to align() run at once on as many cores, and none of
// them holds the caller's event loop. Threads start on demand, one per call in flight, up to
// `threads`; close() ends their aligners and the threads.
import { Worker } from 'node:worker_threads';
import { fromWire, type WireError } from '../../core/errors.ts';
import { alignerSkips } from './acoustic-models.ts';
import { MissingModelError, SpeechInputError, type AlignedWord, type Aligner, type AlignOptions } from '../types.ts';
import type { Scorer } from './soundswallower-wasm.ts';

/** createAligner's options (aligners.ts), as a thread is given them. */
export interface ThreadAlignerOptions {
  modelsDir: string;
  device: 'cpu' | 'cuda';
  hmmScorer?: Scorer;
}

/** What the parent asks a thread (one request at a time per thread). */
export type ThreadRequest =
  | { kind: 'align'; samples: Float32Array; sampleRate: number; text: string; language: string; options?: AlignOptions }
  | { kind: 'close' };
export type ThreadReply = { ok: true; words: AlignedWord[] } | { ok: false; error: WireError };
export interface ThreadData {
  name: string;
  options: ThreadAlignerOptions;
}

const BOOTSTRAP = new URL('./aligner-thread-bootstrap.mjs', import.meta.url);

/** The error again on this side, as the class the callers tell apart (a segment's fallback needs SpeechInputError). */
function rebuild(e: WireError): Error {
  if (e.code === 'SPEECH_INPUT') return new SpeechInputError(e.message);
  if (e.code === 'MISSING_MODEL') return new MissingModelError(e.message);
  return fromWire(e);
}

interface Thread {
  worker: Worker;
  /** Settles the request in flight (a thread runs one at a time). */
  settle: ((r: ThreadReply | Error) => void) | null;
}

function ask(t: Thread, req: ThreadRequest): Promise<ThreadReply> {
  return new Promise((resolve, reject) => {
    t.settle = (r) => {
      t.settle = null;
      if (r instanceof Error) reject(r);
      else resolve(r);
    };
    // the samples are copied, not transferred: the caller may still hold them
    t.worker.ref();
    t.worker.postMessage(req);
  });
}

export function createThreadedAligner(name: string, options: ThreadAlignerOptions, threads: number): Aligner & { close(): Promise<void> } {
  const idle: Thread[] = [];
  const all: Thread[] = [];
  const waiting: ((t: Thread) => void)[] = [];
  let closed = false;

  function start(): Thread {
    const data: ThreadData = { name, options: { modelsDir: options.modelsDir, device: options.device, hmmScorer: options.hmmScorer } };
    const worker = new Worker(BOOTSTRAP, { workerData: data });
    const t: Thread = { worker, settle: null };
    worker.on('message', (r: ThreadReply) => t.settle?.(r));
    worker.on('error', (e) => t.settle?.(e));
    worker.on('exit', (code) => {
      t.settle?.(new Error(`the ${name} aligner thread exited (code ${code})`));
      const i = all.indexOf(t);
      if (i >= 0) all.splice(i, 1);
      const j = idle.indexOf(t);
      if (j >= 0) idle.splice(j, 1);
    });
    all.push(t);
    return t;
  }

  async function acquire(): Promise<Thread> {
    const t = idle.pop();
    if (t) return t;
    if (all.length < threads) return start();
    return new Promise((resolve) => waiting.push(resolve));
  }

  function release(t: Thread) {
    if (!all.includes(t)) return;
    const next = waiting.shift();
    if (next) return next(t);
    // an idle thread does not keep the process alive
    t.worker.unref();
    idle.push(t);
  }

  return {
    name,
    concurrency: threads,
    skips: (language) => alignerSkips(name, language),
    async align(samples: Float32Array, sampleRate: number, text: string, language: string, options?: AlignOptions): Promise<AlignedWord[]> {
      if (closed) throw new Error(`the ${name} aligner is closed`);
      const t = await acquire();
      try {
        const r = await ask(t, { kind: 'align', samples, sampleRate, text, language, options });
        if (!r.ok) throw rebuild(r.error);
        return r.words;
      } finally {
        release(t);
      }
    },
    async close() {
      closed = true;
      await Promise.all(
        all.map(async (t) => {
          // let its aligner end its helper processes, then end the thread
          if (!t.settle) await ask(t, { kind: 'close' }).catch(() => undefined);
          await t.worker.terminate();
        }),
      );
      all.length = 0;
      idle.length = 0;
    },
  };
}
