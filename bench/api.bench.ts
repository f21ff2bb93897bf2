// HTTP throughput and tail latency of the job API with 10,000 jobs in the store, both modes:
// GET /api/jobs/{id} and GET /api/jobs?limit=100, each against GET /health (same server, no
// store access) measured in the same run as the baseline, so the ratio isolates the store's cost.
// A closed loop of C concurrent keep-alive clients for a fixed time per case; requests/s,
// p50 and p99 from every request's latency.
// Needs PostgreSQL and Redis on 127.0.0.1 for the distributed rows.
// Run: node --import tsx bench/api.bench.ts [seconds-per-case] [concurrency]
import { randomUUID } from 'node:crypto';
import { JOB_STATUSES } from '../src/jobs/types.ts';
import { testEnv, type Mode } from '../test/helpers/service.ts';

const SECONDS = Number(process.argv[2] ?? 5);
const CONCURRENCY = Number(process.argv[3] ?? 16);
const JOBS = 10_000;

interface Result {
  rps: number;
  p50: number;
  p99: number;
  n: number;
}

async function load(url: () => string): Promise<Result> {
  const lat: number[] = [];
  const end = performance.now() + SECONDS * 1000;
  let errors = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() < end) {
        const t0 = performance.now();
        const res = await fetch(url()); // Node's fetch keeps connections alive
        await res.arrayBuffer();
        if (res.status !== 200) errors++;
        lat.push(performance.now() - t0);
      }
    }),
  );
  if (errors) throw new Error(`${errors} requests failed`);
  lat.sort((a, b) => a - b);
  const q = (p: number) => lat[Math.min(lat.length - 1, Math.floor(p * lat.length))]!;
  return { rps: lat.length / SECONDS, p50: q(0.5), p99: q(0.99), n: lat.length };
}

const fmt = (r: Result) => `${r.rps.toFixed(0).padStart(6)} req/s  p50 ${r.p50.toFixed(2).padStart(6)} ms  p99 ${r.p99.toFixed(2).padStart(7)} ms`;

const lines: string[] = [];
for (const mode of ['embedded', 'distributed'] as Mode[]) {
  const t = testEnv(mode, `bench_api_${mode}`);
  // The API alone: no worker, so nothing but the requests uses the CPU.
  const svc = await t.start({ LECTERN_NO_EMBEDDED_WORKER: '1', LECTERN_LOG_LEVEL: 'error' });
  try {
    const ids: string[] = [];
    const config = { pipeline_type: 'audio', language: 'en-US', voice_id: null, options: { format: 'mp3', speed: 1 }, document: { original_name: 'doc.md', content_type: 'text/markdown' } };
    for (let i = 0; i < JOBS; i += 50) {
      await Promise.all(
        Array.from({ length: 50 }, async (_, k) => {
          const id = randomUUID();
          ids.push(id);
          await svc.stores.jobs.createJob({ id, pipeline_type: 'audio', config_json: config, upload_ids: [] });
          await svc.stores.jobs.updateJob(id, { status: JOB_STATUSES[(i + k) % 3]!, progress: { phase: 'synthesize', current: k, total: 50 } });
        }),
      );
    }
    let i = 0;
    await load(() => `${svc.url}/health`); // warm-up: JIT, connections, caches
    const health = await load(() => `${svc.url}/health`);
    const one = await load(() => `${svc.url}/api/jobs/${ids[i++ % ids.length]}`);
    const page = await load(() => `${svc.url}/api/jobs?limit=100&offset=${(i++ % 50) * 100}`);
    lines.push(
      `${mode.padEnd(11)} GET /health (baseline)      ${fmt(health)}`,
      `${mode.padEnd(11)} GET /api/jobs/{id}          ${fmt(one)}  ${(one.rps / health.rps).toFixed(2)}× baseline throughput`,
      `${mode.padEnd(11)} GET /api/jobs?limit=100     ${fmt(page)}  ${(page.rps / health.rps).toFixed(2)}× baseline throughput`,
    );
  } finally {
    await svc.close();
    await t.cleanup();
  }
}
console.log(`\njob API with ${JOBS} jobs in the store, ${CONCURRENCY} concurrent clients, ${SECONDS} s per case (2-core machine, medians of one run)\n${lines.join('\n')}`);
