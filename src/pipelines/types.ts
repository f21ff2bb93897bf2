import type { Logger } from '../log.ts';
import { LecternError } from '../core/errors.ts';
import type { Speech } from '../speech/local.ts';
import type { Aligner } from '../speech/types.ts';
import type { FilledJobOptions } from './options.ts';
import type { PipelineResult } from './result.ts';

export type { PipelineResult } from './result.ts';

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
  options: FilledJobOptions;
  title: string | null;
  /** Absolute path of the job's reference (presenter) video upload, when it has one. */
  referenceVideo?: string | null;
  /** Reference clip to clone the narrator's voice from (GPU servers only), with its transcript. */
  referenceAudio?: { bytes: Buffer; sha256: string; text: string } | null;
  /** readalong: the person's recording of the document, its files in upload order (any reading order). */
  recording?: RecordingFile[] | null;
}

/** One audio file of a recording a read-along job narrates with. */
export interface RecordingFile {
  /** Absolute path of a local copy. */
  path: string;
  /** The upload's original name (messages name it). */
  name: string;
  /** Content hash: with the document's words, the key of the cached alignment a resumed job reuses. */
  sha256: string;
}

/** One presenter clip: `audioPath` spoken by the person in `referenceVideoPath`, written to `outputPath` (MP4). */
export interface PresenterClipRequest {
  audioPath: string;
  referenceVideoPath: string;
  outputPath: string;
  /** Provider preset (`lipsync_preset`); the provider's first when absent. */
  preset?: string;
}

/** Makes presenter clips: a local lip-sync provider, or a GPU server through the client. */
export interface PresenterGenerator {
  /** `local:viseme`, `remote:http://…`: for logs and the job result. */
  readonly where: string;
  /** Rejects with JobCancelled when `shouldCancel` turned true while the clip was being made. */
  generate(req: PresenterClipRequest, shouldCancel: () => Promise<boolean>, signal: AbortSignal): Promise<void>;
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
  /** Presenter clips for the lip-sync pipeline (created on first use; absent where none can be made). */
  presenter?: () => Promise<PresenterGenerator>;
  /** The word aligner (`auto`: the best installed for the language), created on first use and closed with the job; absent → the pipeline makes its own. */
  aligner?: () => Promise<Aligner>;
}

export interface Pipeline {
  run(ctx: PipelineContext): Promise<PipelineResult>;
}

export { JobCancelled } from '../core/cancel.ts';
