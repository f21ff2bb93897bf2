// The `process` speech backend's cost: requests per second through the protocol against the
// same model code called directly in a loop (bench/tts-process-direct.py: no protocol), and
// the batch sizes that reach the process from 32 concurrent clients.
//   node --import tsx bench/tts-process.bench.ts [--quick] [--rounds 7] [--n 16] [--adapter PATH]
// The model is the test adapter (test/helpers/espeak-pitch-rate-adapter.py: eSpeak NG following
// a reference clip), each request with the JFK clip and its transcript, as a cloning job sends.
//  - direct:   synthesize_batch() called in a Python loop, batch 1 (and 8)
//  - protocol: the same requests through ModelProcessPool (JSON lines, clip and output files, WAV decode)
//  - http:     one client after another through a GPU server --backend process (protocol + HTTP with
//              the clip as multipart + batcher at --batch-window-ms 0)
// Rounds alternate (direct, protocol, http, …) so the machine's other load falls on all alike;
// figures are medians of the rounds, the overhead is direct ÷ protocol − 1 on requests/s.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { Bench } from 'tinybench';
import { PROJECT_ROOT, loadGpuServerConfig, parseArgs } from '../src/config.ts';
import { startGpuServer } from '../src/gpu-server/index.ts';
import { ModelProcessPool, type ProcessRequest } from '../src/gpu-server/model-process/pool.ts';
import { createLogger } from '../src/log.ts';
import { decodeAudio } from '../src/media/ffmpeg.ts';
import { encodeWav } from '../src/media/wav.ts';
import { SENTENCES } from './sentences.ts';
import { QUICK } from './quick.ts';

const { flags } = parseArgs(process.argv.slice(2));
const quick = QUICK || flags.quick === true;
const rounds = Number(flags.rounds ?? (QUICK ? 1 : quick ? 2 : 7));
const N = Number(flags.n ?? (QUICK ? 2 : quick ? 4 : 16));
const CLIENTS = QUICK ? 2 : quick ? 8 : 32;
const PER_CLIENT = quick ? 1 : 4;
const ADAPTER = path.resolve(String(flags.adapter ?? path.join(PROJECT_ROOT, 'test', 'helpers', 'espeak-pitch-rate-adapter.py')));
const JFK = fs.readFileSync(path.join(PROJECT_ROOT, 'test', 'fixtures', 'speech', 'jfk.wav'));
const JFK_TEXT = 'And so my fellow Americans, ask not what your country can do for you, ask what you can do for your country.';
const log = createLogger('silent', 'bench');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'lectern-process-bench-'));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

// The direct baseline gets the clip as the process would: mono 16-bit WAV at the adapter's rate (8 kHz).
const refPath = path.join(tmp, 'jfk-8000.wav');
fs.writeFileSync(refPath, encodeWav(await decodeAudio(JFK, 8000), 8000));
const requestsFile = path.join(tmp, 'requests.json');
fs.writeFileSync(requestsFile, JSON.stringify(SENTENCES.map((text) => ({ text, language: 'en-US', voice: null, ref_audio: refPath, ref_text: JFK_TEXT, output: path.join(tmp, 'unused.wav') }))));

function startDirect() {
  // In its own session like the model processes (detached): with the kernel's autogroup
  // scheduling a session is a scheduling group, so both get the same share of a busy CPU.
  const child = spawn('python3', [path.join(PROJECT_ROOT, 'bench', 'tts-process-direct.py'), ADAPTER, requestsFile], { stdio: ['pipe', 'pipe', 'inherit'], detached: true });
  const lines = readline.createInterface({ input: child.stdout });
  const next = () => new Promise<string>((r) => lines.once('line', r));
  return {
    ready: next(),
    async run(n: number, batch: number): Promise<number> {
      const answer = next();
      child.stdin.write(`RUN ${n} ${batch}\n`);
      return Number((await answer).split(' ')[1]);
    },
    close: () => child.kill(),
  };
}

const direct = startDirect();
// The test adapter logs each batch's size and the milliseconds spent inside synthesize_batch.
const poolLog = path.join(tmp, 'pool-batches.txt');
const modelMs = () => (fs.existsSync(poolLog) ? fs.readFileSync(poolLog, 'utf8').split('\n').filter(Boolean).reduce((sum, l) => sum + Number(l.split(' ')[1]), 0) : 0);
const pool = new ModelProcessPool({ command: `LECTERN_TEST_ADAPTER_BATCH_LOG=${poolLog} python3 ${ADAPTER}`, slots: 1, device: 'cpu', scratchDir: path.join(tmp, 'scratch'), requestTimeoutMs: 120_000, startTimeoutMs: 120_000, maxBatch: 8, log });
const request = (i: number): ProcessRequest => ({ text: SENTENCES[i % SENTENCES.length]!, language: 'en-US', voice: null, refAudio: JFK, refText: JFK_TEXT });
/** Protocol time of the last viaPool round: its wall time minus the time inside synthesize_batch. */
const protocolShare: Record<number, number[]> = { 1: [], 8: [] };
async function viaPool(n: number, batch: number): Promise<number> {
  const m0 = modelMs();
  const t0 = performance.now();
  for (let i = 0; i < n; i += batch) await Promise.all(pool.synthesize(Array.from({ length: Math.min(batch, n - i) }, (_, k) => request(i + k)), 'k'));
  const wall = performance.now() - t0;
  const model = modelMs() - m0;
  protocolShare[batch]?.push((wall - model) / model);
  return wall / 1000;
}

const batchLog = path.join(tmp, 'batches.txt');
const gpuServer = (windowMs: number, env = '') =>
  startGpuServer(
    { ...loadGpuServerConfig({}, {}), port: 0, backend: 'process', ttsProcess: `${env} python3 ${ADAPTER}`, workers: 1, maxBatch: 8, batchWindowMs: windowMs, dataDir: path.join(tmp, `gpu-${windowMs}`), logLevel: 'silent' },
    log,
  );
// One client after another: with a batch window each request would wait it out alone, so
// the sequential case runs with --batch-window-ms 0 and the 32 clients with the default 30.
const [sequential, server] = await Promise.all([gpuServer(0), gpuServer(30, `LECTERN_TEST_ADAPTER_BATCH_LOG=${batchLog}`)]);
async function post(url: string, i: number): Promise<void> {
  const form = new FormData();
  form.append('text', SENTENCES[i % SENTENCES.length]!);
  form.append('language', 'en-US');
  form.append('ref_text', JFK_TEXT);
  form.append('ref_audio', new Blob([JFK]), 'jfk.wav');
  const r = await fetch(`${url}/synthesize`, { method: 'POST', body: form });
  await r.arrayBuffer();
  if (r.status !== 200) throw new Error(`HTTP ${r.status}`);
}
async function viaHttp(n: number): Promise<number> {
  const t0 = performance.now();
  for (let i = 0; i < n; i++) await post(sequential.url, i);
  return (performance.now() - t0) / 1000;
}

try {
  await Promise.all([direct.ready, pool.start()]);
  // warm-up: every path has measured the clip once and run each sentence
  const warm = QUICK ? 1 : SENTENCES.length;
  await direct.run(warm, 1);
  await viaPool(warm, 1);
  await viaHttp(warm);
  protocolShare[1] = [];

  const t = { direct1: [] as number[], protocol1: [] as number[], http1: [] as number[], direct8: [] as number[], protocol8: [] as number[] };
  const bench = new Bench({ iterations: 1, warmupIterations: 0, time: 0, warmup: false });
  bench.add('alternating rounds: direct loop, protocol, HTTP', async () => {
    for (let r = 0; r < rounds; r++) {
      t.direct1.push(N / (await direct.run(N, 1)));
      t.protocol1.push(N / (await viaPool(N, 1)));
      t.http1.push(N / (await viaHttp(N)));
      t.direct8.push(N / (await direct.run(N, 8)));
      t.protocol8.push(N / (await viaPool(N, 8)));
    }
  });
  await bench.run();
  const show = (name: string, xs: number[]) => `${name} ${median(xs).toFixed(2)} req/s (rounds ${xs.map((x) => x.toFixed(2)).join(' ')})`;
  console.log(`adapter=${path.basename(ADAPTER)} requests/round=${N} rounds=${rounds} load=${os.loadavg().map((x) => x.toFixed(1)).join(' ')}`);
  console.log(`batch 1: ${show('direct', t.direct1)} | ${show('protocol', t.protocol1)} | ${show('http (window 0)', t.http1)}`);
  console.log(`batch 8: ${show('direct', t.direct8)} | ${show('protocol', t.protocol8)}`);
  const pairs = (a: number[], b: number[]) => median(a.map((x, i) => x / b[i]! - 1));
  console.log(
    `protocol overhead (direct ÷ protocol − 1, median of round pairs): batch 1 ${(100 * pairs(t.direct1, t.protocol1)).toFixed(1)} %, batch 8 ${(100 * pairs(t.direct8, t.protocol8)).toFixed(1)} %; ` +
      `through HTTP, batch 1: ${(100 * pairs(t.direct1, t.http1)).toFixed(1)} % (target for the protocol: ≤ 5 %)`,
  );
  // The steadier figure: in the very same batches, Node's round trip against the time the
  // process spent inside synthesize_batch (the model call), so the model's own variance cancels.
  const pct = (xs: number[]) => `${(100 * median(xs)).toFixed(1)} % (rounds ${xs.map((x) => (100 * x).toFixed(1)).join(' ')})`;
  console.log(`protocol time ÷ model time in the same batches: batch 1 ${pct(protocolShare[1]!)}, batch 8 ${pct(protocolShare[8]!)}`);

  // Batch sizes that reach the process when 32 clients send at once (the adapter logs each batch it gets).
  fs.rmSync(batchLog, { force: true });
  const t0 = performance.now();
  await Promise.all(Array.from({ length: CLIENTS }, async (_, c) => {
    for (let k = 0; k < PER_CLIENT; k++) await post(server.url, c + k);
  }));
  const seconds = (performance.now() - t0) / 1000;
  const sizes = fs.readFileSync(batchLog, 'utf8').split('\n').filter(Boolean).map((l) => Number(l.split(' ')[0]));
  const hist = new Map<number, number>();
  for (const s of sizes) hist.set(s, (hist.get(s) ?? 0) + 1);
  console.log(
    `${CLIENTS} concurrent clients × ${PER_CLIENT} requests (--max-batch 8, one process): ${(sizes.reduce((a, b) => a + b, 0) / seconds).toFixed(2)} req/s, ` +
      `${sizes.length} batches, mean size ${(sizes.reduce((a, b) => a + b, 0) / sizes.length).toFixed(2)}, sizes ${[...hist.entries()].sort((a, b) => a[0] - b[0]).map(([s, n]) => `${s}×${n}`).join(' ')}`,
  );
} finally {
  direct.close();
  await pool.close();
  await server.close();
  await sequential.close();
  fs.rmSync(tmp, { recursive: true, force: true });
}
