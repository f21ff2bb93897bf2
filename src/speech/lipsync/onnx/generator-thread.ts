// One onnx lip-sync generation in a worker thread (pre/post-processing is per-pixel work that
// must not hold the GPU server's event loop). cancel[0] = 1 stops it at the next frame batch.
import { parentPort, workerData } from 'node:worker_threads';
import { LipsyncAbortedError } from '../types.ts';
import type { GeneratorWorkerResult } from '../run-in-thread.ts';
import { setToolPaths, type ToolPaths } from '../../../media/tools.ts';
import { generateOnnxLipsync, type OnnxLipsyncJob, type OnnxLipsyncStats } from './generate.ts';

/** `tools`: the parent thread's ffmpeg (a worker thread starts with the defaults). */
export type OnnxWorkerData = Omit<OnnxLipsyncJob, 'cancelled'> & { cancel: SharedArrayBuffer; tools: ToolPaths };

const d = workerData as OnnxWorkerData;
const flag = new Int32Array(d.cancel);
setToolPaths(d.tools);
try {
  const stats = await generateOnnxLipsync({ ...d, cancelled: () => Atomics.load(flag, 0) !== 0 });
  parentPort!.postMessage({ ok: true, stats } satisfies GeneratorWorkerResult<OnnxLipsyncStats>);
} catch (e) {
  parentPort!.postMessage({
    ok: false,
    aborted: e instanceof LipsyncAbortedError,
    message: e instanceof Error ? e.message : String(e),
  } satisfies GeneratorWorkerResult<OnnxLipsyncStats>);
}
