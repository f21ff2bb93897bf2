// EPUB export of a finished lip-sync job: start it, watch its state, download the result.
// The export endpoints may be missing on an older service (404) or refuse (409): both are
// shown as plain words, never as a broken button.
import { useCallback, useEffect, useState } from 'react';
import { api, ApiError, download } from '../api.ts';
import { ErrorBox } from '../components/ui.tsx';
import type { EpubExportStatus } from '../types.ts';

export function EpubExport({ jobId }: { jobId: string }) {
  const [state, setState] = useState<EpubExportStatus | null>(null);
  const [unavailable, setUnavailable] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);

  const refresh = useCallback(async () => {
    try {
      setState(await api.exportEpubStatus(jobId));
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) setUnavailable('EPUB export is not available on this server.');
      else setError(err);
    }
  }, [jobId]);
  useEffect(() => void refresh(), [refresh]);
  const running = state?.export_status === 'running';
  useEffect(() => {
    if (!running) return;
    const t = setInterval(() => void refresh(), 2000);
    return () => clearInterval(t);
  }, [running, refresh]);

  const start = async () => {
    setBusy(true);
    setError(null);
    try {
      await api.exportEpub(jobId);
      await refresh();
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) setUnavailable('EPUB export is not available on this server.');
      else if (err instanceof ApiError && err.status === 409) {
        setError(new Error(`The export cannot start now: ${err.detail}`));
        await refresh();
      } else setError(err);
    } finally {
      setBusy(false);
    }
  };

  return (
    <section className="panel" aria-labelledby="epub-heading">
      <h2 id="epub-heading">EPUB export</h2>
      {unavailable ? (
        <p className="muted">{unavailable}</p>
      ) : (
        <>
          <p role="status">
            {state?.export_status === 'done'
              ? 'The EPUB is ready.'
              : running
                ? 'Exporting…'
                : state?.export_status === 'failed'
                  ? 'The last export failed.'
                  : 'Not exported yet.'}
          </p>
          {state?.export_error ? <ErrorBox error={state.export_error} title="Export error" /> : null}
          <div className="actions">
            {state?.export_status === 'done' ? (
              <button type="button" onClick={() => download(`/api/jobs/${encodeURIComponent(jobId)}/export-epub/download`, 'lectern.epub').catch(setError)}>
                Download EPUB
              </button>
            ) : null}
            <button type="button" onClick={start} disabled={busy || running}>
              {state?.export_status === 'done' || state?.export_status === 'failed' ? 'Export again' : 'Export as EPUB'}
            </button>
          </div>
        </>
      )}
      <ErrorBox error={error} />
    </section>
  );
}
