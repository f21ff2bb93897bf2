// Piper voices on disk: `<id>.onnx` + `<id>.onnx.json` pairs under models/voices/piper/.
import fs from 'node:fs';
import path from 'node:path';
import type { Language } from '../../types.ts';
import { MissingModelError, SpeechInputError } from '../../types.ts';

export interface PiperVoiceConfig {
  audio: { sample_rate: number };
  espeak?: { voice: string };
  inference?: { noise_scale?: number; length_scale?: number; noise_w?: number };
  phoneme_type?: string;
  phoneme_map?: Record<string, string[]>;
  phoneme_id_map: Record<string, number[]>;
  num_speakers?: number;
  speaker_id_map?: Record<string, number>;
  language?: { code?: string; name_english?: string; country_english?: string };
}

export interface PiperVoiceFiles {
  id: string;
  onnx: string;
  json: string;
}

export const piperVoiceDir = (modelsDir: string): string => path.join(modelsDir, 'voices', 'piper');

/** Every complete voice (both files present) in the models dir, sorted by id. */
export function listPiperVoices(modelsDir: string): PiperVoiceFiles[] {
  const dir = piperVoiceDir(modelsDir);
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.onnx') && fs.existsSync(path.join(dir, `${f}.json`)))
    .map((f) => ({ id: f.slice(0, -'.onnx'.length), onnx: path.join(dir, f), json: path.join(dir, `${f}.json`) }))
    .sort((a, b) => a.id.localeCompare(b.id));
}

/** `en_US-joe-medium#2` → voice id and speaker; the speaker may be a number or a name from speaker_id_map. */
export function parseVoiceId(voice: string): { id: string; speaker: string | null } {
  const hash = voice.indexOf('#');
  return hash < 0 ? { id: voice, speaker: null } : { id: voice.slice(0, hash), speaker: voice.slice(hash + 1) };
}

export function voiceFiles(modelsDir: string, id: string): PiperVoiceFiles {
  if (!/^[\w.-]+$/.test(id)) throw new SpeechInputError(`invalid Piper voice id "${id}"`);
  const dir = piperVoiceDir(modelsDir);
  const onnx = path.join(dir, `${id}.onnx`);
  const json = `${onnx}.json`;
  for (const f of [onnx, json]) {
    if (!fs.existsSync(f)) {
      throw new MissingModelError(
        `Piper voice "${id}" is not installed: ${f} is missing (put the voice's .onnx and .onnx.json in ${dir}; scripts/fetch-models.sh fetches en_US-joe-medium)`,
      );
    }
  }
  return { id, onnx, json };
}

export function readVoiceConfig(file: string): PiperVoiceConfig {
  const cfg = JSON.parse(fs.readFileSync(file, 'utf8')) as PiperVoiceConfig;
  if (!cfg.phoneme_id_map || !cfg.audio?.sample_rate) throw new Error(`${file} is not a Piper voice config (no phoneme_id_map or audio.sample_rate)`);
  if (cfg.phoneme_type && cfg.phoneme_type !== 'espeak') {
    throw new Error(`${file}: phoneme_type "${cfg.phoneme_type}" is not supported (only espeak)`);
  }
  return cfg;
}

/** en_US → en-US */
export function voiceLanguage(cfg: PiperVoiceConfig): Language | null {
  const code = cfg.language?.code;
  if (!code) return null;
  const bcp = code.replace('_', '-');
  const name = cfg.language?.name_english ?? bcp;
  return { code: bcp, name: cfg.language?.country_english ? `${name} (${cfg.language.country_english})` : name };
}

/** Speaker index for `#N` / `#name`; null for a single-speaker voice with no speaker asked. */
export function speakerIndex(cfg: PiperVoiceConfig, id: string, speaker: string | null): number | null {
  const n = cfg.num_speakers ?? 1;
  if (n <= 1) {
    if (speaker !== null && speaker !== '0') throw new SpeechInputError(`Piper voice "${id}" has one speaker; "#${speaker}" is not one of them`);
    return null;
  }
  if (speaker === null) return 0;
  if (/^\d+$/.test(speaker)) {
    const i = Number(speaker);
    if (i >= n) throw new SpeechInputError(`Piper voice "${id}" has speakers 0-${n - 1}; got #${i}`);
    return i;
  }
  const named = cfg.speaker_id_map?.[speaker];
  if (named === undefined) throw new SpeechInputError(`Piper voice "${id}" has no speaker named "${speaker}"`);
  return named;
}

/**
 * The installed Piper voice for a BCP-47 language: one whose config names that language
 * exactly, else one of the same primary language (en-GB → en_US-…); the first by id.
 * null when none is installed. Broken configs speak no language.
 */
export function piperVoiceForLanguage(modelsDir: string, language: string): string | null {
  const voices = listPiperVoices(modelsDir).flatMap((v) => {
    try {
      const code = voiceLanguage(readVoiceConfig(v.json))?.code.toLowerCase();
      return code ? [{ id: v.id, code }] : [];
    } catch {
      return [];
    }
  });
  return matchLanguage(voices, language)?.id ?? null;
}

/** Exact code first, then the same primary language. */
export function matchLanguage<T extends { code: string }>(candidates: T[], language: string): T | undefined {
  const lang = language.toLowerCase().replace(/_/g, '-');
  const primary = lang.split('-')[0];
  return candidates.find((c) => c.code.toLowerCase() === lang) ?? candidates.find((c) => c.code.toLowerCase().split('-')[0] === primary);
}
