// Small shared pieces: progress bar, status badge, error box, inline confirmation.
import { useEffect, useRef, useState, type ReactNode } from 'react';
import type { JobStatus } from '../types.ts';

export function ProgressBar({ value, label }: { value: number; label: string }) {
  return (
    <div className="progress-wrap">
      <div className="progress" role="progressbar" aria-label={label} aria-valuemin={0} aria-valuemax={100} aria-valuenow={value} aria-valuetext={`${value} %`}>
        <div className="progress-fill" style={{ width: `${value}%` }} />
      </div>
      <span className="progress-text" aria-hidden="true">
        {value} %
      </span>
    </div>
  );
}

export function StatusBadge({ status }: { status: JobStatus }) {
  return <span className={`badge badge-${status}`}>{status}</span>;
}

export function ErrorBox({ error, title }: { error: unknown; title?: string }) {
  if (!error) return null;
  const text = error instanceof Error ? error.message : String(error);
  return (
    <div className="error" role="alert">
      {title ? <strong>{title}: </strong> : null}
      {text}
    </div>
  );
}

/**
 * A button that asks again inline before acting: the first press shows "confirm" and
 * "cancel" in its place (focus moves to cancel, the safe choice), the second does it.
 */
export function ConfirmButton({ label, confirmLabel, question, onConfirm, danger = true, disabled }: { label: string; confirmLabel: string; question: ReactNode; onConfirm: () => Promise<void> | void; danger?: boolean; disabled?: boolean }) {
  const [asking, setAsking] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const cancelRef = useRef<HTMLButtonElement>(null);
  const openRef = useRef<HTMLButtonElement>(null);
  const wasAsking = useRef(false);
  useEffect(() => {
    if (asking) cancelRef.current?.focus();
    else if (wasAsking.current) openRef.current?.focus();
    wasAsking.current = asking;
  }, [asking]);
  if (!asking) {
    return (
      <>
        <button ref={openRef} type="button" className={danger ? 'danger' : ''} onClick={() => setAsking(true)} disabled={disabled}>
          {label}
        </button>
        <ErrorBox error={error} />
      </>
    );
  }
  const confirm = async () => {
    setBusy(true);
    setError(null);
    try {
      await onConfirm();
      setAsking(false);
    } catch (err) {
      setError(err);
      setAsking(false);
    } finally {
      setBusy(false);
    }
  };
  return (
    <div className="confirm" role="group" aria-label={label}>
      <span className="confirm-question">{question}</span>
      <button type="button" className={danger ? 'danger' : ''} onClick={confirm} disabled={busy}>
        {busy ? 'Working…' : confirmLabel}
      </button>
      <button ref={cancelRef} type="button" onClick={() => setAsking(false)} disabled={busy} onKeyDown={(e) => e.key === 'Escape' && setAsking(false)}>
        Cancel
      </button>
    </div>
  );
}
