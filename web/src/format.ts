// Plain-words formatting shared by the pages.
import type { Job, JobResult, RecordingCoverageResult } from './types.ts';

export function jobTitle(job: Job): string {
  return job.config_json.title || job.config_json.document?.original_name || `Job ${job.id.slice(0, 8)}`;
}

export function percent(job: Pick<Job, 'status' | 'progress'> & { config_json?: Job['config_json'] }): number {
  if (job.status === 'completed') return 100;
  // A stopped job's last progress is its assembly (1 of 1); what it got through is its pages.
  const done = job.config_json?.pages_done;
  const total = job.config_json?.pages_total;
  if (job.status === 'stopped' && typeof done === 'number' && typeof total === 'number' && total > 0) return Math.round((Math.min(done, total) / total) * 100);
  const p = job.progress;
  if (!p || p.total <= 0) return 0;
  return Math.max(0, Math.min(100, Math.round((p.current / p.total) * 100)));
}

/**
 * A read-along job's match of its recording to the document, in words: how many of the
 * document's words are timed, the sentences the narrator left out, and the audio that matched
 * no text (a preface, credits, music), and a one-line summary for the job list; null for other
 * jobs and before the result.
 */
export function recordingCoverage(job: { pipeline_type: string; config_json: { result?: JobResult } }): { words: string; summary: string; skipped: string | null; unmatchedAudio: string } | null {
  const r = job.config_json.result as Partial<RecordingCoverageResult> | undefined;
  if (job.pipeline_type !== 'readalong' || typeof r?.words !== 'number' || typeof r.words_timed !== 'number') return null;
  const n = (x: number) => x.toLocaleString('en-US');
  const share = (x: number) => `${(Math.floor(x * 1000) / 10).toFixed(1)} %`;
  const rest = r.words - r.words_timed;
  return {
    words: `${n(r.words_timed)} of ${n(r.words)} (${share(r.words ? r.words_timed / r.words : 0)})${rest ? `; the other ${n(rest)} are not read in the recording and are shown without a highlight` : ''}`,
    // the dashboard's one line
    summary: `${n(r.words_timed)} of ${n(r.words)} words matched (${share(r.words ? r.words_timed / r.words : 0)})`,
    skipped: r.sentences_skipped ? `${n(r.sentences_skipped)} sentence${r.sentences_skipped > 1 ? 's' : ''} inside the read text` : null,
    unmatchedAudio: share(r.audio_unmatched ?? 0),
  };
}

export function duration(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const r = s % 60;
  return h ? `${h}:${String(m).padStart(2, '0')}:${String(r).padStart(2, '0')}` : `${m}:${String(r).padStart(2, '0')}`;
}

export function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

export function when(iso: string): string {
  return new Date(iso).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });
}

const PHASES: Record<string, string> = {
  extract: 'Reading the document',
  segment: 'Splitting into sentences',
  synthesize: 'Speaking',
  align: 'Aligning words',
  decode: 'Decoding the recording',
  locate: 'Finding the text in the recording',
  'epub-audio': 'Cutting the chapters’ audio',
  'epub-images': 'Drawing figure pages',
  render: 'Rendering',
  audio: 'Writing the narration',
  pages: 'Drawing the pages',
  page: 'Lip-syncing page by page',
  assemble: 'Joining the pages',
  composite: 'Placing the presenter',
  package: 'Packaging the reader',
  encode: 'Encoding',
  store: 'Saving the files',
  done: 'Done',
};

export function phaseLabel(phase: string | undefined): string {
  if (!phase) return 'Waiting';
  return PHASES[phase] ?? phase.charAt(0).toUpperCase() + phase.slice(1);
}
