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
// Run: node --import tsx bench/align-levels.bench.ts [quick] [--emu-ae DIR]
import { createHmmAligner } from '../src/speech/align/hmm.ts';
import { DIGITAL_SILENCE_LOCATE } from '../src/speech/align/refine.ts';
import { emptyScore, loadHandClip, loadHandReferences, scoreAgainst, type HandClip, type HandReference } from '../test/fixtures/alignment/hand/references.ts';
import { emuAeArg, loadEmuAe } from './emu-ae.ts';
import { QUICK } from './quick.ts';

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

/** The clip scaled to peak at `db` dBFS and rounded to 16 bits. */
function atLevel(samples: Float32Array, db: number): Float32Array {
  const peak = samples.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
  const gain = 10 ** (db / 20) / peak;
  return samples.map((v) => Math.max(-32768, Math.min(32767, Math.round(v * gain * 32767))) / 32768);
}

const aligners: [string, Awaited<ReturnType<typeof createHmmAligner>>][] = [
  ['as shipped (-90 dBFS, no DC)', await createHmmAligner()],
  // round 39: the line at -80 dBFS (what the locate phase still uses), the energy read with its DC offset, one floor per clip
  ['round 39 (-80 dBFS, with DC)', await createHmmAligner({ refine: { digitalSilence: DIGITAL_SILENCE_LOCATE, dcCutoffHz: 0, joinSeconds: 0 } })],
];

const ms = (x: number) => (1000 * x).toFixed(1);
/** One table: a row per condition, a column per aligner. */
async function table(title: string, clips: Clip[], rows: [string, (c: Clip) => Float32Array][]): Promise<void> {
  console.log(`\n${title}: ${clips.length} clips; MAE starts/ends (ms)`);
  console.log(`${''.padEnd(16)}${aligners.map(([a]) => a.padEnd(30)).join('')}`);
  for (const [row, make] of rows) {
    const scores = aligners.map(() => emptyScore());
    for (const clip of clips) {
      const samples = make(clip);
      for (const [k, [, a]] of aligners.entries()) scoreAgainst(await a.align(samples, clip.sampleRate, clip.text, 'en-US'), clip, scores[k]);
    }
    console.log(`${row.padEnd(16)}${scores.map((s) => `${ms(s.absStart / s.nStart)}/${ms(s.absEnd / s.nEnd)}`.padEnd(30)).join('')}`);
  }
}
try {
  for (const [setName, clips] of Object.entries(sets)) {
    await table(`${setName}, by peak level`, clips, levels.map((db) => [db === null ? 'as recorded' : `${db} dBFS`, (c) => (db === null ? c.samples : atLevel(c.samples, db))]));
    // a DC offset (a share of full scale) added to the recording as it is
    await table(`${setName}, with a DC offset`, clips, offsets.map((dc) => [dc ? `offset ${dc * 100} %` : 'none added', (c) => (dc ? c.samples.map((v) => v + dc) : c.samples)]));
  }
} finally {
  await Promise.all(aligners.map(([, a]) => a.close()));
}
process.exit(0);
