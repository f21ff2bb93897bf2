// One job: phase, progress, pages done and elapsed time, the error in plain words, and
// what can be done with it (read, download, EPUB export, stop, delete).
import { useCallback, useEffect, useState } from 'react';
import { api, ApiError, download } from '../api.ts';
import { ConfirmButton, ErrorBox, ProgressBar, StatusBadge } from '../components/ui.tsx';
import { duration, jobTitle, percent, phaseLabel, recordingCoverage, when } from '../format.ts';
import { Link, navigate } from '../router.tsx';
import { FORMAT_LABELS, PIPELINES, TERMINAL, TIMELINE_FILE, type Job } from '../types.ts';
import { useJobStream } from '../useJobStream.ts';
import { EpubExport } from './EpubExport.tsx';

export function hasReader(job: Job): boolean {
  const files = job.config_json.result?.files ?? [];
  return (job.status === 'completed' || job.status === 'stopped') && files.includes(TIMELINE_FILE);
}

/**
 * Pages done: what the pipeline recorded when it ended (`pages_done`/`pages_total`), or while
 * a lip-sync job runs, its page progress (it counts pages finished).
 */
export function pagesOf(job: Job): { done: number; total: number | null } | null {
  const c = job.config_json;
  if (typeof c.pages_done === 'number') return { done: c.pages_done, total: typeof c.pages_total === 'number' ? c.pages_total : null };
  const p = job.progress;
  if (job.pipeline_type === 'lipsync' && p?.phase === 'page') return { done: p.current, total: p.total };
  return null;
}

export function JobPage({ id }: { id: string }) {
  const [initial, setInitial] = useState<Job | null>(null);
  const [error, setError] = useState<unknown>(null);
  const load = useCallback(() => {
    api.getJob(id).then(setInitial, setError);
  }, [id]);
  useEffect(load, [load]);
  const job = useJobStream(initial, (final) => setInitial(final));
  const now = useNow(job !== null && !TERMINAL.includes(job.status));

  if (error) {
    return (
      <section>
        <h1>Job</h1>
        <ErrorBox error={error} title={error instanceof ApiError && error.status === 404 ? 'Not found' : 'Could not load the job'} />
        <Link to="/">Back to the jobs</Link>
      </section>
    );
  }
  if (!job) return <p aria-live="polite">Loading…</p>;

  const title = jobTitle(job);
  const started = job.started_at ? Date.parse(job.started_at) : null;
  const ended = job.finished_at ? Date.parse(job.finished_at) : now;
  const elapsed = started ? (ended - started) / 1000 : null;
  const p = job.progress;
  const format = String(job.config_json.options?.format ?? '');
  const output = job.config_json.result?.output ?? '';
  const pages = pagesOf(job);
  const coverage = recordingCoverage(job);
  const canStop = (job.pipeline_type === 'lipsync' || job.pipeline_type === 'readalong') && (job.status === 'running' || job.status === 'pending');

  return (
    <section aria-labelledby="job-heading">
      <p>
        <Link to="/">← All jobs</Link>
      </p>
      <div className="toolbar">
        <h1 id="job-heading">{title}</h1>
        <StatusBadge status={job.status} />
      </div>
      <dl className="facts">
        <dt>Pipeline</dt>
        <dd>
          {PIPELINES[job.pipeline_type]?.label ?? job.pipeline_type}
          {format ? ` · ${FORMAT_LABELS[format] ?? format}` : ''}
        </dd>
        <dt>Created</dt>
        <dd>{when(job.created_at)}</dd>
        <dt>Phase</dt>
        <dd data-testid="phase">
          {job.status === 'completed' ? 'Done' : phaseLabel(p?.phase)}
          {p && p.total > 1 && job.status === 'running' ? ` (${p.current} of ${p.total})` : ''}
        </dd>
        {pages ? (
          <>
            <dt>Pages done</dt>
            <dd data-testid="pages-done">{pages.total ? `${pages.done} of ${pages.total}` : pages.done}</dd>
          </>
        ) : null}
        {elapsed !== null ? (
          <>
            <dt>{TERMINAL.includes(job.status) ? 'Took' : 'Elapsed'}</dt>
            <dd>{duration(elapsed)}</dd>
          </>
        ) : null}
        {typeof job.config_json.result?.duration_seconds === 'number' ? (
          <>
            <dt>Length</dt>
            <dd>{duration(job.config_json.result.duration_seconds)}</dd>
          </>
        ) : null}
        {coverage ? (
          <>
            <dt>Words timed</dt>
            <dd data-testid="words-timed">{coverage.words}</dd>
            {coverage.skipped ? (
              <>
                <dt>Left out by the narrator</dt>
                <dd>{coverage.skipped}</dd>
              </>
            ) : null}
            <dt>Audio not in the text</dt>
            <dd>{coverage.unmatchedAudio}</dd>
          </>
        ) : null}
      </dl>
      <ProgressBar value={percent(job)} label={`Progress of ${title}`} />
      {job.status === 'failed' && job.error ? <ErrorBox error={job.error} title="The job failed" /> : null}
      {job.status === 'stopped' ? <p className="note">Stopped on request{job.download_url ? '; the output holds the pages done.' : '.'}</p> : null}

      <div className="actions">
        {hasReader(job) ? (
          <Link to={`/jobs/${job.id}/read`} className="button primary">
            Open the reader
          </Link>
        ) : null}
        {job.download_url ? <DownloadButton job={job} label={output.endsWith('.zip') ? 'Download the offline reader (ZIP)' : 'Download'} /> : null}
        {canStop ? (
          <ConfirmButton
            label="Stop"
            confirmLabel="Yes, stop it"
            question={job.pipeline_type === 'readalong' ? 'Stop aligning the recording? Nothing will be made.' : 'Stop after the page in progress? The output will hold the pages done so far.'}
            onConfirm={async () => {
              await api.stopJob(job.id);
            }}
          />
        ) : null}
        <ConfirmButton
          label="Delete"
          confirmLabel="Yes, delete"
          question={`Delete “${title}” and its outputs? This cannot be undone.`}
          onConfirm={async () => {
            await api.deleteJob(job.id);
            navigate('/');
          }}
        />
      </div>
      {job.pipeline_type === 'lipsync' && (job.status === 'completed' || job.status === 'stopped') ? <EpubExport jobId={job.id} /> : null}
    </section>
  );
}

export function DownloadButton({ job, label }: { job: Job; label: string }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [saved, setSaved] = useState<string | null>(null);
  return (
    <>
      <button
        type="button"
        disabled={busy}
        onClick={async () => {
          setBusy(true);
          setError(null);
          try {
            setSaved(await download(job.download_url!, `${jobTitle(job)}`));
          } catch (err) {
            setError(err);
          } finally {
            setBusy(false);
          }
        }}
      >
        {busy ? 'Downloading…' : label}
      </button>
      {saved ? (
        <span className="muted small" role="status">
          Saved {saved}
        </span>
      ) : null}
      <ErrorBox error={error} title="Download failed" />
    </>
  );
}

function useNow(ticking: boolean): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    if (!ticking) return;
    const t = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(t);
  }, [ticking]);
  return now;
}
