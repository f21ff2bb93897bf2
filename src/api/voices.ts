// Voice library routes (spec §B): GET /api/voices, GET /api/voices/{id}/audio,
// GET /api/languages, POST /api/voices/preview. The work is in src/voices/library.ts.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { GpuClient } from '../gpu-client/index.ts';
import type { JobStore } from '../jobs/types.ts';
import type { Logger } from '../log.ts';
import { scratchName, VOICE_SAMPLES_PREFIX, type DownloadMeta, type Storage } from '../storage.ts';
import { withRequestId } from '../request-context.ts';
import { callerOf } from '../security/http.ts';
import { VoiceLibrary, type AudioFile, type PreviewRequest } from '../voices/library.ts';
import { addDownloadSchemas, DOWNLOAD_KINDS, downloadResponses, sendFile, sendStored } from './downloads.ts';
import { errors } from './schemas.ts';

const Id = Type.String({ maxLength: 128 });
const LanguageCode = Type.String({ pattern: '^[A-Za-z]{2,3}(-[A-Za-z0-9]{1,8})*$', maxLength: 35, description: 'BCP-47 language code, e.g. en-US' });

export const BundledVoice = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    language: Type.String({ description: 'BCP-47' }),
    description: Type.String(),
    ref_text: Type.String({ description: 'Exact transcript of the reference clip (empty for engine voices)' }),
    available: Type.Boolean({
      description:
        'Computed per request: an eSpeak NG voice the installed engine lists; a Piper model whose .onnx and .onnx.json are in models/voices/piper; a clone voice whose clip is present and some configured GPU server is healthy and reports voice_cloning in /health.',
    }),
    default: Type.Boolean({
      description:
        "Lectern extension to the spec's BundledVoice (additive): true on at most one voice per language, the one a job in that language narrates with when it names no voice_id. With local speech in `auto` (the default) that is the Piper voice installed for the language (same language, exact region first), else the eSpeak NG voice. With GPU servers configured, no voice is marked (the servers' backend decides).",
    }),
  },
  { $id: 'BundledVoice' },
);

export const LanguageSchema = Type.Object({ code: Type.String({ description: 'BCP-47' }), name: Type.String() }, { $id: 'Language' });

export const CloningStatus = Type.Object(
  {
    available: Type.Boolean({ description: 'True exactly when some configured GPU server is healthy and declares voice_cloning in /health (checked at most every 10 s)' }),
    detail: Type.Union([Type.String(), Type.Null()], { description: 'Why cloning is not available (null when it is)' }),
  },
  { $id: 'CloningStatus' },
);

export const PreviewBody = Type.Object(
  {
    text: Type.Optional(Type.String({ maxLength: 1000, description: 'Preview text; default: a 200–400 character snippet of uploaded_file_id, else a generic sentence in the language' })),
    language: Type.Optional(LanguageCode),
    voice_id: Type.Optional(Id),
    ref_audio_file_id: Type.Optional(Type.String({ description: 'Upload id of a reference clip for per-request voice cloning (GPU server)' })),
    ref_text: Type.Optional(Type.String({ maxLength: 4000, description: 'Transcript of the reference clip; when missing it is transcribed by the GPU server, only because this preview uses the clip' })),
    uploaded_file_id: Type.Optional(Type.String({ description: 'Document upload whose snippet is read when text is absent (plain text or Markdown)' })),
  },
  { additionalProperties: false },
);

const AUDIO_DOC =
  'Audio bytes. Locally synthesized samples and previews are WAV (audio/wav, 16-bit PCM mono); previews cloned on a GPU server are in the server\'s output_format (WAV by default) with its content type. HTTP Range is supported.';

/** What the voice routes need from the service (ServiceConfig fields and the stores). */
export interface VoiceRoutesOptions {
  jobs: Pick<JobStore, 'getUpload'>;
  storage: Storage;
  log: Logger;
  modelsDir: string;
  /** The process's GPU client when GPU servers are configured, else null (see VoiceLibraryOptions.gpu). */
  gpu: GpuClient | null;
  /** Local speech engine (ServiceConfig.tts.backend): decides each language's default voice. */
  ttsBackend?: string;
  voicesDir?: string;
}

export async function voiceRoutes(app: FastifyInstance, opts: VoiceRoutesOptions): Promise<VoiceLibrary> {
  const library = voiceLibrary(opts);
  app.addSchema(BundledVoice);
  addDownloadSchemas(app);
  app.addSchema(LanguageSchema);
  app.addSchema(CloningStatus);
  app.addHook('onClose', async () => library.close());
  listVoicesRoute(app, library);
  voiceSampleRoute(app, library, opts.storage);
  cloningStatusRoute(app, library);
  languagesRoute(app, library);
  previewRoute(app, library);
  return library;
}

/** The library the routes serve, reading uploads through a scratch copy it removes when done. */
function voiceLibrary(opts: VoiceRoutesOptions): VoiceLibrary {
  return new VoiceLibrary({
    modelsDir: opts.modelsDir,
    gpu: opts.gpu,
    defaultEngine: opts.ttsBackend,
    voicesDir: opts.voicesDir,
    jobs: opts.jobs,
    openUpload: async (key) => {
      const dir = path.join(opts.storage.tmpDir, scratchName('voice'));
      await fs.promises.mkdir(dir, { recursive: true });
      const release = () => fs.promises.rm(dir, { recursive: true, force: true });
      try {
        return { path: await opts.storage.localCopy(key, dir), release };
      } catch (e) {
        await release();
        throw e;
      }
    },
    cacheDir: opts.storage.cacheDir,
    log: opts.log,
  });
}

function listVoicesRoute(app: FastifyInstance, library: VoiceLibrary): void {
  app.get(
    '/api/voices',
    { schema: { summary: 'Bundled voices, with whether each is available on this install', response: { 200: Type.Array(Type.Ref('BundledVoice')), ...errors(503) } } },
    async () => library.list(),
  );
}

function voiceSampleRoute(app: FastifyInstance, library: VoiceLibrary, storage: Storage): void {
  const samples = samplePublisher(storage);
  app.get(
    '/api/voices/:voice_id/audio',
    {
      schema: {
        summary: "A voice's sample: its reference clip, or a sentence in its language synthesized once and cached",
        description: `${AUDIO_DOC} With an S3 store in redirect mode the sample is put in the bucket (voice-samples/, named by its content) and sent like every download. ${DOWNLOAD_KINDS}`,
        params: Type.Object({ voice_id: Type.String() }),
        response: { ...downloadResponses('The sample'), ...errors(404, 416, 503) },
      },
    },
    async (req, reply) => {
      const a = await library.sample((req.params as { voice_id: string }).voice_id);
      const meta: DownloadMeta = { filename: a.filename, contentType: a.contentType, inline: true };
      const key = await samples.published(a, meta);
      return key ? sendStored(req, reply, storage, key, meta) : sendFile(req, reply, a.file, meta);
    },
  );
}

function cloningStatusRoute(app: FastifyInstance, library: VoiceLibrary): void {
  app.get(
    '/api/voices/cloning',
    {
      schema: {
        summary: 'Whether a reference clip can be cloned now (ref_audio_file_id in previews and jobs, clone voices)',
        description: 'The web app offers cloning only when `available` is true.',
        response: { 200: Type.Ref('CloningStatus') },
      },
    },
    async () => {
      const why = await library.cloningUnavailableReason();
      return { available: why === null, detail: why };
    },
  );
}

function languagesRoute(app: FastifyInstance, library: VoiceLibrary): void {
  app.get(
    '/api/languages',
    { schema: { summary: 'Languages the installed speech engines speak (eSpeak NG and installed Piper voices)', response: { 200: Type.Array(Type.Ref('Language')) } } },
    async () => library.languages(),
  );
}

function previewRoute(app: FastifyInstance, library: VoiceLibrary): void {
  app.post(
    '/api/voices/preview',
    {
      schema: {
        summary: 'A short speech preview',
        description: `${AUDIO_DOC} Cached on disk by (text, voice, language, reference hash): a repeated preview answers from the cache. The spoken text is in the X-Preview-Text header (URI-encoded). An uploaded_file_id or ref_audio_file_id must be the calling token's own upload (an admin may use any): another token's answers 404 exactly as an unknown one. Errors: 404 unknown voice or upload; 422 a reference clip with an engine voice that cannot clone, reference audio with no GPU server configured, or a document type the snippet picker cannot read; 502 the GPU server could not be reached (named).`,
        body: PreviewBody,
        response: { ...errors(404, 422, 502) },
      },
    },
    async (req, reply) => {
      const caller = callerOf(req);
      const a = await withRequestId(req.id, () => library.preview(req.body as PreviewRequest, caller));
      if (a.text) reply.header('x-preview-text', encodeURIComponent(a.text));
      return sendFile(req, reply, a.file, { filename: a.filename, contentType: a.contentType, inline: true });
    },
  );
}

/**
 * Voice samples in a store that hands out direct links (S3 redirect mode): each sample file is
 * put once under `voice-samples/`, named by its content, and clients fetch it from the store
 * like any other download. Elsewhere the API sends the file it has.
 */
function samplePublisher(storage: Storage) {
  const keys = new Map<string, Promise<string>>();
  return {
    async published(a: AudioFile, meta: DownloadMeta): Promise<string | null> {
      if (!storage.directLinks) return null;
      const st = await fs.promises.stat(a.file);
      const id = `${a.file}:${st.size}:${st.mtimeMs}`;
      let key = keys.get(id);
      if (!key) {
        key = (async () => {
          const digest = createHash('sha256').update(await fs.promises.readFile(a.file)).digest('hex').slice(0, 40);
          const k = `${VOICE_SAMPLES_PREFIX}${digest}${path.extname(a.file)}`;
          if (!(await storage.stat(k))) await storage.putFile(k, a.file, { contentType: meta.contentType });
          return k;
        })();
        keys.set(id, key);
        key.catch(() => keys.delete(id));
      }
      return key;
    },
  };
}
