// The speech engines installed on this machine, as the voice library sees them: which
// eSpeak NG voices and Piper models exist, which languages they speak, and one lazily
// started backend per engine for samples and previews.
import { buildVoiceTable, EspeakProcess, toBcp47, voiceForLanguage, type VoiceTable } from '../speech/tts/espeak.ts';
import { listPiperVoices, readVoiceConfig, voiceLanguage } from '../speech/tts/piper/voices.ts';
import { createTtsBackend } from '../speech/tts/backends.ts';
import type { Language, TtsBackend } from '../speech/types.ts';

import type { LocalEngine } from '../speech/local.ts';

export type { LocalEngine };

const BCP47 = /^[a-z]{2,3}(-[A-Za-z0-9]{1,8})*$/;

type EspeakVoices = { table: VoiceTable; identifiers: Map<string, string> };
let espeakVoices: Promise<EspeakVoices> | null = null;

/** eSpeak NG's voice list, read once per process from the helper (installed voices don't change under us). */
function espeak(): Promise<EspeakVoices> {
  if (!espeakVoices) {
    espeakVoices = (async () => {
      const proc = new EspeakProcess();
      try {
        const voices = await proc.voices();
        return { table: buildVoiceTable(voices), identifiers: new Map(voices.map((v) => [v.identifier.toLowerCase(), v.identifier])) };
      } finally {
        await proc.close();
      }
    })();
    espeakVoices.catch(() => (espeakVoices = null));
  }
  return espeakVoices;
}

/**
 * A manifest's eSpeak voice (a language name like fr-fr, or a voice file like roa/fr) →
 * the voice file to select, which the helper always accepts (it rejects some language
 * names, fr-fr among them); null when the installed eSpeak NG has no such voice.
 */
export async function espeakVoiceFile(voice: string): Promise<string | null> {
  const { table, identifiers } = await espeak();
  return table.byLanguage.get(toBcp47(voice).toLowerCase()) ?? identifiers.get(voice.toLowerCase()) ?? null;
}

/** eSpeak NG's voice for a BCP-47 language (exact, else the primary language); a SpeechInputError when it has none. */
export async function espeakVoiceForLanguage(language: string): Promise<string> {
  return voiceForLanguage((await espeak()).table, language);
}

export class LocalEngines {
  private backends = new Map<LocalEngine, Promise<TtsBackend>>();

  constructor(readonly modelsDir: string) {}

  espeakVoice(voice: string): Promise<string | null> {
    return espeakVoiceFile(voice);
  }

  piperModelInstalled(model: string): boolean {
    return listPiperVoices(this.modelsDir).some((v) => v.id === model);
  }

  /** Languages the installed engines really speak: eSpeak NG's list plus each installed Piper voice's. */
  async languages(): Promise<Language[]> {
    const byCode = new Map<string, Language>();
    for (const l of (await espeak()).table.languages) {
      // eSpeak names a few voices outside BCP-47 (Klingon is "piqd"); a client could not send those back.
      if (BCP47.test(l.code)) byCode.set(l.code.toLowerCase(), l);
    }
    for (const v of listPiperVoices(this.modelsDir)) {
      try {
        const l = voiceLanguage(readVoiceConfig(v.json));
        if (l && !byCode.has(l.code.toLowerCase())) byCode.set(l.code.toLowerCase(), l);
      } catch {
        // a broken voice config speaks nothing; the Piper backend reports it when asked to use it
      }
    }
    return [...byCode.values()].sort((a, b) => a.code.localeCompare(b.code));
  }

  backend(engine: LocalEngine): Promise<TtsBackend> {
    let b = this.backends.get(engine);
    if (!b) {
      b = createTtsBackend(engine, { modelsDir: this.modelsDir, device: 'cpu' });
      b.catch(() => this.backends.delete(engine));
      this.backends.set(engine, b);
    }
    return b;
  }

  async close(): Promise<void> {
    const all = [...this.backends.values()];
    this.backends.clear();
    await Promise.all(all.map(async (b) => (await b.catch(() => null))?.close()));
  }
}
