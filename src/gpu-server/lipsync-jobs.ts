// The lip-sync job table: queued → running → done | failed | cancelled. Generation runs in
// the provider (a child process or the pool), results live on disk under one directory
// per job, finished jobs expire after a TTL, and the table holds at most maxJobs records.
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import PQueue from 'p-queue';
import { conflict, notFound, notReady, oneLine } from '../core/errors.ts';
import type { LipsyncProvider } from '../speech/lipsync/types.ts';

export const LIPSYNC_STATES = ['queued', 'running', 'done', 'failed', 'cancelled'] as const;
export type LipsyncState = (typeof LIPSYNC_STATES)[number];

interface Job {
  id: string;
  status: LipsyncState;
  provider: string;
  preset: string;
  dir: string;
  audioPath: string;
  referenceVideoPath: string;
  outputPath: string;
  createdAt: number;
  startedAt: number | null;
  finishedAt: number | null;
  error: string | null;
  cancelRequested: boolean;
  fetched: boolean;
  controller: AbortController;
}

export interface LipsyncJobView {
  lipsync_id: string;
  status: LipsyncState;
  /** Seconds of generation so far (running) or in total (finished); 0 while queued. */
  elapsed: number;
  error: string | null;
  provider: string;
  preset: string;
  cancel_requested: boolean;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
}

export interface LipsyncTableOptions {
  dir: string;
  ttlMs: number;
  maxJobs: number;
  /** Generations running at once. */
  concurrency: number;
  onError?: (id: string, err: unknown) => void;
}

const iso = (t: number | null) => (t === null ? null : new Date(t).toISOString());
const FINISHED: readonly LipsyncState[] = ['done', 'failed', 'cancelled'];

export class LipsyncJobTable {
  private readonly jobs = new Map<string, Job>();
  private readonly queue: PQueue;
  private readonly sweeper: NodeJS.Timeout;
  private draining = false;

  constructor(private readonly opts: LipsyncTableOptions) {
    this.queue = new PQueue({ concurrency: opts.concurrency });
    fs.mkdirSync(opts.dir, { recursive: true });
    this.sweeper = setInterval(() => this.sweep(), Math.max(50, Math.min(60_000, opts.ttlMs / 4)));
    this.sweeper.unref();
  }

  /** A fresh job directory for the uploads, before the job is submitted. */
  allocate(): { id: string; dir: string } {
    if (this.draining) throw notReady('the server is shutting down; submit the lip-sync job to another server');
    this.sweep();
    if (this.jobs.size >= this.opts.maxJobs && !this.evictOldestFinished()) {
      throw notReady(`the lip-sync job table is full (${this.opts.maxJobs} jobs); delete finished jobs or retry later`);
    }
    const id = randomUUID();
    const dir = path.join(this.opts.dir, id);
    fs.mkdirSync(dir, { recursive: true });
    return { id, dir };
  }

  /** Discards an allocated directory whose upload failed validation. */
  release(dir: string): void {
    fs.rmSync(dir, { recursive: true, force: true });
  }

  submit(a: { id: string; dir: string; provider: LipsyncProvider; preset: string; audioPath: string; referenceVideoPath: string }): LipsyncJobView {
    const job: Job = {
      id: a.id,
      status: 'queued',
      provider: a.provider.name,
      preset: a.preset,
      dir: a.dir,
      audioPath: a.audioPath,
      referenceVideoPath: a.referenceVideoPath,
      outputPath: path.join(a.dir, 'result.mp4'),
      createdAt: Date.now(),
      startedAt: null,
      finishedAt: null,
      error: null,
      cancelRequested: false,
      fetched: false,
      controller: new AbortController(),
    };
    this.jobs.set(job.id, job);
    const handle = this.view(job); // `queued` on submission, even when a slot is free and it starts right away
    void this.queue.add(() => this.execute(job, a.provider));
    return handle;
  }

  private async execute(job: Job, provider: LipsyncProvider): Promise<void> {
    if (job.status !== 'queued') return; // cancelled or deleted while waiting
    job.status = 'running';
    job.startedAt = Date.now();
    try {
      await provider.generate(
        { audioPath: job.audioPath, referenceVideoPath: job.referenceVideoPath, outputPath: job.outputPath, preset: job.preset },
        job.controller.signal,
      );
      job.finishedAt = Date.now();
      if (job.cancelRequested) {
        job.status = 'cancelled';
        fs.rmSync(job.outputPath, { force: true }); // a cancelled job's result is discarded
      } else {
        job.status = 'done';
      }
    } catch (e) {
      job.finishedAt = Date.now();
      fs.rmSync(job.outputPath, { force: true });
      if (job.cancelRequested) {
        job.status = 'cancelled';
      } else {
        job.status = 'failed';
        job.error = oneLine(e);
        this.opts.onError?.(job.id, e);
      }
    }
    if (!this.jobs.has(job.id)) fs.rmSync(job.dir, { recursive: true, force: true }); // deleted while running
  }

  get(id: string): LipsyncJobView {
    return this.view(this.find(id));
  }

  /** queued → cancelled at once; running → cancellation recorded, the generation stopped and its result discarded when it exits. */
  cancel(id: string): LipsyncJobView {
    const job = this.find(id);
    if (job.status === 'queued') {
      job.status = 'cancelled';
      job.cancelRequested = true;
      job.finishedAt = Date.now();
    } else if (job.status === 'running') {
      job.cancelRequested = true;
      job.controller.abort();
    }
    return this.view(job);
  }

  /** Path of the finished MP4; 409 unless done. Marks the job fetched. */
  resultPath(id: string): string {
    const job = this.find(id);
    if (job.status !== 'done') throw conflict(`lip-sync job ${id} is ${job.status}, not done`);
    job.fetched = true;
    return job.outputPath;
  }

  /** Removes the record and its files; a running generation is stopped. */
  delete(id: string): void {
    const job = this.find(id);
    this.jobs.delete(id);
    if (job.status === 'running') {
      job.cancelRequested = true;
      job.controller.abort(); // execute() removes the directory when the generation exits
    } else {
      if (job.status === 'queued') job.status = 'cancelled';
      fs.rmSync(job.dir, { recursive: true, force: true });
    }
  }

  counts(): Record<LipsyncState, number> {
    const c = Object.fromEntries(LIPSYNC_STATES.map((s) => [s, 0])) as Record<LipsyncState, number>;
    for (const j of this.jobs.values()) c[j.status]++;
    return c;
  }

  /** Removes finished jobs older than the TTL (fetched or not: clients should DELETE, this is the safety net). */
  sweep(now = Date.now()): number {
    let n = 0;
    for (const j of [...this.jobs.values()]) {
      if (FINISHED.includes(j.status) && j.finishedAt !== null && now - j.finishedAt >= this.opts.ttlMs) {
        this.jobs.delete(j.id);
        fs.rmSync(j.dir, { recursive: true, force: true });
        n++;
      }
    }
    return n;
  }

  private evictOldestFinished(): boolean {
    let oldest: Job | null = null;
    for (const j of this.jobs.values()) {
      if (FINISHED.includes(j.status) && (!oldest || j.finishedAt! < oldest.finishedAt!)) oldest = j;
    }
    if (!oldest) return false;
    this.jobs.delete(oldest.id);
    fs.rmSync(oldest.dir, { recursive: true, force: true });
    return true;
  }

  private find(id: string): Job {
    const job = this.jobs.get(id);
    if (!job) throw notFound(`unknown lip-sync job ${id}`);
    return job;
  }

  private view(j: Job): LipsyncJobView {
    const end = j.finishedAt ?? Date.now();
    return {
      lipsync_id: j.id,
      status: j.status,
      elapsed: j.startedAt === null ? 0 : Math.round((end - j.startedAt) / 10) / 100,
      error: j.error,
      provider: j.provider,
      preset: j.preset,
      cancel_requested: j.cancelRequested,
      created_at: iso(j.createdAt)!,
      started_at: iso(j.startedAt),
      finished_at: iso(j.finishedAt),
    };
  }

  /**
   * Shutdown, first step: takes no new jobs, gives those queued or running up to `graceMs`
   * to finish (and a finished result the time to be fetched), then cancels the rest.
   * Returns which finished and which were cancelled, for the log.
   */
  async drain(graceMs: number): Promise<{ finished: Array<{ id: string; status: LipsyncState }>; cancelled: string[] }> {
    this.draining = true;
    const inFlight = [...this.jobs.values()].filter((j) => j.status === 'queued' || j.status === 'running');
    const settled = () => inFlight.every((j) => !this.jobs.has(j.id) || (FINISHED.includes(j.status) && (j.status !== 'done' || j.fetched)));
    const deadline = Date.now() + graceMs;
    while (!settled() && Date.now() < deadline) await new Promise((r) => setTimeout(r, Math.min(50, Math.max(1, deadline - Date.now()))));
    const cancelled: string[] = [];
    for (const j of inFlight) {
      if (j.status === 'queued' || j.status === 'running') {
        if (this.jobs.has(j.id)) this.cancel(j.id);
        else j.controller.abort();
        cancelled.push(j.id);
      }
    }
    const finished = inFlight.filter((j) => !cancelled.includes(j.id)).map((j) => ({ id: j.id, status: j.status }));
    return { finished, cancelled };
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    this.queue.clear();
    for (const j of this.jobs.values()) {
      if (j.status === 'running') {
        j.cancelRequested = true;
        j.controller.abort();
      }
    }
    await this.queue.onIdle();
  }
}
