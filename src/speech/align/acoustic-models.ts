// The PocketSphinx acoustic models the hmm aligner can use, found where they are
// installed: Debian's pocketsphinx-en-us (16 kHz, scripts/setup.sh installs it) and the
// 8 kHz en-us and fr-fr models inside the soundswallower npm package. Nothing is
// downloaded; a language with no model here is aligned by dtw instead (the auto aligner).
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { PhoneSet } from './phones.ts';

export interface AcousticModel {
  /** Short name, e.g. en-us-16k. */
  name: string;
  /** Primary language subtag it covers (en, fr). */
  language: string;
  dir: string;
  dict: string;
  noiseDict: string;
  /** Front-end parameters (soundswallower reads them as JSON). */
  featParams: Record<string, string | number | boolean>;
  phoneSet: PhoneSet;
  /** Highest audio frequency the model's features use: 16 kHz models need wide-band audio. */
  upperHz: number;
  licence: string;
}

export const DEBIAN_EN_US_DIR = '/usr/share/pocketsphinx/model/en-us';

function soundswallowerModels(): string | null {
  try {
    return path.join(path.dirname(createRequire(import.meta.url).resolve('soundswallower')), 'model');
  } catch {
    return null;
  }
}

/** Debian's feat.params (`-key value` lines) as soundswallower's JSON settings. */
export function parseFeatParams(text: string): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const line of text.split('\n')) {
    const m = /^-(\S+)\s+(\S+)/.exec(line.trim());
    if (!m) continue;
    const [, key, raw] = m as unknown as [string, string, string];
    // settings of the old PocketSphinx front end that soundswallower does not have
    if (key === 'agc' || key === 'model' || key === 'cmninit') continue;
    out[key] = raw === 'yes' ? true : raw === 'no' ? false : /^-?\d+(\.\d+)?$/.test(raw) ? Number(raw) : raw;
  }
  return out;
}

function bundled(base: string, lang: 'en-us' | 'fr-fr'): AcousticModel | null {
  const dir = path.join(base, lang);
  if (!existsSync(path.join(dir, 'mdef'))) return null;
  const featParams = JSON.parse(readFileSync(path.join(dir, 'feat_params.json'), 'utf8')) as Record<string, string | number | boolean>;
  return {
    name: `${lang}-8k`,
    language: lang.slice(0, 2),
    dir,
    dict: path.join(dir, 'dict.txt'),
    noiseDict: path.join(dir, 'noisedict.txt'),
    featParams,
    phoneSet: lang === 'en-us' ? 'arpabet' : 'fr-fr',
    upperHz: Number(featParams.upperf ?? 3700),
    licence: lang === 'en-us' ? 'BSD-2-Clause (CMU Sphinx, Alpha Cephei); bundled in soundswallower (MIT)' : 'BSD-style (Université du Maine, LIUM); bundled in soundswallower (MIT)',
  };
}

function debianEnUs(): AcousticModel | null {
  const dir = path.join(DEBIAN_EN_US_DIR, 'en-us');
  const dict = path.join(DEBIAN_EN_US_DIR, 'cmudict-en-us.dict');
  if (!existsSync(path.join(dir, 'mdef')) || !existsSync(dict)) return null;
  const featParams = parseFeatParams(readFileSync(path.join(dir, 'feat.params'), 'utf8'));
  return {
    name: 'en-us-16k',
    language: 'en',
    dir,
    dict,
    noiseDict: path.join(dir, 'noisedict'),
    featParams,
    phoneSet: 'arpabet',
    upperHz: Number(featParams.upperf ?? 6800),
    licence: 'BSD-2-Clause (CMU Sphinx); Debian package pocketsphinx-en-us',
  };
}

let cached: AcousticModel[] | null = null;

/** Installed models, the preferred one for a language first. */
export function installedAcousticModels(): AcousticModel[] {
  if (cached) return cached;
  const base = soundswallowerModels();
  // English: soundswallower's 8 kHz model first, for wide-band audio too (its features stop at
  // 3.7 kHz). Decoding the same clips with both, its word boundaries were closer to the hand
  // labels: running-speech edges 19.5 ms against 23.2 (tuning), 14.6 against 15.6 (held-out),
  // synthetic 22.3/19.8 against 22.7/20.0, and it decodes a quarter faster (bench/align-ideas.ts
  // models, round 5). Debian's 16 kHz model stays the fallback, and the recogniser's model.
  const list = [base ? bundled(base, 'en-us') : null, debianEnUs(), base ? bundled(base, 'fr-fr') : null];
  cached = list.filter((m): m is AcousticModel => m !== null);
  return cached;
}

/**
 * The model that hears and aligns languages no installed model covers (Spanish, Italian,
 * Russian, German, …: every language eSpeak NG speaks), their words pronounced by eSpeak and
 * mapped to its phones (phones.ts). soundswallower's 8 kHz en-us model: chosen on Spanish
 * speech (bench/language-recording.bench.ts --language es, three seeds) over the fr-fr model
 * (98.4–99.5 % of spoken words timed against 94.7–99.0 %) and Debian's 16 kHz en-us model
 * (87.6 % on seed 11); Italian and Russian were not looked at before the choice.
 */
export function borrowedModel(): AcousticModel | null {
  return installedAcousticModels().find((m) => m.name === 'en-us-8k') ?? null;
}

/** Primary language subtags some installed model covers. */
export function hmmLanguages(): string[] {
  return [...new Set(installedAcousticModels().map((m) => m.language))];
}

export function primaryLanguage(language: string): string {
  return language.trim().toLowerCase().replace(/_/g, '-').split('-')[0] ?? '';
}

/**
 * The model for a language and input band: the first installed one for the language whose
 * features fit in the audio's band (telephone audio, 8 kHz, never goes to a wide-band model),
 * else the first for the language.
 */
export function modelFor(language: string, sampleRate: number): AcousticModel | null {
  const lang = primaryLanguage(language);
  const models = installedAcousticModels().filter((m) => m.language === lang);
  return models.find((m) => m.upperHz <= sampleRate / 2) ?? models[0] ?? null;
}

/**
 * The model whose decode the hmm aligner averages with the first's (HmmAlignerOptions.secondModel):
 * another installed model of the language whose features fit in the audio's band. English
 * wide-band audio: Debian's 16 kHz model beside soundswallower's 8 kHz one. None for telephone
 * audio, for French (one model) and for a borrowed model.
 */
export function secondModelFor(first: AcousticModel, language: string, sampleRate: number): AcousticModel | null {
  const lang = primaryLanguage(language);
  if (first.language !== lang) return null;
  return installedAcousticModels().find((m) => m !== first && m.language === lang && m.upperHz <= sampleRate / 2) ?? null;
}

/**
 * Whether the named aligner honours skippable and repeatable ranges (AlignOptions) in this
 * language: hmm does (`auto` where it picks hmm), in a language a model of its own covers or,
 * with AlignOptions.borrowModel, one it borrows a model for; dtw does not.
 */
export function alignerSkips(name: string, language: string): boolean {
  return (name === 'hmm' || name === 'auto') && (hmmLanguages().includes(primaryLanguage(language)) || borrowedModel() !== null);
}
