// Embedded TaskQueue: a durable queue_tasks table in the SQLite file. Consumers (in this
// process or in separate `lectern worker` processes on the same file) lease one task at a
// time with a single UPDATE, heartbeat the lease while the handler runs, and take over any
// task whose lease ran out because its worker died.
import { EventEmitter } from 'node:events';
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import type { Logger } from '../log.ts';
import type { Connection } from './db.ts';
import type { TaskHandler, TaskKind, TaskQueue } from './types.ts';

/** Same-process wake-ups keyed by database file, so an enqueue starts the job without waiting for a poll. */
const wakeups = new EventEmitter();
wakeups.setMaxListeners(0);

export interface SqliteQueueOptions {
  leaseMs: number;
  heartbeatMs: number;
  /** How often idle consumers look for work queued by other processes or for expired leases. */
  pollMs?: number;
  /** How long close() waits for aborted handlers before handing their tasks back anyway. */
  closeGraceMs?: number;
  log?: Logger;
}

interface Running {
  taskId: string;
  owner: string;
  heartbeat: NodeJS.Timeout;
  controller: AbortController;
  done: Promise<void>;
}

export class SqliteTaskQueue implements TaskQueue {
  private handler: TaskHandler | null = null;
  private concurrency = 0;
  private readonly running = new Map<string, Running>();
  private closed = false;
  private pollTimer: NodeJS.Timeout | null = null;
  private filling = false;
  private refill = false;
  private readonly pollMs: number;
  private readonly closeGraceMs: number;
  private readonly onWake = () => void this.fill();

  constructor(
    private readonly conn: Connection,
    private readonly opts: SqliteQueueOptions,
  ) {
    this.pollMs = opts.pollMs ?? 200;
    this.closeGraceMs = opts.closeGraceMs ?? 5_000;
  }

  private get db() {
    return this.conn.db;
  }

  async enqueue(jobId: string, kind: TaskKind = 'pipeline'): Promise<string> {
    const now = new Date().toISOString();
    const row = await this.db
      .insertInto('queue_tasks')
      .values({ job_id: jobId, kind, state: 'queued', owner: null, lease_until: null, attempts: 0, created_at: now, updated_at: now })
      .returning('id')
      .executeTakeFirstOrThrow();
    wakeups.emit(this.conn.location);
    return String(row.id);
  }

  async consume(handler: TaskHandler, concurrency: number): Promise<void> {
    if (this.closed) throw new Error('the task queue is closed');
    if (this.handler) throw new Error('this task queue is already consuming');
    this.handler = handler;
    this.concurrency = Math.max(1, concurrency);
    wakeups.on(this.conn.location, this.onWake);
    await this.fill();
  }

  async remove(taskId: string): Promise<boolean> {
    const r = await this.db.deleteFrom('queue_tasks').where('id', '=', Number(taskId)).where('state', '=', 'queued').executeTakeFirst();
    return Number(r.numDeletedRows) > 0;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    wakeups.off(this.conn.location, this.onWake);
    if (this.pollTimer) clearTimeout(this.pollTimer);
    const running = [...this.running.values()];
    for (const r of running) r.controller.abort(new Error('the worker is shutting down'));
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled(running.map((r) => r.done)),
      new Promise<void>((resolve) => (timer = setTimeout(resolve, this.closeGraceMs))),
    ]);
    clearTimeout(timer);
    // Back to the queue at once, rather than waiting for the lease to lapse. A handler still
    // running past the grace period no longer holds the task: stop its heartbeat.
    for (const r of running) {
      clearInterval(r.heartbeat);
      await this.db
        .updateTable('queue_tasks')
        .set({ state: 'queued', owner: null, lease_until: null, updated_at: new Date().toISOString() })
        .where('id', '=', Number(r.taskId))
        .where('owner', '=', r.owner)
        .where('state', '=', 'leased')
        .execute()
        .catch((err) => this.opts.log?.warn({ err, taskId: r.taskId }, 'could not hand a task back to the queue'));
    }
    this.running.clear();
  }

  /** Leases tasks until every slot is busy or nothing is left, then schedules the next poll. */
  private async fill(): Promise<void> {
    if (this.closed || !this.handler) return;
    if (this.filling) {
      this.refill = true;
      return;
    }
    this.filling = true;
    try {
      do {
        this.refill = false;
        while (!this.closed && this.running.size < this.concurrency) {
          const leased = await this.lease();
          if (!leased) break;
          this.start(leased.id, leased.job_id, leased.kind, leased.attempts, leased.owner);
        }
      } while (this.refill && !this.closed);
    } catch (err) {
      this.opts.log?.error({ err }, 'the task queue could not lease a task');
    } finally {
      this.filling = false;
      if (!this.closed) {
        if (this.pollTimer) clearTimeout(this.pollTimer);
        this.pollTimer = setTimeout(() => void this.fill(), this.pollMs);
      }
    }
  }

  /**
   * One statement, so two consumers never lease the same task; an expired lease counts as free,
   * except one this process holds itself: a lease that lapsed because this event loop was
   * blocked (a busy machine) is still being worked on here, and its next heartbeat renews it.
   * Taking it again would run the same job twice at once.
   */
  private async lease(): Promise<{ id: string; job_id: string; kind: TaskKind; attempts: number; owner: string } | null> {
    const owner = randomUUID();
    const now = Date.now();
    const mine = [...this.running.keys()].map(Number);
    const notMine = mine.length > 0 ? sql`and id not in (${sql.join(mine)})` : sql``;
    const row = await sql<{ id: number; job_id: string; kind: TaskKind; attempts: number }>`
      update queue_tasks
         set state = 'leased', owner = ${owner}, lease_until = ${now + this.opts.leaseMs},
             attempts = attempts + 1, updated_at = ${new Date(now).toISOString()}
       where id = (select id from queue_tasks
                    where (state = 'queued' or (state = 'leased' and lease_until < ${now})) ${notMine}
                    order by id limit 1)
      returning id, job_id, kind, attempts`.execute(this.db);
    const r = row.rows[0];
    return r ? { id: String(r.id), job_id: r.job_id, kind: r.kind, attempts: Number(r.attempts), owner } : null;
  }

  private start(taskId: string, jobId: string, kind: TaskKind, attempt: number, owner: string): void {
    const controller = new AbortController();
    const heartbeat = setInterval(() => {
      this.db
        .updateTable('queue_tasks')
        .set({ lease_until: Date.now() + this.opts.leaseMs })
        .where('id', '=', Number(taskId))
        .where('owner', '=', owner)
        .where('state', '=', 'leased')
        .executeTakeFirst()
        .then((r) => {
          // Another consumer took the task over (this process stalled past the lease): stop working on it.
          if (Number(r.numUpdatedRows) === 0 && !controller.signal.aborted) controller.abort(new Error('the task lease was lost'));
        })
        .catch((err) => this.opts.log?.warn({ err, taskId }, 'lease heartbeat failed'));
    }, this.opts.heartbeatMs);

    const done = (async () => {
      let state: 'done' | 'failed' = 'done';
      try {
        await this.handler!(jobId, { taskId, kind, attempt, signal: controller.signal });
      } catch (err) {
        state = 'failed';
        if (!this.closed) this.opts.log?.warn({ err, taskId, jobId }, 'task handler failed');
      } finally {
        clearInterval(heartbeat);
      }
      // close() hands aborted tasks back to the queue itself; one that finished anyway is done.
      if (this.closed && state === 'failed') return;
      await this.db
        .updateTable('queue_tasks')
        .set({ state, owner: null, lease_until: null, updated_at: new Date().toISOString() })
        .where('id', '=', Number(taskId))
        .where('owner', '=', owner)
        .execute()
        .catch((err) => this.opts.log?.error({ err, taskId }, 'could not record the task outcome'));
    })().finally(() => {
      if (this.closed) return;
      this.running.delete(taskId);
      void this.fill();
    });
    this.running.set(taskId, { taskId, owner, controller, done, heartbeat });
  }
}
