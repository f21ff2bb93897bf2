// Runs one generation in a worker thread and settles with its answer. Cancelling (the
// signal) sets a shared flag the generator checks between frame batches; a worker that does
// not stop within the grace period is terminated. Shared by the viseme and onnx providers.
import fs from 'node:fs';
import { Worker } from 'node:worker_threads';
import { LipsyncAbortedError } from './types.ts';

/** What a generator worker posts back once. */
export type GeneratorWorkerResult<S> = { ok: true; stats: S } | { ok: false; aborted: boolean; message: string };

export function runGeneratorWorker<S>(
  url: URL,
  data: Record<string, unknown> & { cancel: SharedArrayBuffer },
  opts: { outputPath: string; signal: AbortSignal; graceMs: number; label: string; onStats?: (s: S) => void },
): Promise<void> {
  const { signal, label } = opts;
  if (signal.aborted) return Promise.reject(new LipsyncAbortedError('cancelled before start'));
  const worker = new Worker(url, { workerData: data });
  return new Promise<void>((resolve, reject) => {
    let settled = false;
    let killTimer: NodeJS.Timeout | undefined;
    const settle = (err: Error | null) => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', onAbort);
      if (killTimer) clearTimeout(killTimer);
      // The answer is in; tearing the thread down (model sessions, loader) needs no waiting.
      void worker.terminate();
      if (err) {
        fs.rmSync(opts.outputPath, { force: true }); // the encoder was killed mid-file
        reject(err);
      } else resolve();
    };
    const onAbort = () => {
      Atomics.store(new Int32Array(data.cancel), 0, 1);
      killTimer = setTimeout(() => settle(new LipsyncAbortedError('lip-sync generation cancelled (worker terminated)')), opts.graceMs);
      killTimer.unref();
    };
    signal.addEventListener('abort', onAbort, { once: true });
    worker.on('message', (m: GeneratorWorkerResult<S>) => {
      if (m.ok) {
        opts.onStats?.(m.stats);
        settle(signal.aborted ? new LipsyncAbortedError('lip-sync generation cancelled') : null);
      } else {
        settle(m.aborted || signal.aborted ? new LipsyncAbortedError(m.message) : new Error(`${label} lip-sync failed: ${m.message}`));
      }
    });
    worker.on('error', (e) => settle(new Error(`${label} lip-sync failed: ${e.message}`)));
    worker.on('exit', (code) => settle(signal.aborted ? new LipsyncAbortedError('lip-sync generation cancelled') : new Error(`the ${label} worker exited (code ${code}) without a result`)));
  });
}
