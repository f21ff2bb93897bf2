// Micro-batcher: coalesces compatible requests (same key) into one call of up to
// maxBatch items. Each key has its own queue, so an incompatible request at the head
// of one key never delays another key; a partial batch is dispatched once its oldest
// request has waited windowMs, so no request is held longer than the window. A request
// whose signal aborts while it waits leaves its queue and is never dispatched.

export interface BatchInfo {
  key: string;
  size: number;
  /** Milliseconds each item spent in the batcher before dispatch. */
  waitsMs: number[];
}

export interface BatcherOptions<Req, Res> {
  maxBatch: number;
  windowMs: number;
  /**
   * Runs one batch; returns one result per item, in order: all at once, or a promise per
   * item (each request then settles on its own, an error failing only its request).
   */
  run(key: string, items: Req[]): Promise<Res[]> | Promise<Res>[];
  onDispatch?(info: BatchInfo): void;
  now?: () => number;
}

interface Pending<Req, Res> {
  item: Req;
  enqueuedAt: number;
  resolve(r: Res): void;
  reject(e: unknown): void;
  /** Detaches the abort listener once the request leaves the queue. */
  detach(): void;
}

interface KeyQueue<Req, Res> {
  items: Pending<Req, Res>[];
  timer: NodeJS.Timeout | null;
}

export class MicroBatcher<Req, Res> {
  private readonly queues = new Map<string, KeyQueue<Req, Res>>();
  private waiting = 0;
  private running = 0;
  private readonly now: () => number;

  constructor(private readonly opts: BatcherOptions<Req, Res>) {
    if (opts.maxBatch < 1) throw new Error('maxBatch must be at least 1');
    this.now = opts.now ?? (() => performance.now());
  }

  /** Lowers (or raises) the batch size, e.g. to what a model process declared it takes. */
  setMaxBatch(n: number): void {
    if (n < 1) throw new Error('maxBatch must be at least 1');
    this.opts.maxBatch = n;
  }

  /** Requests waiting in the batcher (not yet dispatched). */
  get queued(): number {
    return this.waiting;
  }

  /** Batches dispatched and not yet finished. */
  get inFlight(): number {
    return this.running;
  }

  submit(key: string, item: Req, signal?: AbortSignal): Promise<Res> {
    return new Promise<Res>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      let q = this.queues.get(key);
      if (!q) {
        q = { items: [], timer: null };
        this.queues.set(key, q);
      }
      const p: Pending<Req, Res> = { item, enqueuedAt: this.now(), resolve, reject, detach: () => {} };
      if (signal) {
        const onAbort = () => {
          const i = q.items.indexOf(p);
          if (i < 0) return;
          q.items.splice(i, 1);
          this.waiting--;
          if (q.items.length === 0) this.schedule(key, q);
          reject(signal.reason);
        };
        signal.addEventListener('abort', onAbort, { once: true });
        p.detach = () => signal.removeEventListener('abort', onAbort);
      }
      q.items.push(p);
      this.waiting++;
      this.schedule(key, q);
    });
  }

  private schedule(key: string, q: KeyQueue<Req, Res>): void {
    while (q.items.length >= this.opts.maxBatch) this.dispatch(key, q, this.opts.maxBatch);
    if (q.timer) {
      clearTimeout(q.timer);
      q.timer = null;
    }
    if (q.items.length === 0) {
      this.queues.delete(key);
      return;
    }
    const waited = this.now() - q.items[0]!.enqueuedAt;
    const delay = Math.max(0, this.opts.windowMs - waited);
    q.timer = setTimeout(() => {
      q.timer = null;
      this.dispatch(key, q, this.opts.maxBatch);
      this.schedule(key, q);
    }, delay);
  }

  private dispatch(key: string, q: KeyQueue<Req, Res>, n: number): void {
    const batch = q.items.splice(0, n);
    if (batch.length === 0) return;
    this.waiting -= batch.length;
    for (const p of batch) p.detach();
    const t = this.now();
    this.opts.onDispatch?.({ key, size: batch.length, waitsMs: batch.map((p) => t - p.enqueuedAt) });
    this.running++;
    let results: Promise<Res[]> | Promise<Res>[];
    try {
      results = this.opts.run(key, batch.map((p) => p.item));
    } catch (e) {
      results = Promise.reject(e);
    }
    if (Array.isArray(results)) {
      if (results.length !== batch.length) {
        const err = new Error(`batch returned ${results.length} results for ${batch.length} requests`);
        for (const p of batch) p.reject(err);
        this.running--;
        return;
      }
      results.forEach((r, i) => r.then(batch[i]!.resolve, batch[i]!.reject));
      void Promise.allSettled(results).then(() => this.running--);
      return;
    }
    results.then(
      (res) => {
        this.running--;
        if (res.length !== batch.length) {
          const err = new Error(`batch returned ${res.length} results for ${batch.length} requests`);
          for (const p of batch) p.reject(err);
          return;
        }
        batch.forEach((p, i) => p.resolve(res[i]!));
      },
      (err) => {
        this.running--;
        for (const p of batch) p.reject(err);
      },
    );
  }

  /** Rejects everything still waiting (shutdown). */
  close(reason = new Error('server is shutting down')): void {
    for (const q of this.queues.values()) {
      if (q.timer) clearTimeout(q.timer);
      for (const p of q.items) {
        p.detach();
        p.reject(reason);
      }
      this.waiting -= q.items.length;
      q.items = [];
    }
    this.queues.clear();
  }
}
