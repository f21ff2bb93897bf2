// The bench hour's align phase, segment by segment (round 17): the segments alignRecording hands
// to `hmm` (audio, text, skippable and repeatable ranges, source rate) are saved once to
// bench/.cache/hour-segments (git-ignored), then each decoded in this thread as shipped and with a
// variant, in turn: CPU seconds, segments whose path is lost,
// words found skipped that the shipped decode reads (the hour reads every word), and word edges
// moved. Needs the bench hour (bench/long-recording.bench.ts builds it).
// Run: node --import tsx bench/hour-segments.ts [--beam 1e-80] [--plain] [--stock] [--limit N]
//   --beam B  beam and pbeam B, wbeam B (the shipped decode: 1e-200 for all three)
//   --plain   the text alone: nothing skippable or repeatable
//   --stock   soundswallower's own build (the shipped decode runs its SIMD build; round 19)
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { alignRecording } from '../src/speech/align/long/recording.ts';
import { createAligner } from '../src/speech/align/aligners.ts';
import { createHmmAligner } from '../src/speech/align/hmm.ts';
import type { AlignedWord, Aligner, AlignOptions } from '../src/speech/types.ts';

const args = process.argv.slice(2);
const opt = (name: string) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const HOUR = path.join(os.tmpdir(), 'lectern-bench-long8k-60');
const CACHE = path.join(import.meta.dirname, '.cache', 'hour-segments');

interface Saved {
  rate: number;
  text: string;
  language: string;
  options?: AlignOptions;
}

if (!fs.existsSync(path.join(CACHE, 'count'))) {
  if (!fs.existsSync(path.join(HOUR, 'manifest.json'))) throw new Error(`no bench hour in ${HOUR}: run bench/long-recording.bench.ts --aligner hmm first`);
  console.log(`saving the bench hour's segments to ${CACHE} (once)...`);
  fs.mkdirSync(CACHE, { recursive: true });
  const hour = JSON.parse(fs.readFileSync(path.join(HOUR, 'manifest.json'), 'utf8')) as { files: string[]; words: string[] };
  const real = await createAligner('hmm', { modelsDir: 'models', device: 'cpu' });
  let n = 0;
  const saving: Aligner = {
    name: 'hmm',
    skips: real.skips,
    async align(samples, rate, text, language, options) {
      const k = n++;
      fs.writeFileSync(path.join(CACHE, `${k}.f32`), new Uint8Array(samples.buffer, samples.byteOffset, samples.byteLength));
      fs.writeFileSync(path.join(CACHE, `${k}.json`), JSON.stringify({ rate, text, language, options } satisfies Saved));
      return real.align(samples, rate, text, language, options);
    },
  };
  await alignRecording({ files: hour.files, words: hour.words, language: 'en-US', aligner: saving });
  await real.close();
  fs.writeFileSync(path.join(CACHE, 'count'), String(n));
}

const count = Math.min(Number(fs.readFileSync(path.join(CACHE, 'count'), 'utf8')), Number(opt('--limit') ?? Infinity));
const beam = opt('--beam');
const plain = args.includes('--plain');
const stock = args.includes('--stock');

// both decoders on each segment in turn: each segment read once, and the VM's drift shared by both
const shipped = await createHmmAligner();
const variant = await createHmmAligner({ scorer: stock ? 'stock' : 'simd', decoderConfig: beam ? { beam: Number(beam), pbeam: Number(beam), wbeam: Number(beam) } : {} });
const cpu = { shipped: 0, variant: 0 };
const timed = async (which: keyof typeof cpu, run: () => Promise<AlignedWord[]>): Promise<AlignedWord[] | null> => {
  const c0 = process.cpuUsage();
  const out = await run().catch(() => null);
  const c = process.cpuUsage(c0);
  cpu[which] += (c.user + c.system) / 1e6;
  return out;
};
let seconds = 0, shippedLost = 0, lost = 0, falseSkips = 0, edges = 0, moved1 = 0, moved20 = 0, maxMove = 0, words = 0, identical = 0;
for (let k = 0; k < count; k++) {
  const s = JSON.parse(fs.readFileSync(path.join(CACHE, `${k}.json`), 'utf8')) as Saved;
  const bytes = fs.readFileSync(path.join(CACHE, `${k}.f32`));
  const samples = new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
  seconds += samples.length / s.rate;
  const ws = await timed('shipped', () => shipped.align(samples, s.rate, s.text, s.language, s.options));
  const vs = await timed('variant', () => variant.align(samples, s.rate, s.text, s.language, plain ? { sourceRate: s.options?.sourceRate } : s.options));
  if (!ws) shippedLost++;
  if (!vs) {
    lost++;
    continue;
  }
  ws?.forEach((w, i) => {
    const v = vs[i]!;
    words++;
    if (v.start === w.start && v.end === w.end && !v.skipped === !w.skipped) identical++;
    if (v.skipped && !w.skipped) falseSkips++;
    if (v.skipped || w.skipped) return;
    for (const d of [Math.abs(v.start - w.start), Math.abs(v.end - w.end)]) (edges++, d > 0.001 && moved1++, d > 0.02 && moved20++, (maxMove = Math.max(maxMove, d)));
  });
}
await shipped.close();
await variant.close();
console.log(`${count} segments of the bench hour, ${seconds.toFixed(0)} s of audio, decoded one at a time in one thread:`);
console.log(`  shipped (beams 1e-200, skippable sentences as alignRecording asks): ${cpu.shipped.toFixed(1)} s CPU; ${shippedLost} segments without a path`);
console.log(`  variant (${stock ? "soundswallower's own build, " : ''}${beam ? `beams ${beam}` : 'beams 1e-200'}${plain ? ', the text alone' : ''}): ${cpu.variant.toFixed(1)} s CPU (${(cpu.variant / cpu.shipped).toFixed(2)}x); ${lost} segments without a path, ${falseSkips} words found skipped that the shipped decode reads, ${moved1} of ${edges} word edges moved by over 1 ms (${moved20} by over 20 ms, at most ${(1000 * maxMove).toFixed(0)} ms); ${identical} of ${words} words timed identically (start, end, skipped)`);
