// Viseme lip-sync speed: frames per second of the whole generator (landmarks, mouth
// rendering, H.264/AAC encode) on the presenter video scaled to 480p and 720p, with 11 s
// of real narration (jfk.wav). Baseline in the same run: decode → encode of the same
// frames with no face work, the floor the generator cannot beat. Target: ≥ real time
// (25 fps) at 480p on 2 cores.
// Run: node --import tsx bench/lipsync.bench.ts
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Bench } from 'tinybench';
import { ffmpeg } from '../src/media/ffmpeg.ts';
import { VISEME_PRESETS, generateViseme, pingPong, type VisemeSettings } from '../src/speech/lipsync/viseme/generate.ts';
import { probeVideo, readFrames, writeMp4 } from '../src/speech/lipsync/viseme/video.ts';
import { QUICK, sized } from './quick.ts';

const root = path.join(import.meta.dirname, '..');
const SOURCE = path.join(root, 'test/fixtures/video/presenter.mp4');
const tmp = mkdtempSync(path.join(os.tmpdir(), 'lectern-lipsync-bench-'));
// Quick mode: the first second of the narration and two small heights.
const NARRATION = QUICK ? path.join(tmp, 'jfk-1s.wav') : path.join(root, 'test/fixtures/speech/jfk.wav');
if (QUICK) await ffmpeg(['-y', '-i', path.join(root, 'test/fixtures/speech/jfk.wav'), '-t', '1', NARRATION]);
const LOW = sized(480, 144);
const HIGH = sized(720, 192);

const refs: Record<string, string> = {};
for (const h of QUICK ? [LOW] : [LOW, HIGH]) {
  refs[h] = path.join(tmp, `presenter-${h}p.mp4`);
  await ffmpeg(['-y', '-i', SOURCE, '-vf', `scale=-2:${h}:flags=lanczos`, '-c:v', 'libx264', '-crf', '18', '-preset', 'veryfast', '-c:a', 'copy', refs[h]!]);
}
const info = await probeVideo(refs[LOW]!);
const narrationS = sized(11.0, 1.0);
const frames = Math.round(narrationS * info.fps);

async function viseme(h: number, settings: VisemeSettings): Promise<void> {
  await generateViseme({ audioPath: NARRATION, referenceVideoPath: refs[h]!, outputPath: path.join(tmp, 'out.mp4'), settings, modelsDir: path.join(root, 'models'), cancelled: () => false });
}

/** Same frames, same ping-pong and encoder, no landmarks or mouth rendering. */
async function passThrough(h: number, settings: VisemeSettings): Promise<void> {
  const v = await probeVideo(refs[h]!);
  const ref: Uint8Array[] = [];
  for await (const f of readFrames(refs[h]!, v.width, v.height, v.fps, frames)) ref.push(f);
  const w = writeMp4(path.join(tmp, 'base.mp4'), v.width, v.height, v.fps, NARRATION, settings.x264Preset, settings.crf);
  for (let f = 0; f < frames; f++) await w.write(ref[pingPong(f, ref.length)]!.slice());
  await w.finish();
}

const fastLow: VisemeSettings = { ...VISEME_PRESETS.fast!, maxHeight: LOW };
const fastHigh: VisemeSettings = { ...VISEME_PRESETS.fast!, maxHeight: HIGH };
const bench = new Bench({ iterations: sized(3, 1), warmupIterations: sized(1, 0), time: 0 });
bench.add(`${LOW}p decode+encode only (baseline)`, () => passThrough(LOW, fastLow));
bench.add(`${LOW}p viseme fast`, () => viseme(LOW, fastLow));
bench.add(`${LOW}p viseme quality`, () => viseme(LOW, { ...VISEME_PRESETS.quality!, maxHeight: LOW }));
if (!QUICK) {
  bench.add(`${HIGH}p decode+encode only (baseline)`, () => passThrough(HIGH, fastHigh));
  bench.add(`${HIGH}p viseme fast settings`, () => viseme(HIGH, fastHigh));
  bench.add(`${HIGH}p viseme quality`, () => viseme(HIGH, { ...VISEME_PRESETS.quality!, maxHeight: HIGH }));
}
await bench.run();

const med = (name: string) => bench.tasks.find((t) => t.name === name)!.result!.latency.p50!;
console.log(`${frames} frames at ${info.fps.toFixed(2)} fps (${narrationS} s of narration), ${os.cpus().length} cores`);
for (const t of bench.tasks) {
  const ms = med(t.name);
  const fps = frames / (ms / 1000);
  console.log(`${t.name.padEnd(38)} median ${(ms / 1000).toFixed(2)} s  ${fps.toFixed(1)} fps  ${(fps / 25).toFixed(2)}x real time (25 fps)`);
}
for (const h of QUICK ? [LOW] : [LOW, HIGH]) {
  const base = med(`${h}p decode+encode only (baseline)`);
  const name = h === LOW ? `${LOW}p viseme fast` : `${HIGH}p viseme fast settings`;
  console.log(`${name}: ${(med(name) / base).toFixed(2)}x the decode+encode baseline's time`);
}
const fast480 = frames / (med(`${LOW}p viseme fast`) / 1000);
console.log(`target ≥ 25 fps at ${LOW}p (fast): ${fast480 >= 25 ? 'met' : 'NOT met'} (${fast480.toFixed(1)} fps)`);
rmSync(tmp, { recursive: true, force: true });
