// The voice library: bundled voices with their availability on this install, samples
// (the reference clip, or a sentence synthesized once and cached), and previews (cached
// on disk by text, voice, language and reference).
//
// Where speech comes from: engine voices (espeak, piper) are synthesized by the local
// engine even when GPU servers are configured: a preview is one short sentence, and the
// GPU server runs one backend that need not be the voice's engine. Reference audio (an
// uploaded clip or a clone voice) goes to a GPU server's /synthesize as multipart
// (`ref_audio`, `ref_text`), because no local engine here can clone.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Caller } from '../core/caller.ts';
import { invalid, notFound } from '../core/errors.ts';
import { GpuServerError, type GpuClient } from '../gpu-client/index.ts';
import type { Logger } from '../log.ts';
import { encodeWav } from '../media/wav.ts';
import { DocumentError, readDocument, spokenText, type DocumentModel } from '../documents/model.ts';
import { spokenForms } from '../speech/spoken-forms.ts';
import { isId, writeFileAtomic } from '../storage.ts';
import { MissingModelError, SpeechInputError, type Language } from '../speech/types.ts';
import { piperVoiceForLanguage } from '../speech/tts/piper/voices.ts';
import { espeakVoiceForLanguage, LocalEngines, type LocalEngine } from './engines.ts';
import { defaultLocalVoice, type LocalVoice } from './resolve.ts';
import { DEFAULT_VOICES_DIR, VoiceManifest, type VoiceEntry } from './manifest.ts';
import { genericSentence, pickSnippet } from './snippet.ts';

export interface BundledVoice {
  id: string;
  name: string;
  language: string;
  description: string;
  ref_text: string;
  available: boolean;
  /** The voice a job in this voice's language gets when it names none (see VoiceLibrary.defaultVoice). */
  default: boolean;
}

export interface PreviewRequest {
  text?: string;
  language?: string;
  voice_id?: string;
  ref_audio_file_id?: string;
  ref_text?: string;
  uploaded_file_id?: string;
}

export interface AudioFile {
  file: string;
  contentType: string;
  filename: string;
  /** The text spoken (previews): lets a client show which snippet it hears. */
  text?: string;
}

/** What the library reads of an upload: the fields of the job store's UploadRecord it uses (voices rank below jobs). */
export interface UploadRecord {
  id: string;
  kind: 'document' | 'audio' | 'video';
  content_type: string;
  /** The stored key (see openUpload). */
  path: string;
}

export interface VoiceLibraryOptions {
  modelsDir: string;
  /** A local file holding an upload (by its stored key), until `release()`: the store may be a bucket. */
  openUpload: (key: string) => Promise<{ path: string; release(): Promise<void> }>;
  /** The caller's upload by id (the job store's getUpload): null when unknown or another's. */
  jobs: { getUpload(id: string, caller: Caller): Promise<UploadRecord | null> };
  /** Samples and previews are cached under here (data dir/cache). */
  cacheDir: string;
  /** The process's GPU client when LECTERN_GPU_SERVER_URL is set (cloning goes there; the process closes it), else null. */
  gpu: GpuClient | null;
  /** Local speech engine (ServiceConfig.tts.backend): `auto` (default), `espeak` or `piper`; decides each language's default voice. */
  defaultEngine?: string;
  voicesDir?: string;
  log: Logger;
}

const CONTENT_TYPES: Record<string, string> = { wav: 'audio/wav', mp3: 'audio/mpeg', opus: 'audio/ogg', ogg: 'audio/ogg', flac: 'audio/flac', m4a: 'audio/mp4' };
/** How long a "some GPU server can clone" answer is trusted before /health is asked again. */
const CLONING_CHECK_MS = 10_000;

export class VoiceLibrary {
  readonly manifest: VoiceManifest;
  readonly engines: LocalEngines;
  private readonly gpu: GpuClient | null;
  private cloning: { at: number; value: Promise<boolean> } | null = null;
  private inFlight = new Map<string, Promise<AudioFile>>();

  constructor(private readonly opts: VoiceLibraryOptions) {
    this.manifest = new VoiceManifest(opts.voicesDir ?? DEFAULT_VOICES_DIR);
    this.engines = new LocalEngines(opts.modelsDir);
    this.gpu = opts.gpu;
  }

  /**
   * Whether some configured GPU server can clone right now: healthy and reporting
   * `voice_cloning: true` in /health. Cached for 10 s so listing voices stays cheap.
   */
  cloningAvailable(): Promise<boolean> {
    if (!this.gpu) return Promise.resolve(false);
    if (!this.cloning || Date.now() - this.cloning.at > CLONING_CHECK_MS) {
      this.cloning = { at: Date.now(), value: this.gpu.checkHealth().then((s) => s.some((x) => x.healthy && x.health?.voice_cloning === true)) };
    }
    return this.cloning.value;
  }

  /**
   * Why a job that clones must be refused at creation, or null to accept it: refused with
   * no GPU server, or when servers answer and none declares voice_cloning. When none
   * answers the job is accepted and waits for them like any other job.
   */
  async cloningRefusal(): Promise<string | null> {
    if (!this.gpu) return 'it needs a GPU server with a cloning backend (set LECTERN_GPU_SERVER_URL); the local engines speak bundled voices only';
    const states = await this.gpu.checkHealth();
    const up = states.filter((s) => s.healthy);
    if (up.length === 0 || up.some((s) => s.health?.voice_cloning === true)) return null;
    return `the GPU servers that answer (${up.map((s) => s.url).join(', ')}) have no voice-cloning backend (voice_cloning is false in their /health)`;
  }

  /** Why a voice cannot be used on this install, or null when it can. */
  async unavailableReason(v: VoiceEntry): Promise<string | null> {
    const b = v.backing;
    if (b.engine === 'espeak') return (await this.engines.espeakVoice(b.voice)) ? null : `eSpeak NG has no voice "${b.voice}"`;
    if (b.engine === 'piper') {
      return this.engines.piperModelInstalled(b.model) ? null : `the Piper model ${b.model} is not installed (models/voices/piper/${b.model}.onnx and .onnx.json)`;
    }
    if (!fs.existsSync(this.manifest.clipPath(b))) return `its reference clip ${b.ref_audio} is missing from ${this.manifest.dir}`;
    return this.cloningUnavailableReason();
  }

  /** Why cloning from a reference clip cannot work right now, or null when some GPU server declares it. */
  async cloningUnavailableReason(): Promise<string | null> {
    if (!this.gpu) return 'voice cloning needs a GPU server with a cloning backend (set LECTERN_GPU_SERVER_URL); no local engine can clone';
    return (await this.cloningAvailable()) ? null : `no configured GPU server (${this.gpu.servers().map((s) => s.url).join(', ')}) is up with a voice-cloning backend`;
  }

  /** The manifest's voices; a missing or broken manifest (with no good version read before) is a ManifestError (503). */
  private entries(): Promise<VoiceEntry[]> {
    return this.manifest.voices();
  }

  async list(): Promise<BundledVoice[]> {
    const voices = await this.entries();
    const listed = await Promise.all(
      voices.map(async (v) => ({
        id: v.id,
        name: v.name,
        language: v.language,
        description: v.description,
        ref_text: v.ref_text,
        available: (await this.unavailableReason(v)) === null,
        default: false,
      })),
    );
    // With GPU servers, jobs are narrated by the servers' backend, whose default this install
    // does not decide: no voice is marked, and a job without a voice gets the server's default.
    if (this.gpu) return listed;
    const marked = new Set<string>();
    for (const [i, v] of voices.entries()) {
      const key = v.language.toLowerCase();
      if (marked.has(key) || !listed[i]!.available) continue;
      const def = await this.defaultVoice(v.language);
      if (def && (await this.backedBy(v, def))) {
        listed[i]!.default = true;
        marked.add(key);
      }
    }
    return listed;
  }

  /**
   * The engine voice a local job (or a preview) in `language` gets when it names no voice:
   * with the `auto` engine the Piper voice installed for the language, else eSpeak NG's; with
   * a fixed engine, that engine's voice for the language. null when the engine has none.
   */
  async defaultVoice(language: string): Promise<LocalVoice | null> {
    const engine = this.opts.defaultEngine ?? 'auto';
    try {
      if (engine === 'auto') return await defaultLocalVoice(language, this.opts.modelsDir);
      if (engine === 'espeak') return { engine, voice: await espeakVoiceForLanguage(language) };
      const piper = engine === 'piper' ? piperVoiceForLanguage(this.opts.modelsDir, language) : null;
      return piper ? { engine: 'piper', voice: piper } : null;
    } catch (e) {
      if (e instanceof SpeechInputError) return null; // eSpeak NG has no voice for it either
      throw e;
    }
  }

  /** Whether bundled voice `v` is the engine voice `def`. */
  private async backedBy(v: VoiceEntry, def: LocalVoice): Promise<boolean> {
    const b = v.backing;
    if (b.engine === 'piper') return def.engine === 'piper' && (b.speaker !== undefined ? `${b.model}#${b.speaker}` : b.model) === def.voice;
    if (b.engine === 'espeak') return def.engine === 'espeak' && (await this.engines.espeakVoice(b.voice)) === def.voice;
    return false;
  }

  languages(): Promise<Language[]> {
    return this.engines.languages();
  }

  private async voice(id: string): Promise<VoiceEntry> {
    const v = (await this.entries()).find((x) => x.id === id);
    if (!v) throw notFound(`voice ${id} not found`);
    return v;
  }

  /** A voice's sample: its reference clip, or its language's generic sentence in its voice, synthesized once. */
  async sample(id: string): Promise<AudioFile> {
    const v = await this.voice(id);
    const b = v.backing;
    // A voice that `available: false` lists has no sample either: hearing a clip of a voice
    // that cannot narrate here would promise what the install cannot do.
    const why = await this.unavailableReason(v);
    if (why) throw notFound(`voice ${id} is not available on this install: ${why}`);
    if (b.engine === 'clone') {
      const file = this.manifest.clipPath(b);
      const ext = path.extname(file).slice(1).toLowerCase();
      return { file, contentType: CONTENT_TYPES[ext] ?? 'application/octet-stream', filename: `${id}.${ext}` };
    }
    const text = genericSentence(v.language) ?? genericSentence('en')!;
    const key = hash(['sample', JSON.stringify(b), v.language, text]);
    const file = path.join(this.opts.cacheDir, 'voice-samples', `${key}.wav`);
    return this.once(key, file, 'audio/wav', `${id}.wav`, async () => this.synthLocal(v, text, v.language));
  }

  /**
   * Synthesizes (or finds in the cache) a preview; see the module comment for where speech
   * comes from. Uploads it names must be the caller's (404 alike for another's or none).
   */
  async preview(req: PreviewRequest, caller: Caller): Promise<AudioFile> {
    const voice = req.voice_id !== undefined ? await this.voice(req.voice_id) : null;
    const language = req.language ?? voice?.language ?? 'en-US';

    let reference: { bytes: Buffer; refText: string | null; label: string } | null = null;
    if (req.ref_audio_file_id !== undefined) {
      const up = await this.upload(req.ref_audio_file_id, caller);
      if (up.kind !== 'audio') throw invalid(`ref_audio_file_id ${up.id} is ${up.kind === 'video' ? 'a video' : 'a document'}, not an audio clip`);
      if (voice && voice.backing.engine !== 'clone') {
        throw invalid(`voice ${voice.id} uses the ${voice.backing.engine} engine, which cannot clone a voice from reference audio; leave voice_id out to clone the uploaded clip`);
      }
      reference = { bytes: await this.withUpload(up, (file) => fs.promises.readFile(file)), refText: req.ref_text?.trim() || null, label: `upload ${up.id}` };
    } else if (voice?.backing.engine === 'clone') {
      const clip = this.manifest.clipPath(voice.backing);
      if (!fs.existsSync(clip)) throw invalid(`voice ${voice.id} is not available: its reference clip ${voice.backing.ref_audio} is missing`);
      reference = { bytes: await fs.promises.readFile(clip), refText: req.ref_text?.trim() || voice.ref_text, label: `voice ${voice.id}` };
    }
    if (voice && !reference) {
      const why = await this.unavailableReason(voice);
      if (why) throw invalid(`voice ${voice.id} is not available on this install: ${why}`);
    }

    const text = req.text?.trim() || (req.uploaded_file_id !== undefined ? await this.snippet(req.uploaded_file_id, language, caller) : null) || genericSentence(language);
    if (!text) throw invalid(`no generic preview sentence for language "${language}"; send "text"`);

    const fallback = voice || reference ? null : await this.defaultVoice(language);
    const engineKey = reference ? 'clone' : voice ? JSON.stringify(voice.backing) : `default:${JSON.stringify(fallback) ?? this.opts.defaultEngine ?? 'auto'}`;
    const refKey = reference ? `${createHash('sha256').update(reference.bytes).digest('hex')}:${reference.refText ?? ''}` : '';
    // The voice says the spoken form ("$3.50" → "3 dollars 50"), as in a job's narration; X-Preview-Text echoes the source.
    const said = spokenForms(text, language).text;
    const key = hash(['preview', said, engineKey, language.toLowerCase(), refKey]);
    const dir = path.join(this.opts.cacheDir, 'voice-previews');

    const cached = await findCached(dir, key);
    if (cached) return { ...cached, text };
    if (!reference) {
      const made = await this.once(key, path.join(dir, `${key}.wav`), 'audio/wav', 'preview.wav', () => this.synthLocal(voice, said, language, fallback));
      return { ...made, text };
    }
    const ref = reference;
    const made = await this.onceAny(key, async () => {
      const out = await this.synthCloned(said, language, ref);
      const ext = out.format;
      const file = path.join(dir, `${key}.${ext}`);
      await fs.promises.mkdir(dir, { recursive: true });
      await writeFileAtomic(file, out.audio);
      return { file, contentType: CONTENT_TYPES[ext] ?? out.contentType, filename: `preview.${ext}` };
    });
    return { ...made, text };
  }

  /** Text of a document upload → its representative snippet; null when it has no prose. */
  private async snippet(uploadId: string, language: string, caller: Caller): Promise<string | null> {
    const up = await this.upload(uploadId, caller);
    if (up.kind !== 'document') throw invalid(`uploaded_file_id ${up.id} is ${up.kind === 'audio' ? 'audio' : 'a video'}, not a document`);
    let doc: DocumentModel;
    try {
      doc = await this.withUpload(up, (file) => readDocument(file, up.content_type));
    } catch (e) {
      if (e instanceof DocumentError) throw invalid(`cannot read upload ${up.id} for a preview snippet: ${e.message}`);
      throw e;
    }
    return pickSnippet(documentProse(doc), doc.language ?? language);
  }

  private async withUpload<T>(up: UploadRecord, use: (file: string) => Promise<T>): Promise<T> {
    const local = await this.opts.openUpload(up.path);
    try {
      return await use(local.path);
    } finally {
      await local.release();
    }
  }

  private async upload(id: string, caller: Caller): Promise<UploadRecord> {
    const up = isId(id) ? await this.opts.jobs.getUpload(id, caller) : null;
    if (!up) throw notFound(`upload ${id} not found`);
    return up;
  }

  private async synthLocal(voice: VoiceEntry | null, text: string, language: string, fallback: LocalVoice | null = null): Promise<Buffer> {
    let engine: LocalEngine;
    let engineVoice: string | null = null;
    if (!voice) {
      // The language's default voice; where the engine has none, its own answer for the language (an error that says why).
      engine = fallback?.engine ?? ((this.opts.defaultEngine ?? 'auto') === 'piper' ? 'piper' : 'espeak');
      engineVoice = fallback?.voice ?? null;
    } else if (voice.backing.engine === 'espeak') {
      engine = 'espeak';
      engineVoice = await this.engines.espeakVoice(voice.backing.voice);
    } else if (voice.backing.engine === 'piper') {
      engine = 'piper';
      engineVoice = voice.backing.speaker !== undefined ? `${voice.backing.model}#${voice.backing.speaker}` : voice.backing.model;
    } else throw new Error('clone voices are synthesized through a GPU server');
    try {
      const backend = await this.engines.backend(engine);
      const [out] = await backend.synthesize([{ text, language, voice: engineVoice }]);
      if (!out || out.samples.length === 0) throw new Error(`${engine} returned no audio`);
      return encodeWav(out.samples, out.sampleRate);
    } catch (e) {
      // The voice was listed as available: a model missing now is this request's voice, not the install's state.
      if (e instanceof MissingModelError) throw invalid(e.message);
      throw e;
    }
  }

  /**
   * Per-request cloning on a GPU server. A missing ref_text is produced by /transcribe
   * here, and only here: this preview really uses the reference audio.
   */
  private async synthCloned(text: string, language: string, ref: { bytes: Buffer; refText: string | null; label: string }) {
    if (!this.gpu) {
      throw invalid('previewing with reference audio needs a voice-cloning backend on a GPU server: set LECTERN_GPU_SERVER_URL (no local engine here can clone: espeak, piper)');
    }
    try {
      let refText = ref.refText;
      if (!refText) {
        refText = (await this.gpu.transcribe(ref.bytes, language)).trim();
        this.opts.log.info({ reference: ref.label, chars: refText.length }, 'transcribed reference audio for a preview (no ref_text given)');
      }
      return await this.gpu.synthesize(text, { language, refAudio: ref.bytes, refText: refText || null });
    } catch (e) {
      // A GPU server's 4xx is about the clip or text this preview sent; any other failure stays UPSTREAM_FAILED (502).
      if (e instanceof GpuServerError && e.status < 500) throw invalid(`GPU server ${e.serverUrl} refused ${e.request}: ${e.detail}`);
      throw e;
    }
  }

  /** One synthesis per cache file even when many requests ask at once. */
  private once(key: string, file: string, contentType: string, filename: string, make: () => Promise<Buffer>): Promise<AudioFile> {
    return this.onceAny(key, async () => {
      if (!fs.existsSync(file)) {
        const audio = await make();
        await fs.promises.mkdir(path.dirname(file), { recursive: true });
        await writeFileAtomic(file, audio);
      }
      return { file, contentType, filename };
    });
  }

  private onceAny(key: string, make: () => Promise<AudioFile>): Promise<AudioFile> {
    let p = this.inFlight.get(key);
    if (!p) {
      p = make().finally(() => this.inFlight.delete(key));
      this.inFlight.set(key, p);
    }
    return p;
  }

  async close(): Promise<void> {
    await this.engines.close();
  }
}

/**
 * The document's blocks for the snippet picker: paragraphs and quotes as they are; every
 * other block (headings, list items, code, table cells) as an empty string, which ends a
 * run of prose so a snippet never reads across a heading.
 */
export function documentProse(doc: DocumentModel): string[] {
  return doc.pages.flatMap((p) => p.blocks.map((b) => ((b.kind === 'paragraph' || b.kind === 'quote') && !b.role ? spokenText(b) : '')));
}

function hash(parts: string[]): string {
  return createHash('sha256').update(JSON.stringify(parts)).digest('hex').slice(0, 40);
}

async function findCached(dir: string, key: string): Promise<AudioFile | null> {
  for (const ext of ['wav', 'mp3', 'opus', 'ogg', 'flac']) {
    const file = path.join(dir, `${key}.${ext}`);
    if (fs.existsSync(file)) return { file, contentType: CONTENT_TYPES[ext]!, filename: `preview.${ext}` };
  }
  return null;
}
