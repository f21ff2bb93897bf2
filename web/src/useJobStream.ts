// A job kept live from its event stream (fetch-based SSE, so the token goes with it).
import { useEffect, useState } from 'react';
import { ApiError, streamEvents } from './api.ts';
import { TERMINAL, type Job } from './types.ts';

export function applyEvent(job: Job, e: import('./types.ts').JobEvent): Job {
  switch (e.event) {
    case 'snapshot':
    case 'end':
      return e.data;
    case 'progress':
      return { ...job, progress: e.data };
    case 'status':
      return { ...job, status: e.data.status, error: e.data.error };
  }
}

/** Follows `initial` while it is not finished; reconnects after a dropped stream. */
export function useJobStream(initial: Job | null, onEnd?: (job: Job) => void): Job | null {
  const [job, setJob] = useState<Job | null>(initial);
  useEffect(() => setJob(initial), [initial]);
  const id = initial?.id;
  const live = initial && !TERMINAL.includes(initial.status);
  useEffect(() => {
    if (!id || !live) return;
    const ctrl = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const connect = () => {
      let ended = false;
      streamEvents(
        id,
        (e) => {
          if (e.event === 'end') {
            ended = true;
            onEnd?.(e.data);
          }
          setJob((j) => (j ? applyEvent(j, e) : e.event === 'snapshot' || e.event === 'end' ? e.data : j));
        },
        ctrl.signal,
      )
        .then(() => {
          // The stream closes after `end`; closing without one means it dropped (or the job was deleted).
          if (!ended && !ctrl.signal.aborted) timer = setTimeout(connect, 2000);
        })
        .catch((err: unknown) => {
          if (ctrl.signal.aborted || (err instanceof ApiError && err.status === 404)) return;
          timer = setTimeout(connect, 3000);
        });
    };
    connect();
    return () => {
      ctrl.abort();
      clearTimeout(timer);
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [id, live]);
  return job;
}
