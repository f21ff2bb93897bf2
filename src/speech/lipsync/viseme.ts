// The `viseme` lip-sync provider: a CPU generator that needs no download beyond the face
// models in models/face. Mouth shapes come from the narration audio itself (loudness →
// jaw/lip opening, spectral balance → lip spread or rounding), because the GPU server's
// /lipsync receives audio and video only; a local caller that synthesized the narration
// may pass its phoneme timings (VisemeRequest.phonemes) instead. See viseme/generate.ts.
// Each generation runs in its own worker thread; cancelling sets a shared flag the
// generator checks between frame batches, and the worker is terminated if it does not
// stop within a grace period.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { Worker } from 'node:worker_threads';
import { loadToolPaths } from '../../config.ts';
import { nativeAvailable } from '../../native/index.ts';
import type { PhonemeTiming } from '../types.ts';
import { LipsyncAbortedError, type LipsyncProvider, type LipsyncRequest } from './types.ts';
import { checkFaceModels } from './viseme/face.ts';
import { VISEME_PRESETS, type VisemeStats } from './viseme/generate.ts';
import type { VisemeWorkerData, VisemeWorkerResult } from './viseme/worker.ts';

export { VISEME_PRESETS } from './viseme/generate.ts';

/** A request may carry the narration's phoneme timings (local callers that synthesized it); the GPU server's /lipsync has audio only. */
export interface VisemeRequest extends LipsyncRequest {
  phonemes?: PhonemeTiming[];
}

export interface VisemeProviderOptions {
  modelsDir: string;
  /** How long a cancelled worker gets to stop on its own before it is terminated. */
  cancelGraceMs?: number;
  /** Called with the timings of each finished generation (bench, logs). */
  onStats?: (s: VisemeStats) => void;
}

/** Why the viseme provider cannot run here (face models, ffmpeg, native addon), or null when it can. */
export function visemeUnavailableReason(modelsDir: string): string | null {
  try {
    checkFaceModels(modelsDir);
  } catch (e) {
    return (e as Error).message;
  }
  const ffmpeg = loadToolPaths().ffmpeg;
  const r = spawnSync(ffmpeg, ['-version'], { stdio: 'ignore' });
  if (r.error || r.status !== 0) return `the viseme lip-sync provider needs ffmpeg (looked for "${ffmpeg}")`;
  if (!nativeAvailable()) return 'the viseme lip-sync provider needs the native addon; build it with `npm run build:native`';
  return null;
}

const WORKER_URL = new URL('./viseme/worker-bootstrap.mjs', import.meta.url);

export function createVisemeProvider(opts: VisemeProviderOptions): LipsyncProvider {
  const why = visemeUnavailableReason(opts.modelsDir);
  if (why) throw new Error(why);
  const grace = opts.cancelGraceMs ?? 5000;
  return {
    name: 'viseme',
    presets: () => Object.keys(VISEME_PRESETS),
    generate(req, signal) {
      const settings = VISEME_PRESETS[req.preset];
      if (!settings) return Promise.reject(new Error(`unknown viseme preset "${req.preset}" (known: ${Object.keys(VISEME_PRESETS).join(', ')})`));
      if (signal.aborted) return Promise.reject(new LipsyncAbortedError('cancelled before start'));
      const cancel = new SharedArrayBuffer(4);
      const { phonemes } = req as VisemeRequest;
      const data: VisemeWorkerData = {
        audioPath: req.audioPath,
        referenceVideoPath: req.referenceVideoPath,
        outputPath: req.outputPath,
        phonemes: phonemes?.map((p) => ({ phoneme: p.phoneme, start: p.start, end: p.end })),
        settings,
        modelsDir: opts.modelsDir,
        cancel,
      };
      const worker = new Worker(WORKER_URL, { workerData: data });
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
            fs.rmSync(req.outputPath, { force: true }); // the encoder was killed mid-file
            reject(err);
          } else resolve();
        };
        const onAbort = () => {
          Atomics.store(new Int32Array(cancel), 0, 1);
          killTimer = setTimeout(() => settle(new LipsyncAbortedError('lip-sync generation cancelled (worker terminated)')), grace);
          killTimer.unref();
        };
        signal.addEventListener('abort', onAbort, { once: true });
        worker.on('message', (m: VisemeWorkerResult) => {
          if (m.ok) {
            opts.onStats?.(m.stats);
            settle(signal.aborted ? new LipsyncAbortedError('lip-sync generation cancelled') : null);
          } else {
            settle(m.aborted || signal.aborted ? new LipsyncAbortedError(m.message) : new Error(`viseme lip-sync failed: ${m.message}`));
          }
        });
        worker.on('error', (e) => settle(new Error(`viseme lip-sync failed: ${e.message}`)));
        worker.on('exit', (code) => settle(signal.aborted ? new LipsyncAbortedError('lip-sync generation cancelled') : new Error(`the viseme worker exited (code ${code}) without a result`)));
      });
    },
  };
}
