// GPU server throughput: 32 concurrent clients sending /synthesize for sentences of typical
// length, --max-batch 8 against --max-batch 1 (the baseline) in the same run, same backend
// (piper when its voice is installed, else espeak), same pool size.
//   node --import tsx bench/gpu-server.bench.ts [--backend piper] [--workers 2] [--rounds 3]
import path from 'node:path';
import { Bench } from 'tinybench';
import { PROJECT_ROOT, loadGpuServerConfig, parseArgs } from '../src/config.ts';
import { createLogger } from '../src/log.ts';
import { chooseBackend, startGpuServer } from '../src/gpu-server/index.ts';

const { flags } = parseArgs(process.argv.slice(2));
const MODELS = path.join(PROJECT_ROOT, 'models');
const backend = typeof flags.backend === 'string' ? flags.backend : chooseBackend(MODELS);
const workers = Number(flags.workers ?? 2);
const rounds = Number(flags.rounds ?? 3);
const CLIENTS = 32;
const PER_CLIENT = 2;
const SENTENCES = [
  'The committee will meet again on Thursday to review the final budget proposal.',
  'She opened the window and listened to the rain falling on the quiet street below.',
  'Most of the early settlers arrived by boat after a long and difficult journey.',
  'Please make sure that every chapter has a title before you export the book.',
  'The results were surprising, and the team spent weeks checking the numbers again.',
  'A small village lay at the foot of the mountain, hidden by a thick forest.',
  'He explained the rules slowly, so that even the youngest players could follow.',
  'When the lights went out, the whole audience fell silent for a moment.',
];

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

async function measure(maxBatch: number) {
  const srv = await startGpuServer(
    { ...loadGpuServerConfig({}, {}), port: 0, backend, workers, maxBatch, batchWindowMs: 30, modelsDir: MODELS, dataDir: '/tmp/lectern-gpu-bench', logLevel: 'silent' },
    createLogger('silent', 'gpu-bench'),
  );
  try {
    await load(srv.url); // warm-up: sessions, allocator, JIT
    const runs: Run[] = [];
    const bench = new Bench({ iterations: rounds, warmupIterations: 0, time: 0, warmup: false });
    bench.add(`max-batch ${maxBatch}`, async () => {
      runs.push(await load(srv.url));
    });
    await bench.run();
    const metrics = await (await fetch(`${srv.url}/metrics`)).text();
    const sum = Number(/lectern_gpu_batch_size_sum\{[^}]*\} (\S+)/.exec(metrics)?.[1]);
    const count = Number(/lectern_gpu_batch_size_count\{[^}]*\} (\S+)/.exec(metrics)?.[1]);
    const model = /lectern_gpu_model_time_ms_sum\{model="tts:[^"]*"\} (\S+)/.exec(metrics)?.[1];
    const modelCount = /lectern_gpu_model_time_ms_count\{model="tts:[^"]*"\} (\S+)/.exec(metrics)?.[1];
    const all = runs.flatMap((r) => r.latencies);
    const thr = runs.map((r) => r.requests / r.seconds).sort((a, b) => a - b);
    return {
      maxBatch,
      throughput: thr[Math.floor(thr.length / 2)]!,
      p50: pct(all, 50),
      p99: pct(all, 99),
      meanBatch: sum / count,
      modelMsPerCall: Number(model) / Number(modelCount),
      modelMsPerRequest: Number(model) / sum,
    };
  } finally {
    await srv.close();
  }
}

console.log(`backend=${backend} workers=${workers} clients=${CLIENTS} requests/round=${CLIENTS * PER_CLIENT} rounds=${rounds}`);
const base = await measure(1);
const batched = await measure(8);
for (const r of [base, batched]) {
  console.log(
    `max-batch ${r.maxBatch}: median throughput ${r.throughput.toFixed(2)} req/s  p50 ${r.p50.toFixed(0)} ms  p99 ${r.p99.toFixed(0)} ms  ` +
      `mean batch ${r.meanBatch.toFixed(2)}  model ${r.modelMsPerCall.toFixed(0)} ms/call = ${r.modelMsPerRequest.toFixed(0)} ms/request`,
  );
}
console.log(`ratio (max-batch 8 / max-batch 1): throughput ×${(batched.throughput / base.throughput).toFixed(2)}  p99 ×${(batched.p99 / base.p99).toFixed(2)}  model time per request ×${(batched.modelMsPerRequest / base.modelMsPerRequest).toFixed(2)}`);
