// The hmm aligner's refinement in room noise (round 36): real room tone (the pauses of the
// PolyglotDB clip in test/fixtures/speech, a room with a noisy microphone) added to the clean
// sets of bench/align-accuracy.bench.ts at 5, 10, 15 and 20 dB under their speech's loud frames
// (the 95th-percentile 25 ms frame), each clip decoded once per level and its boundaries refined
// five ways in the same run:
//   - as shipped: pause edges in the energy unless the clip's dynamic range (loud frames over the
//     noise floor, refine.ts dynamicRange) is under minDynamicRange (24 dB), or the word's loudest
//     frame lies under minStartContrast (20 dB) over the pause before a start, minEndContrast
//     (26 dB) over the pause after an end; then the HMM's;
//   - ends at 20 dB: one edge contrast for starts and ends (round 36);
//   - no edge-contrast rule: the dynamic-range rule alone (round 36's first step);
//   - at any noise level: pause edges always in the energy (before round 36);
//   - HMM pause edges: never in the energy (the running-speech shift and snap only);
//   - means everywhere: the two models' edges averaged even where they lie over 100 ms apart
//     (round 38; since round 39 the 16 kHz model's edge is taken there, refine.ts maxSpreadS);
//   - as shipped, one model: the 8 kHz model's decode alone (round 37; since round 38 a second
//     model's decode is averaged in on wide-band English, AlignOptions.secondModel).
// The labels do not move with the noise, so each row is scored against the clean clip's labels.
// The noise's offset in its loop is fixed per clip and level: every run adds the same noise.
// Run: node --import tsx bench/align-noise.ts [quick]   (needs the Piper set made by bench/align-accuracy.bench.ts)
import { readFileSync } from 'node:fs';
import path from 'node:path';
import * as native from '../src/native/index.ts';
import { decodeWav } from '../src/media/wav.ts';
import { createHmmAligner, wordTimings, type Decoded } from '../src/speech/align/hmm.ts';
import { dynamicRange, refineBoundaries, spectralChangeOf, type RefineParams } from '../src/speech/align/refine.ts';
import { emptyScore, loadHandReferences, scoreAgainst, type HandReference, type Score } from '../test/fixtures/alignment/hand/references.ts';
import { piperExactClips } from './piper-exact.ts';
import { roomTone, withRoomTone } from './room-tone.ts';

const RATE = 16000;
const quick = process.argv.includes('quick');
const speechDir = path.join(import.meta.dirname, '..', 'test', 'fixtures', 'speech');
const load = (file: string) => {
  const buf = readFileSync(path.join(speechDir, file));
  const rate = buf.readUInt32LE(24);
  const s = decodeWav(buf).samples;
  return rate === RATE ? s : native.resample(s, rate, RATE);
};

const noise = roomTone();

const clean: { set: string; ref: HandReference; audio: Float32Array }[] = [];
for (const part of ['tuning', 'held-out']) for (const ref of loadHandReferences(part)) clean.push({ set: `hand, ${part}`, ref, audio: load(ref.audio) });
for (const c of await piperExactClips(quick ? 20 : 200)) clean.push({ set: `Piper, ${c.part}`, ref: c, audio: c.sampleRate === RATE ? c.samples : native.resample(c.samples, c.sampleRate, RATE) });

const variants: [string, Partial<RefineParams>][] = [
  ['as shipped', {}],
  ['ends at 20 dB (round 36)', { minEndContrast: Math.log(10) * 2 }],
  ['no edge-contrast rule', { minStartContrast: 0, minEndContrast: 0 }],
  ['refined at any noise level', { minDynamicRange: 0, minStartContrast: 0, minEndContrast: 0 }],
  ['HMM pause edges', { starts: false, ends: false, gapFrames: 0 }],
  ['means everywhere (round 38)', { maxSpreadS: 0 }],
];
const levels: (number | null)[] = [null, 20, 15, 10, 5];
const hmm = await createHmmAligner({ secondModel: 'always' });
const hmmOne = await createHmmAligner({ secondModel: 'never' });
const sets = [...new Set(clean.map((c) => c.set))];
const ms = (x: number) => (1000 * x).toFixed(1);
console.log(`room tone: ${(noise.samples.length / RATE).toFixed(1)} s; ${clean.length} clips per level; MAE starts/ends (ms) against the clean clips' labels`);
console.log(`${'variant'.padEnd(34)}${sets.map((s) => s.padEnd(20)).join('')}`);
for (const level of levels) {
  const items = [];
  const ranges: number[] = [];
  for (const [i, c] of clean.entries()) {
    const audio = level === null ? c.audio : withRoomTone(c.audio, level, 7919 * (i + 1) + 104729 * level);
    const d = await hmm.decodeAll(audio, RATE, c.ref.text, 'en-US');
    const d1 = await hmmOne.decodeAll(audio, RATE, c.ref.text, 'en-US');
    const energy = native.frameEnergy(audio, RATE, { frameMs: 25, hopMs: 10 });
    ranges.push((10 * dynamicRange(energy)) / Math.LN10);
    const asDecoded = (x: typeof d) => ({ ...x, audio, skipped: x.tokens.map(() => false) }) as Decoded;
    items.push({ c, d: asDecoded(d), d1: asDecoded(d1), energy, change: spectralChangeOf(audio, RATE, native.melSpectrogram) });
  }
  ranges.sort((a, b) => a - b);
  console.log(`\nroom tone ${level === null ? 'none (the clean clips)' : `${level} dB under the speech's loud frames`}: dynamic range ${ranges[0]!.toFixed(0)}-${ranges.at(-1)!.toFixed(0)} dB, median ${ranges[ranges.length >> 1]!.toFixed(0)} dB`);
  for (const [name, params, oneModel] of [...variants, ['as shipped, one model (round 37)', {}, true] as const]) {
    const scores = new Map<string, Score>(sets.map((s) => [s, emptyScore()]));
    for (const item of items) {
      const it = { ...item, d: oneModel ? item.d1 : item.d };
      const words = it.d.decodes.length ? wordTimings(it.d, refineBoundaries(it.d.decodes, it.energy, 0.01, params, it.change)) : it.d.tokens.map((word) => ({ word, start: 0, end: 0 }));
      scoreAgainst(words, it.c.ref, scores.get(it.c.set));
    }
    const cells = sets.map((s) => { const sc = scores.get(s)!; return `${ms(sc.absStart / sc.nStart)}/${ms(sc.absEnd / sc.nEnd)}`.padEnd(20); });
    console.log(`${name.padEnd(34)}${cells.join('')}`);
  }
}
await Promise.all([hmm.close(), hmmOne.close()]);
process.exit(0); // the shared eSpeak helper used for the Piper set would keep the process alive
