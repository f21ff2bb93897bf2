// emuR's "ae" demo database (the EMU Speech Database Management System; CRAN package emuR, GPL):
// 7 read sentences of one Australian English speaker, segmented by hand by the EMU authors. Not
// in this repository (it reached the project only through GitHub, and no package registry here
// carries emuR): the benches read it from emuR's inst/extdata/rawDemoData folder, named with
// `--emu-ae DIR` (R: system.file("extdata/rawDemoData", package = "emuR")).
// Word edges: the Text tier of each TextGrid ("*" marks an interval that is no word); the .par
// files' MAU tier is automatic (MAUS) and not used.
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { decodeWav } from '../src/media/wav.ts';
import type { HandReference } from '../test/fixtures/alignment/hand/references.ts';

export interface EmuAeClip extends HandReference {
  samples: Float32Array;
  sampleRate: number;
  /** The WAV file's path. */
  file: string;
}

/** The intervals of one tier of a Praat TextGrid (long or short text format). */
export function textGridTier(text: string, tier: string): { start: number; end: number; label: string }[] {
  if (!/item \[\d+\]:/.test(text)) return shortTextGridTier(text, tier);
  const item = text
    .split(/item \[\d+\]:/)
    .slice(1)
    .find((it) => it.includes(`name = "${tier}"`));
  if (!item) throw new Error(`no tier "${tier}"`);
  // Praat writes a quote inside a label as two
  return [...item.matchAll(/xmin = ([-+\d.eE]+)\s*xmax = ([-+\d.eE]+)\s*text = "((?:[^"]|"")*)"/g)].map((m) => ({ start: Number(m[1]), end: Number(m[2]), label: m[3]!.replace(/""/g, '"') }));
}

/**
 * The short text format (Praat's "Save as short text file"; ProMo's grids): the same values, one per
 * line and unnamed: each tier is its class, name, xmin, xmax, count, then xmin, xmax, text per interval.
 */
function shortTextGridTier(text: string, tier: string): { start: number; end: number; label: string }[] {
  // values in order: numbers, and strings ("" inside one is a quote; a string may span lines)
  const values = [...text.matchAll(/"((?:[^"]|"")*)"|([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)|<exists>/g)].map((m) => (m[1] !== undefined ? m[1].replace(/""/g, '"') : m[2] !== undefined ? Number(m[2]) : null));
  for (let i = 0; i + 4 < values.length; i++) {
    if (values[i] !== 'IntervalTier' && values[i] !== 'TextTier') continue;
    const count = values[i + 4] as number;
    if (values[i + 1] !== tier) {
      i += 4 + count * (values[i] === 'IntervalTier' ? 3 : 2);
      continue;
    }
    if (values[i] !== 'IntervalTier') break;
    const out: { start: number; end: number; label: string }[] = [];
    for (let k = 0, at = i + 5; k < count; k++, at += 3) out.push({ start: values[at] as number, end: values[at + 1] as number, label: values[at + 2] as string });
    return out;
  }
  throw new Error(`no tier "${tier}"`);
}

/** Every word of the Text tiers under `dir` (wavFiles/, annotationFiles/), both edges scored. */
export function loadEmuAe(dir: string): EmuAeClip[] {
  const annotations = path.join(dir, 'annotationFiles');
  const grids = readdirSync(annotations).filter((f) => f.endsWith('.TextGrid')).sort();
  if (!grids.length) throw new Error(`--emu-ae ${dir}: no annotationFiles/*.TextGrid there (emuR's inst/extdata/rawDemoData is meant)`);
  return grids.map((f) => {
    const file = path.join(dir, 'wavFiles', f.replace(/\.TextGrid$/, '.wav'));
    const buf = readFileSync(file);
    const words = textGridTier(readFileSync(path.join(annotations, f), 'utf8'), 'Text')
      .map((iv) => ({ ...iv, label: iv.label.trim() }))
      .filter((iv) => iv.label && iv.label !== '*')
      .map((iv) => ({ word: iv.label, start: iv.start, end: iv.end, sure: [true, true] as [boolean, boolean] }));
    return { audio: path.basename(file), file, text: words.map((w) => w.word).join(' '), part: 'outside', words, samples: decodeWav(buf).samples, sampleRate: buf.readUInt32LE(24) };
  });
}

/** `--emu-ae DIR` from the command line, or null. */
export const emuAeArg = (argv: string[] = process.argv): string | null => (argv.includes('--emu-ae') ? argv[argv.indexOf('--emu-ae') + 1]! : null);
