// The `process` speech backend's host: one operator model process per pool slot, owned by
// the server's main thread. A batch from the micro-batcher goes to a free process as one
// `synthesize` message; each request settles on its own answer. Requests wait for a free
// process at most the request timeout, a process gets that long to answer a batch, and a
// process that crashed or hung is killed and started again with the requests it held failed
// (503 crashed, 504 hung), never left waiting.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { LecternError, unsupportedType } from '../../core/errors.ts';
import type { Logger } from '../../log.ts';
import { decodeAudio } from '../../media/ffmpeg.ts';
import { decodeWav, encodeWav, isWav } from '../../media/wav.ts';
import type { SynthesisRequest, WordTiming } from '../../speech/types.ts';
import { tokenizeWords } from '../../speech/words.ts';
import { ModelProcess } from './process.ts';
import { sameCapabilities, usableWords, type ProcessHello, type ProcessMessage, type WireRequest } from './protocol.ts';

export interface ModelProcessPoolOptions {
  command: string;
  /** Processes (pool slots). */
  slots: number;
  device: 'cpu' | 'cuda';
  /** Reference clips and output files are exchanged here; emptied at start and close. */
  scratchDir: string;
  /** Longest wait for a free process, and longest a process may take to answer a batch. */
  requestTimeoutMs: number;
  /** Most requests per message (the server's --max-batch; the process's own max_batch caps it too). */
  maxBatch: number;
  /** Longest a process may take to load its model and say hello. */
  startTimeoutMs: number;
  /** How long a process gets to exit after `shutdown` before it is killed. */
  stopGraceMs?: number;
  log: Logger;
  /** Called after each batch the processes answered: its size and how long it took. */
  onBatch?(size: number, ms: number): void;
}

export interface ProcessRequest extends SynthesisRequest {
  /** The HTTP request id, for the log lines of the process's stderr. */
  requestId?: string | null;
  /** Aborted when the client went away: the request is dropped or cancelled. */
  signal?: AbortSignal;
}

export interface ProcessSpeech {
  samples: Float32Array;
  sampleRate: number;
  words?: WordTiming[];
}

/** The process crashed, is restarting, or none is running (503: another server may take it). */
const processDown = (message: string) => new LecternError('MODEL_PROCESS_DOWN', message);
/** A process did not answer in time, or no process was free in time (504). */
const processTimeout = (message: string) => new LecternError('MODEL_TIMEOUT', message);
/** The client went away (499, as nginx logs it: nobody reads the answer, the log line says what happened). */
export const clientGone = () => new LecternError('CLIENT_GONE', 'the client closed the connection');

interface Pending {
  wireId: string;
  /** When it was handed to the pool: it waits for a free process at most requestTimeoutMs from here. */
  queuedAt: number;
  req: ProcessRequest;
  words: number;
  settled: boolean;
  resolve(s: ProcessSpeech): void;
  reject(e: Error): void;
  /** The reference clip's file for the process, and its key in the clip table (null once released). */
  refPath: string | null;
  refKey: string | null;
  cleanup(): void;
}

interface Batch {
  id: string;
  /** The batcher's compatibility key: batches with the same key may merge while they wait. */
  key: string;
  /** Requests still waiting for an answer (cancelled ones drop out before sending). */
  items: Pending[];
  /** Every request it started with: their clip holds are released when the batch is over. */
  all: Pending[];
  timer: NodeJS.Timeout | null;
}

interface Slot {
  index: number;
  state: 'starting' | 'ready' | 'backoff' | 'stopped';
  proc: ModelProcess | null;
  current: { batch: Batch; unanswered: Set<string>; sentAt: number; timer: NodeJS.Timeout } | null;
  restarts: number;
  failures: number;
  retry: NodeJS.Timeout | null;
}

const REFERENCE_FILES_KEPT = 64;

/** sha256 of a clip, once per buffer: the route's check and the pool both ask for it. */
const clipKeys = new WeakMap<Buffer, string>();
function clipKey(bytes: Buffer): string {
  let k = clipKeys.get(bytes);
  if (!k) {
    k = createHash('sha256').update(bytes).digest('hex');
    clipKeys.set(bytes, k);
  }
  return k;
}

export class ModelProcessPool {
  hello: ProcessHello | null = null;
  private readonly slots: Slot[];
  private readonly queue: Batch[] = [];
  private readonly refs = new Map<string, { file: Promise<string>; users: number; lastUsed: number }>();
  private closing = false;
  private lastError: string | null = null;
  private seq = 0;
  private readonly outDir: string;
  private readonly refDir: string;
  private readonly log: Logger;

  constructor(private readonly opts: ModelProcessPoolOptions) {
    this.slots = Array.from({ length: opts.slots }, (_, index) => ({ index, state: 'stopped', proc: null, current: null, restarts: 0, failures: 0, retry: null }));
    this.outDir = path.join(opts.scratchDir, 'out');
    this.refDir = path.join(opts.scratchDir, 'refs');
    this.log = opts.log.child({ component: 'tts-process' });
  }

  /** Starts every process; resolves with their hello once all have said the same one. */
  async start(): Promise<ProcessHello> {
    fs.rmSync(this.opts.scratchDir, { recursive: true, force: true });
    fs.mkdirSync(this.outDir, { recursive: true });
    fs.mkdirSync(this.refDir, { recursive: true });
    const started = await Promise.allSettled(this.slots.map((s) => this.spawn(s)));
    const failed = started.find((r) => r.status === 'rejected');
    if (failed) {
      await this.close(0);
      throw (failed as PromiseRejectedResult).reason;
    }
    const hellos = started.map((r) => (r as PromiseFulfilledResult<ProcessHello>).value);
    if (!hellos.every((h) => sameCapabilities(h, hellos[0]!))) {
      await this.close(0);
      throw new Error(`the model processes declared different capabilities: ${hellos.map((h) => JSON.stringify(h)).join(' vs ')}`);
    }
    this.hello = hellos[0]!;
    return this.hello;
  }

  /** For /health. */
  status() {
    return {
      slots: this.slots.length,
      ready: this.slots.filter((s) => s.state === 'ready').length,
      busy: this.slots.filter((s) => s.current).length,
      restarting: this.slots.filter((s) => s.state === 'starting' || s.state === 'backoff').length,
      restarts: this.slots.reduce((n, s) => n + s.restarts, 0),
      queued_batches: this.queue.length,
      last_error: this.lastError,
      pids: this.slots.map((s) => (s.state === 'ready' ? (s.proc?.pid ?? null) : null)),
    };
  }

  /** Whether this clip is converted for the processes already (so it decodes): the route need not check it again. */
  knowsReference(bytes: Buffer): boolean {
    return this.refs.has(clipKey(bytes));
  }

  /** True while some process can take work (ready, or being restarted after a crash). */
  get serving(): boolean {
    return this.slots.some((s) => s.state === 'ready' || s.state === 'starting');
  }

  /**
   * One batch → one message to one process. Returns a promise per request, settled by that
   * request's own answer (an input error fails only its request).
   */
  synthesize(batch: ProcessRequest[], key = ''): Promise<ProcessSpeech>[] {
    const b: Batch = { id: `b${++this.seq}`, key, items: [], all: [], timer: null };
    const promises = batch.map((req) => new Promise<ProcessSpeech>((resolve, reject) => b.items.push(this.pending(req, resolve, reject))));
    b.all = [...b.items];
    void this.enqueue(b);
    return promises;
  }

  private pending(req: ProcessRequest, resolve: (s: ProcessSpeech) => void, reject: (e: Error) => void): Pending {
    const p: Pending = {
      wireId: `r${++this.seq}`,
      queuedAt: performance.now(),
      req,
      words: tokenizeWords(req.text).length,
      settled: false,
      refPath: null,
      refKey: null,
      resolve: (s) => {
        if (p.settled) return;
        p.settled = true;
        p.cleanup();
        resolve(s);
      },
      reject: (e) => {
        if (p.settled) return;
        p.settled = true;
        p.cleanup();
        reject(e);
      },
      cleanup: () => {},
    };
    const signal = req.signal;
    if (signal) {
      const onAbort = () => this.cancel(p);
      signal.addEventListener('abort', onAbort, { once: true });
      p.cleanup = () => signal.removeEventListener('abort', onAbort);
      if (signal.aborted) queueMicrotask(onAbort);
    }
    return p;
  }

  private async enqueue(b: Batch): Promise<void> {
    if (this.closing) return this.failAll(b.items, processDown('the server is shutting down; send the request to another server'));
    if (!this.hello) return this.failAll(b.items, processDown('the model processes are not started'));
    if (!this.serving) return this.failAll(b.items, processDown(`no model process is running (last error: ${this.lastError ?? 'none'}); retry shortly`));
    await Promise.all(
      b.items.map(async (p) => {
        if (!p.req.refAudio) return;
        try {
          p.refKey = clipKey(p.req.refAudio);
          p.refPath = await this.reference(p.refKey, p.req.refAudio);
        } catch (e) {
          p.reject(unsupportedType('file "ref_audio" is not audio that ffmpeg can decode'));
        }
      }),
    );
    b.items = b.items.filter((p) => !p.settled);
    if (b.items.length === 0) return this.releaseRefs(b);
    // While every process is busy, compatible batches merge, so the next free process gets a full one.
    const max = Math.min(this.opts.maxBatch, this.hello.maxBatch);
    const into = this.queue.find((q) => q.key === b.key && q.items.filter((p) => !p.settled).length + b.items.length <= max);
    if (into) {
      into.items.push(...b.items);
      into.all.push(...b.all);
    } else {
      this.queue.push(b);
      this.armWaitTimer(b);
    }
    this.dispatch();
  }

  /** Fails the batch's requests that have waited requestTimeoutMs for a free process; re-arms for the rest. */
  private armWaitTimer(b: Batch): void {
    const oldest = Math.min(...b.items.map((p) => p.queuedAt));
    b.timer = setTimeout(() => {
      if (!this.queue.includes(b)) return;
      const now = performance.now();
      const late = b.items.filter((p) => now - p.queuedAt >= this.opts.requestTimeoutMs - 1);
      b.items = b.items.filter((p) => !late.includes(p) && !p.settled);
      this.failAll(late, processTimeout(`no model process was free within ${this.seconds()} s (all ${this.slots.length} busy or restarting); retry later`));
      if (b.items.length > 0) return this.armWaitTimer(b);
      this.queue.splice(this.queue.indexOf(b), 1);
      this.releaseRefs(b);
    }, Math.max(0, oldest + this.opts.requestTimeoutMs - performance.now()));
  }

  private dispatch(): void {
    for (const slot of this.slots) {
      if (slot.state !== 'ready' || slot.current || !slot.proc) continue;
      let b: Batch | undefined;
      while ((b = this.queue.shift())) {
        clearTimeout(b.timer!);
        b.items = b.items.filter((p) => !p.settled); // cancelled while waiting
        if (b.items.length > 0) break;
        this.releaseRefs(b);
      }
      if (!b) return;
      this.send(slot, b);
    }
  }

  private send(slot: Slot, b: Batch): void {
    const proc = slot.proc!;
    const requests: WireRequest[] = b.items.map((p) => ({
      id: p.wireId,
      text: p.req.text,
      language: p.req.language,
      voice: p.req.voice ?? null,
      ref_audio: p.refPath,
      ref_text: p.refPath ? (p.req.refText ?? null) : null,
      output: path.join(this.outDir, `${p.wireId}.wav`),
    }));
    const timer = setTimeout(() => this.hung(slot), this.opts.requestTimeoutMs);
    slot.current = { batch: b, unanswered: new Set(b.items.map((p) => p.wireId)), sentAt: performance.now(), timer };
    proc.send({ type: 'synthesize', batch: b.id, requests });
  }

  private cancel(p: Pending): void {
    if (p.settled) return;
    p.reject(p.req.signal?.reason instanceof LecternError ? p.req.signal.reason : clientGone());
    const slot = this.slots.find((s) => s.current?.unanswered.has(p.wireId));
    // Advisory: a process that has not started the request may skip it; its answer is discarded either way.
    if (slot) slot.proc?.send({ type: 'cancel', ids: [p.wireId] });
  }

  private onMessage(slot: Slot, m: ProcessMessage): void {
    if (m.type === 'hello') return this.log.warn({ slot: slot.index }, 'model process sent a second hello; ignored');
    const cur = slot.current;
    const p = m.id ? cur?.batch.items.find((x) => x.wireId === m.id) : undefined;
    if (!p || !cur?.unanswered.has(p.wireId)) {
      if (m.type === 'error' && !m.id) this.log.error({ slot: slot.index, process_pid: slot.proc?.pid, reqId: this.requestIds(slot) }, `model process error: ${m.message}`);
      else this.log.warn({ slot: slot.index, id: m.id }, `model process answered a request it does not hold (${m.type}); ignored`);
      return;
    }
    cur.unanswered.delete(p.wireId);
    const output = path.join(this.outDir, `${p.wireId}.wav`);
    if (m.type === 'error') {
      void fs.promises.rm(output, { force: true });
      p.reject(m.input ? new LecternError('SPEECH_INPUT', `${this.hello!.name}: ${m.message}`) : new LecternError('MODEL_FAILED', `the model process failed on this request: ${m.message}`));
    } else {
      void this.readAudio(m.audioPath, m.audioBase64, output).then(
        (audio) => {
          const words = this.hello!.wordTimings ? usableWords(m.words, p.words) : null;
          if (this.hello!.wordTimings && !words) this.log.warn({ reqId: p.req.requestId ?? undefined }, 'model process word timings unusable (count or order); the aligner will time the words');
          p.resolve(words ? { ...audio, words } : audio);
        },
        (e: Error) => p.reject(new LecternError('MODEL_FAILED', `the model process's audio for this request is unreadable: ${e.message}`)),
      );
    }
    if (cur.unanswered.size === 0) {
      clearTimeout(cur.timer);
      slot.current = null;
      this.opts.onBatch?.(cur.batch.items.length, performance.now() - cur.sentAt);
      this.releaseRefs(cur.batch);
      this.dispatch();
    }
  }

  private async readAudio(file: string | null, base64: string | null, expected: string): Promise<ProcessSpeech> {
    let bytes: Buffer;
    if (base64 !== null) bytes = Buffer.from(base64, 'base64');
    else {
      const resolved = path.resolve(file!);
      if (path.dirname(resolved) !== this.outDir) throw new Error(`it named ${file}, outside the scratch folder ${this.outDir}`);
      // Synchronous on purpose: a few hundred KB from the page cache take well under a
      // millisecond, and two thread-pool round trips per request cost more than that on a busy host.
      bytes = fs.readFileSync(resolved);
      fs.rmSync(resolved, { force: true });
    }
    if (expected !== file) fs.rmSync(expected, { force: true });
    if (bytes.length === 0) throw new Error('empty audio');
    if (isWav(bytes)) {
      try {
        return decodeWav(bytes);
      } catch {
        /* a WAV layout the reader does not know: ffmpeg below */
      }
    }
    const rate = this.hello!.sampleRate;
    return { samples: await decodeAudio(bytes, rate), sampleRate: rate };
  }

  /** The reference clip as the model wants it (mono 16-bit WAV at its rate), one file per clip. */
  private reference(key: string, bytes: Buffer): Promise<string> {
    const rate = this.hello!.referenceSampleRate;
    let r = this.refs.get(key);
    if (!r) {
      const file = path.join(this.refDir, `${key.slice(0, 32)}-${rate}.wav`);
      const made = (async () => {
        const samples = await decodeAudio(bytes, rate);
        if (samples.length === 0) throw new Error('no audio in the clip');
        const tmp = `${file}.${process.pid}.tmp`;
        await fs.promises.writeFile(tmp, encodeWav(samples, rate));
        await fs.promises.rename(tmp, file);
        return file;
      })();
      r = { file: made, users: 0, lastUsed: 0 };
      this.refs.set(key, r);
      made.catch(() => this.refs.delete(key));
    }
    r.users++;
    r.lastUsed = Date.now();
    return r.file;
  }

  /** Drops this batch's hold on its clips, and the least recently used clips past the limit. */
  private releaseRefs(b: Batch): void {
    for (const p of b.all) {
      if (!p.refKey) continue;
      const r = this.refs.get(p.refKey);
      if (r) r.users = Math.max(0, r.users - 1);
      p.refKey = null;
    }
    if (this.refs.size <= REFERENCE_FILES_KEPT) return;
    const idle = [...this.refs.entries()].filter(([, r]) => r.users === 0).sort((a, b) => a[1].lastUsed - b[1].lastUsed);
    for (const [key, r] of idle.slice(0, this.refs.size - REFERENCE_FILES_KEPT)) {
      this.refs.delete(key);
      void r.file.then((f) => fs.promises.rm(f, { force: true })).catch(() => {});
    }
  }

  private requestIds(slot: Slot): string | undefined {
    const ids = [...new Set((slot.current?.batch.items ?? []).map((p) => p.req.requestId).filter((x): x is string => !!x))];
    return ids.length ? ids.join(',') : undefined;
  }

  private seconds(): number {
    return Math.round(this.opts.requestTimeoutMs / 100) / 10;
  }

  private failAll(items: Pending[], e: Error): void {
    for (const p of items) p.reject(e);
  }

  /** Fails what the slot's process held, with `e`. */
  private failCurrent(slot: Slot, e: Error): void {
    const cur = slot.current;
    if (!cur) return;
    clearTimeout(cur.timer);
    slot.current = null;
    this.failAll(cur.batch.items.filter((p) => cur.unanswered.has(p.wireId)), e);
    for (const id of cur.unanswered) void fs.promises.rm(path.join(this.outDir, `${id}.wav`), { force: true });
    this.releaseRefs(cur.batch);
  }

  private hung(slot: Slot): void {
    const proc = slot.proc;
    if (!proc || !slot.current) return;
    const why = `the model process (slot ${slot.index}, pid ${proc.pid}) did not answer within ${this.seconds()} s; it was killed and is being restarted`;
    this.log.error({ slot: slot.index, process_pid: proc.pid, reqId: this.requestIds(slot) }, why);
    this.lastError = why;
    this.failCurrent(slot, processTimeout(why));
    proc.kill('SIGKILL'); // its exit restarts the slot
  }

  private onExit(slot: Slot, proc: ModelProcess, how: string): void {
    if (slot.proc !== proc) return;
    slot.proc = null;
    if (this.closing) {
      slot.state = 'stopped';
      return;
    }
    const tail = proc.stderrTail();
    const why = `the model process (slot ${slot.index}, pid ${proc.pid}) ${how}${tail ? ` (stderr: ${tail})` : ''}`;
    if (slot.current) {
      this.log.error({ slot: slot.index, process_pid: proc.pid, reqId: this.requestIds(slot) }, `${why}; its requests failed, restarting it`);
      this.failCurrent(slot, processDown(`${why} while synthesizing; it is being restarted, retry shortly`));
    } else {
      this.log.error({ slot: slot.index, process_pid: proc.pid }, `${why}; restarting it`);
    }
    this.lastError = why;
    slot.restarts++;
    slot.state = 'starting';
    this.spawn(slot).then(
      () => this.dispatch(),
      () => {},
    );
  }

  /** Starts the slot's process; on failure retries after a growing delay (1 s … 30 s). */
  private async spawn(slot: Slot): Promise<ProcessHello> {
    slot.state = 'starting';
    slot.retry = null;
    try {
      const proc = await ModelProcess.start({
        command: this.opts.command,
        slot: slot.index,
        slots: this.slots.length,
        device: this.opts.device,
        scratchDir: this.opts.scratchDir,
        startTimeoutMs: this.opts.startTimeoutMs,
        onOutput: (line, stream, pid) => {
          const fields = { slot: slot.index, process_pid: pid, reqId: this.requestIds(slot) };
          if (stream === 'stderr') this.log.info(fields, line);
          else this.log.warn(fields, `model process wrote to stdout outside the protocol: ${line.slice(0, 500)}`);
        },
      });
      if (this.closing) {
        await proc.stop(0);
        throw processDown('the server is shutting down');
      }
      if (this.hello && !sameCapabilities(proc.hello!, this.hello)) {
        await proc.stop(0);
        throw new Error(`the restarted model process declared other capabilities (${JSON.stringify(proc.hello)}) than at start-up (${JSON.stringify(this.hello)})`);
      }
      slot.proc = proc;
      proc.onMessage = (m) => this.onMessage(slot, m);
      proc.onExit = (how) => this.onExit(slot, proc, how);
      slot.state = 'ready';
      slot.failures = 0;
      this.log.info({ slot: slot.index, process_pid: proc.pid, name: proc.hello!.name }, 'model process ready');
      return proc.hello!;
    } catch (e) {
      if (this.closing) {
        slot.state = 'stopped';
        throw e;
      }
      slot.failures++;
      this.lastError = (e as Error).message;
      if (!this.hello) {
        slot.state = 'stopped'; // at start-up a failure stops the server with this message
        throw e;
      }
      const delay = Math.min(30_000, 1000 * 2 ** (slot.failures - 1));
      slot.state = 'backoff';
      this.log.error({ slot: slot.index, err: this.lastError, retry_ms: delay }, 'model process failed to start; retrying');
      slot.retry = setTimeout(() => {
        this.spawn(slot).then(
          () => this.dispatch(),
          () => {},
        );
      }, delay);
      // With nothing left to serve them, waiting requests get the reason now rather than a timeout.
      if (!this.serving) {
        for (const b of this.queue.splice(0)) {
          clearTimeout(b.timer!);
          this.failAll(b.items, processDown(`no model process is running: ${this.lastError}`));
          this.releaseRefs(b);
        }
      }
      throw e;
    }
  }

  /**
   * Stops taking work; batches in the processes get `graceMs` to finish, then every process
   * is asked to shut down (killed if it does not within stopGraceMs).
   */
  async close(graceMs = 0): Promise<void> {
    this.closing = true;
    for (const b of this.queue.splice(0)) {
      clearTimeout(b.timer!);
      this.failAll(b.items, processDown('the server is shutting down; send the request to another server'));
      this.releaseRefs(b);
    }
    const deadline = Date.now() + graceMs;
    while (this.slots.some((s) => s.current) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    for (const s of this.slots) {
      if (s.retry) clearTimeout(s.retry);
      this.failCurrent(s, processDown('the server is shutting down; send the request to another server'));
    }
    await Promise.all(this.slots.map(async (s) => s.proc?.stop(this.opts.stopGraceMs ?? 5000)));
    for (const s of this.slots) s.state = 'stopped';
    fs.rmSync(this.opts.scratchDir, { recursive: true, force: true });
  }
}
