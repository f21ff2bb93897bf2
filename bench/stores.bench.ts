// Job store latency with 10,000 jobs, both modes: getJob, listJobs(limit 100), the
// status-filtered list, and one token's list (ten owners, the query's WHERE owner). Baseline: the same calls on a store holding 100 jobs, measured in
// the same run, so the ratio shows whether the indexes keep the cost flat as the table grows.
// Needs PostgreSQL (127.0.0.1:5432, database `test`) and Redis (127.0.0.1:6379) for the distributed rows.
// Run: node --import tsx bench/stores.bench.ts
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { Redis } from 'ioredis';
import { Bench } from 'tinybench';
import { loadServiceConfig } from '../src/config.ts';
import { INTERNAL, tokenCaller } from '../src/core/caller.ts';
import { createStores } from '../src/jobs/index.ts';
import { JOB_STATUSES, type Stores } from '../src/jobs/types.ts';
import { sized } from './quick.ts';

const PG_URL = process.env.LECTERN_BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const REDIS_URL = process.env.LECTERN_BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'lectern-bench-stores-'));
const namespaces: string[] = [];

async function seeded(mode: 'embedded' | 'distributed', n: number): Promise<Stores> {
  const ns = `bench_${mode}_${n}_${process.pid}`;
  namespaces.push(ns);
  const flags: Record<string, string> = { 'data-dir': path.join(tmp, ns), namespace: ns };
  if (mode === 'distributed') Object.assign(flags, { 'database-url': PG_URL, 'redis-url': REDIS_URL });
  const stores = await createStores(loadServiceConfig(flags, {}));
  const config = { pipeline_type: 'audio', language: 'en', voice_id: 'en-us', options: { speed: 1, format: 'mp3' } };
  const batch = 20;
  for (let i = 0; i < n; i += batch) {
    await Promise.all(
      Array.from({ length: Math.min(batch, n - i) }, async (_, k) => {
        const id = String(i + k + 1).padStart(8, '0');
        const owner = `user${(i + k) % 10}`;
        await stores.jobs.createJob({ id, pipeline_type: 'audio', config_json: { ...config, created_by: owner }, upload_ids: [], owner }, INTERNAL);
        await stores.jobs.updateJob(id, { status: JOB_STATUSES[(i + k) % JOB_STATUSES.length]!, progress: { phase: 'render', current: 1, total: 1 } });
      }),
    );
  }
  return stores;
}

const rows: string[] = [];
for (const mode of ['embedded', 'distributed'] as const) {
  const SMALL = sized(100, 10);
  const BIG = sized(10_000, 100);
  const small = await seeded(mode, SMALL);
  const big = await seeded(mode, BIG);
  const bench = new Bench(sized({ time: 1000, warmupTime: 200 }, { time: 0, iterations: 3, warmup: false }));
  let i = 0;
  for (const [label, s, n] of [['100 jobs', small, SMALL], ['10000 jobs', big, BIG]] as const) {
    bench.add(`${mode} getJob ${label}`, async () => {
      await s.jobs.getJob(String((i++ % n) + 1).padStart(8, '0'), INTERNAL);
    });
    bench.add(`${mode} listJobs(limit 100) ${label}`, async () => {
      await s.jobs.listJobs({ limit: 100, offset: 0 }, INTERNAL);
    });
    bench.add(`${mode} listJobs(status=completed, limit 100) ${label}`, async () => {
      await s.jobs.listJobs({ status: 'completed', limit: 100, offset: 0 }, INTERNAL);
    });
    bench.add(`${mode} listJobs(one token's, limit 100) ${label}`, async () => {
      await s.jobs.listJobs({ limit: 100, offset: 0 }, tokenCaller('user3', false));
    });
  }
  await bench.run();
  const stat = (name: string) => bench.tasks.find((t) => t.name === name)!.result!.latency;
  for (const op of ['getJob', 'listJobs(limit 100)', 'listJobs(status=completed, limit 100)', "listJobs(one token's, limit 100)"]) {
    const b = stat(`${mode} ${op} 10000 jobs`);
    const base = stat(`${mode} ${op} 100 jobs`);
    rows.push(
      `${mode.padEnd(11)} ${op.padEnd(38)} 10k: median ${b.p50!.toFixed(3)} ms, p99 ${b.p99!.toFixed(3)} ms | ` +
        `100 (baseline): median ${base.p50!.toFixed(3)} ms | ratio ${(b.p50! / base.p50!).toFixed(2)}x`,
    );
  }
  await Promise.all([small.close(), big.close()]);
}
console.log(rows.join('\n'));

fs.rmSync(tmp, { recursive: true, force: true });
const client = new pg.Client({ connectionString: PG_URL });
await client.connect();
const redis = new Redis(REDIS_URL);
for (const ns of namespaces) {
  await client.query(`drop schema if exists "${ns}" cascade`);
  const keys = await redis.keys(`${ns}:*`);
  if (keys.length) await redis.del(...keys);
}
await client.end();
redis.disconnect();
