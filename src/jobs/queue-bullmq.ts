// Distributed TaskQueue: BullMQ on Redis. Workers on any machine; a worker that dies loses
// its lock after `leaseMs` and BullMQ's stalled check (run by every live worker) puts the job
// back in the wait list. close() hands running jobs back explicitly with moveToWait, so a
// restarted worker picks them up at once instead of after the lock lapses.
import { Job, Queue, WaitingError, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import type { Logger } from '../log.ts';
import type { TaskHandler, TaskKind, TaskQueue } from './types.ts';

export const QUEUE_NAME = 'lectern-jobs';

export interface BullQueueOptions {
  redisUrl: string;
  /** BullMQ key prefix: the namespace. */
  prefix: string;
  leaseMs: number;
  closeGraceMs?: number;
  log?: Logger;
}

interface TaskData {
  jobId: string;
  /** Absent on tasks queued before task kinds existed: those are pipeline runs. */
  kind?: TaskKind;
}

const OK = Symbol('ok');
const CLOSING = Symbol('closing');
type Outcome = typeof OK | typeof CLOSING | { err: unknown };

interface Running {
  controller: AbortController;
}

/** Recoveries after a dead worker before BullMQ gives up on a task (a task that kills every worker). */
const MAX_STALLED_COUNT = 3;

export class BullTaskQueue implements TaskQueue {
  private readonly queueConn: Redis;
  private workerConn: Redis | null = null;
  private readonly queue: Queue<TaskData>;
  private worker: Worker<TaskData> | null = null;
  private readonly running = new Map<string, Running>();
  /** Handler runs in this process by task id, so a redelivered task joins its run instead of starting a second. */
  private readonly runs = new Map<string, Promise<Outcome>>();
  private closing = false;
  private closeStarted: Promise<void> | null = null;
  private releaseGrace: () => void = () => undefined;
  private readonly graceOver: Promise<typeof CLOSING>;
  private requestClose: () => void = () => undefined;
  private readonly closeRequested: Promise<typeof CLOSING>;

  constructor(private readonly opts: BullQueueOptions) {
    // BullMQ needs maxRetriesPerRequest: null on connections it blocks on.
    this.queueConn = new Redis(opts.redisUrl, { maxRetriesPerRequest: null });
    this.queueConn.on('error', (err) => opts.log?.warn({ err }, 'redis (queue) connection error'));
    this.queue = new Queue<TaskData>(QUEUE_NAME, { connection: this.queueConn, prefix: opts.prefix });
    this.queue.on('error', (err) => opts.log?.warn({ err }, 'BullMQ queue error'));
    this.graceOver = new Promise((resolve) => (this.releaseGrace = () => resolve(CLOSING)));
    this.closeRequested = new Promise((resolve) => (this.requestClose = () => resolve(CLOSING)));
  }

  async enqueue(jobId: string, kind: TaskKind = 'pipeline'): Promise<string> {
    const job = await this.queue.add(kind === 'pipeline' ? 'run' : kind, { jobId, kind }, {
      attempts: 1, // a handler that throws has failed the job: no automatic retry
      removeOnComplete: { age: 24 * 3600, count: 10_000 },
      removeOnFail: { age: 7 * 24 * 3600, count: 10_000 },
    });
    return job.id!;
  }

  async consume(handler: TaskHandler, concurrency: number): Promise<void> {
    if (this.closing) throw new Error('the task queue is closed');
    if (this.worker) throw new Error('this task queue is already consuming');
    this.workerConn = new Redis(this.opts.redisUrl, { maxRetriesPerRequest: null });
    this.workerConn.on('error', (err) => this.opts.log?.warn({ err }, 'redis (worker) connection error'));
    const worker = new Worker<TaskData>(
      QUEUE_NAME,
      async (job, token) => {
        const taskId = job.id!;
        const already = this.runs.get(taskId);
        if (already) {
          // This process's event loop was blocked past the lock, and the stalled check handed the
          // task out again, here. Its first run is still going: wait for it rather than run the job twice at once.
          this.opts.log?.warn({ taskId, jobId: job.data.jobId }, 'task redelivered while it still runs in this process; joining that run');
          let outcome = await Promise.race([already, this.closeRequested]);
          if (outcome === CLOSING) outcome = await Promise.race([already, this.graceOver]);
          if (outcome === OK) return;
          if (outcome === CLOSING || this.closing) {
            await job.moveToWait(token);
            throw new WaitingError();
          }
          throw outcome.err;
        }
        const controller = new AbortController();
        this.running.set(taskId, { controller });
        const run: Promise<Outcome> = handler(job.data.jobId, {
          taskId,
          kind: job.data.kind ?? 'pipeline',
          attempt: Math.max(1, job.attemptsStarted),
          signal: controller.signal,
        }).then(
          () => OK,
          (err: unknown) => ({ err }),
        );
        this.runs.set(taskId, run);
        try {
          let outcome = await Promise.race([run, this.closeRequested]);
          // While closing, a handler that ignores its signal does not hold the shutdown forever.
          if (outcome === CLOSING) outcome = await Promise.race([run, this.graceOver]);
          if (outcome === OK) return;
          if (outcome === CLOSING || this.closing) {
            await job.moveToWait(token);
            throw new WaitingError();
          }
          throw outcome.err;
        } finally {
          this.running.delete(taskId);
          if (this.runs.get(taskId) === run) this.runs.delete(taskId);
        }
      },
      {
        connection: this.workerConn,
        prefix: this.opts.prefix,
        concurrency: Math.max(1, concurrency),
        lockDuration: this.opts.leaseMs,
        stalledInterval: this.opts.leaseMs,
        maxStalledCount: MAX_STALLED_COUNT,
        autorun: true,
      },
    );
    worker.on('error', (err) => this.opts.log?.warn({ err }, 'BullMQ worker error'));
    worker.on('failed', (job, err) => {
      if (job && !(err instanceof WaitingError)) this.opts.log?.warn({ taskId: job.id, jobId: job.data.jobId, err: err.message }, 'task failed');
    });
    this.worker = worker;
    await worker.waitUntilReady();
  }

  async remove(taskId: string): Promise<boolean> {
    const job = await Job.fromId<TaskData>(this.queue, taskId);
    if (!job) return false;
    const state = await job.getState();
    if (state !== 'waiting' && state !== 'delayed' && state !== 'prioritized') return false;
    // Queue.remove refuses a job a worker has locked meanwhile (returns 0).
    return (await this.queue.remove(taskId)) === 1;
  }

  close(): Promise<void> {
    this.closeStarted ??= this.doClose();
    return this.closeStarted;
  }

  private async doClose(): Promise<void> {
    this.closing = true;
    this.requestClose();
    const grace = setTimeout(this.releaseGrace, this.opts.closeGraceMs ?? 5_000);
    for (const r of this.running.values()) r.controller.abort(new Error('the worker is shutting down'));
    try {
      // Waits for the processors, which hand their jobs back with moveToWait.
      if (this.worker) await this.worker.close();
      await this.queue.close();
    } finally {
      clearTimeout(grace);
      this.releaseGrace();
      await Promise.allSettled([this.queueConn.quit(), this.workerConn?.quit()]);
    }
  }
}
