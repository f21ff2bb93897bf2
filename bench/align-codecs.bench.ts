// Word boundaries of real speech after a lossy codec (round 39). Audiobooks and recordings reach
// Lectern as MP3, AAC (M4A/M4B) or Opus, often at low bit rates; each codec reshapes the spectrum
// the acoustic models score and smears energy in time. The hand-labelled sets of
// bench/align-accuracy.bench.ts (tuning, held-out, the noisy room; emuR's ae with --emu-ae DIR)
// are encoded with ffmpeg as a user's files would be, decoded as the pipeline decodes them
// (decodeAudio), and aligned four ways in the same run:
//   - as shipped: both English models, their mean where they agree, the 16 kHz model's edge
//     where they lie more than 100 ms apart (refine.ts maxSpreadS, round 39);
//   - means everywhere (round 38): maxSpreadS 0;
//   - the 8 kHz model alone (round 37; what a clean long recording still gets, AlignOptions.secondModel);
//   - the 16 kHz model alone, refined the same way.
// MAE of starts/ends in ms against the clip's labels.
// Run: node --import tsx bench/align-codecs.bench.ts [quick] [--emu-ae DIR]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { decodeAudio, ffmpeg } from '../src/media/ffmpeg.ts';
import { createHmmAligner } from '../src/speech/align/hmm.ts';
import { emptyScore, loadHandReferences, scoreAgainst, type HandReference } from '../test/fixtures/alignment/hand/references.ts';
import { emuAeArg, loadEmuAe } from './emu-ae.ts';
import { QUICK } from './quick.ts';

const speechDir = path.join(import.meta.dirname, '..', 'test', 'fixtures', 'speech');
type Clip = HandReference & { file?: string };
const sets: Record<string, Clip[]> = QUICK
  ? { 'hand, noisy room': loadHandReferences('noisy') }
  : { 'hand, tuning': loadHandReferences('tuning'), 'hand, held-out': loadHandReferences('held-out'), 'hand, noisy room': loadHandReferences('noisy') };
const aeDir = emuAeArg();
if (aeDir && !QUICK) sets['emuR ae'] = loadEmuAe(aeDir);

/** [name, file extension, ffmpeg output options]: what an encoder or a store would make. */
const codecs: [string, string, string[]][] = [
  ['WAV (PCM)', 'wav', ['-c:a', 'pcm_s16le']],
  ['MP3 64 kb/s, 44.1 kHz', 'mp3', ['-ar', '44100', '-c:a', 'libmp3lame', '-b:a', '64k']],
  ['MP3 32 kb/s, 22.05 kHz', 'mp3', ['-ar', '22050', '-c:a', 'libmp3lame', '-b:a', '32k']],
  ['AAC 64 kb/s, 44.1 kHz (M4A)', 'm4a', ['-ar', '44100', '-c:a', 'aac', '-b:a', '64k']],
  ['AAC 32 kb/s, 22.05 kHz (M4B)', 'm4b', ['-ar', '22050', '-c:a', 'aac', '-b:a', '32k', '-f', 'ipod']],
  ['Opus 32 kb/s', 'ogg', ['-ar', '48000', '-c:a', 'libopus', '-b:a', '32k']],
  ['Opus 24 kb/s', 'ogg', ['-ar', '48000', '-c:a', 'libopus', '-b:a', '24k']],
  ['Vorbis q3', 'ogg', ['-ar', '44100', '-c:a', 'libvorbis', '-q:a', '3']],
];
const used = QUICK ? codecs.filter(([name]) => name.startsWith('WAV') || name === 'Opus 32 kb/s') : codecs;

const aligners: [string, Awaited<ReturnType<typeof createHmmAligner>>][] = [
  ['as shipped', await createHmmAligner()],
  ['means everywhere (round 38)', await createHmmAligner({ refine: { maxSpreadS: 0 } })],
  ['8 kHz model alone (round 37)', await createHmmAligner({ secondModel: 'never' })],
  ['16 kHz model alone', await createHmmAligner({ model: 'en-us-16k' })],
];

const tmp = mkdtempSync(path.join(tmpdir(), 'lectern-codecs-'));
const ms = (x: number) => (1000 * x).toFixed(1);
try {
  for (const [setName, clips] of Object.entries(sets)) {
    console.log(`\n${setName}: ${clips.length} clips; MAE starts/ends (ms)`);
    console.log(`${'codec'.padEnd(32)}${aligners.map(([a]) => a.padEnd(31)).join('')}`);
    for (const [name, ext, args] of used) {
      const scores = aligners.map(() => emptyScore());
      for (const [i, clip] of clips.entries()) {
        const file = path.join(tmp, `${i}.${ext}`);
        await ffmpeg(['-y', '-i', clip.file ?? path.join(speechDir, clip.audio), ...args, file]);
        const samples = await decodeAudio(file, 16000);
        for (const [k, [, a]] of aligners.entries()) scoreAgainst(await a.align(samples, 16000, clip.text, 'en-US'), clip, scores[k]);
      }
      console.log(`${name.padEnd(32)}${scores.map((s) => `${ms(s.absStart / s.nStart)}/${ms(s.absEnd / s.nEnd)}`.padEnd(31)).join('')}`);
    }
  }
} finally {
  rmSync(tmp, { recursive: true, force: true });
  await Promise.all(aligners.map(([, a]) => a.close()));
}
process.exit(0);
