// The voice manifest (voices/manifest.json): parsed, validated, and re-read whenever the
// file's mtime or size changes, so an operator's edit applies without a restart.
import fs from 'node:fs';
import path from 'node:path';
import { LecternError } from '../core/errors.ts';
import { PROJECT_ROOT } from '../core/paths.ts';

export const DEFAULT_VOICES_DIR = path.join(PROJECT_ROOT, 'voices');

export type VoiceBacking =
  | { engine: 'espeak'; voice: string }
  | { engine: 'piper'; model: string; speaker?: string }
  | { engine: 'clone'; ref_audio: string };

export interface VoiceEntry {
  id: string;
  name: string;
  language: string;
  description: string;
  ref_text: string;
  backing: VoiceBacking;
}

export class ManifestError extends LecternError {
  override name = 'ManifestError';
  constructor(message: string) {
    super('VOICE_MANIFEST', message);
  }
}

const ID_RE = /^[A-Za-z0-9][\w.-]{0,127}$/;
const LANG_RE = /^[A-Za-z]{2,3}(-[A-Za-z0-9]{1,8})*$/;

function text(o: Record<string, unknown>, key: string, where: string, optional = false): string {
  const v = o[key];
  if (v === undefined && optional) return '';
  if (typeof v !== 'string') throw new ManifestError(`${where}: "${key}" must be a string`);
  return v;
}

/** Validates the manifest's JSON; every problem names the voice and field. */
export function parseManifest(raw: string, file: string): VoiceEntry[] {
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch (e) {
    throw new ManifestError(`${file} is not valid JSON: ${(e as Error).message}`);
  }
  const list = (json as { voices?: unknown })?.voices;
  if (!Array.isArray(list)) throw new ManifestError(`${file}: expected {"voices": [...]}`);
  const seen = new Set<string>();
  return list.map((v: unknown, i) => {
    if (!v || typeof v !== 'object') throw new ManifestError(`${file}: voice ${i} is not an object`);
    const o = v as Record<string, unknown>;
    const id = text(o, 'id', `${file}: voice ${i}`);
    const where = `${file}: voice "${id}"`;
    if (!ID_RE.test(id)) throw new ManifestError(`${where}: id must be letters, digits, . _ - (at most 128)`);
    if (seen.has(id)) throw new ManifestError(`${where}: duplicate id`);
    seen.add(id);
    const language = text(o, 'language', where);
    if (!LANG_RE.test(language)) throw new ManifestError(`${where}: language "${language}" is not a BCP-47 code`);
    const entry = { id, name: text(o, 'name', where), language, description: text(o, 'description', where, true), ref_text: text(o, 'ref_text', where, true) };
    const engine = o.engine;
    let backing: VoiceBacking;
    if (engine === 'espeak') backing = { engine, voice: text(o, 'voice', where) };
    else if (engine === 'piper') {
      const model = text(o, 'model', where);
      if (!/^[\w.-]+$/.test(model)) throw new ManifestError(`${where}: invalid Piper model id "${model}"`);
      backing = o.speaker === undefined ? { engine, model } : { engine, model, speaker: String(o.speaker) };
    } else if (engine === 'clone') {
      const ref = text(o, 'ref_audio', where);
      if (path.isAbsolute(ref) || path.normalize(ref).split(/[\\/]/).includes('..')) throw new ManifestError(`${where}: ref_audio must be a path inside the voices folder`);
      if (!entry.ref_text.trim()) throw new ManifestError(`${where}: a clone voice needs the exact ref_text of its clip`);
      backing = { engine, ref_audio: ref };
    } else throw new ManifestError(`${where}: engine must be espeak, piper or clone, got ${JSON.stringify(engine)}`);
    return { ...entry, backing };
  });
}

/**
 * The manifest as of the last change on disk. A broken edit keeps the last good version
 * in service (and says why in `lastError`); with no good version at all, reads throw.
 */
export class VoiceManifest {
  readonly file: string;
  private stamp = '';
  private entries: VoiceEntry[] | null = null;
  lastError: string | null = null;

  constructor(readonly dir: string = DEFAULT_VOICES_DIR) {
    this.file = path.join(dir, 'manifest.json');
  }

  /** Voices, re-read when the file's mtime or size changed (one stat per call). */
  async voices(): Promise<VoiceEntry[]> {
    let st: fs.Stats;
    try {
      st = await fs.promises.stat(this.file);
    } catch {
      throw new ManifestError(`the voice manifest ${this.file} is missing`);
    }
    const stamp = `${st.mtimeMs}:${st.size}:${st.ino}`;
    if (stamp !== this.stamp || !this.entries) {
      try {
        this.entries = parseManifest(await fs.promises.readFile(this.file, 'utf8'), this.file);
        this.lastError = null;
      } catch (e) {
        this.lastError = (e as Error).message;
        if (!this.entries) throw e;
      }
      this.stamp = stamp;
    }
    return this.entries;
  }

  async get(id: string): Promise<VoiceEntry | null> {
    return (await this.voices()).find((v) => v.id === id) ?? null;
  }

  /** Absolute path of a clone voice's clip (validated in parseManifest to stay inside dir). */
  clipPath(backing: { ref_audio: string }): string {
    return path.join(this.dir, backing.ref_audio);
  }
}
