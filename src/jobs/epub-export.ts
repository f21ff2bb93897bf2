// The on-demand EPUB export of a finished lip-sync reader job: its own small state machine
// in config_json (epub_export_status: running → done | failed), run as a queue task of kind
// `export-epub` so it survives restarts and runs on any worker. It reuses the job's
// narration.mp3 + timeline.json and its document upload: nothing is synthesized or aligned.
import fs from 'node:fs';
import path from 'node:path';
import { readDocument } from '../documents/model.ts';
import { buildEpub } from '../epub/build.ts';
import { oneLine } from '../errors.ts';
import type { Logger } from '../log.ts';
import type { TimelineWord } from '../pipelines/narrate-document.ts';
import type { Storage } from '../storage.ts';
import type { JobRecord, JobStatus, Stores, TaskContext } from './types.ts';

export const EXPORT_STATUSES = ['running', 'done', 'failed'] as const;
export type ExportStatus = (typeof EXPORT_STATUSES)[number];
/** The file the export writes in the job's output dir. */
export const EXPORT_FILE = 'book.epub';
/** Job statuses an export may start from (a stopped job also needs pages done). */
export const EXPORTABLE_STATUSES: readonly JobStatus[] = ['completed', 'stopped'];

export interface ExportState {
  export_status: ExportStatus | null;
  export_output: string | null;
  export_error: string | null;
}

export function exportState(job: JobRecord): ExportState {
  const c = job.config_json;
  const status = (EXPORT_STATUSES as readonly unknown[]).includes(c.epub_export_status) ? (c.epub_export_status as ExportStatus) : null;
  return {
    export_status: status,
    export_output: status === 'done' && typeof c.epub_export_output === 'string' ? c.epub_export_output : null,
    export_error: status === 'failed' && typeof c.epub_export_error === 'string' ? c.epub_export_error : null,
  };
}

/** pages_done of a (stopped) lip-sync job, wherever the runner put it: config_json or its result. */
export function pagesDone(job: JobRecord): number | null {
  const c = job.config_json;
  const result = c.result as Record<string, unknown> | undefined;
  const v = c.pages_done ?? result?.pages_done;
  return typeof v === 'number' ? v : null;
}

/** Why this job cannot be exported, or null when it can. */
export function exportRefusal(job: JobRecord): string | null {
  const format = (job.config_json.options as { format?: string } | undefined)?.format;
  if (job.pipeline_type !== 'lipsync' || format !== 'reader') {
    return `job ${job.id} is a ${job.pipeline_type} ${format ?? ''} job; only lip-sync reader jobs are exported as EPUB`.replace('  ', ' ');
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
  const job = await stores.jobs.getJob(jobId);
  if (!job) return log.info('job no longer exists; nothing to export');
  if (job.config_json.epub_export_status !== 'running') return log.info({ state: job.config_json.epub_export_status }, 'export not running; nothing to do');
  const finish = (status: 'done' | 'failed', extra: Record<string, unknown>) =>
    stores.jobs.mergeConfigIf(jobId, { statuses: EXPORTABLE_STATUSES, key: 'epub_export_status', values: ['running'] }, {
      epub_export_status: status,
      epub_export_finished_at: new Date().toISOString(),
      ...extra,
    });
  const dir = storage.outputDir(jobId);
  try {
    const upload = await stores.jobs.getUpload(String(job.config_json.uploaded_file_id));
    if (!upload) throw new Error("the job's document upload is missing");
    const timelineFile = path.join(dir, 'timeline.json');
    const audioFile = path.join(dir, 'narration.mp3');
    for (const f of [timelineFile, audioFile]) {
      if (!fs.existsSync(f)) throw new Error(`the job's ${path.basename(f)} is missing; the export reuses the job's narration and cannot make one`);
    }
    const timeline = JSON.parse(await fs.promises.readFile(timelineFile, 'utf8')) as { words?: TimelineWord[]; title?: string | null; author?: string | null };
    if (!Array.isArray(timeline.words)) throw new Error("the job's timeline.json has no words");
    const doc = await readDocument(storage.resolve(upload.path), upload.content_type);
    const c = job.config_json;
    const book = await buildEpub({
      outPath: path.join(dir, EXPORT_FILE),
      doc,
      words: timeline.words,
      audioFile,
      language: String(c.language ?? 'en-US'),
      title: (c.title as string | null) ?? timeline.title ?? path.parse(upload.original_name).name,
      author: timeline.author ?? null,
      workDir: storage.tmpPath('.epub-parts'),
      signal: task.signal,
    });
    if (!(await finish('done', { epub_export_output: EXPORT_FILE, epub_export_error: null }))) {
      if (!(await stores.jobs.getJob(jobId))) await storage.removeOutputDir(jobId);
      return;
    }
    log.info({ pages: book.pages.length, duration: book.duration }, 'EPUB export done');
  } catch (err) {
    if (task.signal.aborted) {
      log.info('worker shutting down; the export goes back to the queue');
      throw err;
    }
    if (!(await stores.jobs.getJob(jobId))) {
      await storage.removeOutputDir(jobId);
      return;
    }
    const error = oneLine(err);
    await finish('failed', { epub_export_error: error, epub_export_output: null });
    log.warn({ err: error }, 'EPUB export failed');
  }
}
