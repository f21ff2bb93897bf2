import type { Logger } from '../log.ts';
import type { Speech } from '../speech/local.ts';

export interface PipelineDocument {
  /** Absolute path of the uploaded file. */
  path: string;
  originalName: string;
  contentType: string;
}

export interface PipelineInput {
  jobId: string;
  document: PipelineDocument;
  language: string;
  voiceId: string | null;
  options: { format: string; speed: number } & Record<string, unknown>;
  title: string | null;
}

export interface PipelineContext {
  input: PipelineInput;
  /** The job's own output directory (created, empty or holding a previous attempt's files). */
  outputDir: string;
  /** Content-addressed cache shared by jobs (finished TTS chunks). */
  cacheDir: string;
  speech: Speech;
  log: Logger;
  /** Reports progress; cheap to call often (the runner throttles writes). */
  progress(phase: string, current: number, total: number): void;
  /** True once a stop was requested or the job was deleted; checked between chunks. */
  cancelled(): Promise<boolean>;
  /** Aborted when the worker shuts down: stop promptly, the task goes back to the queue. */
  signal: AbortSignal;
}

export interface PipelineResult {
  /** The downloadable file, relative to the output dir. */
  output: string;
  /** Every file the job made, relative to the output dir. */
  files: string[];
  duration_seconds?: number;
  [key: string]: unknown;
}

export interface Pipeline {
  run(ctx: PipelineContext): Promise<PipelineResult>;
}

/** Thrown by a pipeline that saw its cancel flag. */
export class JobCancelled extends Error {
  override name = 'JobCancelled';
  constructor() {
    super('stopped on request');
  }
}
