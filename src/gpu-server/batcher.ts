// Micro-batcher: coalesces compatible requests (same key) into one call of up to
// maxBatch items. Each key has its own queue, so an incompatible request at the head
// of one key never delays another key; a partial batch is dispatched once its oldest
// request has waited windowMs, so no request is held longer than the window.

export interface BatchInfo {
  key: string;
  size: number;
  /** Milliseconds each item spent in the batcher before dispatch. */
  waitsMs: number[];
}

export interface BatcherOptions<Req, Res> {
  maxBatch: number;
  windowMs: number;
  /** Runs one batch; must return one result per item, in order. */
  run(key: string, items: Req[]): Promise<Res[]>;
  onDispatch?(info: BatchInfo): void;
  now?: () => number;
}

interface Pending<Req, Res> {
  item: Req;
  enqueuedAt: number;
  resolve(r: Res): void;
  reject(e: unknown): void;
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

  /** Requests waiting in the batcher (not yet dispatched). */
  get queued(): number {
    return this.waiting;
  }

  /** Batches dispatched and not yet finished. */
  get inFlight(): number {
    return this.running;
  }

  submit(key: string, item: Req): Promise<Res> {
    return new Promise<Res>((resolve, reject) => {
      let q = this.queues.get(key);
      if (!q) {
        q = { items: [], timer: null };
        this.queues.set(key, q);
      }
      q.items.push({ item, enqueuedAt: this.now(), resolve, reject });
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
    const t = this.now();
    this.opts.onDispatch?.({ key, size: batch.length, waitsMs: batch.map((p) => t - p.enqueuedAt) });
    this.running++;
    let results: Promise<Res[]>;
    try {
      results = this.opts.run(key, batch.map((p) => p.item));
    } catch (e) {
      results = Promise.reject(e);
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
      for (const p of q.items) p.reject(reason);
      this.waiting -= q.items.length;
      q.items = [];
    }
    this.queues.clear();
  }
}
