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
import { sql } from 'kysely';
import { tokenCaller, type Caller } from '../src/core/caller.ts';
import { migrate, openPostgres, openSqlite } from '../src/jobs/db.ts';
import { createStores } from '../src/jobs/index.ts';
import { INTERNAL } from '../src/core/caller.ts';
import type { JobEvent, JobListQuery, Stores, TaskContext, UploadRecord } from '../src/jobs/types.ts';

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

/** An upload row owned by `owner` (null: made without authentication, or before ownership). */
const uploadRow = (id: string, owner: string | null): UploadRecord => ({
  id,
  original_name: `${id}.md`,
  size_bytes: 10,
  content_type: 'text/markdown; charset=utf-8',
  kind: 'document',
  path: `uploads/${id}.md`,
  sha256: 'ab'.repeat(32),
  owner,
  language: null,
  created_at: new Date().toISOString(),
});

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
    await b.jobs.createJob({ id: 'j1', pipeline_type: 'audio', config_json: {}, upload_ids: [], owner: null }, INTERNAL);
    expect((await c.jobs.getJob('j1', INTERNAL))?.id).toBe('j1');
    if (mode === 'embedded') expect(fs.existsSync(path.join(config.dataDir, 'lectern.db'))).toBe(true);
  });

  it('creates, reads, updates and deletes jobs and uploads', async () => {
    const s = await openStores(freshConfig(mode));
    for (const id of ['u1', 'u2']) await s.jobs.createUpload(uploadRow(id, null));
    await s.jobs.createUpload({ ...uploadRow('u-fr', null), language: 'fr-CA' });
    expect(await s.jobs.getUpload('u-fr', INTERNAL)).toMatchObject({ id: 'u-fr', language: 'fr-CA' });
    expect(await s.jobs.getUpload('u1', INTERNAL)).toMatchObject({ id: 'u1', language: null });
    // A job naming an upload that does not exist is not created.
    expect(await s.jobs.createJob({ id: 'job-x', pipeline_type: 'audio', config_json: {}, upload_ids: ['u1', 'gone'], owner: null }, INTERNAL)).toBeNull();
    expect(await s.jobs.getJob('job-x', INTERNAL)).toBeNull();
    const created = (await s.jobs.createJob({ id: 'job-a', pipeline_type: 'lipsync', config_json: { a: 1, nested: { x: [1, 2] } }, upload_ids: ['u1', 'u2'], owner: null }, INTERNAL))!;
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
    expect(await s.jobs.getJob('job-a', INTERNAL)).toEqual(created);
    expect(await s.jobs.getJob('nope', INTERNAL)).toBeNull();

    const started = new Date().toISOString();
    const upd = await s.jobs.updateJob('job-a', { status: 'running', progress: { phase: 'synthesize', current: 3, total: 9 }, started_at: started, attempts: 1, worker_task_id: '17' });
    expect(upd).toMatchObject({ status: 'running', progress: { phase: 'synthesize', current: 3, total: 9 }, started_at: started, attempts: 1, worker_task_id: '17' });
    expect(upd!.updated_at >= created.updated_at).toBe(true);
    expect(await s.jobs.getJob('job-a', INTERNAL)).toEqual(upd);
    expect((await s.jobs.updateJob('job-a', { progress: null, error: 'one line' }))).toMatchObject({ progress: null, error: 'one line' });
    expect(await s.jobs.updateJob('nope', { status: 'failed' })).toBeNull();

    expect(await s.jobs.deleteJob('job-a', INTERNAL)).toBe(true);
    expect(await s.jobs.deleteJob('job-a', INTERNAL)).toBe(false);
    expect(await s.jobs.getJob('job-a', INTERNAL)).toBeNull();

    const up = { ...uploadRow('up-1', 'alice'), original_name: 'Book – ü.pdf', size_bytes: 5_000_000_000 };
    expect(await s.jobs.createUpload(up)).toEqual(up);
    expect(await s.jobs.getUpload('up-1', INTERNAL)).toEqual(up);
    expect(await s.jobs.deleteUpload('up-1', INTERNAL)).toEqual({ outcome: 'deleted', upload: up });
    expect(await s.jobs.getUpload('up-1', INTERNAL)).toBeNull();
    expect(await s.jobs.deleteUpload('up-1', INTERNAL)).toEqual({ outcome: 'missing' });
  });

  it('lists newest first with status filter, pagination and total', async () => {
    const s = await openStores(freshConfig(mode));
    const ids: string[] = [];
    for (let i = 0; i < 25; i++) {
      const id = `job-${String(i).padStart(3, '0')}`;
      ids.push(id);
      await s.jobs.createJob({ id, pipeline_type: 'audio', config_json: { i }, upload_ids: [], owner: null }, INTERNAL);
    }
    const newestFirst = [...ids].reverse();
    const page1 = await s.jobs.listJobs({ limit: 10, offset: 0 }, INTERNAL);
    expect(page1.total).toBe(25);
    expect(page1.jobs.map((j) => j.id)).toEqual(newestFirst.slice(0, 10));
    const page3 = await s.jobs.listJobs({ limit: 10, offset: 20 }, INTERNAL);
    expect(page3.jobs.map((j) => j.id)).toEqual(newestFirst.slice(20));
    expect((await s.jobs.listJobs({ limit: 10, offset: 30 }, INTERNAL)).jobs).toEqual([]);

    const running = ids.filter((_, i) => i % 3 === 0);
    for (const id of running) await s.jobs.updateJob(id, { status: 'running' });
    const r = await s.jobs.listJobs({ status: 'running', limit: 5, offset: 2 }, INTERNAL);
    expect(r.total).toBe(running.length);
    expect(r.jobs.map((j) => j.id)).toEqual([...running].reverse().slice(2, 7));
    expect(r.jobs.every((j) => j.status === 'running')).toBe(true);
    expect(await s.jobs.listJobs({ status: 'stopped', limit: 10, offset: 0 }, INTERNAL)).toEqual({ jobs: [], total: 0 });
  });

  it('transition is a compare-and-set: of racing transitions exactly one wins', async () => {
    const s = await openStores(freshConfig(mode));
    for (let round = 0; round < 5; round++) {
      const id = `race-${round}`;
      await s.jobs.createJob({ id, pipeline_type: 'audio', config_json: {}, upload_ids: [], owner: null }, INTERNAL);
      const results = await Promise.all(
        Array.from({ length: 4 }, (_, i) => s.jobs.transition(id, ['pending'], { status: 'running', worker_task_id: `w${i}` })),
      );
      const winners = results.filter((r) => r !== null);
      expect(winners).toHaveLength(1);
      expect((await s.jobs.getJob(id, INTERNAL))?.worker_task_id).toBe(winners[0]!.worker_task_id);
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
    await s.jobs.createJob({ id: 'm', pipeline_type: 'lipsync', config_json: { keep: true, nested: { a: 1, b: 2 } }, upload_ids: [], owner: null }, INTERNAL);
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
    for (const id of ['u1', 'u2', 'u3']) await s.jobs.createUpload(uploadRow(id, null));
    await s.jobs.createJob({ id: 'a', pipeline_type: 'audio', config_json: {}, upload_ids: ['u1'], owner: null }, INTERNAL);
    await s.jobs.createJob({ id: 'b', pipeline_type: 'lipsync', config_json: {}, upload_ids: ['u1', 'u2', 'u3'], owner: null }, INTERNAL);
    await s.jobs.createJob({ id: 'c', pipeline_type: 'audio', config_json: {}, upload_ids: [], owner: null }, INTERNAL);
    expect(await s.jobs.countJobsUsingUpload('u1')).toBe(2);
    expect(await s.jobs.countJobsUsingUpload('u2')).toBe(1);
    expect(await s.jobs.countJobsUsingUpload('u')).toBe(0);
    expect(await s.jobs.countJobsUsingUpload('nobody')).toBe(0);
    await s.jobs.deleteJob('b', INTERNAL);
    expect(await s.jobs.countJobsUsingUpload('u1')).toBe(1);
    expect(await s.jobs.countJobsUsingUpload('u2')).toBe(0);
  });

  it('ownership is a condition of every query: a token reads, lists, counts, uses and deletes only its own; an admin everything; rows without an owner are for admins only', async () => {
    const s = await openStores(freshConfig(mode));
    const alice = tokenCaller('alice', false);
    const bob = tokenCaller('bob', false);
    const root = tokenCaller('root', true);
    for (const [id, owner] of [['ua', 'alice'], ['ub', 'bob'], ['ul', null]] as const) await s.jobs.createUpload(uploadRow(id, owner));
    // A millisecond apart, so the newest-first order is the creation order (equal times would order by id).
    const make = async (id: string, owner: string | null, caller: Caller, uploads: string[]) => {
      await sleep(2);
      return s.jobs.createJob({ id, pipeline_type: 'audio', config_json: { created_by: owner }, upload_ids: uploads, owner }, caller);
    };
    // Interleaved, so a page read first and filtered after would come out short.
    for (let i = 0; i < 7; i++) {
      expect(await make(`a${i}`, 'alice', alice, ['ua'])).not.toBeNull();
      if (i < 4) expect(await make(`b${i}`, 'bob', bob, ['ub'])).not.toBeNull();
      if (i < 2) expect(await make(`l${i}`, null, INTERNAL, ['ul'])).not.toBeNull();
    }
    // A token builds jobs on its own uploads only; an admin on anyone's.
    expect(await make('x1', 'bob', bob, ['ua'])).toBeNull();
    expect(await make('x2', 'bob', bob, ['ub', 'ul'])).toBeNull();
    expect(await make('x3', 'root', root, ['ua', 'ub', 'ul'])).toMatchObject({ id: 'x3', owner: 'root' });
    expect(await s.jobs.getJob('x1', INTERNAL)).toBeNull();

    expect((await s.jobs.getJob('a0', alice))?.owner).toBe('alice');
    expect(await s.jobs.getJob('a0', bob)).toBeNull();
    expect((await s.jobs.getJob('a0', root))?.owner).toBe('alice');
    expect(await s.jobs.getJob('l0', alice)).toBeNull();
    expect((await s.jobs.getJob('l0', root))?.owner).toBeNull();
    expect((await s.jobs.getUpload('ua', alice))?.owner).toBe('alice');
    expect(await s.jobs.getUpload('ua', bob)).toBeNull();
    expect(await s.jobs.getUpload('ul', alice)).toBeNull();
    expect((await s.jobs.getUpload('ul', root))?.owner).toBeNull();

    const ids = async (q: JobListQuery, c: Caller) => {
      const r = await s.jobs.listJobs(q, c);
      return { ids: r.jobs.map((j) => j.id), total: r.total };
    };
    expect(await ids({ limit: 3, offset: 0 }, alice)).toEqual({ ids: ['a6', 'a5', 'a4'], total: 7 });
    expect(await ids({ limit: 3, offset: 3 }, alice)).toEqual({ ids: ['a3', 'a2', 'a1'], total: 7 });
    expect(await ids({ limit: 3, offset: 6 }, alice)).toEqual({ ids: ['a0'], total: 7 });
    expect(await ids({ limit: 10, offset: 0 }, bob)).toEqual({ ids: ['b3', 'b2', 'b1', 'b0'], total: 4 });
    expect((await ids({ limit: 100, offset: 0 }, root)).total).toBe(14);
    expect(await ids({ owner: 'bob', limit: 2, offset: 2 }, root)).toEqual({ ids: ['b1', 'b0'], total: 4 });
    expect(await ids({ owner: 'bob', limit: 10, offset: 0 }, alice)).toEqual({ ids: [], total: 0 });
    for (const id of ['a1', 'a2', 'b1', 'l1']) await s.jobs.updateJob(id, { status: 'running' });
    expect(await ids({ status: 'running', limit: 10, offset: 0 }, alice)).toEqual({ ids: ['a2', 'a1'], total: 2 });
    expect(await ids({ status: 'running', limit: 10, offset: 0 }, root)).toEqual({ ids: ['a2', 'l1', 'b1', 'a1'], total: 4 });
    expect(await ids({ status: 'running', owner: 'alice', limit: 1, offset: 1 }, root)).toEqual({ ids: ['a1'], total: 2 });

    // The active-job limit counts per owner; jobs without one count together.
    expect(await s.jobs.countActiveJobs('alice')).toBe(7);
    expect(await s.jobs.countActiveJobs('root')).toBe(1);
    expect(await s.jobs.countActiveJobs(null)).toBe(2);

    expect(await s.jobs.deleteJob('a0', bob)).toBe(false);
    expect(await s.jobs.getJob('a0', INTERNAL)).not.toBeNull();
    expect(await s.jobs.deleteUpload('ua', bob)).toEqual({ outcome: 'missing' });
    expect(await s.jobs.deleteUpload('ul', alice)).toEqual({ outcome: 'missing' });
    // In use by alice's 7 jobs and root's one: kept, whoever asks.
    expect(await s.jobs.deleteUpload('ua', alice)).toEqual({ outcome: 'in-use', jobs: 8 });
    expect(await s.jobs.deleteUpload('ul', root)).toEqual({ outcome: 'in-use', jobs: 3 });
    expect(await s.jobs.deleteJob('a0', alice)).toBe(true);
    expect(await s.jobs.deleteJob('b0', root)).toBe(true);
    expect((await ids({ limit: 100, offset: 0 }, root)).total).toBe(12);
  });

  it('an upload deleted while a job naming it is created: either the job exists and the delete is refused, or the upload is gone and no job was made', async () => {
    const config = freshConfig(mode);
    const a = await openStores(config);
    const b = await openStores(config); // another process's connection (PostgreSQL: its own pool)
    const alice = tokenCaller('alice', false);
    const seen = new Set<string>();
    for (let i = 0; i < 30; i++) {
      await a.jobs.createUpload(uploadRow(`r${i}`, 'alice'));
      const create = () => a.jobs.createJob({ id: `rj${i}`, pipeline_type: 'audio', config_json: {}, upload_ids: [`r${i}`], owner: 'alice' }, alice);
      const remove = () => b.jobs.deleteUpload(`r${i}`, alice);
      // Alternate which starts first, so both orders are tried.
      const [job, del] = i % 2 ? await Promise.all([create(), remove()]) : await Promise.all([remove(), create()]).then(([d, j]) => [j, d] as const);
      if (job) {
        expect(del).toEqual({ outcome: 'in-use', jobs: 1 });
        expect(await a.jobs.getUpload(`r${i}`, alice)).not.toBeNull();
      } else {
        expect(del.outcome).toBe('deleted');
        expect(await a.jobs.getJob(`rj${i}`, INTERNAL)).toBeNull();
      }
      seen.add(job ? 'job created' : 'upload deleted');
    }
    expect(seen.size).toBeGreaterThan(0);
  });

  it('migration 3 gives jobs their recorded creator as owner; older uploads get none and are for admins only (and, migration 4, no declared language)', async () => {
    const config = freshConfig(mode);
    const conn = mode === 'distributed' ? openPostgres(PG_URL, config.namespace, 2) : openSqlite(path.join(config.dataDir, 'lectern.db'));
    try {
      await migrate(conn, 2); // the schema before ownership
      const now = new Date().toISOString();
      for (const [id, createdBy] of [['old-alice', 'alice'], ['old-anon', null], ['old-none', undefined]] as const) {
        const config_json = JSON.stringify(createdBy === undefined ? { pipeline_type: 'audio' } : { pipeline_type: 'audio', created_by: createdBy });
        await sql`insert into jobs (id, pipeline_type, status, config_json, upload_ids, attempts, created_at, updated_at) values (${id}, 'audio', 'completed', ${config_json}, ${'["old-up"]'}, 1, ${now}, ${now})`.execute(conn.db);
      }
      await sql`insert into uploads (id, original_name, size_bytes, content_type, kind, path, sha256, created_at) values ('old-up', 'old.md', 3, 'text/markdown', 'document', 'uploads/old-up.md', ${'ab'.repeat(32)}, ${now})`.execute(conn.db);
    } finally {
      await conn.close();
    }
    const s = await openStores(config); // migrates to the newest version
    const alice = tokenCaller('alice', false);
    const root = tokenCaller('root', true);
    expect((await s.jobs.getJob('old-alice', alice))?.owner).toBe('alice');
    expect(await s.jobs.getJob('old-anon', alice)).toBeNull();
    expect(await s.jobs.getJob('old-none', alice)).toBeNull();
    expect((await s.jobs.listJobs({ limit: 10, offset: 0 }, alice)).total).toBe(1);
    expect((await s.jobs.listJobs({ limit: 10, offset: 0 }, root)).jobs.map((j) => [j.id, j.owner]).sort()).toEqual([
      ['old-alice', 'alice'],
      ['old-anon', null],
      ['old-none', null],
    ]);
    expect(await s.jobs.getUpload('old-up', alice)).toBeNull();
    expect(await s.jobs.getUpload('old-up', root)).toMatchObject({ id: 'old-up', owner: null, language: null });
    expect(await s.jobs.countActiveJobs(null)).toBe(0);
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
