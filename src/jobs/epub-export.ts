// The on-demand EPUB export of a finished lip-sync reader job: its own small state machine
// in config_json (epub_export_status: running → done | failed), run as a queue task of kind
// `export-epub` so it survives restarts and runs on any worker. It reuses the job's
// narration.mp3 + timeline.json and its document upload (fetched from the store into a
// scratch folder): nothing is synthesized or aligned.
import fs from 'node:fs';
import path from 'node:path';
import { OUTPUT_FILES } from '../core/output-files.ts';
import { readDocument } from '../documents/model.ts';
import { buildEpub } from '../epub/build.ts';
import { INTERNAL } from '../core/caller.ts';
import { oneLine } from '../core/errors.ts';
import type { Logger } from '../log.ts';
import type { TimelineEntry } from '../pipelines/narrate-document.ts';
import { jobPrefix, outputKey, type Storage } from '../storage.ts';
import { JobScratch, MissingInput } from './job-scratch.ts';
import type { ExportState, JobConfigPatch, JobRecord, JobStatus, Stores, TaskContext } from './types.ts';

/** The file the export adds to the job's files in the store. */
export const EXPORT_FILE = OUTPUT_FILES.epub;
/** Job statuses an export may start from (a stopped job also needs pages done). */
export const EXPORTABLE_STATUSES: readonly JobStatus[] = ['completed', 'stopped'];

export function exportState(job: JobRecord): ExportState {
  const c = job.config_json;
  const status = c.epub_export_status ?? null;
  return {
    export_status: status,
    export_output: status === 'done' ? (c.epub_export_output ?? null) : null,
    export_error: status === 'failed' ? (c.epub_export_error ?? null) : null,
  };
}

/** pages_done of a (stopped) lip-sync job, wherever the runner put it: config_json or its result. */
export function pagesDone(job: JobRecord): number | null {
  const c = job.config_json;
  return c.pages_done ?? c.result?.pages_done ?? null;
}

/** Why this job cannot be exported, or null when it can. */
export function exportRefusal(job: JobRecord): string | null {
  const { format } = job.config_json.options;
  if (job.pipeline_type !== 'lipsync' || format !== 'reader') {
    return `job ${job.id} is a ${job.pipeline_type} ${format} job; only lip-sync reader jobs are exported as EPUB`;
  }
  if (job.status === 'stopped') {
    if (!pagesDone(job)) return `job ${job.id} was stopped before any page was done; there is nothing to export`;
    return null;
  }
  if (job.status !== 'completed') return `job ${job.id} is ${job.status}; only a completed (or stopped, with pages done) job can be exported`;
  return null;
}

export interface ExportDeps {
  stores: Stores;
  storage: Storage;
  log: Logger;
}

/** The worker side: builds the EPUB for a job whose export is `running`; records done or failed. */
export async function runEpubExport(jobId: string, task: TaskContext, deps: ExportDeps): Promise<void> {
  const { stores, storage } = deps;
  const log = deps.log.child({ job_id: jobId, task_id: task.taskId, task: 'export-epub' });
  const job = await stores.jobs.getJob(jobId, INTERNAL);
  if (!job) return log.info('job no longer exists; nothing to export');
  if (job.config_json.epub_export_status !== 'running') return log.info({ state: job.config_json.epub_export_status }, 'export not running; nothing to do');
  const finish = (status: 'done' | 'failed', extra: JobConfigPatch) =>
    stores.jobs.mergeConfigIf(jobId, { statuses: EXPORTABLE_STATUSES, key: 'epub_export_status', values: ['running'] }, {
      epub_export_status: status,
      epub_export_finished_at: new Date().toISOString(),
      ...extra,
    });
  let scratch: JobScratch | null = null;
  try {
    scratch = await JobScratch.create(storage, jobId, 'export');
    const c = job.config_json;
    const upload = await stores.jobs.getUpload(c.uploaded_file_id, INTERNAL);
    if (!upload) throw new Error("the job's document upload is missing");
    const reuse = async (name: string) => {
      try {
        return await scratch!.input(outputKey(jobId, name), name);
      } catch (e) {
        if (e instanceof MissingInput) throw new Error(`the job's ${name} is missing; the export reuses the job's narration and cannot make one`);
        throw e;
      }
    };
    const timelineFile = await reuse(OUTPUT_FILES.timeline);
    const audioFile = await reuse(OUTPUT_FILES.narration);
    const timeline = JSON.parse(await fs.promises.readFile(timelineFile, 'utf8')) as { words?: TimelineEntry[]; title?: string | null; author?: string | null };
    if (!Array.isArray(timeline.words)) throw new Error("the job's timeline.json has no words");
    const doc = await readDocument(await scratch.input(upload.path, 'document upload'), upload.content_type);
    const book = await buildEpub({
      outPath: path.join(scratch.outDir, EXPORT_FILE),
      doc,
      words: timeline.words,
      audioFile,
      language: c.language,
      title: c.title ?? timeline.title ?? path.parse(upload.original_name).name,
      author: timeline.author ?? null,
      workDir: path.join(scratch.dir, 'epub-parts'),
      signal: task.signal,
    });
    // `done` only once the book is in the store.
    await scratch.storeOutputs([EXPORT_FILE]);
    await scratch.remove();
    if (!(await finish('done', { epub_export_output: EXPORT_FILE, epub_export_error: null }))) {
      if (!(await stores.jobs.getJob(jobId, INTERNAL))) await storage.deletePrefix(jobPrefix(jobId));
      return;
    }
    log.info({ pages: book.pages.length, duration: book.duration }, 'EPUB export done');
  } catch (err) {
    if (task.signal.aborted) {
      log.info('worker shutting down; the export goes back to the queue');
      throw err;
    }
    if (!(await stores.jobs.getJob(jobId, INTERNAL))) {
      await storage.deletePrefix(jobPrefix(jobId));
      return;
    }
    const error = oneLine(err);
    await finish('failed', { epub_export_error: error, epub_export_output: null });
    log.warn({ err: error }, 'EPUB export failed');
  } finally {
    await scratch?.remove();
  }
}
