// The job rules of the interface contract (spec §A), independent of HTTP.
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Caller } from '../core/caller.ts';
import { conflict, invalid, LecternError, notFound } from '../core/errors.ts';
import type { Logger } from '../log.ts';
import { defaultFormat, pipelineAccepts } from '../pipelines/catalogue.ts';
import { isId, jobPrefix, outputKey, withLocalCopy, type DownloadMeta, type Storage } from '../storage.ts';
import { contentTypeFor, INLINE_TYPES } from './file-types.ts';
import { jobUploadRefs, type JobCreateRequest, type UploadField } from './job-config.ts';
import { readDocumentLanguage } from './upload-service.ts';
import type { ExportState, JobConfig, JobListQuery, JobRecord, PipelineType, Stores, UploadRecord } from './types.ts';
import { DEFAULT_LANGUAGE } from '../documents/model.ts';
import { probeRecordingFile } from '../speech/align/long/audio.ts';
import { RECORDING_LANGUAGES, recordingLanguageSupported } from '../speech/align/long/languages.ts';
import { cloneReference } from '../voices/resolve.ts';
import { EXPORTABLE_STATUSES, exportRefusal, exportState } from './epub-export.ts';

/** Pipelines that look at a stop request while they run (lip-sync between pages, read-along while aligning and rendering). */
const STOPPABLE: readonly PipelineType[] = ['lipsync', 'readalong'];

/** Seconds a stop request's cancel flag lives (spec §8). */
export const CANCEL_FLAG_TTL_SECONDS = 24 * 60 * 60;
export const cancelKey = (jobId: string) => `job:${jobId}:cancel`;

/** A job's file in the store and how to send it. */
export interface OutputFile {
  key: string;
  meta: DownloadMeta;
}

/** Who asked for a job: recorded with it, so limits can count per token and logs can follow it. */
export interface Requester {
  /** Which uploads the job may use; `caller.name` owns the job (null with authentication off). */
  caller: Caller;
  /** The API request's id; the worker's log lines and GPU calls carry it. */
  requestId: string | null;
}

export interface JobServiceOptions {
  /** Pending + running jobs one owner may have at once; 0 → no limit. */
  maxActiveJobsPerOwner?: number;
  /**
   * Why a job that clones a voice (ref_audio_file_id, or a bundled clone voice) must be
   * refused now, or null to accept it. Only GPU servers run cloning backends; absent → refuse
   * (no GPU server configured).
   */
  cloningRefusal?: () => Promise<string | null>;
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

  async create(req: JobCreateRequest, by: Requester): Promise<JobRecord> {
    const limit = this.opts.maxActiveJobsPerOwner ?? 0;
    if (limit <= 0) return this.createUnlimited(req, by);
    const owner = by.caller.name;
    const key = owner ?? '';
    const prev = this.creating.get(key) ?? Promise.resolve();
    const run = prev.catch(() => undefined).then(async () => {
      const active = await this.stores.jobs.countActiveJobs(owner);
      if (active >= limit) {
        throw new LecternError('ACTIVE_JOB_LIMIT', `too many active jobs: ${active} pending or running${owner ? ` for token "${owner}"` : ''}, the limit is ${limit}; wait for one to finish or delete one`);
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
    // 1. Every upload the request names exists and is the caller's to use; then each is of its field's kind.
    const uploads = await this.resolveUploads(req, by.caller);
    const named = (field: UploadField) => uploads.find((u) => u.field === field)?.upload ?? null;
    const doc = named('uploaded_file_id')!; // required by the schema
    if (doc.kind !== 'document') throw invalid(`uploaded_file_id ${doc.id} is ${doc.kind}, not a document`);
    // 2. Reference files, when given, must be of the right kind.
    const refAudio = named('ref_audio_file_id');
    if (refAudio && refAudio.kind !== 'audio' && refAudio.kind !== 'video') throw invalid(`ref_audio_file_id ${refAudio.id} is a ${refAudio.kind}, not audio`);
    const clones = refAudio !== null || (await cloneReference(req.voice_id ?? null)) !== null;
    const refusal = clones ? await this.cloningRefusal() : null;
    if (refusal && !refAudio) throw invalid(`voice_id ${req.voice_id} clones a reference clip: ${refusal}; pick an engine voice`);
    if (refusal) throw invalid(`ref_audio_file_id: cloning a voice from a reference clip: ${refusal}`);
    const refVideo = named('ref_video_file_id');
    if (refVideo && refVideo.kind !== 'video') throw invalid(`ref_video_file_id ${refVideo.id} is a ${refVideo.kind}, not a video`);

    // The lip-sync reader animates a presenter: without their video there is nothing to make.
    if (req.pipeline_type === 'lipsync' && !refVideo) {
      throw invalid('a lip-sync job needs a presenter video: upload it and pass its id as ref_video_file_id');
    }

    const accepted = pipelineAccepts(req.pipeline_type, doc, req.options?.format);
    if (accepted !== true) throw invalid(accepted);
    const recording = uploads.filter((u) => u.field === 'audio_file_ids').map((u) => u.upload);
    // A request that names no language gets the one the document declares (a French EPUB is
    // read, or its recording aligned, in French), read at upload; an upload stored before
    // uploads recorded it (schema 4) is read now.
    const language = req.language ?? doc.language ?? (await readDocumentLanguage(this.storage, doc, this.log)) ?? DEFAULT_LANGUAGE;
    if (req.pipeline_type === 'readalong') await this.checkReadAlong(req, language, recording);
    else if (req.audio_file_ids) throw invalid(`audio_file_ids: only a readalong job is narrated by a recording; the ${req.pipeline_type} pipeline narrates with a voice`);

    // 3. config_json from the request, with defaults made explicit so a job re-run later behaves the same.
    const format = req.options?.format ?? defaultFormat(req.pipeline_type);
    const config_json: JobConfig = {
      pipeline_type: req.pipeline_type,
      uploaded_file_id: doc.id,
      language,
      voice_id: req.voice_id ?? null,
      ref_audio_file_id: refAudio?.id ?? null,
      ref_text: req.ref_text ?? null,
      ref_video_file_id: refVideo?.id ?? null,
      ...(recording.length ? { audio_file_ids: recording.map((u) => u.id) } : {}),
      title: req.title ?? null,
      options: { ...req.options, format, speed: req.options?.speed ?? 1 },
      document: { original_name: doc.original_name, content_type: doc.content_type },
      created_by: by.caller.name,
      request_id: by.requestId,
    };
    // 4. The record, pending; the store checks the uploads again in the same transaction, so
    // one deleted meanwhile is a 404 here rather than a job that fails later.
    const id = randomUUID();
    const upload_ids = uploads.map((u) => u.upload.id);
    const created = await this.stores.jobs.createJob({ id, pipeline_type: req.pipeline_type, config_json, upload_ids, owner: by.caller.name }, by.caller);
    if (!created) {
      await this.resolveUploads(req, by.caller); // throws the 404 naming the upload that went
      throw conflict('an upload of this job changed while the job was created; try again');
    }
    let job = created;
    // 5. Dispatch with the job id as a string; 6. store the task id. The answer is the record as
    // created (pending, the spec's state after POST) with its task id: a worker may claim the task
    // before the id is stored, and the answer must not depend on who wins that race.
    try {
      const taskId = await this.stores.queue.enqueue(String(id));
      const stored = await this.stores.jobs.updateJob(id, { worker_task_id: taskId });
      if (stored) job = { ...created, worker_task_id: taskId };
    } catch (err) {
      // A job nobody will ever run must not sit in `pending`.
      await this.stores.jobs.updateJob(id, { status: 'failed', error: 'could not dispatch the job to the queue', finished_at: new Date().toISOString() });
      throw err;
    }
    this.log.info({ job_id: id, pipeline: req.pipeline_type, task: job.worker_task_id, request_id: by.requestId, token_name: by.caller.name }, 'job created');
    return job;
  }

  /**
   * A read-along job is narrated by its recording: no voice, one speed, a language the aligner
   * locates text in, and every audio file one the decoder reads (probed now, so a file it
   * cannot read is a 422 here rather than a job that fails later).
   */
  private async checkReadAlong(req: JobCreateRequest, language: string, recording: UploadRecord[]): Promise<void> {
    if (!recording.length) throw invalid('a readalong job needs its recording: upload the audio files (MP3, M4A/M4B, WAV, FLAC, OGG) and pass their ids as audio_file_ids');
    if (!(await recordingLanguageSupported(language))) {
      const whence = req.language === undefined ? ' (the document declares it; pass language to override)' : '';
      throw invalid(`language "${language}"${whence}: read-along from a recording supports ${RECORDING_LANGUAGES}; eSpeak NG has no voice for it`);
    }
    for (const field of ['voice_id', 'ref_audio_file_id', 'ref_text', 'ref_video_file_id'] as const) {
      if (req[field] !== undefined) throw invalid(`${field}: a readalong job is narrated by its recording (audio_file_ids), not by a voice`);
    }
    if ((req.options?.speed ?? 1) !== 1) throw invalid('options.speed: a readalong job plays the recording as it is (speed 1)');
    for (const [k, u] of recording.entries()) {
      const what = `audio_file_ids[${k}] (upload ${u.id}, ${JSON.stringify(u.original_name)})`;
      if (u.kind !== 'audio' && u.kind !== 'video') throw invalid(`${what} is a ${u.kind}, not audio`);
      try {
        await this.probeUpload(u, k);
      } catch (err) {
        if (err instanceof LecternError && err.code === 'UNSUPPORTED_TYPE') {
          throw invalid(`${what} cannot be read as audio: ${err.message.replace(/^(audio )?file \d+ \([^)]*\) (cannot be read: )?/, '')}`);
        }
        throw err;
      }
    }
  }

  /** ffprobe on the stored upload. */
  private async probeUpload(u: UploadRecord, index: number): Promise<void> {
    await withLocalCopy(this.storage, u.path, `probe-${u.id}`, (file) => probeRecordingFile(file, index));
  }

  /**
   * The job, if the caller may see it. Every route taking a job id comes through here: an id
   * another token owns gets the same query and the same 404 as one that does not exist.
   */
  async get(id: string, caller: Caller): Promise<JobRecord> {
    const job = isId(id) ? await this.stores.jobs.getJob(id, caller) : null;
    if (!job) throw notFound(`job ${id} not found`);
    return job;
  }

  /** The caller's jobs (every job for an admin), newest first; `total` counts only those. */
  list(q: JobListQuery, caller: Caller) {
    return this.stores.jobs.listJobs(q, caller);
  }

  /** Stops a running job first, deletes the row, then removes the job's objects (spec §A; the sweep finishes a crash in between). */
  async delete(id: string, caller: Caller): Promise<void> {
    const job = await this.get(id, caller);
    if (job.status === 'running' || job.status === 'pending') {
      await this.stores.kv.set(cancelKey(id), '1', CANCEL_FLAG_TTL_SECONDS);
      if (job.status === 'pending' && job.worker_task_id) await this.stores.queue.remove(job.worker_task_id).catch(() => false);
    }
    await this.stores.jobs.deleteJob(id, caller);
    await this.storage.deletePrefix(jobPrefix(id));
    await this.stores.events.publish(id, { type: 'status', status: 'failed', error: 'job deleted' }).catch(() => undefined);
    this.log.info({ job_id: id }, 'job deleted');
  }

  async stop(id: string, caller: Caller): Promise<void> {
    const job = await this.get(id, caller);
    if (!STOPPABLE.includes(job.pipeline_type)) throw conflict(`job ${id} is a ${job.pipeline_type} job; only lip-sync and read-along jobs can be stopped early`);
    if (job.status !== 'running' && job.status !== 'pending') throw conflict(`job ${id} is ${job.status}, not running`);
    await this.stores.kv.set(cancelKey(id), '1', CANCEL_FLAG_TTL_SECONDS);
    this.log.info({ job_id: id }, 'stop requested');
  }

  /** The job's downloadable output; 409 while it has none. */
  async output(id: string, caller: Caller): Promise<OutputFile> {
    const job = await this.get(id, caller);
    const { result } = job.config_json;
    if (!result || (job.status !== 'completed' && job.status !== 'stopped')) throw conflict(`job ${id} is ${job.status} and has no output yet`);
    const key = this.keyOf(id, result.output);
    if (!key || !(await this.storage.stat(key))) throw conflict(`job ${id}'s output file is missing`);
    return { key, meta: { filename: `${this.documentStem(job)}${path.extname(result.output)}`, contentType: contentTypeFor(result.output), inline: false } };
  }

  /** A job file's key, or null for a name that would leave the job's folder. */
  private keyOf(id: string, name: string): string | null {
    try {
      return outputKey(id, name);
    } catch {
      return null;
    }
  }

  /**
   * Starts the EPUB export of a finished lip-sync reader job, or answers the export already
   * running or done. The claim is one conditional update of config_json, so of any number of
   * concurrent requests exactly one enqueues the task; a failed export may be started again.
   */
  async exportEpub(id: string, caller: Caller): Promise<ExportState> {
    const job = await this.get(id, caller);
    const refusal = exportRefusal(job);
    if (refusal) throw conflict(refusal);
    const claimed = await this.stores.jobs.mergeConfigIf(
      id,
      { statuses: EXPORTABLE_STATUSES, key: 'epub_export_status', values: [null, 'failed'] },
      { epub_export_status: 'running', epub_export_error: null, epub_export_output: null, epub_export_started_at: new Date().toISOString(), epub_export_finished_at: null },
    );
    if (!claimed) {
      const cur = await this.get(id, caller);
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

  async exportStatus(id: string, caller: Caller): Promise<ExportState> {
    return exportState(await this.get(id, caller));
  }

  /** The exported EPUB; 409 until the export is done. */
  async exportFile(id: string, caller: Caller): Promise<OutputFile> {
    const job = await this.get(id, caller);
    const state = exportState(job);
    if (state.export_status !== 'done' || !state.export_output) {
      throw conflict(`job ${id}'s EPUB export is ${state.export_status ?? 'not started'}; download it once export_status is done`);
    }
    const key = this.keyOf(id, state.export_output);
    if (!key || !(await this.storage.stat(key))) throw conflict(`job ${id}'s exported EPUB is missing`);
    return { key, meta: { filename: `${this.documentStem(job)}.epub`, contentType: contentTypeFor(state.export_output), inline: false } };
  }

  private documentStem(job: JobRecord): string {
    return path.parse(job.config_json.document.original_name).name.replace(/[^\p{L}\p{N}._ -]+/gu, '_').slice(0, 120) || 'lectern';
  }

  /**
   * One of the job's files (the reader's narration, timeline, page images…): only names
   * listed in config_json.result.files, inside the job's folder of the store; 404 otherwise.
   */
  async file(id: string, name: string, caller: Caller): Promise<OutputFile> {
    const job = await this.get(id, caller);
    const listed = job.config_json.result?.files.includes(name) ?? false;
    const key = listed ? this.keyOf(id, name) : null;
    if (!key) throw notFound(`job ${id} has no file ${JSON.stringify(name)}`);
    if (!(await this.storage.stat(key))) throw notFound(`job ${id}'s file ${JSON.stringify(name)} is missing`);
    const contentType = contentTypeFor(name);
    return { key, meta: { filename: path.basename(name), contentType, inline: INLINE_TYPES.test(contentType) } };
  }

  /** Every upload the request names (jobUploadRefs), as the caller may see them; 404 naming the field of the first that is not there or not theirs. */
  private cloningRefusal(): Promise<string | null> {
    if (this.opts.cloningRefusal) return this.opts.cloningRefusal();
    return Promise.resolve('it needs a GPU server with a cloning backend (set LECTERN_GPU_SERVER_URL); the local engines speak bundled voices only');
  }

  private async resolveUploads(req: JobCreateRequest, caller: Caller): Promise<Array<{ field: UploadField; upload: UploadRecord }>> {
    const out: Array<{ field: UploadField; upload: UploadRecord }> = [];
    for (const { field, id } of jobUploadRefs(req)) {
      const upload = isId(id) ? await this.stores.jobs.getUpload(id, caller) : null;
      if (!upload) throw notFound(`${field}: upload ${id} not found`);
      out.push({ field, upload });
    }
    return out;
  }
}
