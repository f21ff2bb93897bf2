// One contract suite for the stores, run against both modes: SQLite in a temp dir, and the
// real PostgreSQL + Redis on this machine under a namespace unique to this run.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { Redis } from 'ioredis';
import { loadServiceConfig, PROJECT_ROOT, type ServiceConfig } from '../src/config.ts';
import { createStores } from '../src/jobs/index.ts';
import type { JobEvent, Stores, TaskContext } from '../src/jobs/types.ts';

const PG_URL = 'postgres://postgres@127.0.0.1:5432/test';
const REDIS_URL = 'redis://127.0.0.1:6379';
const ISO_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const RUN = `t${Date.now().toString(36)}${randomUUID().slice(0, 6)}`;

type Mode = 'embedded' | 'distributed';
const tmpRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'lectern-stores-'));
const namespaces: string[] = [];
const open: Stores[] = [];
let seq = 0;

/** A fresh, isolated place: its own SQLite file, or its own PostgreSQL schema + Redis prefix. */
function freshConfig(mode: Mode, leaseMs = 1000): ServiceConfig {
  const ns = `${RUN}_${seq++}`;
  namespaces.push(ns);
  const flags: Record<string, string> = {
    'data-dir': path.join(tmpRoot, ns),
    namespace: ns,
    'lease-ms': String(leaseMs),
    'heartbeat-ms': String(Math.max(100, Math.floor(leaseMs / 4))),
  };
  if (mode === 'distributed') Object.assign(flags, { 'database-url': PG_URL, 'redis-url': REDIS_URL });
  return loadServiceConfig(flags, {});
}

async function openStores(config: ServiceConfig): Promise<Stores> {
  const s = await createStores(config);
  open.push(s);
  return s;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitFor<T>(what: string, fn: () => T | undefined | Promise<T | undefined>, timeoutMs = 10_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}

afterAll(async () => {
  await Promise.allSettled(open.map((s) => s.close()));
  fs.rmSync(tmpRoot, { recursive: true, force: true });
  const client = new pg.Client({ connectionString: PG_URL });
  const redis = new Redis(REDIS_URL);
  try {
    await client.connect();
    for (const ns of namespaces) {
      await client.query(`drop schema if exists "${ns}" cascade`);
      let cursor = '0';
      do {
        const [next, keys] = await redis.scan(cursor, 'MATCH', `${ns}:*`, 'COUNT', 1000);
        cursor = next;
        if (keys.length) await redis.del(...keys);
      } while (cursor !== '0');
    }
  } finally {
    await client.end();
    redis.disconnect();
  }
});

describe.each<Mode>(['embedded', 'distributed'])('job stores (%s)', (mode) => {
  it('reports its mode and migrates idempotently, also with several processes opening at once', async () => {
    const config = freshConfig(mode);
    const [a, b, c] = await Promise.all([openStores(config), openStores(config), openStores(config)]);
    expect(a.mode).toBe(mode);
    await a.jobs.migrate();
    await b.jobs.createJob({ id: 'j1', pipeline_type: 'audio', config_json: {}, upload_ids: [] });
    expect((await c.jobs.getJob('j1'))?.id).toBe('j1');
    if (mode === 'embedded') expect(fs.existsSync(path.join(config.dataDir, 'lectern.db'))).toBe(true);
  });

  it('creates, reads, updates and deletes jobs and uploads', async () => {
    const s = await openStores(freshConfig(mode));
    const created = await s.jobs.createJob({ id: 'job-a', pipeline_type: 'lipsync', config_json: { a: 1, nested: { x: [1, 2] } }, upload_ids: ['u1', 'u2'] });
    expect(created).toMatchObject({
      id: 'job-a',
      pipeline_type: 'lipsync',
      status: 'pending',
      config_json: { a: 1, nested: { x: [1, 2] } },
      worker_task_id: null,
      progress: null,
      error: null,
      upload_ids: ['u1', 'u2'],
      attempts: 0,
      started_at: null,
      finished_at: null,
    });
    expect(created.created_at).toMatch(ISO_MS);
    expect(created.updated_at).toMatch(ISO_MS);
    expect(await s.jobs.getJob('job-a')).toEqual(created);
    expect(await s.jobs.getJob('nope')).toBeNull();

    const started = new Date().toISOString();
    const upd = await s.jobs.updateJob('job-a', { status: 'running', progress: { phase: 'synthesize', current: 3, total: 9 }, started_at: started, attempts: 1, worker_task_id: '17' });
    expect(upd).toMatchObject({ status: 'running', progress: { phase: 'synthesize', current: 3, total: 9 }, started_at: started, attempts: 1, worker_task_id: '17' });
    expect(upd!.updated_at >= created.updated_at).toBe(true);
    expect(await s.jobs.getJob('job-a')).toEqual(upd);
    expect((await s.jobs.updateJob('job-a', { progress: null, error: 'one line' }))).toMatchObject({ progress: null, error: 'one line' });
    expect(await s.jobs.updateJob('nope', { status: 'failed' })).toBeNull();

    expect(await s.jobs.deleteJob('job-a')).toBe(true);
    expect(await s.jobs.deleteJob('job-a')).toBe(false);
    expect(await s.jobs.getJob('job-a')).toBeNull();

    const up = { id: 'up-1', original_name: 'Book – ü.pdf', size_bytes: 5_000_000_000, content_type: 'application/pdf', kind: 'document' as const, path: 'uploads/up-1.pdf', sha256: 'ab'.repeat(32), created_at: new Date().toISOString() };
    expect(await s.jobs.createUpload(up)).toEqual(up);
    expect(await s.jobs.getUpload('up-1')).toEqual(up);
    expect(await s.jobs.deleteUpload('up-1')).toBe(true);
    expect(await s.jobs.getUpload('up-1')).toBeNull();
    expect(await s.jobs.deleteUpload('up-1')).toBe(false);
  });

  it('lists newest first with status filter, pagination and total', async () => {
    const s = await openStores(freshConfig(mode));
    const ids: string[] = [];
    for (let i = 0; i < 25; i++) {
      const id = `job-${String(i).padStart(3, '0')}`;
      ids.push(id);
      await s.jobs.createJob({ id, pipeline_type: 'audio', config_json: { i }, upload_ids: [] });
    }
    const newestFirst = [...ids].reverse();
    const page1 = await s.jobs.listJobs({ limit: 10, offset: 0 });
    expect(page1.total).toBe(25);
    expect(page1.jobs.map((j) => j.id)).toEqual(newestFirst.slice(0, 10));
    const page3 = await s.jobs.listJobs({ limit: 10, offset: 20 });
    expect(page3.jobs.map((j) => j.id)).toEqual(newestFirst.slice(20));
    expect((await s.jobs.listJobs({ limit: 10, offset: 30 })).jobs).toEqual([]);

    const running = ids.filter((_, i) => i % 3 === 0);
    for (const id of running) await s.jobs.updateJob(id, { status: 'running' });
    const r = await s.jobs.listJobs({ status: 'running', limit: 5, offset: 2 });
    expect(r.total).toBe(running.length);
    expect(r.jobs.map((j) => j.id)).toEqual([...running].reverse().slice(2, 7));
    expect(r.jobs.every((j) => j.status === 'running')).toBe(true);
    expect(await s.jobs.listJobs({ status: 'stopped', limit: 10, offset: 0 })).toEqual({ jobs: [], total: 0 });
  });

  it('transition is a compare-and-set: of racing transitions exactly one wins', async () => {
    const s = await openStores(freshConfig(mode));
    for (let round = 0; round < 5; round++) {
      const id = `race-${round}`;
      await s.jobs.createJob({ id, pipeline_type: 'audio', config_json: {}, upload_ids: [] });
      const results = await Promise.all(
        Array.from({ length: 4 }, (_, i) => s.jobs.transition(id, ['pending'], { status: 'running', worker_task_id: `w${i}` })),
      );
      const winners = results.filter((r) => r !== null);
      expect(winners).toHaveLength(1);
      expect((await s.jobs.getJob(id))?.worker_task_id).toBe(winners[0]!.worker_task_id);
    }
    expect(await s.jobs.transition('race-0', ['pending'], { status: 'failed' })).toBeNull();
    const done = await s.jobs.transition('race-0', ['running', 'pending'], { status: 'completed', finished_at: new Date().toISOString() });
    expect(done?.status).toBe('completed');
    expect(done?.finished_at).toMatch(ISO_MS);
    expect(await s.jobs.transition('missing', ['pending'], { status: 'running' })).toBeNull();
  });

  it('mergeConfig: 20 concurrent merges of distinct keys all survive, shallowly', async () => {
    const config = freshConfig(mode);
    const s = await openStores(config);
    const other = await openStores(config); // a second connection, as a separate worker would have
    await s.jobs.createJob({ id: 'm', pipeline_type: 'lipsync', config_json: { keep: true, nested: { a: 1, b: 2 } }, upload_ids: [] });
    await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? s : other).jobs.mergeConfig('m', { [`k${i}`]: i })));
    const after = await s.jobs.mergeConfig('m', { nested: { c: 3 }, nullable: null });
    expect(after!.config_json).toEqual({
      keep: true,
      nested: { c: 3 },
      nullable: null,
      ...Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`k${i}`, i])),
    });
    expect(await s.jobs.mergeConfig('missing', { a: 1 })).toBeNull();
  });

  it('counts the jobs that use an upload', async () => {
    const s = await openStores(freshConfig(mode));
    await s.jobs.createJob({ id: 'a', pipeline_type: 'audio', config_json: {}, upload_ids: ['u1'] });
    await s.jobs.createJob({ id: 'b', pipeline_type: 'lipsync', config_json: {}, upload_ids: ['u1', 'u2', 'u3'] });
    await s.jobs.createJob({ id: 'c', pipeline_type: 'audio', config_json: {}, upload_ids: [] });
    expect(await s.jobs.countJobsUsingUpload('u1')).toBe(2);
    expect(await s.jobs.countJobsUsingUpload('u2')).toBe(1);
    expect(await s.jobs.countJobsUsingUpload('u')).toBe(0);
    expect(await s.jobs.countJobsUsingUpload('nobody')).toBe(0);
    await s.jobs.deleteJob('b');
    expect(await s.jobs.countJobsUsingUpload('u1')).toBe(1);
    expect(await s.jobs.countJobsUsingUpload('u2')).toBe(0);
  });

  it('key-value: 24 h cancel flag with ttl, expiry, delete', async () => {
    const s = await openStores(freshConfig(mode));
    await s.kv.set('job:1:cancel', '1', 86400);
    expect(await s.kv.get('job:1:cancel')).toBe('1');
    const ttl = await s.kv.ttl('job:1:cancel');
    expect(ttl).toBeGreaterThan(86390);
    expect(ttl).toBeLessThanOrEqual(86400);
    await s.kv.set('short', 'x', 1);
    expect(await s.kv.get('short')).toBe('x');
    await sleep(1200);
    expect(await s.kv.get('short')).toBeNull();
    expect(await s.kv.ttl('short')).toBeNull();
    await s.kv.set('job:1:cancel', '2', 10);
    expect(await s.kv.get('job:1:cancel')).toBe('2');
    expect(await s.kv.ttl('job:1:cancel')).toBeLessThanOrEqual(10);
    await s.kv.del('job:1:cancel');
    expect(await s.kv.get('job:1:cancel')).toBeNull();
    expect(await s.kv.ttl('absent')).toBeNull();
    await expect(s.kv.set('bad', 'x', 0)).rejects.toThrow(/ttlSeconds/);
  });

  it('delivers events in order, to this process and to another one sharing the store', async () => {
    const config = freshConfig(mode);
    const api = await openStores(config);
    const worker = await openStores(config); // stands for a separate `lectern worker` process
    const seenLocal: JobEvent[] = [];
    const seenRemote: JobEvent[] = [];
    const otherJob: JobEvent[] = [];
    const unsubLocal = await api.events.subscribe('7', (e) => seenLocal.push(e));
    const unsubRemote = await api.events.subscribe('8', (e) => seenRemote.push(e));
    await api.events.subscribe('9', (e) => otherJob.push(e));
    const progress = (current: number): JobEvent => ({ type: 'progress', progress: { phase: 'synthesize', current, total: 3 } });
    await api.events.publish('7', progress(1));
    await api.events.publish('7', { type: 'status', status: 'completed' });
    for (let i = 1; i <= 3; i++) await worker.events.publish('8', progress(i));
    await worker.events.publish('8', { type: 'status', status: 'failed', error: 'boom' });
    await waitFor('local events', () => (seenLocal.length >= 2 ? true : undefined), 3000);
    await waitFor('cross-process events', () => (seenRemote.length >= 4 ? true : undefined), 3000);
    expect(seenLocal).toEqual([progress(1), { type: 'status', status: 'completed' }]);
    expect(seenRemote).toEqual([progress(1), progress(2), progress(3), { type: 'status', status: 'failed', error: 'boom' }]);
    await unsubLocal();
    await unsubRemote();
    await worker.events.publish('8', progress(9));
    await api.events.publish('7', progress(9));
    await sleep(600);
    expect(seenLocal).toHaveLength(2);
    expect(seenRemote).toHaveLength(4);
    expect(otherJob).toEqual([]);
  });

  it('queue: enqueue → consume → done; remove only a task that has not started', async () => {
    const s = await openStores(freshConfig(mode));
    const removable = await s.queue.enqueue('removed-job');
    expect(await s.queue.remove(removable)).toBe(true);
    expect(await s.queue.remove(removable)).toBe(false);
    const seen: Array<{ jobId: string; ctx: TaskContext }> = [];
    const taskId = await s.queue.enqueue('42');
    expect(typeof taskId).toBe('string');
    const t0 = Date.now();
    await s.queue.consume(async (jobId, ctx) => {
      seen.push({ jobId, ctx });
    }, 2);
    await waitFor('the task', () => (seen.length ? true : undefined), 5000);
    expect(Date.now() - t0).toBeLessThan(1000);
    expect(seen[0]!.jobId).toBe('42');
    expect(seen[0]!.ctx.taskId).toBe(taskId);
    expect(seen[0]!.ctx.attempt).toBe(1);
    // An enqueue while consuming starts at once (in-process wake-up / BullMQ's blocking fetch).
    const t1 = Date.now();
    await s.queue.enqueue('43');
    await waitFor('the second task', () => (seen.length === 2 ? true : undefined), 5000);
    expect(Date.now() - t1).toBeLessThan(150);
    expect(seen.map((x) => x.jobId)).toEqual(['42', '43']);
    expect(await s.queue.remove(taskId)).toBe(false); // done, not waiting
    await sleep(2500); // > two lease periods: a finished task is never handed out again
    expect(seen).toHaveLength(2);
  });

  it('queue: a handler that throws fails the task without redelivery', async () => {
    const s = await openStores(freshConfig(mode));
    const calls: string[] = [];
    await s.queue.consume(async (jobId) => {
      calls.push(jobId);
      if (jobId === 'bad') throw new Error('handler failed');
    }, 1);
    await s.queue.enqueue('bad');
    await s.queue.enqueue('good');
    await waitFor('both tasks', () => (calls.length >= 2 ? true : undefined), 5000);
    await sleep(2500);
    expect(calls).toEqual(['bad', 'good']);
  });

  it('kill-and-recover: a worker SIGKILLed mid-task → another consumer gets the same job with attempt 2', { timeout: 30_000 }, async () => {
    const config = freshConfig(mode, 1000);
    const s = await openStores(config);
    const taskId = await s.queue.enqueue('crash-me');
    const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', path.join(PROJECT_ROOT, 'test/helpers/jobs-queue-child.ts'), JSON.stringify(config)], {
      cwd: PROJECT_ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout!.on('data', (d) => (out += d));
    child.stderr!.on('data', (d) => (err += d));
    try {
      await waitFor('the child to start the task', () => (out.includes('started crash-me 1') ? true : undefined), 15_000).catch((e) => {
        throw new Error(`${(e as Error).message}; child stderr: ${err}`);
      });
      await sleep(1500); // past one lease: the child's heartbeat must have kept it
      child.kill('SIGKILL');
      await new Promise((r) => child.once('exit', r));
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
    const killedAt = Date.now();
    const got: Array<{ jobId: string; ctx: TaskContext }> = [];
    await s.queue.consume(async (jobId, ctx) => {
      got.push({ jobId, ctx });
    }, 1);
    await waitFor('the recovered task', () => (got.length ? true : undefined), 6 * config.leaseMs);
    expect(got[0]!.jobId).toBe('crash-me');
    expect(got[0]!.ctx.attempt).toBe(2);
    expect(got[0]!.ctx.taskId).toBe(taskId);
    expect(Date.now() - killedAt).toBeLessThan(6 * config.leaseMs);
  });

  it('close() aborts a running task and returns it to the queue for the next consumer', { timeout: 20_000 }, async () => {
    // A long lease: the task must come back because close() handed it back, not because a lease lapsed.
    const config = freshConfig(mode, 60_000);
    const first = await openStores(config);
    let aborted = false;
    let started = false;
    await first.queue.consume(async (_jobId, ctx) => {
      started = true;
      await new Promise<void>((_, reject) => ctx.signal.addEventListener('abort', () => { aborted = true; reject(ctx.signal.reason); }));
    }, 1);
    const taskId = await first.queue.enqueue('interrupted');
    await waitFor('the task to start', () => (started ? true : undefined), 5000);
    await first.close();
    expect(aborted).toBe(true);

    const second = await openStores(config);
    const got: Array<{ jobId: string; ctx: TaskContext }> = [];
    const t0 = Date.now();
    await second.queue.consume(async (jobId, ctx) => {
      got.push({ jobId, ctx });
    }, 1);
    await waitFor('the returned task', () => (got.length ? true : undefined), 5000);
    expect(Date.now() - t0).toBeLessThan(5000);
    expect(got[0]).toMatchObject({ jobId: 'interrupted', ctx: { taskId, attempt: 2 } });
  });
});
