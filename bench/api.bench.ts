// HTTP throughput and tail latency of the job API with 10,000 jobs in the store, both modes,
// with bearer tokens as a networked install runs (alice and bob own half the jobs each; root
// is an admin): GET /api/jobs/{id} and GET /api/jobs?limit=100, each against GET /health
// (same server, no store access, no token) measured in the same run as the baseline, so the
// ratio isolates the store's cost.
// Then the ownership check's timing: bob asking for alice's jobs and for ids that do not
// exist, interleaved request by request in one run (both answer the same 404 from the same
// query; the p50/p99 ratio says whether time tells them apart).
// A closed loop of C concurrent keep-alive clients for a fixed time per case; requests/s,
// p50 and p99 from every request's latency.
// Needs PostgreSQL and Redis on 127.0.0.1 for the distributed rows.
// Run: node --import tsx bench/api.bench.ts [seconds-per-case] [concurrency]   (quick: 1 4)
import { randomUUID } from 'node:crypto';
import { INTERNAL } from '../src/core/caller.ts';
import { JOB_STATUSES } from '../src/jobs/types.ts';
import { testEnv, type Mode } from '../test/helpers/service.ts';
import { sized } from './quick.ts';

const SECONDS = sized(Number(process.argv[2] ?? 5), 0.2);
const CONCURRENCY = sized(Number(process.argv[3] ?? 16), 2);
const JOBS = sized(10_000, 200);
const TOKENS = { alice: 'alice-bench-token-0123456789', bob: 'bob-bench-token-0123456789ab', root: 'root-bench-token-0123456789a' };

interface Result {
  rps: number;
  p50: number;
  p99: number;
  n: number;
}

interface Case {
  url: () => string;
  token?: string;
  status?: number;
}

/** Runs the cases round-robin, request by request, so each sees the same conditions; one Result per case. */
async function load(...cases: Case[]): Promise<Result[]> {
  const lat: number[][] = cases.map(() => []);
  const end = performance.now() + SECONDS * 1000;
  let errors = 0;
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() < end) {
        const k = next++ % cases.length;
        const c = cases[k]!;
        const t0 = performance.now();
        const res = await fetch(c.url(), { headers: c.token ? { authorization: `Bearer ${c.token}` } : {} }); // keep-alive
        await res.arrayBuffer();
        if (res.status !== (c.status ?? 200)) errors++;
        lat[k]!.push(performance.now() - t0);
      }
    }),
  );
  if (errors) throw new Error(`${errors} requests got an unexpected status`);
  return lat.map((l) => {
    l.sort((a, b) => a - b);
    const q = (p: number) => l[Math.min(l.length - 1, Math.floor(p * l.length))]!;
    return { rps: l.length / SECONDS, p50: q(0.5), p99: q(0.99), n: l.length };
  });
}

const fmt = (r: Result) => `${r.rps.toFixed(0).padStart(6)} req/s  p50 ${r.p50.toFixed(2).padStart(6)} ms  p99 ${r.p99.toFixed(2).padStart(7)} ms`;

const lines: string[] = [];
for (const mode of ['embedded', 'distributed'] as Mode[]) {
  const t = testEnv(mode, `bench_api_${mode}`);
  // The API alone: no worker, so nothing but the requests uses the CPU.
  const svc = await t.start({
    LECTERN_NO_EMBEDDED_WORKER: '1',
    LECTERN_LOG_LEVEL: 'error',
    LECTERN_RATE_LIMIT_PER_MINUTE: '0',
    LECTERN_API_TOKENS: Object.entries(TOKENS).map(([n, tok]) => `${n}:${tok}`).join(','),
    LECTERN_API_ADMINS: 'root',
  });
  try {
    const ids: Record<'alice' | 'bob', string[]> = { alice: [], bob: [] };
    for (let i = 0; i < JOBS; i += 50) {
      await Promise.all(
        Array.from({ length: 50 }, async (_, k) => {
          const id = randomUUID();
          const owner = (i + k) % 2 ? 'bob' : 'alice';
          ids[owner].push(id);
          const config = { pipeline_type: 'audio', language: 'en-US', voice_id: null, options: { format: 'mp3', speed: 1 }, document: { original_name: 'doc.md', content_type: 'text/markdown' }, created_by: owner };
          await svc.stores.jobs.createJob({ id, pipeline_type: 'audio', config_json: config, upload_ids: [], owner }, INTERNAL);
          await svc.stores.jobs.updateJob(id, { status: JOB_STATUSES[(i + k) % 3]!, progress: { phase: 'synthesize', current: k, total: 50 } });
        }),
      );
    }
    let i = 0;
    const half = JOBS / 2;
    await load({ url: () => `${svc.url}/health` }); // warm-up: JIT, connections, caches
    const [health] = await load({ url: () => `${svc.url}/health` });
    const [one] = await load({ url: () => `${svc.url}/api/jobs/${ids.alice[i++ % half]}`, token: TOKENS.alice });
    const [own] = await load({ url: () => `${svc.url}/api/jobs?limit=100&offset=${(i++ % (JOBS / 200)) * 100}`, token: TOKENS.alice });
    const [all] = await load({ url: () => `${svc.url}/api/jobs?limit=100&offset=${(i++ % (JOBS / 100)) * 100}`, token: TOKENS.root });
    const [notYours, missing] = await load(
      { url: () => `${svc.url}/api/jobs/${ids.alice[i++ % half]}`, token: TOKENS.bob, status: 404 },
      { url: () => `${svc.url}/api/jobs/${randomUUID()}`, token: TOKENS.bob, status: 404 },
    );
    const x = (r: Result) => `${(r.rps / health!.rps).toFixed(2)}× baseline throughput`;
    lines.push(
      `${mode.padEnd(11)} GET /health (baseline)                    ${fmt(health!)}`,
      `${mode.padEnd(11)} GET /api/jobs/{id} (own)                  ${fmt(one!)}  ${x(one!)}`,
      `${mode.padEnd(11)} GET /api/jobs?limit=100 (a token's 5,000) ${fmt(own!)}  ${x(own!)}`,
      `${mode.padEnd(11)} GET /api/jobs?limit=100 (admin, 10,000)   ${fmt(all!)}  ${x(all!)}`,
      `${mode.padEnd(11)} 404 another token's job  (interleaved)    ${fmt(notYours!)}`,
      `${mode.padEnd(11)} 404 an id that does not exist             ${fmt(missing!)}  p50 ratio ${(notYours!.p50 / missing!.p50).toFixed(3)}, p99 ratio ${(notYours!.p99 / missing!.p99).toFixed(3)}`,
    );
  } finally {
    await svc.close();
    await t.cleanup();
  }
}
console.log(`\njob API with ${JOBS} jobs in the store, ${CONCURRENCY} concurrent clients, ${SECONDS} s per case (2-core machine, medians of one run)\n${lines.join('\n')}`);
