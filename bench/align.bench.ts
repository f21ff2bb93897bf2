// Alignment speed and memory: the dtw aligner on real speech concatenated to a target
// length (the fixture clips with their transcripts repeated), native addon vs the
// TypeScript reference on one minute, then the full hour once with peak RSS.
// Run: node --import tsx bench/align.bench.ts [minutes=60]
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Bench } from 'tinybench';
import { createDtwAligner } from '../src/speech/align/dtw.ts';
import { decodeWav } from '../src/media/wav.ts';
import { sized } from './quick.ts';

const root = path.join(import.meta.dirname, '..', 'test', 'fixtures');
const clips: { samples: Float32Array; text: string; ref: { start: number; end: number }[] }[] = [];
for (const line of readFileSync(path.join(root, 'speech', 'transcription'), 'utf8').split('\n')) {
  const m = /^<s> (.*) <\/s> \((.*)\)$/.exec(line.trim());
  if (!m) continue;
  const buf = readFileSync(path.join(root, 'speech', `${m[2]}.wav`));
  if (buf.readUInt32LE(24) !== 16000) throw new Error('fixtures are 16 kHz');
  const ref = JSON.parse(readFileSync(path.join(root, 'alignment', `${m[2]}.json`), 'utf8')) as { words: { start: number; end: number }[] };
  clips.push({ samples: decodeWav(buf).samples, text: m[1]!, ref: ref.words });
}

function build(seconds: number): { samples: Float32Array; text: string; ref: { start: number; end: number }[] } {
  const parts: Float32Array[] = [];
  const words: string[] = [];
  const ref: { start: number; end: number }[] = [];
  let total = 0;
  for (let k = 0; total < seconds * 16000; k++) {
    const c = clips[k % clips.length]!;
    parts.push(c.samples);
    words.push(c.text + '.');
    for (const w of c.ref) ref.push({ start: w.start + total / 16000, end: w.end + total / 16000 });
    total += c.samples.length;
  }
  const samples = new Float32Array(total);
  let off = 0;
  for (const p of parts) (samples.set(p, off), (off += p.length));
  return { samples, text: words.join(' '), ref };
}

const minutes = sized(Number(process.argv[2] ?? 60), 0.25);
const stages = new Map<string, number>();
const native = await createDtwAligner({ onStage: (name, ms) => stages.set(name, (stages.get(name) ?? 0) + ms) });
const ts = await createDtwAligner({ useReference: true });

const minute = build(sized(60, 5));
const bench = new Bench({ iterations: sized(3, 1), warmupIterations: sized(1, 0), time: 0 });
bench.add('ts reference, 1 min (baseline)', () => ts.align(minute.samples, 16000, minute.text, 'en-US').then(() => {}));
bench.add('native addon, 1 min', () => native.align(minute.samples, 16000, minute.text, 'en-US').then(() => {}));
await bench.run();
const med = (name: string) => bench.tasks.find((t) => t.name === name)!.result!.latency.p50!;
for (const t of bench.tasks) console.log(`${t.name.padEnd(34)} median ${med(t.name).toFixed(0)} ms`);
console.log(`speed-up native vs ts reference: ${(med('ts reference, 1 min (baseline)') / med('native addon, 1 min')).toFixed(1)}x`);
await ts.close();

const long = build(minutes * 60);
stages.clear();
const rssBefore = process.memoryUsage().rss;
const t0 = performance.now();
const words = await native.align(long.samples, 16000, long.text, 'en-US');
const secs = (performance.now() - t0) / 1000;
const peak = process.resourceUsage().maxRSS / 1024; // KiB → MiB
console.log(`${minutes} min of speech (${words.length} words): aligned in ${secs.toFixed(1)} s (target < 30 s), ` +
  `real-time factor ${(secs / (minutes * 60)).toFixed(4)}, peak RSS ${peak.toFixed(0)} MiB (target < 1024; ${(rssBefore / 2 ** 20).toFixed(0)} MiB before, input audio alone ${(long.samples.byteLength / 2 ** 20).toFixed(0)} MiB)`);
// accuracy over the whole hour: every clip's reference boundaries at its offset
let es = 0, ee = 0;
words.forEach((w, i) => ((es += Math.abs(w.start - long.ref[i]!.start)), (ee += Math.abs(w.end - long.ref[i]!.end))));
if (process.env.VERBOSE) words.forEach((w, i) => console.log(w.word, w.start.toFixed(2), w.end.toFixed(2), long.ref[i]!.start.toFixed(2), long.ref[i]!.end.toFixed(2)));
console.log(`over the ${minutes} min: MAE start ${((1000 * es) / words.length).toFixed(1)} ms, end ${((1000 * ee) / words.length).toFixed(1)} ms against the fixture references (${words.length} words)`);
console.log('where the time goes: ' + [...stages].map(([k, v]) => `${k} ${(v / 1000).toFixed(1)} s`).join(', '));
await native.close();
