// The job rules of the interface contract (spec §A), independent of HTTP.
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { conflict, HttpError, invalid, notFound } from '../errors.ts';
import type { Logger } from '../log.ts';
import { pipelineAccepts, PIPELINE_OUTPUTS } from '../pipelines/registry.ts';
import { isId, type Storage } from '../storage.ts';
import type { JobCreateRequest } from '../api/schemas.ts';
import type { JobRecord, JobStatus, Stores, UploadRecord } from './types.ts';
import { cloneReference } from '../voices/resolve.ts';
import { EXPORTABLE_STATUSES, exportRefusal, exportState, type ExportState } from './epub-export.ts';

/** Seconds a stop request's cancel flag lives (spec §8). */
export const CANCEL_FLAG_TTL_SECONDS = 24 * 60 * 60;
export const cancelKey = (jobId: string) => `job:${jobId}:cancel`;

export interface OutputFile {
  path: string;
  filename: string;
  contentType: string;
}

const CONTENT_TYPES: Record<string, string> = {
  '.mp3': 'audio/mpeg',
  '.m4b': 'audio/mp4',
  '.m4a': 'audio/mp4',
  '.mp4': 'video/mp4',
  '.zip': 'application/zip',
  '.epub': 'application/epub+zip',
  '.json': 'application/json',
  '.vtt': 'text/vtt; charset=utf-8',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.webp': 'image/webp',
};

/** Types a browser may show in place; anything else from a job is sent as an attachment. */
const INLINE_TYPES = /^(audio|video|image)\/|^application\/json$|^text\/vtt/;

export function contentTypeFor(file: string): string {
  return CONTENT_TYPES[path.extname(file).toLowerCase()] ?? 'application/octet-stream';
}

/** Who asked for a job: recorded with it, so limits can count per token and logs can follow it. */
export interface Requester {
  /** Token name; null with authentication off. */
  owner: string | null;
  /** The API request's id; the worker's log lines and GPU calls carry it. */
  requestId: string | null;
}

export interface JobServiceOptions {
  /** Pending + running jobs one owner may have at once; 0 → no limit. */
  maxActiveJobsPerOwner?: number;
  /** Whether jobs may clone a voice from a reference clip: only GPU servers run cloning backends. */
  cloning?: boolean;
}

export class JobService {
  /** Creations in progress per owner: the count-then-insert below must not interleave (per process). */
  private readonly creating = new Map<string, Promise<unknown>>();

  constructor(
    private readonly stores: Stores,
    private readonly storage: Storage,
    private readonly log: Logger,
    private readonly opts: JobServiceOptions = {},
  ) {}

  async create(req: JobCreateRequest, by: Requester = { owner: null, requestId: null }): Promise<JobRecord> {
    const limit = this.opts.maxActiveJobsPerOwner ?? 0;
    if (limit <= 0) return this.createUnlimited(req, by);
    const key = by.owner ?? '';
    const prev = this.creating.get(key) ?? Promise.resolve();
    const run = prev.catch(() => undefined).then(async () => {
      const active = await this.stores.jobs.countActiveJobs(by.owner);
      if (active >= limit) {
        throw new HttpError(429, `too many active jobs: ${active} pending or running${by.owner ? ` for token "${by.owner}"` : ''}, the limit is ${limit}; wait for one to finish or delete one`);
      }
      return this.createUnlimited(req, by);
    });
    this.creating.set(key, run);
    try {
      return await run;
    } finally {
      if (this.creating.get(key) === run) this.creating.delete(key);
    }
  }

  private async createUnlimited(req: JobCreateRequest, by: Requester): Promise<JobRecord> {
    // 1. The document must exist (every pipeline reads a document).
    const doc = await this.upload(req.uploaded_file_id, 'uploaded_file_id');
    if (doc.kind !== 'document') throw invalid(`uploaded_file_id ${doc.id} is ${doc.kind}, not a document`);
    // 2. Reference files, when given, must exist and be of the right kind.
    const refAudio = req.ref_audio_file_id ? await this.upload(req.ref_audio_file_id, 'ref_audio_file_id') : null;
    if (refAudio && refAudio.kind !== 'audio' && refAudio.kind !== 'video') throw invalid(`ref_audio_file_id ${refAudio.id} is a ${refAudio.kind}, not audio`);
    if (!refAudio && !this.opts.cloning && (await cloneReference(req.voice_id ?? null))) {
      throw invalid(`voice_id ${req.voice_id} clones a reference clip, which needs a GPU server with a cloning backend (set LECTERN_GPU_SERVER_URL); pick an engine voice`);
    }
    if (refAudio && !this.opts.cloning) {
      throw invalid('ref_audio_file_id: cloning a voice from a reference clip needs a GPU server with a cloning backend (set LECTERN_GPU_SERVER_URL); the local engines speak bundled voices only');
    }
    const refVideo = req.ref_video_file_id ? await this.upload(req.ref_video_file_id, 'ref_video_file_id') : null;
    if (refVideo && refVideo.kind !== 'video') throw invalid(`ref_video_file_id ${refVideo.id} is a ${refVideo.kind}, not a video`);

    // The lip-sync reader animates a presenter: without their video there is nothing to make.
    if (req.pipeline_type === 'lipsync' && !refVideo) {
      throw invalid('a lip-sync job needs a presenter video: upload it and pass its id as ref_video_file_id');
    }

    const accepted = pipelineAccepts(req.pipeline_type, doc, req.options?.format);
    if (accepted !== true) throw invalid(accepted);

    // 3. config_json from the request, with defaults made explicit so a job re-run later behaves the same.
    const format = req.options?.format ?? PIPELINE_OUTPUTS[req.pipeline_type][0];
    const config_json: Record<string, unknown> = {
      pipeline_type: req.pipeline_type,
      uploaded_file_id: doc.id,
      language: req.language ?? 'en-US',
      voice_id: req.voice_id ?? null,
      ref_audio_file_id: refAudio?.id ?? null,
      ref_text: req.ref_text ?? null,
      ref_video_file_id: refVideo?.id ?? null,
      title: req.title ?? null,
      options: { ...req.options, format, speed: req.options?.speed ?? 1 },
      document: { original_name: doc.original_name, content_type: doc.content_type },
      created_by: by.owner,
      request_id: by.requestId,
    };
    // 4. The record, pending.
    const id = randomUUID();
    const upload_ids = [doc.id, refAudio?.id, refVideo?.id].filter((x): x is string => Boolean(x));
    let job = await this.stores.jobs.createJob({ id, pipeline_type: req.pipeline_type, config_json, upload_ids });
    // 5. Dispatch with the job id as a string; 6. store the task id.
    try {
      const taskId = await this.stores.queue.enqueue(String(id));
      job = (await this.stores.jobs.updateJob(id, { worker_task_id: taskId })) ?? job;
    } catch (err) {
      // A job nobody will ever run must not sit in `pending`.
      await this.stores.jobs.updateJob(id, { status: 'failed', error: 'could not dispatch the job to the queue', finished_at: new Date().toISOString() });
      throw err;
    }
    this.log.info({ job_id: id, pipeline: req.pipeline_type, task: job.worker_task_id, request_id: by.requestId, token_name: by.owner }, 'job created');
    return job;
  }

  async get(id: string): Promise<JobRecord> {
    const job = isId(id) ? await this.stores.jobs.getJob(id) : null;
    if (!job) throw notFound(`job ${id} not found`);
    return job;
  }

  list(q: { status?: JobStatus; limit: number; offset: number }) {
    return this.stores.jobs.listJobs(q);
  }

  /** Stops a running job first, deletes the row, then removes the output directory (spec §A). */
  async delete(id: string): Promise<void> {
    const job = await this.get(id);
    if (job.status === 'running' || job.status === 'pending') {
      await this.stores.kv.set(cancelKey(id), '1', CANCEL_FLAG_TTL_SECONDS);
      if (job.status === 'pending' && job.worker_task_id) await this.stores.queue.remove(job.worker_task_id).catch(() => false);
    }
    await this.stores.jobs.deleteJob(id);
    await this.storage.removeOutputDir(id);
    await this.stores.events.publish(id, { type: 'status', status: 'failed', error: 'job deleted' }).catch(() => undefined);
    this.log.info({ job_id: id }, 'job deleted');
  }

  async stop(id: string): Promise<void> {
    const job = await this.get(id);
    if (job.pipeline_type !== 'lipsync') throw conflict(`job ${id} is a ${job.pipeline_type} job; only lip-sync jobs can be stopped early`);
    if (job.status !== 'running' && job.status !== 'pending') throw conflict(`job ${id} is ${job.status}, not running`);
    await this.stores.kv.set(cancelKey(id), '1', CANCEL_FLAG_TTL_SECONDS);
    this.log.info({ job_id: id }, 'stop requested');
  }

  /** The job's downloadable output; 409 while it has none. */
  async output(id: string): Promise<OutputFile> {
    const job = await this.get(id);
    const result = job.config_json.result as { output?: string } | undefined;
    const hasOutput = (job.status === 'completed' || job.status === 'stopped') && typeof result?.output === 'string';
    if (!hasOutput) throw conflict(`job ${id} is ${job.status} and has no output yet`);
    const dir = this.storage.outputDir(id);
    const file = path.resolve(dir, result!.output!);
    if (!file.startsWith(dir + path.sep)) throw conflict(`job ${id} has no output`);
    try {
      await fs.promises.access(file);
    } catch {
      throw conflict(`job ${id}'s output file is missing`);
    }
    return { path: file, filename: `${this.documentStem(job)}${path.extname(file)}`, contentType: contentTypeFor(file) };
  }

  /**
   * Starts the EPUB export of a finished lip-sync reader job, or answers the export already
   * running or done. The claim is one conditional update of config_json, so of any number of
   * concurrent requests exactly one enqueues the task; a failed export may be started again.
   */
  async exportEpub(id: string): Promise<ExportState> {
    const job = await this.get(id);
    const refusal = exportRefusal(job);
    if (refusal) throw conflict(refusal);
    const claimed = await this.stores.jobs.mergeConfigIf(
      id,
      { statuses: EXPORTABLE_STATUSES, key: 'epub_export_status', values: [null, 'failed'] },
      { epub_export_status: 'running', epub_export_error: null, epub_export_output: null, epub_export_started_at: new Date().toISOString(), epub_export_finished_at: null },
    );
    if (!claimed) {
      const cur = await this.get(id);
      const state = exportState(cur);
      if (state.export_status === 'running' || state.export_status === 'done') return state;
      throw conflict(exportRefusal(cur) ?? `job ${id}'s export could not be started`);
    }
    try {
      const taskId = await this.stores.queue.enqueue(String(id), 'export-epub');
      await this.stores.jobs.mergeConfig(id, { epub_export_task_id: taskId });
    } catch (err) {
      await this.stores.jobs.mergeConfig(id, { epub_export_status: 'failed', epub_export_error: 'could not dispatch the export to the queue' });
      throw err;
    }
    this.log.info({ job_id: id }, 'EPUB export started');
    return exportState(claimed);
  }

  async exportStatus(id: string): Promise<ExportState> {
    return exportState(await this.get(id));
  }

  /** The exported EPUB; 409 until the export is done. */
  async exportFile(id: string): Promise<OutputFile> {
    const job = await this.get(id);
    const state = exportState(job);
    if (state.export_status !== 'done' || !state.export_output) {
      throw conflict(`job ${id}'s EPUB export is ${state.export_status ?? 'not started'}; download it once export_status is done`);
    }
    const dir = this.storage.outputDir(id);
    const file = path.resolve(dir, state.export_output);
    if (!file.startsWith(dir + path.sep) || !fs.existsSync(file)) throw conflict(`job ${id}'s exported EPUB is missing`);
    return { path: file, filename: `${this.documentStem(job)}.epub`, contentType: contentTypeFor(file) };
  }

  private documentStem(job: JobRecord): string {
    const docName = (job.config_json.document as { original_name?: string } | undefined)?.original_name ?? 'lectern';
    return path.parse(docName).name.replace(/[^\p{L}\p{N}._ -]+/gu, '_').slice(0, 120) || 'lectern';
  }

  /**
   * One of the job's files (the reader's narration, timeline, page images…): only names
   * listed in config_json.result.files, resolved inside the job's output dir; 404 otherwise.
   */
  async file(id: string, name: string): Promise<OutputFile & { inline: boolean }> {
    const job = await this.get(id);
    const files = (job.config_json.result as { files?: unknown } | undefined)?.files;
    const listed = Array.isArray(files) && files.includes(name);
    const dir = this.storage.outputDir(id);
    const file = path.resolve(dir, name);
    if (!listed || !file.startsWith(dir + path.sep)) throw notFound(`job ${id} has no file ${JSON.stringify(name)}`);
    const stat = await fs.promises.stat(file).catch(() => null);
    if (!stat?.isFile()) throw notFound(`job ${id}'s file ${JSON.stringify(name)} is missing`);
    const contentType = contentTypeFor(file);
    return { path: file, filename: path.basename(file), contentType, inline: INLINE_TYPES.test(contentType) };
  }

  private async upload(id: string, field: string): Promise<UploadRecord> {
    const u = isId(id) ? await this.stores.jobs.getUpload(id) : null;
    if (!u) throw notFound(`${field}: upload ${id} not found`);
    return u;
  }
}
