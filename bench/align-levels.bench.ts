// Word boundaries of speech recorded at a low level or with a DC offset (round 40). A recording made with the gain
// turned down (a laptop's microphone, a corpus recorded with headroom) holds the same speech many
// dB under full scale, and 16 bits hold its quiet frames with fewer steps. The acoustic models
// normalise their features by the utterance's mean (CMN), so they hear it the same; what can move
// is the refinement, which reads the energy over the clip's noise floor and leaves digital
// silence out of that floor (refine.ts DIGITAL_SILENCE). A DC offset (a cheap converter's, an old
// corpus's) adds to every frame's energy and can set that floor in place of the room
// (RefineParams.dcCutoffHz). The hand-labelled sets of bench/align-accuracy.bench.ts (and emuR's
// ae with --emu-ae DIR) are scaled so that each clip peaks at the given level, rounded to 16 bits
// as a WAV file holds them, or given an offset, and aligned as shipped and as in round 39
// (digital silence under -80 dBFS, the energy read with the offset) in the same run.
// MAE of starts/ends in ms against the clip's labels.
// Round 41: the same conditions, and quiet recordings with an offset, for the two detectors of
// sound that read the energy as recorded (refine.ts detectorEnergy): dtw's, shipped against
// round 40 (energyAsRecorded), and the read-along's voice detector, through alignRecording on each
// clip as one file (words timed, and the MAE of the timed ones); and mains hum (rows 'hum').
// Round 42: hmm subtracts steady mains hum before it decodes and refines (hum.ts), and dtw before it reads
// its features and energy, each against round 41's reading of the hummed audio (the read-along's
// segments too); rows 'buzz' add a 60 Hz hum with nine harmonics, as a ground
// loop gives.
// Round 43: reverberation (rows 'reverb': test/helpers/reverb.ts, a room's decay of RT60 s at a
// direct-to-reverberant ratio); the read-along's recogniser hears a ringing room's audio with its
// late reverberation suppressed (audio.ts hearThroughRoom), against round 42's hearing it as it is.
// Run: node --import tsx bench/align-levels.bench.ts [quick] [--emu-ae DIR] [--rows WORDS] (only the rows whose name holds one of the comma-separated WORDS)
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createAligner } from '../src/speech/align/aligners.ts';
import { createDtwAligner } from '../src/speech/align/dtw.ts';
import { createHmmAligner } from '../src/speech/align/hmm.ts';
import { alignRecording, type AlignRecordingOptions } from '../src/speech/align/long/recording.ts';
import { DIGITAL_SILENCE_LOCATE } from '../src/speech/align/refine.ts';
import type { Aligner } from '../src/speech/types.ts';
import { tokenizeWords } from '../src/speech/words.ts';
import { encodeWav } from '../src/media/wav.ts';
import { emptyScore, loadHandClip, loadHandReferences, scoreAgainst, type HandClip, type HandReference } from '../test/fixtures/alignment/hand/references.ts';
import { emuAeArg, loadEmuAe } from './emu-ae.ts';
import { QUICK } from './quick.ts';
import { reverberant } from '../test/helpers/reverb.ts';

type Clip = HandClip;
const load = (ref: HandReference): Clip => loadHandClip(ref);
const sets: Record<string, Clip[]> = QUICK
  ? { 'hand, tuning (2 clips)': loadHandReferences('tuning').slice(0, 2).map(load) }
  : { 'hand, tuning': loadHandReferences('tuning').map(load), 'hand, held-out': loadHandReferences('held-out').map(load), 'hand, noisy room': loadHandReferences('noisy').map(load) };
const aeDir = emuAeArg();
if (aeDir && !QUICK) sets['emuR ae'] = loadEmuAe(aeDir);

/** Peak levels (dBFS); null: the clip as it is. */
const levels: (number | null)[] = QUICK ? [null, -30] : [null, -20, -25, -30, -35, -40];
/** DC offsets, as shares of full scale. */
const offsets = QUICK ? [0, 0.01] : [0, 0.003, 0.01, 0.03];
/** Quiet and offset at once (round 41): [peak dBFS, offset]. */
const both: [number, number][] = QUICK ? [[-30, 0.01]] : [[-30, 0.005], [-30, 0.01], [-40, 0.003]];
/** Mains hum added (round 41, not handled: README): 50 Hz and its third harmonic at half its amplitude, the whole at this level (dBFS). */
const hums = QUICK ? [] : [-50, -40, -35];
/** Reverberation (round 43): [RT60 s, direct-to-reverberant ratio dB]. */
const rooms: [number, number][] = QUICK ? [] : [[0.3, 10], [0.6, 5], [0.6, 0], [1, 0]];

/** A sample as a 16-bit WAV file holds it. */
const as16Bit = (v: number) => Math.max(-32768, Math.min(32767, Math.round(v * 32767))) / 32768;

/** The clip scaled to peak at `db` dBFS and rounded to 16 bits. */
function atLevel(samples: Float32Array, db: number): Float32Array {
  const peak = samples.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
  const gain = 10 ** (db / 20) / peak;
  return samples.map((v) => as16Bit(v * gain));
}

/** The clip with a DC offset (a share of full scale) added, rounded to 16 bits. */
const withOffset = (samples: Float32Array, dc: number) => samples.map((v) => as16Bit(v + dc));

/**
 * The clip with steady tones added: harmonics k·f0 (k = 1, 2, …) at amplitudes `amps` and phases
 * `phases`, `db` dBFS in all (RMS), rounded to 16 bits.
 */
function withTones(samples: Float32Array, rate: number, db: number, f0: number, amps: number[], phases: number[]): Float32Array {
  const a = (10 ** (db / 20) * Math.SQRT2) / Math.hypot(...amps);
  return samples.map((v, i) => as16Bit(v + a * amps.reduce((s, h, k) => s + h * Math.sin((2 * Math.PI * f0 * (k + 1) * i) / rate + phases[k]!), 0)));
}
/** Mains hum: 50 Hz and its third harmonic at half its amplitude. */
const withHum = (samples: Float32Array, rate: number, db: number) => withTones(samples, rate, db, 50, [1, 0, 0.5], [0, 0, 1]);
/** A ground loop's buzz: 60.03 Hz and its harmonics to the tenth. */
const BUZZ = [1, 0.6, 0.5, 0.3, 0.25, 0.15, 0.1, 0.08, 0.05, 0.04];
const withBuzz = (samples: Float32Array, rate: number, db: number) => withTones(samples, rate, db, 60.03, BUZZ, BUZZ.map((_, k) => k));

type Closable = Aligner & { close(): Promise<void> };
const aligners: [string, Closable][] = [
  ['hmm as shipped (-90 dBFS, no DC)', await createHmmAligner()],
  // round 41: the hummed audio decoded and refined as it is
  ['hmm round 41 (hum kept)', await createHmmAligner({ removeHum: false })],
  // round 39: the line at -80 dBFS (what the locate phase still uses), the energy read with its DC offset, one floor per clip
  ['hmm round 39 (-80 dBFS, with DC)', await createHmmAligner({ refine: { digitalSilence: DIGITAL_SILENCE_LOCATE, dcCutoffHz: 0, joinSeconds: 0 } })],
  ['dtw as shipped', await createDtwAligner()],
  // round 40: dtw's floor and quiet threshold read from the energy as recorded, whatever masks the speech
  ['dtw round 40 (as recorded)', await createDtwAligner({ energyAsRecorded: true })],
  // round 41: the hummed audio's features and energy as they are
  ['dtw round 41 (hum kept)', await createDtwAligner({ removeHum: false })],
];

const ms = (x: number) => (1000 * x).toFixed(1);
const rowsArg = process.argv.includes('--rows') ? process.argv[process.argv.indexOf('--rows') + 1] : undefined;
const conditions = (): [string, (c: Clip) => Float32Array][] => [
  ...levels.map((db): [string, (c: Clip) => Float32Array] => [db === null ? 'as recorded' : `${db} dBFS`, (c) => (db === null ? c.samples : atLevel(c.samples, db))]),
  ...offsets.filter((dc) => dc).map((dc): [string, (c: Clip) => Float32Array] => [`offset ${dc * 100} %`, (c) => withOffset(c.samples, dc)]),
  ...both.map(([db, dc]): [string, (c: Clip) => Float32Array] => [`${db} dBFS, ${dc * 100} %`, (c) => withOffset(atLevel(c.samples, db), dc)]),
  ...hums.map((db): [string, (c: Clip) => Float32Array] => [`hum ${db} dBFS`, (c) => withHum(c.samples, c.sampleRate, db)]),
  ...hums.map((db): [string, (c: Clip) => Float32Array] => [`buzz ${db} dBFS`, (c) => withBuzz(c.samples, c.sampleRate, db)]),
  ...rooms.map(([rt60, drr]): [string, (c: Clip) => Float32Array] => [`reverb ${rt60} s ${drr} dB`, (c) => reverberant(c.samples, c.sampleRate, rt60, drr).map(as16Bit)]),
].filter(([name]) => !rowsArg || rowsArg.split(',').some((w) => name.includes(w)));

/** One table: a row per condition, a column per aligner. */
async function table(title: string, clips: Clip[], rows: [string, (c: Clip) => Float32Array][]): Promise<void> {
  console.log(`\n${title}: ${clips.length} clips; MAE starts/ends (ms)`);
  console.log(`${''.padEnd(20)}${aligners.map(([a]) => a.padEnd(34)).join('')}`);
  for (const [row, make] of rows) {
    const scores = aligners.map(() => emptyScore());
    for (const clip of clips) {
      const samples = make(clip);
      for (const [k, [, a]] of aligners.entries()) scoreAgainst(await a.align(samples, clip.sampleRate, clip.text, 'en-US'), clip, scores[k]);
    }
    console.log(`${row.padEnd(20)}${scores.map((s) => `${ms(s.absStart / s.nStart)}/${ms(s.absEnd / s.nEnd)}`.padEnd(34)).join('')}`);
  }
}

/**
 * The read-along (alignRecording, each clip a file of its own, hmm as `auto` picks for English):
 * words timed of the clips' words, and the MAE starts/ends (ms) of the timed ones; a clip it
 * refuses (not speech, another text) counts its words as untimed.
 */
async function readAlongTable(title: string, clips: Clip[], rows: [string, (c: Clip) => Float32Array][]): Promise<void> {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'lectern-bench-levels-'));
  const aligner = await createAligner('hmm', { modelsDir: path.join(import.meta.dirname, '..', 'models'), device: 'cpu', threads: Math.min(2, os.availableParallelism()) });
  // round 41: the segments' hmm reading the hummed audio as it is (one thread)
  const humKept = await createHmmAligner({ removeHum: false });
  // round 42: the recogniser hearing a ringing room's audio as it is
  const modes: [string, Partial<AlignRecordingOptions>, Aligner][] = [
    ['read-along as shipped', {}, aligner],
    ['round 40 (detector as recorded)', { energyAsRecorded: true }, aligner],
    ['round 41 (hum kept)', {}, humKept],
    ['round 42 (reverb heard)', { suppressReverb: false }, aligner],
  ];
  console.log(`\n${title}: ${clips.length} clips, ${clips.reduce((n, c) => n + c.words.length, 0)} words; words timed, MAE starts/ends (ms) of those`);
  console.log(`${''.padEnd(20)}${modes.map(([m]) => m.padEnd(34)).join('')}`);
  try {
    for (const [row, make] of rows) {
      const cells: string[] = [];
      for (const [, modeOpts, segmentAligner] of modes) {
        let timed = 0, words = 0, refused = 0, absStart = 0, nStart = 0, absEnd = 0, nEnd = 0;
        for (const [k, clip] of clips.entries()) {
          const file = path.join(work, `clip-${k}.wav`);
          fs.writeFileSync(file, encodeWav(make(clip), clip.sampleRate));
          words += clip.words.length;
          const got = await alignRecording({ files: [file], words: tokenizeWords(clip.text).map((t) => t.word), language: 'en-US', aligner: segmentAligner, ...modeOpts }).catch(() => null);
          if (!got) {
            refused++;
            continue;
          }
          clip.words.forEach((r, i) => {
            const w = got.words[i];
            if (!w) return;
            timed++;
            if (r.sure[0]) (absStart += Math.abs(w.start - r.start)), nStart++;
            if (r.sure[1]) (absEnd += Math.abs(w.end - r.end)), nEnd++;
          });
        }
        cells.push(`${timed}/${words}${refused ? ` (${refused} refused)` : ''}, ${ms(absStart / Math.max(1, nStart))}/${ms(absEnd / Math.max(1, nEnd))}`);
      }
      console.log(`${row.padEnd(20)}${cells.map((c) => c.padEnd(34)).join('')}`);
    }
  } finally {
    await aligner.close();
    await humKept.close();
    fs.rmSync(work, { recursive: true, force: true });
  }
}

try {
  for (const [setName, clips] of Object.entries(sets)) await table(setName, clips, conditions());
  // the read-along on read sentences with pauses around them (a 1 s clip is no recording to locate in a book)
  const sentences = QUICK ? loadHandReferences('held-out').filter((r) => r.audio === 'jfk.wav').map(load) : Object.values(sets).flat().filter((c) => c.samples.length / c.sampleRate >= 2.5);
  await readAlongTable(QUICK ? 'read-along of jfk' : 'read-along of each clip of 2.5 s or more', sentences, QUICK ? conditions().slice(-1) : conditions());
} finally {
  await Promise.all(aligners.map(([, a]) => a.close()));
}
process.exit(0);
