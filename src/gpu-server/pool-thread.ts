// One thread of the GPU server's piscina pool: holds this thread's engines in an engine cache and runs one task at a time,
// so every model call happens off the server's event loop.
import { threadId, workerData } from 'node:worker_threads';
import { toWire } from '../core/errors.ts';
import { SpeechInputError, type Aligner, type Transcriber, type TtsBackend } from '../speech/types.ts';
import type { TtsBackendOptions } from '../speech/tts/backends.ts';
import { contentTypeFor, encodeAudio } from './audio-format.ts';
import { EngineCache } from './engine-cache.ts';
import type { BackendSpec, Task, TaskResult, TaskStats, WorkerData } from './tasks.ts';

const data = workerData as WorkerData;
const cache = new EngineCache();

async function loadBackend(spec: BackendSpec): Promise<TtsBackend> {
  // intraOpThreads and maxBatch (sentences per session run) are read by onnxruntime backends (piper) and ignored by the rest.
  const opts: TtsBackendOptions & { intraOpThreads?: number; maxBatch?: number } = {
    modelsDir: data.modelsDir,
    device: data.device,
    voice: spec.voice ?? null,
    intraOpThreads: data.intraOpThreads,
    maxBatch: data.sessionBatch,
  };
  if (spec.module) {
    const mod = (await import(spec.module)) as { createBackend(o: TtsBackendOptions): Promise<TtsBackend> };
    return mod.createBackend(opts);
  }
  const { createTtsBackend } = await import('../speech/tts/backends.ts');
  return createTtsBackend(spec.name, opts);
}

async function backend(spec: BackendSpec) {
  const t0 = performance.now();
  const r = await cache.get({ model: `tts:${spec.name}${spec.voice ? `#${spec.voice}` : ''}`, device: data.device, computeType: data.computeType }, () =>
    loadBackend(spec),
  );
  return { ...r, loadMs: r.hit ? 0 : performance.now() - t0, model: `tts:${spec.name}` };
}

function stats(model: string, hit: boolean, loadMs: number, modelMs: number): TaskStats {
  return { model, cacheHit: hit, loadMs, modelMs, workerId: threadId, loaded: cache.keys() };
}

function waitBarrier(b: { counter: SharedArrayBuffer; parties: number; timeoutMs: number }): void {
  const arr = new Int32Array(b.counter);
  Atomics.add(arr, 0, 1);
  Atomics.notify(arr, 0);
  const deadline = Date.now() + b.timeoutMs;
  for (let v = Atomics.load(arr, 0); v < b.parties; v = Atomics.load(arr, 0)) {
    const left = deadline - Date.now();
    if (left <= 0) break; // a slow-starting pool only costs a later lazy load
    Atomics.wait(arr, 0, v, left);
  }
}

async function run(task: Task): Promise<TaskResult> {
  switch (task.kind) {
    case 'load': {
      waitBarrier(task.barrier);
      const b = await backend(task.backend);
      const be = b.value;
      return {
        kind: 'load',
        info: {
          name: be.name,
          outputFormat: be.outputFormat,
          maxChunkBytes: be.maxChunkBytes,
          canClone: be.canClone,
          batched: be.batched,
          languages: await be.languages(),
          voices: await be.voices?.(),
        },
        stats: stats(b.model, b.hit, b.loadMs, 0),
      };
    }
    case 'synthesize': {
      const b = await backend(task.backend);
      const t0 = performance.now();
      const outs = await b.value.synthesize(task.batch);
      const modelMs = performance.now() - t0;
      if (outs.length !== task.batch.length) throw new Error(`backend ${b.value.name} returned ${outs.length} outputs for ${task.batch.length} requests`);
      const type = contentTypeFor(b.value.outputFormat);
      const outputs = await Promise.all(
        outs.map(async (o) => ({
          audio: await encodeAudio(o.samples, o.sampleRate, b.value.outputFormat),
          contentType: type,
          durationSeconds: o.samples.length / o.sampleRate,
          words: o.words,
        })),
      );
      return { kind: 'synthesize', outputs, stats: stats(b.model, b.hit, b.loadMs, modelMs) };
    }
    case 'align': {
      const model = `align:${task.aligner}`;
      const t0 = performance.now();
      const r = await cache.get({ model, device: data.device, computeType: data.computeType }, async () => {
        const { createAligner } = await import('../speech/align/aligners.ts');
        return createAligner(task.aligner, { modelsDir: data.modelsDir, device: data.device });
      });
      const loadMs = r.hit ? 0 : performance.now() - t0;
      const t1 = performance.now();
      const words = await r.value.align(task.audio, task.sampleRate, task.text, task.language);
      return { kind: 'align', words, stats: stats(model, r.hit, loadMs, performance.now() - t1) };
    }
    case 'transcribe': {
      const model = `asr:${task.transcriber}`;
      const t0 = performance.now();
      const r = await cache.get({ model, device: data.device, computeType: data.computeType }, async () => {
        const { createTranscriber } = await import('../speech/asr/transcribers.ts');
        return createTranscriber(task.transcriber, { modelsDir: data.modelsDir, device: data.device });
      });
      const loadMs = r.hit ? 0 : performance.now() - t0;
      if (!r.value.supports(task.language)) throw new SpeechInputError(`transcriber ${r.value.name} does not support language "${task.language}"`);
      const t1 = performance.now();
      const text = await r.value.transcribe(task.audio, task.sampleRate, task.language);
      return { kind: 'transcribe', text, stats: stats(model, r.hit, loadMs, performance.now() - t1) };
    }
  }
}

export default async function handle(task: Task): Promise<TaskResult> {
  try {
    return await run(task);
  } catch (e) {
    // An engine module that is not there is a model not installed.
    if ((e as { code?: string })?.code === 'ERR_MODULE_NOT_FOUND') return { kind: 'error', error: { code: 'MISSING_MODEL', message: (e as Error).message } };
    return { kind: 'error', error: toWire(e) };
  }
}
