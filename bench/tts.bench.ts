// TTS real-time factor (synthesis seconds per second of audio), espeak part: one helper
// process (single stream) vs the baseline of starting the `espeak-ng` command per
// sentence, and two helpers in parallel (eSpeak has no batched inference).
// Run: node --import tsx bench/tts.bench.ts
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Bench } from 'tinybench';
import { createEspeakBackend } from '../src/speech/tts/espeak.ts';
import { QUICK, sized } from './quick.ts';

const sentences = readFileSync(path.join(import.meta.dirname, '..', 'test', 'fixtures', 'speech', 'transcription'), 'utf8')
  .split('\n').map((l) => /^<s> (.*) <\/s>/.exec(l)?.[1]).filter((s): s is string => Boolean(s)).slice(0, QUICK ? 2 : undefined);
const one = await createEspeakBackend({ modelsDir: 'models', device: 'cpu' });
const two = [one, await createEspeakBackend({ modelsDir: 'models', device: 'cpu' })];
let audioSeconds = 0;
for (const s of sentences) {
  const [o] = await one.synthesize([{ text: s, language: 'en-US' }]);
  audioSeconds += o!.samples.length / o!.sampleRate;
}
const bench = new Bench({ iterations: sized(10, 1), warmupIterations: sized(2, 0), time: 0 });
bench.add('espeak-ng command per sentence (baseline)', () => {
  for (const s of sentences) execFileSync('espeak-ng', ['-v', 'en-us', '--stdout', s], { maxBuffer: 1 << 26 });
});
bench.add('espeak helper, single stream', async () => {
  for (const s of sentences) await one.synthesize([{ text: s, language: 'en-US' }]);
});
bench.add('espeak helpers x2 in parallel', async () => {
  await Promise.all(two.map((b, k) => Promise.all(sentences.filter((_, i) => i % 2 === k).map((s) => b.synthesize([{ text: s, language: 'en-US' }])))));
});
await bench.run();
const med = (n: string) => bench.tasks.find((t) => t.name === n)!.result!.latency.p50!;
for (const t of bench.tasks) {
  console.log(`${t.name.padEnd(44)} median ${med(t.name).toFixed(1)} ms for ${audioSeconds.toFixed(1)} s of audio, RTF ${(med(t.name) / 1000 / audioSeconds).toFixed(4)}`);
}
console.log(`helper vs command-per-sentence: ${(med('espeak-ng command per sentence (baseline)') / med('espeak helper, single stream')).toFixed(1)}x`);
await Promise.all(two.map((b) => b.close()));
