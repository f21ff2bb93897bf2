// What one `hmm` alignment costs as its segment grows (README, round 34): real speech (the five
// LibriVox clips and jfk.wav, repeated to each length) aligned with its text in one call, each
// length in a fresh process (a WebAssembly heap keeps its high-water mark, so lengths cannot
// share one). Prints the time, the RSS the call added and the process peak. A long recording's
// segments are cut at anchors every 30 s or so; one that the recogniser anchors nowhere inside
// runs on, and this says what that costs.
// Run: node --import tsx bench/segment-memory.ts [seconds …]   (default 30 60 120 240 480 960)
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { decodeAudio } from '../src/media/ffmpeg.ts';
import { createAligner } from '../src/speech/align/aligners.ts';

const SPEECH = path.join(import.meta.dirname, '..', 'test', 'fixtures', 'speech');
const RATE = 16000;

async function one(seconds: number): Promise<void> {
  const lines = fs.readFileSync(path.join(SPEECH, 'transcription'), 'utf8').trim().split('\n');
  const parts: [Float32Array, string][] = [];
  for (const l of lines) {
    const m = /<s> (.*) <\/s> \((.*)\)/.exec(l)!;
    parts.push([await decodeAudio(path.join(SPEECH, `${m[2]}.wav`)), m[1]!]);
  }
  const jfk = JSON.parse(fs.readFileSync(path.join(SPEECH, '..', 'alignment', 'jfk.json'), 'utf8')) as { text: string };
  parts.push([await decodeAudio(path.join(SPEECH, 'jfk.wav')), jfk.text]);
  const chunks: Float32Array[] = [];
  const texts: string[] = [];
  let n = 0;
  for (let i = 0; n < seconds * RATE; i++) {
    const [a, t] = parts[i % parts.length]!;
    chunks.push(a);
    texts.push(t);
    n += a.length;
  }
  const audio = new Float32Array(n);
  let at = 0;
  for (const c of chunks) audio.set(c, at), (at += c.length);
  const aligner = await createAligner('hmm', { modelsDir: path.join(import.meta.dirname, '..', 'models'), device: 'cpu' });
  await aligner.align(parts[0]![0], RATE, parts[0]![1], 'en-US'); // model loaded: not the segment's cost
  const before = process.memoryUsage().rss;
  const t0 = performance.now();
  const words = await aligner.align(audio, RATE, texts.join(' '), 'en-US');
  const took = (performance.now() - t0) / 1000;
  const MiB = (b: number) => Math.round(b / 2 ** 20);
  console.log(JSON.stringify({ seconds: +(n / RATE).toFixed(1), words: words.length, took: +took.toFixed(2), addedMiB: MiB(process.memoryUsage().rss - before), peakMiB: Math.round(process.resourceUsage().maxRSS / 1024) }));
  await aligner.close();
}

const args = process.argv.slice(2);
if (args[0] === '--one') {
  await one(Number(args[1]));
} else {
  const lengths = args.length ? args.map(Number) : [30, 60, 120, 240, 480, 960];
  console.log('one hmm alignment of real speech with its text, each length in a fresh process:');
  console.log('segment (s)  words   time (s)   RTF     RSS added (MiB)   process peak (MiB)');
  for (const s of lengths) {
    const out = execFileSync(process.execPath, ['--import', 'tsx', import.meta.filename, '--one', String(s)], { encoding: 'utf8' });
    const r = JSON.parse(out.trim().split('\n').at(-1)!) as { seconds: number; words: number; took: number; addedMiB: number; peakMiB: number };
    console.log(`${String(r.seconds).padStart(10)}  ${String(r.words).padStart(6)}  ${r.took.toFixed(2).padStart(8)}  ${(r.took / r.seconds).toFixed(3).padStart(6)}  ${String(r.addedMiB).padStart(16)}  ${String(r.peakMiB).padStart(19)}`);
  }
}
process.exit(0);
