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

const root = path.join(import.meta.dirname, '..');
const NARRATION = path.join(root, 'test/fixtures/speech/jfk.wav');
const SOURCE = path.join(root, 'test/fixtures/video/presenter.mp4');
const tmp = mkdtempSync(path.join(os.tmpdir(), 'lectern-lipsync-bench-'));

const refs: Record<string, string> = {};
for (const h of [480, 720]) {
  refs[h] = path.join(tmp, `presenter-${h}p.mp4`);
  await ffmpeg(['-y', '-i', SOURCE, '-vf', `scale=-2:${h}:flags=lanczos`, '-c:v', 'libx264', '-crf', '18', '-preset', 'veryfast', '-c:a', 'copy', refs[h]!]);
}
const info = await probeVideo(refs[480]!);
const narrationS = 11.0;
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

const fast720: VisemeSettings = { ...VISEME_PRESETS.fast!, maxHeight: 720 };
const bench = new Bench({ iterations: 3, warmupIterations: 1, time: 0 });
bench.add('480p decode+encode only (baseline)', () => passThrough(480, VISEME_PRESETS.fast!));
bench.add('480p viseme fast', () => viseme(480, VISEME_PRESETS.fast!));
bench.add('480p viseme quality', () => viseme(480, { ...VISEME_PRESETS.quality!, maxHeight: 480 }));
bench.add('720p decode+encode only (baseline)', () => passThrough(720, fast720));
bench.add('720p viseme fast settings', () => viseme(720, fast720));
bench.add('720p viseme quality', () => viseme(720, VISEME_PRESETS.quality!));
await bench.run();

const med = (name: string) => bench.tasks.find((t) => t.name === name)!.result!.latency.p50!;
console.log(`${frames} frames at ${info.fps.toFixed(2)} fps (${narrationS} s of narration), ${os.cpus().length} cores`);
for (const t of bench.tasks) {
  const ms = med(t.name);
  const fps = frames / (ms / 1000);
  console.log(`${t.name.padEnd(38)} median ${(ms / 1000).toFixed(2)} s  ${fps.toFixed(1)} fps  ${(fps / 25).toFixed(2)}x real time (25 fps)`);
}
for (const h of [480, 720]) {
  const base = med(`${h}p decode+encode only (baseline)`);
  const name = h === 480 ? '480p viseme fast' : '720p viseme fast settings';
  console.log(`${name}: ${(med(name) / base).toFixed(2)}x the decode+encode baseline's time`);
}
const fast480 = frames / (med('480p viseme fast') / 1000);
console.log(`target ≥ 25 fps at 480p (fast): ${fast480 >= 25 ? 'met' : 'NOT met'} (${fast480.toFixed(1)} fps)`);
rmSync(tmp, { recursive: true, force: true });
