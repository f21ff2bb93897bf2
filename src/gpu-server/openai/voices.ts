// The `voice` of /v1/audio/speech: a Lectern voice id (voices/manifest.json), an OpenAI
// voice name mapped through the operator's table (voices/openai-voices.json), or a voice
// id the loaded backend lists itself. Which voices exist is read from the backend's info
// (its name, whether it clones, the voices it lists), never assumed from its name alone.
import fs from 'node:fs';
import { VoiceManifest, type VoiceEntry } from '../../voices/manifest.ts';
import { engineVoice, VoiceResolutionError } from '../../voices/resolve.ts';
import type { BackendInfo } from '../tasks.ts';

export const DEFAULT_LANGUAGE = 'en-US';

/** What one request speaks with. */
export interface SpeechVoice {
  /** The id the client sent. */
  id: string;
  /** The Lectern voice it resolved to (null: an engine voice id, or the backend's default). */
  lecternId: string | null;
  /** Engine voice for SynthesisRequest.voice (null: the backend's default for the language). */
  voice: string | null;
  language: string;
  refAudio: Buffer | null;
  refText: string | null;
}

/** One entry of GET /v1/audio/voices: `id` and `name` (what Open WebUI reads), then Lectern's fields. */
export interface ListedVoice {
  id: string;
  name: string;
  /** null: the backend does not say (an engine voice). */
  language: string | null;
  /** lectern: a bundled voice; alias: an OpenAI name mapped to `alias_of`; engine: a voice the backend lists. */
  kind: 'lectern' | 'alias' | 'engine';
  alias_of?: string | null;
}

export class VoiceTableError extends Error {
  override name = 'VoiceTableError';
}

/** Reads the OpenAI name → [Lectern voice id, …] table; a broken file stops start-up with a message naming it. */
export function readVoiceTable(file: string): Map<string, string[]> {
  let json: unknown;
  try {
    json = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (e) {
    throw new VoiceTableError(`the OpenAI voice table ${file} cannot be read: ${(e as Error).message} (set LECTERN_OPENAI_VOICES to a JSON file {"voices": {"alloy": ["voice-id", …]}})`);
  }
  const voices = (json as { voices?: unknown })?.voices;
  if (!voices || typeof voices !== 'object' || Array.isArray(voices)) throw new VoiceTableError(`${file}: expected {"voices": {"alloy": ["voice-id", …], …}}`);
  const table = new Map<string, string[]>();
  for (const [name, ids] of Object.entries(voices)) {
    if (!Array.isArray(ids) || ids.some((i) => typeof i !== 'string')) throw new VoiceTableError(`${file}: "${name}" must map to a list of voice ids`);
    table.set(name.toLowerCase(), ids as string[]);
  }
  return table;
}

export class SpeechVoices {
  constructor(
    private readonly manifest: VoiceManifest,
    private readonly table: Map<string, string[]>,
  ) {}

  /** A bundled voice as this backend speaks it, or why it cannot. */
  private async speakable(entry: VoiceEntry, be: BackendInfo): Promise<Omit<SpeechVoice, 'id'> | { reason: string }> {
    const b = entry.backing;
    if (b.engine === 'clone') {
      if (!be.canClone) return { reason: `voice ${entry.id} clones a reference clip, and backend ${be.name} cannot clone voices` };
      try {
        const refAudio = await fs.promises.readFile(this.manifest.clipPath(b));
        return { lecternId: entry.id, voice: null, language: entry.language, refAudio, refText: entry.ref_text };
      } catch {
        return { reason: `voice ${entry.id}: its clip ${b.ref_audio} is missing from the voices folder` };
      }
    }
    if (be.name !== b.engine && !be.name.endsWith(`:${b.engine}`)) return { reason: `voice ${entry.id} is a ${b.engine} voice, and this server runs ${be.name}` };
    let voice: string | null;
    try {
      voice = await engineVoice(entry.id, be.name, this.manifest);
    } catch (e) {
      if (e instanceof VoiceResolutionError) return { reason: e.message };
      throw e;
    }
    const engineId = voice?.split('#')[0];
    if (be.voices && engineId && !be.voices.includes(engineId)) return { reason: `voice ${entry.id} needs ${b.engine} voice "${engineId}", which backend ${be.name} does not have installed` };
    return { lecternId: entry.id, voice, language: entry.language, refAudio: null, refText: null };
  }

  /**
   * The voice `id` names on this backend. `language` (Lectern's extension of the body)
   * overrides the voice's own. Throws a VoiceResolutionError saying why when it names
   * nothing this backend speaks.
   */
  async resolve(id: string, be: BackendInfo, language: string | null): Promise<SpeechVoice> {
    const entry = await this.manifest.get(id);
    if (entry) {
      const s = await this.speakable(entry, be);
      if ('reason' in s) throw new VoiceResolutionError(s.reason);
      return { ...s, id, language: language ?? s.language };
    }
    const aliased = this.table.get(id.toLowerCase());
    if (aliased) {
      for (const target of aliased) {
        const e = await this.manifest.get(target);
        const s = e ? await this.speakable(e, be) : null;
        if (s && !('reason' in s)) return { ...s, id, language: language ?? s.language };
      }
      // None of the table's voices is installed here: the backend's own default voice speaks.
      return { id, lecternId: null, voice: null, language: language ?? DEFAULT_LANGUAGE, refAudio: null, refText: null };
    }
    // A backend that does not list its voices judges the id itself.
    if (!be.voices || be.voices.includes(id)) return { id, lecternId: null, voice: id, language: language ?? DEFAULT_LANGUAGE, refAudio: null, refText: null };
    const known = (await this.list(be)).map((v) => v.id);
    throw new VoiceResolutionError(`unknown voice "${id}"; this server speaks ${known.slice(0, 12).join(', ')}${known.length > 12 ? `, … (${known.length} in all, see GET /v1/audio/voices)` : ''}`);
  }

  /** Bundled voices this backend speaks, then the OpenAI names, then engine voices no bundled voice covers. */
  async list(be: BackendInfo): Promise<ListedVoice[]> {
    const out: ListedVoice[] = [];
    const covered = new Set<string>();
    const names = new Map<string, string>();
    for (const entry of await this.manifest.voices()) {
      const s = await this.speakable(entry, be);
      if ('reason' in s) continue;
      out.push({ id: entry.id, name: entry.name, language: entry.language, kind: 'lectern' });
      names.set(entry.id, entry.name);
      if (s.voice) covered.add(s.voice.split('#')[0]!);
    }
    for (const [alias, targets] of this.table) {
      const target = targets.find((t) => names.has(t)) ?? null;
      const language = target ? out.find((v) => v.id === target)!.language : DEFAULT_LANGUAGE;
      out.push({ id: alias, name: `${alias} (${target ? names.get(target) : `${be.name} default voice`})`, language, kind: 'alias', alias_of: target });
    }
    for (const v of be.voices ?? []) {
      if (!covered.has(v)) out.push({ id: v, name: v, language: null, kind: 'engine' });
    }
    return out;
  }
}
