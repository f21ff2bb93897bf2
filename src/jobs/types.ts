// The stores behind the job service. Each has an embedded implementation (SQLite /
// in-process) and a distributed one (PostgreSQL / Redis), chosen once in src/jobs/index.ts;
// nothing else knows which mode it runs in. Type imports only: the web app type-checks
// against the job record defined here.
import type { Caller } from '../core/caller.ts';
import type { OutputFileName } from '../core/output-files.ts';
import type { StoredJobOptions } from '../pipelines/options.ts';
import type { JobResult } from '../pipelines/result.ts';

export const JOB_STATUSES = ['pending', 'running', 'completed', 'failed', 'stopped'] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];
export const TERMINAL_STATUSES: readonly JobStatus[] = ['completed', 'failed', 'stopped'];

// The pipeline types live with the pipelines (they are what the catalogue, pipelines/catalogue.ts, can run).
import type { PipelineType } from '../pipelines/options.ts';
export { PIPELINE_TYPES, type PipelineType } from '../pipelines/options.ts';

export interface Progress {
  /** extract | segment | synthesize | align | render | … */
  phase: string;
  current: number;
  total: number;
}

/** config_json.epub_export_status: the on-demand EPUB export's own state machine. */
export const EXPORT_STATUSES = ['running', 'done', 'failed'] as const;
export type ExportStatus = (typeof EXPORT_STATUSES)[number];

/** The export's state as GET /api/jobs/{id}/export-epub/status answers it. */
export interface ExportState {
  export_status: ExportStatus | null;
  export_output: string | null;
  export_error: string | null;
}

/**
 * A job's config_json: the request as created (JobService.create writes every field up to
 * `request_id`, defaults made explicit), then what the worker and the EPUB export add.
 * Read through parseJobConfig (job-config.ts) at the store boundary.
 */
export type JobConfig = {
  pipeline_type: PipelineType;
  uploaded_file_id: string;
  language: string;
  voice_id: string | null;
  ref_audio_file_id: string | null;
  /** The reference clip's transcript: the request's, or transcribed by the worker (then ref_text_source). */
  ref_text: string | null;
  ref_video_file_id: string | null;
  /** readalong: the recording's audio files, in upload order (the pipeline finds their reading order); absent on other pipelines. */
  audio_file_ids?: string[];
  title: string | null;
  options: StoredJobOptions;
  document: { original_name: string; content_type: string };
  /** The creating token's name (null without authentication); absent on rows from before tokens. */
  created_by?: string | null;
  /** The creating API request's id; absent on rows from before request ids. */
  request_id?: string | null;
  ref_text_source?: 'transcribed';
  /** The pipeline's result, once the job completed or stopped. */
  result?: JobResult;
  /** A lip-sync job's pages, also at the top (spec §A: a stopped job reports them here). */
  pages_done?: number;
  pages_total?: number;
  epub_export_status?: ExportStatus | null;
  /** The exported file (EXPORT_FILE) once done. */
  epub_export_output?: OutputFileName | null;
  /** One line, when the export failed. */
  epub_export_error?: string | null;
  epub_export_started_at?: string | null;
  epub_export_finished_at?: string | null;
  epub_export_task_id?: string;
};

/** Keys merged into config_json: known ones typed; the store merges any (its conformance tests use their own). */
export type JobConfigPatch = Partial<JobConfig> & Record<string, unknown>;

export interface JobRecord {
  id: string;
  pipeline_type: PipelineType;
  status: JobStatus;
  config_json: JobConfig;
  /**
   * The token name that created the job (config_json.created_by, kept in its own column so
   * every query can match it); null when it was made with authentication off, or before
   * ownership: then only admins see it while tokens are on.
   */
  owner: string | null;
  worker_task_id: string | null;
  progress: Progress | null;
  /** One line, never a stack trace. */
  error: string | null;
  /** Upload ids this job refers to (document, reference audio, reference video, a read-along job's recording). */
  upload_ids: string[];
  /** How many times a worker has started it (a restart after a crash counts). */
  attempts: number;
  created_at: string; // ISO-8601 UTC, millisecond precision
  updated_at: string;
  started_at: string | null;
  finished_at: string | null;
}

export interface NewJob {
  id: string;
  pipeline_type: PipelineType;
  /** A JobConfig when JobService writes it; the store keeps any JSON object. */
  config_json: Record<string, unknown>;
  /** Every upload the job refers to (JobService: jobUploadRefs); each must be one the creator may use. */
  upload_ids: string[];
  /** The creating token's name; null with authentication off. */
  owner: string | null;
}

/** A job list query: newest first; `owner` narrows it further (within what the caller may see). */
export interface JobListQuery {
  status?: JobStatus;
  owner?: string;
  limit: number;
  offset: number;
}

/** What deleting an upload came to: gone, not there (or not the caller's), or kept because jobs refer to it. */
export type UploadDeletion = { outcome: 'deleted'; upload: UploadRecord } | { outcome: 'missing' } | { outcome: 'in-use'; jobs: number };

export type JobPatch = Partial<Pick<JobRecord, 'status' | 'worker_task_id' | 'progress' | 'error' | 'started_at' | 'finished_at' | 'attempts'>>;

export interface UploadRecord {
  id: string;
  original_name: string;
  size_bytes: number;
  /** Detected from the bytes, never taken from the client. */
  content_type: string;
  kind: 'document' | 'audio' | 'video';
  /** Path relative to the data dir. */
  path: string;
  sha256: string;
  /**
   * The language a document declares in its metadata (EPUB dc:language, PDF /Lang), read at
   * upload: what a job that names none is narrated or aligned in. Null when it declares none,
   * for audio and video, and for uploads stored before schema 4.
   */
  language: string | null;
  /** The token name that uploaded it; null with authentication off, or before ownership (admins only). */
  owner: string | null;
  created_at: string;
}

/**
 * The jobs and uploads tables. Every method reached from a request takes the Caller and puts
 * it in the query (WHERE owner = name unless the caller sees all): a row the caller does not
 * own is not read, listed, counted, changed or deleted, exactly as a row that does not exist.
 * Worker-side methods (update, transition, merges) take ids the worker got from its own task.
 */
export interface JobStore {
  /** Creates the schema if needed (idempotent; safe with several processes starting at once). */
  migrate(): Promise<void>;
  /**
   * Creates the job, in one transaction with a check that every upload in `upload_ids` exists
   * and is the caller's to use (locked against a concurrent delete); null when one is not.
   */
  createJob(job: NewJob, caller: Caller): Promise<JobRecord | null>;
  getJob(id: string, caller: Caller): Promise<JobRecord | null>;
  /** Newest first. `total` counts every job matching the filter that the caller may see. */
  listJobs(q: JobListQuery, caller: Caller): Promise<{ jobs: JobRecord[]; total: number }>;
  /** Unconditional update; returns the new record, or null when the job is gone. */
  updateJob(id: string, patch: JobPatch): Promise<JobRecord | null>;
  /** Compare-and-set on status: applies the patch only while the job's status is one of `from`. */
  transition(id: string, from: readonly JobStatus[], patch: JobPatch & { status: JobStatus }): Promise<JobRecord | null>;
  /** Shallow-merges keys into config_json atomically (concurrent mergers never lose each other's keys). */
  mergeConfig(id: string, patch: JobConfigPatch): Promise<JobRecord | null>;
  /**
   * Compare-and-set on one config_json key: merges the patch only while the job's status is one
   * of `when.statuses` and config_json[when.key] is one of `when.values` (null: the key is
   * absent or null). Of two racing calls exactly one applies; returns the new record, or null.
   */
  mergeConfigIf(id: string, when: { statuses: readonly JobStatus[]; key: keyof JobConfig; values: ReadonlyArray<string | null> }, patch: JobConfigPatch): Promise<JobRecord | null>;
  deleteJob(id: string, caller: Caller): Promise<boolean>;
  /** Pending + running jobs owned by `owner` (null: jobs created without authentication). */
  countActiveJobs(owner: string | null): Promise<number>;
  /** Number of jobs, whoever owns them, whose upload_ids contain this upload. */
  countJobsUsingUpload(uploadId: string): Promise<number>;

  createUpload(u: UploadRecord): Promise<UploadRecord>;
  getUpload(id: string, caller: Caller): Promise<UploadRecord | null>;
  /**
   * Deletes the row unless a job (anyone's) refers to the upload, in one transaction that a
   * concurrent createJob naming it cannot slip through. The caller removes the file after.
   */
  deleteUpload(id: string, caller: Caller): Promise<UploadDeletion>;

  close(): Promise<void>;
}

/** What a task does with its job: run the job's pipeline, or export a finished job as EPUB on demand. */
export const TASK_KINDS = ['pipeline', 'export-epub'] as const;
export type TaskKind = (typeof TASK_KINDS)[number];

export interface TaskContext {
  /** The queue's id of this task (what the job stores as worker_task_id). */
  taskId: string;
  kind: TaskKind;
  /** 1 on the first run; more after a crashed worker's task was recovered. */
  attempt: number;
  /** Aborted when the worker shuts down (the task goes back to the queue). */
  signal: AbortSignal;
}

export type TaskHandler = (jobId: string, ctx: TaskContext) => Promise<void>;

export interface TaskQueue {
  /** Dispatches a task carrying the job id (a string) and its kind (default `pipeline`); returns the task id. */
  enqueue(jobId: string, kind?: TaskKind): Promise<string>;
  /**
   * Starts consuming with `concurrency` tasks at once. A task whose worker died
   * (no heartbeat within the lease / BullMQ stalled check) is handed out again.
   * A handler that throws marks the task failed (not retried); one that returns marks it done.
   */
  consume(handler: TaskHandler, concurrency: number): Promise<void>;
  /** Removes a task that has not started yet; returns whether it was removed. */
  remove(taskId: string): Promise<boolean>;
  /** Stops taking tasks; aborts the signal of running ones and returns them to the queue. */
  close(): Promise<void>;
}

export interface KeyValueStore {
  set(key: string, value: string, ttlSeconds: number): Promise<void>;
  get(key: string): Promise<string | null>;
  /** Remaining time to live in seconds, or null when the key is absent. */
  ttl(key: string): Promise<number | null>;
  del(key: string): Promise<void>;
  close(): Promise<void>;
}

export type JobEvent =
  | { type: 'snapshot'; job: JobRecord }
  | { type: 'status'; status: JobStatus; error?: string | null }
  | { type: 'progress'; progress: Progress };

export interface EventBus {
  publish(jobId: string, event: JobEvent): Promise<void>;
  /** Returns an unsubscribe function. Events published after subscribe() resolves are delivered. */
  subscribe(jobId: string, listener: (event: JobEvent) => void): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

/** Everything the service needs, in one mode or the other. */
export interface Stores {
  mode: 'embedded' | 'distributed';
  jobs: JobStore;
  queue: TaskQueue;
  kv: KeyValueStore;
  events: EventBus;
  close(): Promise<void>;
}
