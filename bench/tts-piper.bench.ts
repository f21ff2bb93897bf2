// Piper real-time factor (seconds of compute per second of audio), single stream vs batched.
// Baseline, measured in the same run: the same 8 sentences synthesized one per call (B=1).
// Run: node --import tsx bench/tts-piper.bench.ts   (LECTERN_BENCH_DEVICE=cuda on a GPU host)
import path from 'node:path';
import { Bench } from 'tinybench';
import { createPiperBackend } from '../src/speech/tts/piper.ts';
import { QUICK, sized } from './quick.ts';

const device = (process.env.LECTERN_BENCH_DEVICE as 'cpu' | 'cuda' | undefined) ?? 'cpu';
const ALL_SENTENCES = [
  'And mister John Dashwood had then leisure to consider how much there might be prudently in his power to do for them.',
  'He was not an ill disposed young man.',
  'Unless to be rather cold hearted and rather selfish is to be ill disposed.',
  'Had he married a more amiable woman he might have been made still more respectable than he was.',
  'He might even have been made amiable himself.',
  'The family of Dashwood had long been settled in Sussex.',
  'Their estate was large, and their residence was at Norland Park, in the centre of their property.',
  'By a former marriage, Mr. Henry Dashwood had one son.',
];
const SENTENCES = QUICK ? ALL_SENTENCES.slice(0, 2) : ALL_SENTENCES;

async function main() {
  const audioSeconds: Record<string, number> = {};
  const variants: { name: string; maxBatch: number }[] = [
    { name: 'B=1 (one sentence per run)', maxBatch: 1 },
    { name: 'B=4', maxBatch: 4 },
    { name: 'B=8', maxBatch: 8 },
  ].slice(0, QUICK ? 2 : undefined);
  const backends = await Promise.all(
    variants.map((v) => createPiperBackend({ modelsDir: path.resolve('models'), device, maxBatch: v.maxBatch })),
  );
  const reqs = SENTENCES.map((text) => ({ text, language: 'en-US' }));
  // Warm-up: loads the session (cached, shared by the three backends) and phonemizer.
  await backends[0]!.synthesize(reqs.slice(0, 1));

  const bench = new Bench({ iterations: sized(3, 1), warmupIterations: sized(1, 0), time: 0, throws: true });
  variants.forEach((v, i) => {
    bench.add(v.name, async () => {
      const outs = await backends[i]!.synthesize(reqs);
      audioSeconds[v.name] = outs.reduce((s, o) => s + o.samples.length / o.sampleRate, 0);
    });
  });
  await bench.run();

  const median = (name: string) => bench.tasks.find((t) => t.name === name)!.result!.latency.p50! / 1000;
  const base = median(variants[0]!.name);
  console.log(`piper en_US-joe-medium on ${device}, ${SENTENCES.length} sentences per call`);
  for (const v of variants) {
    const s = median(v.name);
    const rtf = s / audioSeconds[v.name]!;
    console.log(`${v.name.padEnd(28)} median ${s.toFixed(2)} s for ${audioSeconds[v.name]!.toFixed(1)} s audio  RTF ${rtf.toFixed(3)}  speed-up vs B=1 ${(base / s).toFixed(2)}x`);
  }
  process.exit(0);
}
await main();
