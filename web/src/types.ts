// The shapes of the public API's responses (see /openapi.json).
export type JobStatus = 'pending' | 'running' | 'completed' | 'failed' | 'stopped';
export const JOB_STATUSES: JobStatus[] = ['pending', 'running', 'completed', 'failed', 'stopped'];
export const TERMINAL: JobStatus[] = ['completed', 'failed', 'stopped'];
export type PipelineType = 'audio' | 'highlight' | 'lipsync';

export interface Progress {
  phase: string;
  current: number;
  total: number;
}

export interface JobResult {
  output?: string;
  files?: string[];
  duration_seconds?: number;
  [k: string]: unknown;
}

export interface Job {
  id: string;
  pipeline_type: PipelineType;
  status: JobStatus;
  config_json: {
    title?: string | null;
    document?: { original_name?: string; content_type?: string };
    options?: Record<string, unknown>;
    result?: JobResult;
    pages_done?: number;
    pages_total?: number;
    [k: string]: unknown;
  };
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
  created_at: string;
}

export interface Voice {
  id: string;
  name: string;
  language: string;
  description: string;
  ref_text: string;
  available: boolean;
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

export interface EpubExportStatus {
  export_status: string | null;
  export_output: string | null;
  export_error: string | null;
}

export interface TimelineWord {
  word: string;
  start: number;
  end: number;
  page: number;
  block: number;
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
export const PIPELINES: Record<PipelineType, { label: string; description: string; formats: string[] }> = {
  audio: { label: 'Audio narration', description: 'An MP3 or M4B audiobook with a word timeline for read-along.', formats: ['mp3', 'm4b'] },
  highlight: { label: 'Highlighted reading', description: 'A video, offline reader or EPUB with each spoken word highlighted.', formats: ['mp4', 'reader', 'epub'] },
  lipsync: { label: 'Lip-sync presenter', description: 'A presenter video speaking the text beside the read-along page.', formats: ['reader', 'mp4'] },
};

export const FORMAT_LABELS: Record<string, string> = {
  mp3: 'MP3 audio',
  m4b: 'M4B audiobook (chapters)',
  mp4: 'MP4 video',
  reader: 'Offline reader (ZIP)',
  epub: 'EPUB with read-along',
};
