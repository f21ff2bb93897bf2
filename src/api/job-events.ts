// GET /api/jobs/{id}/events: Server-Sent Events for one job. `snapshot` at once, then
// `progress` and `status` as they happen, then one terminal `end` and the stream closes.
// Events may come from a worker in another process or be missed, so the row stays the
// truth: it is re-read on every terminal event and once a second.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { INTERNAL } from '../core/caller.ts';
import type { JobEvent, JobRecord, Stores } from '../jobs/types.ts';
import { TERMINAL_STATUSES } from '../jobs/types.ts';
import { jobResponse } from './job-response.ts';

const POLL_MS = 1000;
const KEEP_ALIVE_MS = 15_000;

/** Takes the reply over and streams the job's events until it ends or the client goes. */
export async function streamJobEvents(req: FastifyRequest, reply: FastifyReply, job: JobRecord, stores: Stores): Promise<void> {
  const out = openEventStream(reply);
  out.send('snapshot', jobResponse(job));
  const stream = new JobEventStream(job, stores, out);
  if (TERMINAL_STATUSES.includes(job.status)) return stream.finish(job);
  await stream.watch();
  req.raw.on('close', () => void stream.finish(null));
  await stream.check(); // anything that happened between the first read and subscribing
}

interface EventStream {
  send(event: string, data: unknown): void;
  /** A comment line, so proxies keep an idle stream open. */
  keepAlive(): void;
  end(): void;
}

/** Writes the event-stream headers (with those the hooks set: X-Request-Id, CORS) and returns the writer. */
function openEventStream(reply: FastifyReply): EventStream {
  reply.hijack();
  const res = reply.raw;
  // A hijacked reply does not send the headers the hooks set on its own.
  res.writeHead(200, {
    ...(reply.getHeaders() as Record<string, string | string[] | number>),
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  return {
    send: (event, data) => void res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`),
    keepAlive: () => void res.write(': keep-alive\n\n'),
    end: () => void res.end(),
  };
}

class JobEventStream {
  private closed = false;
  private lastStatus: JobRecord['status'];
  private lastProgress: string;
  private unsubscribe: (() => Promise<void>) | null = null;
  private poll: NodeJS.Timeout | null = null;
  private keepAlive: NodeJS.Timeout | null = null;

  constructor(
    private readonly job: JobRecord,
    private readonly stores: Stores,
    private readonly out: EventStream,
  ) {
    this.lastStatus = job.status;
    this.lastProgress = JSON.stringify(job.progress);
  }

  /** Subscribes to the job's events and starts the poll and the keep-alive comments. */
  async watch(): Promise<void> {
    this.unsubscribe = await this.stores.events.subscribe(this.job.id, (ev) => this.onEvent(ev));
    this.poll = setInterval(() => void this.check(), POLL_MS);
    this.keepAlive = setInterval(() => this.out.keepAlive(), KEEP_ALIVE_MS);
  }

  private onEvent(ev: JobEvent): void {
    if (this.closed) return;
    if (ev.type === 'progress') {
      this.lastProgress = JSON.stringify(ev.progress);
      this.out.send('progress', ev.progress);
    } else if (ev.type === 'status') {
      if (TERMINAL_STATUSES.includes(ev.status)) void this.check();
      else if (ev.status !== this.lastStatus) {
        this.lastStatus = ev.status;
        this.out.send('status', { status: ev.status, error: ev.error ?? null });
      }
    }
  }

  /** Re-reads the row: sends what changed since the last event, and ends the stream at a terminal status or a deleted job. */
  async check(): Promise<void> {
    const cur = await this.stores.jobs.getJob(this.job.id, INTERNAL).catch(() => undefined);
    if (this.closed || cur === undefined) return;
    if (cur === null) return this.finish(null);
    const p = JSON.stringify(cur.progress);
    if (p !== this.lastProgress && cur.progress) this.out.send('progress', cur.progress);
    this.lastProgress = p;
    if (cur.status !== this.lastStatus) this.out.send('status', { status: cur.status, error: cur.error });
    this.lastStatus = cur.status;
    if (TERMINAL_STATUSES.includes(cur.status)) return this.finish(cur);
  }

  /** Sends `end` with the final job (none when it was deleted or the client left) and closes, once. */
  async finish(final: JobRecord | null): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.poll) clearInterval(this.poll);
    if (this.keepAlive) clearInterval(this.keepAlive);
    if (final) this.out.send('end', jobResponse(final));
    this.out.end();
    await this.unsubscribe?.().catch(() => undefined);
  }
}
