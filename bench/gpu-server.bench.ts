// GPU server throughput: 32 concurrent clients sending /synthesize for sentences of typical
// length, --max-batch 8 against --max-batch 1 (the baseline) in the same run, same backend
// (piper when its voice is installed, else espeak), same pool size and threads.
//   node --import tsx bench/gpu-server.bench.ts [--backend piper] [--workers 2] [--rounds 4] [--intra-op N] [--session-batch N]
import path from 'node:path';
import { Bench } from 'tinybench';
import { PROJECT_ROOT, loadGpuServerConfig, parseArgs } from '../src/config.ts';
import { createLogger } from '../src/log.ts';
import { chooseBackend, startGpuServer } from '../src/gpu-server/index.ts';
import { SENTENCES } from './sentences.ts';
import { QUICK, sized } from './quick.ts';

const { flags } = parseArgs(process.argv.slice(2));
const MODELS = path.join(PROJECT_ROOT, 'models');
const backend = typeof flags.backend === 'string' ? flags.backend : QUICK ? 'espeak' : chooseBackend(MODELS);
const workers = Number(flags.workers ?? sized(2, 1));
const rounds = Number(flags.rounds ?? sized(4, 1));
// The server's defaults unless given: --intra-op 0 (onnxruntime's own: every core per worker)
// and --session-batch 16 reproduce the settings before they were tuned for CPU.
const intraOpThreads = flags['intra-op'] === undefined ? undefined : Number(flags['intra-op']);
const sessionBatch = flags['session-batch'] === undefined ? undefined : Number(flags['session-batch']);
const CLIENTS = sized(32, 4);
const PER_CLIENT = sized(2, 1);

interface Run { seconds: number; latencies: number[]; requests: number }

async function load(url: string): Promise<Run> {
  const latencies: number[] = [];
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: CLIENTS }, async (_, c) => {
      for (let k = 0; k < PER_CLIENT; k++) {
        const text = SENTENCES[(c + k) % SENTENCES.length]!;
        const s = performance.now();
        const r = await fetch(`${url}/synthesize`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text, language: 'en-US' }) });
        await r.arrayBuffer();
        if (r.status !== 200) throw new Error(`HTTP ${r.status}`);
        latencies.push(performance.now() - s);
      }
    }),
  );
  return { seconds: (performance.now() - t0) / 1000, latencies, requests: CLIENTS * PER_CLIENT };
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};

interface Server { maxBatch: number; url: string; close(): Promise<void> }

async function startServer(maxBatch: number): Promise<Server> {
  const srv = await startGpuServer(
    { ...loadGpuServerConfig({}, {}), port: 0, backend, workers, maxBatch, batchWindowMs: 30, intraOpThreads, sessionBatch, modelsDir: MODELS, dataDir: '/tmp/lectern-gpu-bench', logLevel: 'silent' },
    createLogger('silent', 'gpu-bench'),
  );
  await load(srv.url); // warm-up: sessions, allocator, JIT
  return { maxBatch, ...srv };
}

async function summary(srv: Server, runs: Run[]) {
  const metrics = await (await fetch(`${srv.url}/metrics`)).text();
  const sum = Number(/lectern_gpu_batch_size_sum\{[^}]*\} (\S+)/.exec(metrics)?.[1]);
  const count = Number(/lectern_gpu_batch_size_count\{[^}]*\} (\S+)/.exec(metrics)?.[1]);
  const model = /lectern_gpu_model_time_ms_sum\{model="tts:[^"]*"\} (\S+)/.exec(metrics)?.[1];
  const modelCount = /lectern_gpu_model_time_ms_count\{model="tts:[^"]*"\} (\S+)/.exec(metrics)?.[1];
  const health = (await (await fetch(`${srv.url}/health`)).json()) as { intra_op_threads: number | null };
  const all = runs.flatMap((r) => r.latencies);
  const thr = runs.map((r) => r.requests / r.seconds).sort((a, b) => a - b);
  return {
    maxBatch: srv.maxBatch,
    intraOp: health.intra_op_threads,
    throughput: thr[Math.floor(thr.length / 2)]!,
    rounds: runs.map((r) => r.requests / r.seconds),
    p50: pct(all, 50),
    p99: pct(all, 99),
    meanBatch: sum / count,
    modelMsPerCall: Number(model) / Number(modelCount),
    modelMsPerRequest: Number(model) / sum,
  };
}

// Both servers stay up and their rounds alternate (A B B A …), so load that other processes
// put on the machine during the run falls on both configurations alike.
const base = await startServer(1);
const batchedSrv = await startServer(8);
const baseRuns: Run[] = [];
const batchedRuns: Run[] = [];
try {
  const bench = new Bench({ iterations: 1, warmupIterations: 0, time: 0, warmup: false });
  bench.add('alternating rounds, max-batch 1 and 8', async () => {
    for (let r = 0; r < rounds; r++) {
      const order = r % 2 === 0 ? ([[base, baseRuns], [batchedSrv, batchedRuns]] as const) : ([[batchedSrv, batchedRuns], [base, baseRuns]] as const);
      for (const [srv, runs] of order) runs.push(await load(srv.url));
    }
  });
  await bench.run();
  const a = await summary(base, baseRuns);
  const b = await summary(batchedSrv, batchedRuns);
  console.log(`backend=${backend} workers=${workers} intra-op threads/worker=${a.intraOp} clients=${CLIENTS} requests/round=${CLIENTS * PER_CLIENT} rounds=${rounds}`);
  for (const r of [a, b]) {
    console.log(
      `max-batch ${r.maxBatch}: median throughput ${r.throughput.toFixed(2)} req/s (rounds ${r.rounds.map((x) => x.toFixed(2)).join(' ')})  p50 ${r.p50.toFixed(0)} ms  p99 ${r.p99.toFixed(0)} ms  ` +
        `mean batch ${r.meanBatch.toFixed(2)}  model ${r.modelMsPerCall.toFixed(0)} ms/call = ${r.modelMsPerRequest.toFixed(0)} ms/request`,
    );
  }
  const paired = a.rounds.map((x, i) => b.rounds[i]! / x).sort((x, y) => x - y);
  console.log(
    `ratio (max-batch 8 / max-batch 1): throughput ×${(b.throughput / a.throughput).toFixed(2)} (per adjacent round pair: median ×${paired[Math.floor(paired.length / 2)]!.toFixed(2)}, ${paired.map((x) => x.toFixed(2)).join(' ')})  ` +
      `p99 ×${(b.p99 / a.p99).toFixed(2)}  model time per request ×${(b.modelMsPerRequest / a.modelMsPerRequest).toFixed(2)}`,
  );
} finally {
  await base.close();
  await batchedSrv.close();
}
