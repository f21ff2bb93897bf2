// The GPU server's OpenAI speech route against its own /synthesize, on one server:
//  1. throughput: concurrent clients send the same sentences to /synthesize and to
//     /v1/audio/speech (response_format wav, the same voice), in alternating rounds;
//     goal: /v1 costs at most 5 % more (requests/s ratio ≥ 0.95);
//  2. time to the first audio byte of a 2,000-word input with stream_format "audio"
//     against the whole file (no stream_format), next to the time of one sentence alone
//     (goal: the first streamed byte within the time of one sentence).
//   node --import tsx bench/openai.bench.ts [--quick] [--backend piper|espeak] [--workers 2] [--rounds 6] [--words 2000] [--format mp3]
import path from 'node:path';
import { Bench } from 'tinybench';
import { PROJECT_ROOT, loadGpuServerConfig, parseArgs } from '../src/config.ts';
import { chooseBackend, startGpuServer } from '../src/gpu-server/index.ts';
import { createLogger } from '../src/log.ts';
import { SENTENCES } from './sentences.ts';
import { QUICK } from './quick.ts';

const { flags } = parseArgs(process.argv.slice(2));
const quick = QUICK || flags.quick === true || flags.quick === 'true';
const MODELS = path.join(PROJECT_ROOT, 'models');
const backend = typeof flags.backend === 'string' ? flags.backend : QUICK ? 'espeak' : chooseBackend(MODELS);
const workers = Number(flags.workers ?? (QUICK ? 1 : 2));
const rounds = Number(flags.rounds ?? (QUICK ? 1 : quick ? 2 : 6));
const words = Number(flags.words ?? (QUICK ? 40 : quick ? 200 : 2000));
const format = typeof flags.format === 'string' ? flags.format : 'mp3';
// The engine voice both routes get (an id the backend lists passes /v1 unchanged).
const voice = typeof flags.voice === 'string' ? flags.voice : backend === 'piper' ? 'en_US-joe-medium' : 'gmw/en-US';
const CLIENTS = QUICK ? 2 : quick ? 4 : 16;
const PER_CLIENT = 2;

const srv = await startGpuServer(
  { ...loadGpuServerConfig({}, {}), port: 0, backend, workers, maxBatch: 8, batchWindowMs: 30, modelsDir: MODELS, dataDir: '/tmp/lectern-openai-bench', logLevel: 'silent' },
  createLogger('silent', 'openai-bench'),
);

type Route = 'synthesize' | 'v1';
const request = (route: Route, text: string, extra: Record<string, unknown> = {}) =>
  route === 'synthesize'
    ? fetch(`${srv.url}/synthesize`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text, language: 'en-US', voice }) })
    : fetch(`${srv.url}/v1/audio/speech`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'tts-1', input: text, voice, response_format: 'wav', ...extra }) });

async function round(route: Route): Promise<number> {
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: CLIENTS }, async (_, c) => {
      for (let k = 0; k < PER_CLIENT; k++) {
        const r = await request(route, SENTENCES[(c + k) % SENTENCES.length]!);
        await r.arrayBuffer();
        if (r.status !== 200) throw new Error(`${route}: HTTP ${r.status}`);
      }
    }),
  );
  return (CLIENTS * PER_CLIENT) / ((performance.now() - t0) / 1000);
}

/** Milliseconds to the first body byte, and to the last. */
async function firstByte(extra: Record<string, unknown>, text: string): Promise<{ first: number; total: number }> {
  const t0 = performance.now();
  const r = await request('v1', text, { response_format: format, ...extra });
  if (r.status !== 200) throw new Error(`v1: HTTP ${r.status}: ${await r.text()}`);
  const reader = r.body!.getReader();
  let first = 0;
  for (let c = await reader.read(); !c.done; c = await reader.read()) if (!first && c.value.length) first = performance.now() - t0;
  return { first, total: performance.now() - t0 };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

try {
  await round('synthesize'); // warm-up: sessions, encoder start-up, JIT
  await round('v1');
  const rates: Record<Route, number[]> = { synthesize: [], v1: [] };
  const long = Array.from({ length: Math.ceil(words / 13) }, (_, i) => SENTENCES[i % SENTENCES.length]!)
    .join(' ')
    .split(' ')
    .slice(0, words)
    .join(' ');
  const ttfb = { sentence: [] as number[], streamed: [] as number[], whole: [] as number[], streamedTotal: [] as number[], wholeTotal: [] as number[] };
  const bench = new Bench({ iterations: 1, warmupIterations: 0, time: 0, warmup: false });
  // Rounds alternate (A B B A …) so other load on the machine falls on both routes alike.
  bench.add('requests/s: /synthesize and /v1/audio/speech, alternating rounds', async () => {
    for (let r = 0; r < rounds; r++) {
      const order: Route[] = r % 2 === 0 ? ['synthesize', 'v1'] : ['v1', 'synthesize'];
      for (const route of order) rates[route].push(await round(route));
    }
  });
  bench.add(`first byte of ${words} words: streamed and whole, alternating`, async () => {
    for (let r = 0; r < (quick ? 1 : 3); r++) {
      ttfb.sentence.push((await firstByte({}, SENTENCES[r % SENTENCES.length]!)).total);
      const order = r % 2 === 0 ? [true, false] : [false, true];
      for (const streamed of order) {
        const t = await firstByte(streamed ? { stream_format: 'audio' } : {}, long);
        (streamed ? ttfb.streamed : ttfb.whole).push(t.first);
        (streamed ? ttfb.streamedTotal : ttfb.wholeTotal).push(t.total);
      }
    }
  });
  await bench.run();
  const s = median(rates.synthesize);
  const v = median(rates.v1);
  const paired = rates.v1.map((x, i) => x / rates.synthesize[i]!);
  console.log(`backend=${backend} workers=${workers} voice=${voice} clients=${CLIENTS} requests/round=${CLIENTS * PER_CLIENT} rounds=${rounds}${quick ? ' (quick)' : ''}`);
  console.log(`/synthesize        median ${s.toFixed(2)} req/s (rounds ${rates.synthesize.map((x) => x.toFixed(2)).join(' ')})`);
  console.log(`/v1/audio/speech   median ${v.toFixed(2)} req/s (rounds ${rates.v1.map((x) => x.toFixed(2)).join(' ')})`);
  console.log(`ratio v1/synthesize ×${(v / s).toFixed(3)} (per round pair: median ×${median(paired).toFixed(3)}; ${paired.map((x) => x.toFixed(3)).join(' ')}); goal ≥ 0.95`);
  const sentence = median(ttfb.sentence);
  console.log(`one sentence alone (${format}, whole answer, last byte): median ${sentence.toFixed(0)} ms`);
  console.log(`${words} words, ${format}: first byte streamed median ${median(ttfb.streamed).toFixed(0)} ms (all ${ttfb.streamed.map((x) => x.toFixed(0)).join(' ')}), whole file ${median(ttfb.whole).toFixed(0)} ms (all ${ttfb.whole.map((x) => x.toFixed(0)).join(' ')})`);
  console.log(`  last byte: streamed ${median(ttfb.streamedTotal).toFixed(0)} ms, whole ${median(ttfb.wholeTotal).toFixed(0)} ms`);
  console.log(`ratio first byte streamed / whole ×${(median(ttfb.streamed) / median(ttfb.whole)).toFixed(3)}; streamed first byte / one sentence ×${(median(ttfb.streamed) / sentence).toFixed(2)} (goal ≤ 1 + the batch window)`);
} finally {
  await srv.close();
}
