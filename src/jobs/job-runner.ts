// The worker side of a job: take a task from the queue, run its pipeline, record the end.
// The same code runs in `serve` (embedded) and in any number of `lectern worker` processes.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { INTERNAL } from '../core/caller.ts';
import { oneLine } from '../core/errors.ts';
import type { Logger } from '../log.ts';
import { loadPipeline } from '../pipelines/catalogue.ts';
import { withRequestId } from '../request-context.ts';
import { fillOptions } from '../pipelines/options.ts';
import type { JobResult } from '../pipelines/result.ts';
import { JobCancelled, type PipelineContext, type PipelineInput, type RecordingFile } from '../pipelines/types.ts';
import { createAligner, defaultAlignerThreads, type ClosableAligner } from '../speech/align/aligners.ts';
import type { GpuClient } from '../gpu-client/index.ts';
import { createPresenterGenerator, type LipsyncSettings, type PresenterHandle } from '../pipelines/presenter.ts';
import { createLocalSpeech, type Speech } from '../speech/local.ts';
import { createRemoteSpeech } from '../speech/remote.ts';
import { jobPrefix, type Storage } from '../storage.ts';
import { runEpubExport } from './epub-export.ts';
import { cancelKey } from './job-service.ts';
import { JobScratch } from './job-scratch.ts';
import type { JobConfig, JobRecord, Progress, Stores, TaskContext } from './types.ts';
import { cloneReference, localVoiceResolver, speechForVoice } from '../voices/resolve.ts';

/** At most one progress write to the store per this many ms (events go out every time). */
const PROGRESS_WRITE_MS = 500;

/** What a worker runs with (the service config's fields of these names). */
export interface WorkerSettings {
  workerConcurrency: number;
  modelsDir: string;
  tts: { backend: string; voice: string | null; aligner: string };
  lipsync: LipsyncSettings;
}

export interface WorkerOptions {
  config: WorkerSettings;
  /**
   * The process's GPU client when LECTERN_GPU_SERVER_URL is set: speech and lip-sync clips go
   * to its servers (the process closes it, after the worker). null: local engines.
   */
  gpu: GpuClient | null;
  stores: Stores;
  storage: Storage;
  log: Logger;
  /** Overrides the speech services (by default: remote through `gpu`, else the local backend). */
  speech?: () => Promise<Speech>;
}

export interface RunningWorker {
  close(): Promise<void>;
}

export async function startWorker(opts: WorkerOptions): Promise<RunningWorker> {
  const { config, stores, log } = opts;
  let speech: Promise<Speech> | null = null;
  const getSpeech = () => {
    speech ??= (opts.speech ?? (() => defaultSpeech(config, opts.gpu)))();
    speech.catch(() => (speech = null)); // let a later job retry a failed start
    return speech;
  };
  await stores.queue.consume(
    (jobId, task) => (task.kind === 'export-epub' ? runEpubExport(jobId, task, opts) : runJob(jobId, task, opts, getSpeech)),
    config.workerConcurrency,
  );
  log.info({ concurrency: config.workerConcurrency, mode: stores.mode }, 'worker consuming');
  return {
    async close() {
      await stores.queue.close();
      if (speech) await (await speech.catch(() => null))?.close();
    },
  };
}

/**
 * The GPU servers when the process has a GPU client (a server that is down fails the job
 * with its name, never a silent local fallback); otherwise the configured local backend.
 */
async function defaultSpeech(config: WorkerSettings, gpu: GpuClient | null): Promise<Speech> {
  if (gpu) return createRemoteSpeech(gpu);
  return createLocalSpeech(config.tts.backend, { modelsDir: config.modelsDir, device: 'cpu', voice: config.tts.voice, aligner: config.tts.aligner, resolveVoice: localVoiceResolver(config.modelsDir) });
}

export async function runJob(jobId: string, task: TaskContext, opts: WorkerOptions, getSpeech: () => Promise<Speech>): Promise<void> {
  const existing = await opts.stores.jobs.getJob(jobId, INTERNAL);
  // The id of the API request that created the job: on every log line of this run and on every GPU server call it makes.
  const requestId = existing?.config_json.request_id ?? null;
  const log = opts.log.child({ job_id: jobId, task_id: task.taskId, attempt: task.attempt, ...(requestId ? { request_id: requestId } : {}) });
  return withRequestId(requestId, () => runJobWith(existing, jobId, task, opts, getSpeech, log));
}

async function runJobWith(existing: JobRecord | null, jobId: string, task: TaskContext, opts: WorkerOptions, getSpeech: () => Promise<Speech>, log: Logger): Promise<void> {
  const { stores, storage } = opts;
  if (!existing) return log.info('job no longer exists; nothing to do');
  if (existing.status !== 'pending' && existing.status !== 'running') return log.info({ status: existing.status }, 'job already finished');

  const job = await stores.jobs.transition(jobId, ['pending', 'running'], {
    status: 'running',
    started_at: existing.started_at ?? new Date().toISOString(),
    attempts: existing.attempts + 1,
    error: null,
  });
  if (!job) return;
  if (existing.status === 'running') log.warn('resuming a job whose previous worker stopped');
  await stores.events.publish(jobId, { type: 'status', status: 'running' });

  let scratch: JobScratch | null = null;
  try {
    scratch = await JobScratch.create(storage, jobId, 'job');
    const config = job.config_json;
    const upload = await stores.jobs.getUpload(config.uploaded_file_id, INTERNAL);
    if (!upload) throw new Error('the job\'s document upload is missing');
    const ctx = pipelineContext(job, task, opts, scratch.outDir, await getSpeech(), log);
    // A bundled clone voice is its clip and exact transcript; any other id → the engine and voice that narrate it.
    const clone = config.ref_audio_file_id ? null : await cloneReference(ctx.input.voiceId);
    if (clone) ctx.input.voiceId = null;
    else ({ speech: ctx.speech, voiceId: ctx.input.voiceId } = await speechForVoice(ctx.speech, ctx.input.voiceId, ctx.input.language));
    ctx.input.document.path = await scratch.input(upload.path, 'document upload');
    ctx.input.referenceAudio = clone ? await bundledReference(clone.clipPath, clone.refText) : await referenceAudio(job, opts, scratch, ctx.speech, log);
    if (config.audio_file_ids?.length) ctx.input.recording = await recordingFiles(config.audio_file_ids, opts, scratch);
    if (config.ref_video_file_id) {
      const ref = await stores.jobs.getUpload(config.ref_video_file_id, INTERNAL);
      if (!ref) throw new Error('the job\'s reference video upload is missing');
      ctx.input.referenceVideo = await scratch.input(ref.path, 'reference video upload');
    }
    // Made on first use (only the lip-sync pipeline asks) and closed with the job.
    let presenter: Promise<PresenterHandle> | null = null;
    ctx.presenter = () => (presenter ??= createPresenterGenerator({ gpu: opts.gpu, modelsDir: opts.config.modelsDir, lipsync: opts.config.lipsync }, log));
    let aligner: Promise<ClosableAligner> | null = null;
    ctx.aligner = () => (aligner ??= createAligner('auto', { modelsDir: opts.config.modelsDir, device: 'cpu', threads: defaultAlignerThreads() }));
    const pipeline = await loadPipeline(job.pipeline_type, ctx.input.options.format);
    const result = await pipeline.run(ctx).finally(async () => {
      if (presenter) await (await presenter.catch(() => null))?.close();
      if (aligner) await (await aligner.catch(() => null))?.close();
    });
    // `completed` only once every output is in the store: a worker that dies before leaves the job to be run again.
    ctx.progress('store', 0, 1);
    await scratch.storeOutputs(result.files);
    await scratch.remove(); // before the job ends: nothing of it is left on this worker once it is completed
    await ctx.flushProgress();
    const { status: outcome, ...fields } = result;
    const stopped = outcome === 'stopped';
    await stores.jobs.mergeConfig(jobId, { result: fields, ...pageCounts(fields) });
    const status = stopped ? 'stopped' : 'completed';
    const done = await stores.jobs.transition(jobId, ['running'], {
      status,
      progress: { phase: stopped ? 'stopped' : 'done', current: 1, total: 1 },
      finished_at: new Date().toISOString(),
    });
    if (!done) {
      await removeIfDeleted(jobId, opts);
      return;
    }
    await stores.events.publish(jobId, { type: 'status', status });
    log.info({ output: result.output, duration: result.duration_seconds }, `job ${status}`);
  } catch (err) {
    if (task.signal.aborted) {
      log.info('worker shutting down; the job goes back to the queue');
      throw err;
    }
    if (await removeIfDeleted(jobId, opts)) return;
    const error = err instanceof JobCancelled ? (err.outcome ?? 'stopped before any output was made') : oneLine(err);
    const failed = await stores.jobs.transition(jobId, ['running'], { status: 'failed', error, finished_at: new Date().toISOString() });
    if (failed) await stores.events.publish(jobId, { type: 'status', status: 'failed', error });
    log.warn({ err: error }, 'job failed');
  } finally {
    await scratch?.remove();
  }
}

/** A lip-sync job's `pages_done`/`pages_total` go to the top of config_json too (spec §A: a stopped job reports them there). */
function pageCounts(result: JobResult): Pick<JobConfig, 'pages_done' | 'pages_total'> {
  const out: Pick<JobConfig, 'pages_done' | 'pages_total'> = {};
  if (result.pages_done !== undefined) out.pages_done = result.pages_done;
  if (result.pages_total !== undefined) out.pages_total = result.pages_total;
  return out;
}

type RunnerContext = PipelineContext & {
  /** Drops a throttled progress write and waits for the one in flight, before a terminal transition. */
  flushProgress(): Promise<void>;
};

function pipelineContext(job: JobRecord, task: TaskContext, opts: WorkerOptions, outputDir: string, speech: Speech, log: Logger): RunnerContext {
  const { stores, storage } = opts;
  const c = job.config_json;
  let lastWrite = 0;
  let pending: Progress | null = null;
  let timer: NodeJS.Timeout | null = null;
  let inFlight: Promise<unknown> = Promise.resolve();
  const write = () => {
    timer = null;
    lastWrite = Date.now();
    const p = pending;
    pending = null;
    // Only while running: a late write must never overwrite the final 'done' progress.
    if (p) {
      inFlight = stores.jobs
        .transition(job.id, ['running'], { progress: p, status: 'running' })
        .catch((e) => log.warn({ err: oneLine(e) }, 'progress write failed'));
    }
  };
  return {
    input: {
      jobId: job.id,
      document: { path: '', originalName: c.document.original_name, contentType: c.document.content_type },
      language: c.language,
      voiceId: c.voice_id,
      options: fillOptions(c.options),
      title: c.title,
    },
    outputDir,
    cacheDir: storage.cacheDir,
    speech,
    log,
    progress(phase, current, total) {
      const p = { phase, current, total };
      void stores.events.publish(job.id, { type: 'progress', progress: p }).catch(() => undefined);
      pending = p;
      // Stage boundaries are written at once; in-stage updates at most every PROGRESS_WRITE_MS.
      if (current === 0 || current === total || Date.now() - lastWrite >= PROGRESS_WRITE_MS) {
        if (timer) clearTimeout(timer);
        write();
      } else timer ??= setTimeout(write, PROGRESS_WRITE_MS);
    },
    async cancelled() {
      if ((await stores.kv.get(cancelKey(job.id))) !== null) return true;
      return (await stores.jobs.getJob(job.id, INTERNAL)) === null;
    },
    signal: task.signal,
    async flushProgress() {
      if (timer) clearTimeout(timer);
      timer = null;
      pending = null;
      await inFlight;
    },
  };
}

/**
 * The job's voice reference clip, when it has one. A missing ref_text is transcribed here,
 * by the worker that is about to clone with it (never at upload), and kept in config_json
 * so a resumed job does not transcribe again.
 */
async function referenceAudio(job: JobRecord, opts: WorkerOptions, scratch: JobScratch, speech: Speech, log: Logger): Promise<PipelineInput['referenceAudio']> {
  const id = job.config_json.ref_audio_file_id;
  if (!id) return null;
  const upload = await opts.stores.jobs.getUpload(id, INTERNAL);
  if (!upload) throw new Error("the job's reference audio upload is missing");
  const bytes = await fs.promises.readFile(await scratch.input(upload.path, 'reference audio upload'));
  let text = job.config_json.ref_text?.trim() ?? '';
  if (!text) {
    if (!speech.transcribe) throw new Error(`cloning a voice needs the reference clip's transcript (ref_text), and ${speech.engine} cannot transcribe; give ref_text`);
    text = (await speech.transcribe(bytes, job.config_json.language)).trim();
    if (!text) throw new Error('the reference clip was transcribed to no words; give ref_text');
    await opts.stores.jobs.mergeConfig(job.id, { ref_text: text, ref_text_source: 'transcribed' });
    log.info({ words: text.split(/\s+/).length }, 'reference clip transcribed for cloning');
  }
  return { bytes, sha256: upload.sha256 || createHash('sha256').update(bytes).digest('hex'), text };
}

/** A read-along job's recording: its audio uploads, fetched into the job's scratch folder, in upload order. */
async function recordingFiles(ids: string[], opts: WorkerOptions, scratch: JobScratch): Promise<RecordingFile[]> {
  const out: RecordingFile[] = [];
  for (const [k, id] of ids.entries()) {
    const upload = await opts.stores.jobs.getUpload(id, INTERNAL);
    if (!upload) throw new Error(`the job's audio file ${k + 1} (upload ${id}) is missing`);
    out.push({ path: await scratch.input(upload.path, `audio file ${k + 1} (${upload.original_name})`), name: upload.original_name, sha256: upload.sha256 });
  }
  return out;
}

async function bundledReference(clipPath: string, text: string): Promise<PipelineInput['referenceAudio']> {
  const bytes = await fs.promises.readFile(clipPath);
  return { bytes, sha256: createHash('sha256').update(bytes).digest('hex'), text };
}

/** A job deleted while it ran: outputs it stored after the DELETE are removed here. */
async function removeIfDeleted(jobId: string, opts: WorkerOptions): Promise<boolean> {
  if (await opts.stores.jobs.getJob(jobId, INTERNAL)) return false;
  await opts.storage.deletePrefix(jobPrefix(jobId));
  opts.log.info({ job_id: jobId }, 'job was deleted while running; output removed');
  return true;
}
