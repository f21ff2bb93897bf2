// Removes what a crash can leave in the store: a job's objects after its row was deleted
// (DELETE removes the row first, then the objects), an upload's object whose row was never
// written or was deleted, and unfinished multipart uploads. Runs at start-up and
// periodically in `serve`; safe to run anywhere, any number of times.
import { INTERNAL } from '../core/caller.ts';
import { oneLine } from '../core/errors.ts';
import type { Logger } from '../log.ts';
import { jobPrefix, OUTPUTS_PREFIX, ownerOfKey, UPLOADS_PREFIX, type Storage } from '../storage.ts';
import type { JobStore } from './types.ts';

/** An upload's object is stored before its row: one younger than this may still get its row. */
export const UPLOAD_ROW_GRACE_MS = 60 * 60 * 1000;
/** Unfinished multipart uploads (or local partial files) older than this are aborted. */
export const STALE_UPLOAD_MS = 24 * 60 * 60 * 1000;

export interface SweepResult {
  jobs: number;
  uploads: number;
  aborted: number;
}

export async function sweepStorage(storage: Storage, jobs: Pick<JobStore, 'getJob' | 'getUpload'>, now = new Date()): Promise<SweepResult> {
  const result: SweepResult = { jobs: 0, uploads: 0, aborted: 0 };
  // A job's row exists from before its first object until DELETE: no grace period needed.
  const jobIds = new Set<string>();
  for await (const o of storage.list(OUTPUTS_PREFIX)) {
    const owner = ownerOfKey(o.key);
    if (owner && 'job' in owner) jobIds.add(owner.job);
  }
  for (const id of jobIds) {
    if (await jobs.getJob(id, INTERNAL)) continue;
    await storage.deletePrefix(jobPrefix(id));
    result.jobs++;
  }
  for await (const o of storage.list(UPLOADS_PREFIX)) {
    const owner = ownerOfKey(o.key);
    if (!owner || !('upload' in owner)) continue;
    if (now.getTime() - o.lastModified.getTime() < UPLOAD_ROW_GRACE_MS) continue;
    if (await jobs.getUpload(owner.upload, INTERNAL)) continue;
    await storage.delete(o.key);
    result.uploads++;
  }
  result.aborted = await storage.abortStaleUploads(new Date(now.getTime() - STALE_UPLOAD_MS));
  return result;
}

/** Sweeps now and then every `intervalMs` (0 → only now); failures are logged, never thrown. */
export function startStorageSweeper(storage: Storage, jobs: Pick<JobStore, 'getJob' | 'getUpload'>, log: Logger, intervalMs: number): { stop(): Promise<void> } {
  let running: Promise<void> = Promise.resolve();
  const run = () => {
    running = running.then(async () => {
      try {
        const r = await sweepStorage(storage, jobs);
        if (r.jobs || r.uploads || r.aborted) log.info({ ...r, store: storage.where }, 'storage sweep removed orphaned objects');
      } catch (err) {
        log.warn({ err: oneLine(err), store: storage.where }, 'storage sweep failed; it runs again later');
      }
    });
  };
  run();
  const timer = intervalMs > 0 ? setInterval(run, intervalMs) : null;
  timer?.unref();
  return {
    async stop() {
      if (timer) clearInterval(timer);
      await running;
    },
  };
}
