// One viseme generation in a worker thread, so frame decoding, warping and the face models
// never hold the GPU server's event loop. The parent sets cancel[0] = 1 to stop it; the
// generator sees that at its next frame batch.
import { parentPort, workerData } from 'node:worker_threads';
import type { PhonemeTiming } from '../../types.ts';
import { LipsyncAbortedError } from '../types.ts';
import type { GeneratorWorkerResult } from '../run-in-thread.ts';
import { setToolPaths, type ToolPaths } from '../../../media/tools.ts';
import { generateViseme, type VisemeSettings } from './generate.ts';

export interface VisemeWorkerData {
  audioPath: string;
  referenceVideoPath: string;
  outputPath: string;
  settings: VisemeSettings;
  modelsDir: string;
  /** The parent thread's ffmpeg (a worker thread starts with the defaults). */
  tools: ToolPaths;
  phonemes?: PhonemeTiming[];
  cancel: SharedArrayBuffer;
}

export type VisemeWorkerResult = GeneratorWorkerResult<Awaited<ReturnType<typeof generateViseme>>>;

const d = workerData as VisemeWorkerData;
const flag = new Int32Array(d.cancel);
setToolPaths(d.tools);
try {
  const stats = await generateViseme({ ...d, cancelled: () => Atomics.load(flag, 0) !== 0 });
  parentPort!.postMessage({ ok: true, stats } satisfies VisemeWorkerResult);
} catch (e) {
  parentPort!.postMessage({
    ok: false,
    aborted: e instanceof LipsyncAbortedError,
    message: e instanceof Error ? e.message : String(e),
  } satisfies VisemeWorkerResult);
}
