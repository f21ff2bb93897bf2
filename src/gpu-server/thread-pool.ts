// The piscina pool of worker threads that runs every model call, and the translation of
// worker results back into typed values and errors (by their catalogue code).
import { Piscina } from 'piscina';
// The onnxruntime addon cannot register again once every thread that loaded it has exited
// ("Module did not self-register"), which happens when a pool is closed and a new one
// started in the same process. Holding it in the main thread keeps it loaded.
import 'onnxruntime-node';
import { fromWire, LecternError } from '../core/errors.ts';
import type { SynthesisRequest } from '../speech/types.ts';
import type { BackendInfo, BackendSpec, Task, TaskResult, TaskStats, WorkerData } from './tasks.ts';

export interface PoolOptions extends WorkerData {
  workers: number;
  /** Tasks allowed to wait for a worker before new ones are refused (back-pressure). */
  maxQueue: number;
}

export class PoolOverloadedError extends LecternError {
  constructor() {
    super('OVERLOADED', 'the inference server is overloaded; retry shortly');
  }
}

/** How long close() waits for running tasks before terminating their threads. */
const CLOSE_WAIT_MS = 5000;

type Ok<K extends TaskResult['kind']> = Extract<TaskResult, { kind: K }>;

export class SpeechPool {
  readonly piscina: Piscina;
  readonly size: number;
  private readonly maxQueue: number;
  /** Called with the stats of every finished task (metrics, /health). */
  onStats: (s: TaskStats, queueWaitMs: number) => void = () => {};

  constructor(opts: PoolOptions) {
    const data: WorkerData = { device: opts.device, modelsDir: opts.modelsDir, computeType: opts.computeType, intraOpThreads: opts.intraOpThreads, sessionBatch: opts.sessionBatch };
    this.size = opts.workers;
    this.maxQueue = opts.maxQueue;
    this.piscina = new Piscina({
      filename: new URL('./pool-thread-bootstrap.cjs', import.meta.url).href,
      minThreads: opts.workers,
      maxThreads: opts.workers,
      idleTimeout: 2 ** 31 - 1, // engines live in the workers: never retire one
      concurrentTasksPerWorker: 1,
      workerData: data,
    });
  }

  get queueSize(): number {
    return this.piscina.queueSize;
  }

  get utilization(): number {
    return this.piscina.utilization;
  }

  private async exec<K extends TaskResult['kind']>(task: Task, kind: K, transfer?: ArrayBuffer[]): Promise<Ok<K>> {
    if (task.kind !== 'load' && this.piscina.queueSize >= this.maxQueue) throw new PoolOverloadedError();
    const t0 = performance.now();
    const r = (await this.piscina.run(task, transfer ? { transferList: transfer } : undefined)) as TaskResult;
    const total = performance.now() - t0;
    if (r.kind === 'error') throw fromWire(r.error);
    if (r.kind !== kind) throw new Error(`worker answered ${r.kind} to a ${kind} task`);
    // Time not spent loading or inside the engine was spent waiting for a worker (or encoding).
    this.onStats(r.stats, Math.max(0, total - r.stats.modelMs - r.stats.loadMs));
    return r as Ok<K>;
  }

  /** Loads the backend in every worker (one load task per worker); returns what it reports. */
  async loadEverywhere(backend: BackendSpec, timeoutMs = 10_000): Promise<BackendInfo> {
    const counter = new SharedArrayBuffer(4);
    const results = await Promise.all(
      Array.from({ length: this.size }, () =>
        this.exec({ kind: 'load', backend, barrier: { counter, parties: this.size, timeoutMs } }, 'load'),
      ),
    );
    return results[0]!.info;
  }

  synthesize(backend: BackendSpec, batch: SynthesisRequest[]) {
    return this.exec({ kind: 'synthesize', backend, batch }, 'synthesize');
  }

  align(aligner: string, audio: Float32Array, sampleRate: number, text: string, language: string) {
    return this.exec({ kind: 'align', aligner, audio, sampleRate, text, language }, 'align', [audio.buffer as ArrayBuffer]);
  }

  transcribe(transcriber: string, audio: Float32Array, sampleRate: number, language: string) {
    return this.exec({ kind: 'transcribe', transcriber, audio, sampleRate, language }, 'transcribe', [audio.buffer as ArrayBuffer]);
  }

  /**
   * Refuses queued tasks and lets the running ones end before the threads go (at most
   * CLOSE_WAIT_MS): a thread terminated inside a native call (an onnxruntime session still
   * being created or run) can abort the whole process when that call returns to an
   * environment that is gone.
   */
  async close(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.piscina.close({ force: true }), new Promise((resolve) => (timer = setTimeout(resolve, CLOSE_WAIT_MS)))]);
    clearTimeout(timer);
    await this.piscina.destroy();
  }
}
