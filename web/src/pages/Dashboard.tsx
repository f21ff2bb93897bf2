// The job list: newest first, a status filter and pages (the API's limit/offset), each
// running job's row kept live from its event stream. The service lists only the signed-in
// token's jobs; for an admin (every job) each row names its owner, with an owner filter.
import { useCallback, useEffect, useState } from 'react';
import { api } from '../api.ts';
import { ErrorBox, ProgressBar, StatusBadge } from '../components/ui.tsx';
import { jobTitle, percent, phaseLabel, recordingCoverage, when } from '../format.ts';
import { Link, navigate, useLocation } from '../router.tsx';
import { JOB_STATUSES, PIPELINES, TERMINAL, type Job, type JobList, type Me } from '../types.ts';
import { useJobStream } from '../useJobStream.ts';

export const PAGE_SIZE = 10;
/** Browsers allow ~6 connections per host over HTTP/1.1: stream a few rows, poll the rest. */
const MAX_STREAMS = 3;

export function Dashboard({ me = null }: { me?: Me | null }) {
  const { query } = useLocation();
  const status = query.get('status') ?? '';
  const admin = me?.admin === true;
  const owner = admin ? (query.get('owner') ?? '') : '';
  const page = Math.max(1, Number(query.get('page')) || 1);
  const [list, setList] = useState<JobList | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [loading, setLoading] = useState(true);

  const load = useCallback(async () => {
    try {
      setList(await api.listJobs({ status: status || undefined, owner: owner || undefined, limit: PAGE_SIZE, offset: (page - 1) * PAGE_SIZE }));
      setError(null);
    } catch (err) {
      setError(err);
    } finally {
      setLoading(false);
    }
  }, [status, owner, page]);

  useEffect(() => {
    setLoading(true);
    void load();
  }, [load]);

  const live = list?.jobs.filter((j) => !TERMINAL.includes(j.status)) ?? [];
  useEffect(() => {
    if (live.length <= MAX_STREAMS && !live.some((j) => j.status === 'pending')) return;
    const t = setInterval(() => void load(), 5000);
    return () => clearInterval(t);
  }, [live.length, load]); // eslint-disable-line react-hooks/exhaustive-deps

  const setQuery = (next: { status?: string; owner?: string; page?: number }) => {
    const p = new URLSearchParams();
    const s = next.status ?? status;
    if (s) p.set('status', s);
    const o = next.owner ?? owner;
    if (o) p.set('owner', o);
    const pg = next.page ?? 1;
    if (pg > 1) p.set('page', String(pg));
    navigate(`/${p.size ? `?${p}` : ''}`);
  };

  const pages = list ? Math.max(1, Math.ceil(list.total / PAGE_SIZE)) : 1;
  let streamed = 0;
  return (
    <section aria-labelledby="jobs-heading">
      <div className="toolbar">
        <h1 id="jobs-heading">Jobs</h1>
        <Link to="/new" className="button primary">
          New job
        </Link>
      </div>
      <div className="filters">
        <label htmlFor="status-filter">Status</label>
        <select id="status-filter" value={status} onChange={(e) => setQuery({ status: e.target.value, page: 1 })}>
          <option value="">All</option>
          {JOB_STATUSES.map((s) => (
            <option key={s} value={s}>
              {s}
            </option>
          ))}
        </select>
        {admin ? (
          <>
            <label htmlFor="owner-filter">Owner</label>
            <select id="owner-filter" value={owner} onChange={(e) => setQuery({ owner: e.target.value, page: 1 })}>
              <option value="">Everyone</option>
              {(me?.owners ?? []).map((o) => (
                <option key={o} value={o}>
                  {o}
                </option>
              ))}
            </select>
          </>
        ) : null}
        <button type="button" onClick={() => void load()}>
          Refresh
        </button>
      </div>
      {error ? (
        <div>
          <ErrorBox error={error} title="Could not load the jobs" />
        </div>
      ) : null}
      {loading && !list ? <p aria-live="polite">Loading…</p> : null}
      {list && list.jobs.length === 0 ? (
        <div className="empty">
          {status || owner ? <p>No {status ? `${status} ` : ''}jobs{owner ? ` of ${owner}` : ''}.</p> : <p>No jobs yet. Upload a document to make your first narration.</p>}
          {!status && !owner ? (
            <Link to="/new" className="button primary">
              Create a job
            </Link>
          ) : null}
        </div>
      ) : null}
      {list && list.jobs.length > 0 ? (
        <ul className="job-list" aria-label="Jobs, newest first">
          {list.jobs.map((j) => {
            const stream = !TERMINAL.includes(j.status) && streamed++ < MAX_STREAMS;
            return <JobRow key={j.id} job={j} stream={stream} onEnd={load} showOwner={admin} />;
          })}
        </ul>
      ) : null}
      {list && list.total > PAGE_SIZE ? (
        <nav className="pager" aria-label="Pages">
          <button type="button" disabled={page <= 1} onClick={() => setQuery({ page: page - 1 })}>
            Previous
          </button>
          <span aria-live="polite">
            Page {page} of {pages} ({list.total} jobs)
          </span>
          <button type="button" disabled={page >= pages} onClick={() => setQuery({ page: page + 1 })}>
            Next
          </button>
        </nav>
      ) : null}
    </section>
  );
}

function JobRow({ job: initial, stream, onEnd, showOwner }: { job: Job; stream: boolean; onEnd: () => void; showOwner: boolean }) {
  const streamed = useJobStream(stream ? initial : null, () => onEnd());
  const job = streamed ?? initial;
  const title = jobTitle(job);
  // a finished read-along job says how much of the book its recording matched, so a recording of
  // another edition (or a wrong file) shows in the list, not only on the job's page
  const coverage = recordingCoverage(job);
  return (
    <li className="job-row" data-job-id={job.id}>
      <div className="job-row-main">
        <Link to={`/jobs/${job.id}`} className="job-title">
          {title}
        </Link>
        <span className="muted">
          {PIPELINES[job.pipeline_type]?.label ?? job.pipeline_type} · {when(job.created_at)}
        </span>
        {coverage ? (
          <span className="muted small" data-testid="row-words-timed">
            Recording: {coverage.summary}
          </span>
        ) : null}
        {showOwner ? (
          <span className="job-owner small">
            Owner: <strong>{job.owner ?? 'no owner (made without a token)'}</strong>
          </span>
        ) : null}
      </div>
      <StatusBadge status={job.status} />
      <div className="job-row-progress">
        <ProgressBar value={percent(job)} label={`Progress of ${title}`} />
        <span className="muted small">{job.status === 'failed' ? 'Failed' : phaseLabel(job.progress?.phase)}</span>
      </div>
    </li>
  );
}
