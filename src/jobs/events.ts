// EventBus for job progress. Distributed: Redis pub/sub on `${namespace}:job:{id}`.
// Embedded: an in-process emitter for the usual case (worker inside `serve`), plus an
// `events` table polled while anyone subscribes, so a separate `lectern worker` process
// on the same SQLite file reaches the API process's SSE streams too.
import { EventEmitter } from 'node:events';
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Logger } from '../log.ts';
import type { Connection } from './db.ts';
import type { EventBus, JobEvent } from './types.ts';

type Listener = (event: JobEvent) => void;

function deliver(listener: Listener, event: JobEvent, log?: Logger): void {
  try {
    listener(event);
  } catch (err) {
    log?.warn({ err }, 'event listener threw');
  }
}

/** Rows older than this are of no use to a subscriber (the job row holds the snapshot). */
const EVENT_RETENTION_MS = 3600_000;

export class SqliteEventBus implements EventBus {
  private readonly origin = randomUUID();
  private readonly local = new EventEmitter();
  /** Per job: listener → the last events-row id that existed when it subscribed. */
  private readonly subs = new Map<string, Map<Listener, number>>();
  private cursor = 0;
  private pollTimer: NodeJS.Timeout | null = null;
  private polling = false;
  private lastPurge = 0;
  private closed = false;

  constructor(
    private readonly conn: Connection,
    private readonly opts: { pollMs?: number; log?: Logger } = {},
  ) {
    this.local.setMaxListeners(0);
  }

  private get db() {
    return this.conn.db;
  }

  async publish(jobId: string, event: JobEvent): Promise<void> {
    const now = Date.now();
    await this.db.insertInto('events').values({ job_id: jobId, origin: this.origin, payload: JSON.stringify(event), created_at: now }).execute();
    this.local.emit(jobId, event);
    if (now - this.lastPurge > 60_000) {
      this.lastPurge = now;
      await this.db.deleteFrom('events').where('created_at', '<', now - EVENT_RETENTION_MS).execute();
    }
  }

  async subscribe(jobId: string, listener: Listener): Promise<() => Promise<void>> {
    if (this.closed) throw new Error('the event bus is closed');
    const max = await this.db.selectFrom('events').select((eb) => eb.fn.max('id').as('m')).executeTakeFirst();
    const since = Number(max?.m ?? 0);
    if (this.subs.size === 0) this.cursor = Math.max(this.cursor, since);
    const wrapped: Listener = (e) => deliver(listener, e, this.opts.log);
    let byJob = this.subs.get(jobId);
    if (!byJob) this.subs.set(jobId, (byJob = new Map()));
    byJob.set(wrapped, since);
    this.local.on(jobId, wrapped);
    this.schedule();
    return async () => {
      this.local.off(jobId, wrapped);
      const m = this.subs.get(jobId);
      m?.delete(wrapped);
      if (m && m.size === 0) this.subs.delete(jobId);
    };
  }

  private schedule(): void {
    if (this.pollTimer || this.closed || this.subs.size === 0) return;
    this.pollTimer = setTimeout(() => {
      this.pollTimer = null;
      void this.poll().finally(() => this.schedule());
    }, this.opts.pollMs ?? 250);
  }

  /** Delivers events other processes (or other buses) wrote since the last poll. */
  private async poll(): Promise<void> {
    if (this.polling || this.closed || this.subs.size === 0) return;
    this.polling = true;
    try {
      const rows = await this.db
        .selectFrom('events')
        .select(['id', 'job_id', 'payload'])
        .where('id', '>', this.cursor)
        .where('job_id', 'in', [...this.subs.keys()])
        .where('origin', '!=', this.origin)
        .orderBy('id')
        .execute();
      for (const r of rows) {
        const id = Number(r.id);
        this.cursor = Math.max(this.cursor, id);
        const listeners = this.subs.get(r.job_id);
        if (!listeners) continue;
        const event = JSON.parse(r.payload) as JobEvent;
        for (const [listener, since] of listeners) if (id > since) listener(event);
      }
    } catch (err) {
      this.opts.log?.warn({ err }, 'event poll failed');
    } finally {
      this.polling = false;
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.pollTimer) clearTimeout(this.pollTimer);
    this.local.removeAllListeners();
    this.subs.clear();
  }
}

export class RedisEventBus implements EventBus {
  private subscriber: Redis | null = null;
  private readonly subs = new Map<string, Set<Listener>>();

  /** `publisher` is shared with the KV store; the subscriber is a dedicated connection (pub/sub mode blocks it). */
  constructor(
    private readonly publisher: Redis,
    private readonly namespace: string,
    private readonly log?: Logger,
  ) {}

  private channel(jobId: string): string {
    return `${this.namespace}:job:${jobId}`;
  }

  async publish(jobId: string, event: JobEvent): Promise<void> {
    await this.publisher.publish(this.channel(jobId), JSON.stringify(event));
  }

  private sub(): Redis {
    if (!this.subscriber) {
      const s = this.publisher.duplicate();
      s.on('error', (err) => this.log?.warn({ err }, 'redis (events) connection error'));
      s.on('message', (channel: string, message: string) => {
        const listeners = this.subs.get(channel);
        if (!listeners) return;
        let event: JobEvent;
        try {
          event = JSON.parse(message) as JobEvent;
        } catch {
          this.log?.warn({ channel }, 'ignored a malformed job event');
          return;
        }
        for (const l of listeners) deliver(l, event, this.log);
      });
      this.subscriber = s;
    }
    return this.subscriber;
  }

  async subscribe(jobId: string, listener: Listener): Promise<() => Promise<void>> {
    const channel = this.channel(jobId);
    let set = this.subs.get(channel);
    if (!set) this.subs.set(channel, (set = new Set()));
    set.add(listener);
    // Resolves once Redis acknowledged the subscription, so later publishes reach us.
    await this.sub().subscribe(channel);
    return async () => {
      const s = this.subs.get(channel);
      if (!s) return;
      s.delete(listener);
      if (s.size === 0) {
        this.subs.delete(channel);
        await this.subscriber?.unsubscribe(channel).catch(() => undefined);
      }
    };
  }

  async close(): Promise<void> {
    this.subs.clear();
    if (this.subscriber) await this.subscriber.quit().catch(() => this.subscriber?.disconnect());
    this.subscriber = null;
  }
}
