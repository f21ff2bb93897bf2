// Voice previews over real HTTP: a cached preview (the target: well within 1 s) vs the
// baseline of a fresh one (a new text each time, so eSpeak NG synthesizes it), for the
// eSpeak voice and the Piper voice, through the running service.
// Run: node --import tsx bench/voices.bench.ts
import { Bench } from 'tinybench';
import { testEnv } from '../test/helpers/service.ts';
import { sized } from './quick.ts';

const t = testEnv('embedded', 'voices_bench');
// A connection left open after the previews would otherwise hold close() for the 10 s grace period.
const svc = await t.start({ LECTERN_NO_EMBEDDED_WORKER: '1', LECTERN_SHUTDOWN_GRACE_MS: '500' });
const TEXT = 'The ship left the harbour early in the morning, while the town was still asleep. A cold wind came down from the hills and pushed the small boat toward the open water.';
let n = 0;
async function preview(body: Record<string, unknown>): Promise<void> {
  const res = await fetch(`${svc.url}/api/voices/preview`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  if (res.status !== 200) throw new Error(`preview: HTTP ${res.status} ${await res.text()}`);
  await res.arrayBuffer();
}
const bench = new Bench({ iterations: sized(20, 2), warmupIterations: sized(2, 0), time: 0 });
bench.add('espeak preview, fresh text (baseline)', () => preview({ voice_id: 'espeak-en-us', text: `${TEXT} Take ${n++}.` }));
bench.add('espeak preview, cached', () => preview({ voice_id: 'espeak-en-us', text: TEXT }));
bench.add('piper preview, fresh text', () => preview({ voice_id: 'piper-en-us-joe', text: `${TEXT} Take ${n++}.` }));
bench.add('piper preview, cached', () => preview({ voice_id: 'piper-en-us-joe', text: TEXT }));
try {
  await bench.run();
  const med = (name: string) => bench.tasks.find((x) => x.name === name)!.result!.latency.p50!;
  for (const x of bench.tasks) console.log(`${x.name.padEnd(40)} median ${med(x.name).toFixed(1)} ms`);
  console.log(`cached vs fresh: espeak ${(med('espeak preview, fresh text (baseline)') / med('espeak preview, cached')).toFixed(1)}x, piper ${(med('piper preview, fresh text') / med('piper preview, cached')).toFixed(1)}x faster`);
  const worst = Math.max(...bench.tasks.filter((x) => x.name.includes('cached')).map((x) => x.result!.latency.max!));
  console.log(`slowest cached preview: ${worst.toFixed(1)} ms (target: under 1000 ms)`);
} finally {
  await svc.close();
  await t.cleanup();
}
