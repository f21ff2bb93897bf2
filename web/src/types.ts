// The shapes of the public API's responses (see /openapi.json). The job record, its
// config_json and the output file names are the service's own types, imported type-only
// from ../../src (erased by esbuild, checked by tsc), so the two cannot drift apart.
import type { OUTPUT_FILES } from '../../src/core/output-files.ts';
import type { JobCreateRequest } from '../../src/jobs/job-config.ts';
import type { JobConfig, JobStatus, PipelineType, Progress } from '../../src/jobs/types.ts';
import type { OutputFormat } from '../../src/pipelines/options.ts';
import type { JobResult, RecordingCoverageResult } from '../../src/pipelines/result.ts';

export type { JobConfig, JobCreateRequest, JobResult, JobStatus, OutputFormat, PipelineType, Progress, RecordingCoverageResult };

export const JOB_STATUSES: JobStatus[] = ['pending', 'running', 'completed', 'failed', 'stopped'];
export const TERMINAL: JobStatus[] = ['completed', 'failed', 'stopped'];

/** Files the reader fetches by name: the service's names, checked by the type. */
export const TIMELINE_FILE: (typeof OUTPUT_FILES)['timeline'] = 'timeline.json';
export const PRESENTER_FILE: (typeof OUTPUT_FILES)['presenter'] = 'presenter.mp4';

export interface Job {
  id: string;
  pipeline_type: PipelineType;
  status: JobStatus;
  /** The token name that created the job; null when made without authentication. */
  owner: string | null;
  config_json: JobConfig;
  worker_task_id: string | null;
  progress: Progress | null;
  error: string | null;
  attempts: number;
  created_at: string;
  updated_at: string;
  started_at: string | null;
  finished_at: string | null;
  download_url: string | null;
}

export interface JobList {
  jobs: Job[];
  total: number;
  limit: number;
  offset: number;
}

export interface Upload {
  id: string;
  original_name: string;
  size_bytes: number;
  content_type: string;
  kind: 'document' | 'audio' | 'video';
  owner: string | null;
  /** The language a document declares in its metadata (EPUB dc:language, PDF /Lang); null when none. */
  language: string | null;
  created_at: string;
}

/** GET /api/me: the signed-in token; an admin sees every job and may filter by owner. */
export interface Me {
  name: string | null;
  admin: boolean;
  authentication: boolean;
  /** For an admin: the configured token names. */
  owners: string[] | null;
}

export interface Voice {
  id: string;
  name: string;
  language: string;
  description: string;
  ref_text: string;
  available: boolean;
  /** The voice a job in this language gets without a voice_id (absent from older services). */
  default?: boolean;
}

/** GET /api/voices/cloning: whether a reference clip can be cloned now, and why not. */
export interface CloningStatus {
  available: boolean;
  detail: string | null;
}

export interface Language {
  code: string;
  name: string;
}

export type JobEvent =
  | { event: 'snapshot'; data: Job }
  | { event: 'end'; data: Job }
  | { event: 'progress'; data: Progress }
  | { event: 'status'; data: { status: JobStatus; error: string | null } };

export type { ExportState as EpubExportStatus } from '../../src/jobs/types.ts';

export interface TimelineWord {
  word: string;
  /** null: a word the recording does not read (a read-along job's skipped word), shown but never highlighted. */
  start: number | null;
  end: number | null;
  page: number;
  block: number;
  skipped?: true;
}

export interface Timeline {
  title?: string | null;
  author?: string | null;
  duration: number;
  pages: number;
  chapters?: Array<{ title: string; start: number }>;
  words: TimelineWord[];
}

/** Output formats per pipeline (the first is the default), as the service's registry lists them. */
export const PIPELINES: Record<PipelineType, { label: string; description: string; formats: OutputFormat[] }> = {
  audio: { label: 'Audio narration', description: 'An MP3 or M4B audiobook with a word timeline for read-along.', formats: ['mp3', 'm4b'] },
  highlight: { label: 'Highlighted reading', description: 'A video, offline reader or EPUB with each spoken word highlighted.', formats: ['mp4', 'reader', 'epub'] },
  lipsync: { label: 'Lip-sync presenter', description: 'A presenter video speaking the text beside the read-along page.', formats: ['reader', 'mp4'] },
  readalong: { label: 'Read-along from your recording', description: 'Your own audiobook or reading, aligned to the document: an EPUB, video or offline reader highlighting each word you read, in any language of the list.', formats: ['epub', 'mp4', 'reader'] },
};

export const FORMAT_LABELS: Record<string, string> = {
  mp3: 'MP3 audio',
  m4b: 'M4B audiobook (chapters)',
  mp4: 'MP4 video',
  reader: 'Offline reader (ZIP)',
  epub: 'EPUB with read-along',
};
