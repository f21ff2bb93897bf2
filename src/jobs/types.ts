// The stores behind the job service. Each has an embedded implementation (SQLite /
// in-process) and a distributed one (PostgreSQL / Redis), chosen once in src/jobs/index.ts;
// nothing else knows which mode it runs in.

export const JOB_STATUSES = ['pending', 'running', 'completed', 'failed', 'stopped'] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];
export const TERMINAL_STATUSES: readonly JobStatus[] = ['completed', 'failed', 'stopped'];

export const PIPELINE_TYPES = ['audio', 'highlight', 'lipsync'] as const;
export type PipelineType = (typeof PIPELINE_TYPES)[number];

export interface Progress {
  /** extract | segment | synthesize | align | render | … */
  phase: string;
  current: number;
  total: number;
}

export interface JobRecord {
  id: string;
  pipeline_type: PipelineType;
  status: JobStatus;
  /** Built from the request at creation; the worker adds `result`, EPUB export state, pages_done… */
  config_json: Record<string, unknown>;
  worker_task_id: string | null;
  progress: Progress | null;
  /** One line, never a stack trace. */
  error: string | null;
  /** Upload ids this job refers to (document, reference audio, reference video). */
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
  config_json: Record<string, unknown>;
  upload_ids: string[];
}

export type JobPatch = Partial<Pick<JobRecord, 'status' | 'config_json' | 'worker_task_id' | 'progress' | 'error' | 'started_at' | 'finished_at' | 'attempts'>>;

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
  created_at: string;
}

export interface JobStore {
  /** Creates the schema if needed (idempotent; safe with several processes starting at once). */
  migrate(): Promise<void>;
  createJob(job: NewJob): Promise<JobRecord>;
  getJob(id: string): Promise<JobRecord | null>;
  /** Newest first. `total` counts every job matching the filter. */
  listJobs(q: { status?: JobStatus; limit: number; offset: number }): Promise<{ jobs: JobRecord[]; total: number }>;
  /** Unconditional update; returns the new record, or null when the job is gone. */
  updateJob(id: string, patch: JobPatch): Promise<JobRecord | null>;
  /** Compare-and-set on status: applies the patch only while the job's status is one of `from`. */
  transition(id: string, from: readonly JobStatus[], patch: JobPatch & { status: JobStatus }): Promise<JobRecord | null>;
  /** Shallow-merges keys into config_json atomically (concurrent mergers never lose each other's keys). */
  mergeConfig(id: string, patch: Record<string, unknown>): Promise<JobRecord | null>;
  /**
   * Compare-and-set on one config_json key: merges the patch only while the job's status is one
   * of `when.statuses` and config_json[when.key] is one of `when.values` (null: the key is
   * absent or null). Of two racing calls exactly one applies; returns the new record, or null.
   */
  mergeConfigIf(id: string, when: { statuses: readonly JobStatus[]; key: string; values: ReadonlyArray<string | null> }, patch: Record<string, unknown>): Promise<JobRecord | null>;
  deleteJob(id: string): Promise<boolean>;
  /** Pending + running jobs whose config_json.created_by is `owner` (null: jobs created without authentication). */
  countActiveJobs(owner: string | null): Promise<number>;
  /** Number of jobs whose upload_ids contain this upload. */
  countJobsUsingUpload(uploadId: string): Promise<number>;

  createUpload(u: UploadRecord): Promise<UploadRecord>;
  getUpload(id: string): Promise<UploadRecord | null>;
  deleteUpload(id: string): Promise<boolean>;

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
