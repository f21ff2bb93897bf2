// IPA → Piper phoneme ids, as piper-phonemize's phonemes_to_ids does it:
// BOS `^`, then every phoneme followed by the pad `_`, then EOS `$`.
import type { PiperVoiceConfig } from './voices.ts';

export function phonemesToIds(ipa: string, cfg: PiperVoiceConfig): number[] {
  const map = cfg.phoneme_id_map;
  const pad = map._?.[0] ?? 0;
  const ids: number[] = [...(map['^'] ?? [1]), pad];
  // Piper's ids are per Unicode code point after NFD (so "ç" is c + combining cedilla).
  for (const cp of ipa.normalize('NFD')) {
    const mapped = cfg.phoneme_map?.[cp] ?? [cp];
    for (const ph of mapped) {
      const id = map[ph];
      if (!id) continue; // piper-phonemize skips phonemes the voice has no id for
      ids.push(...id, pad);
    }
  }
  ids.push(...(map.$ ?? [2]));
  return ids;
}
