// Voice library routes (spec §B): GET /api/voices, GET /api/voices/{id}/audio,
// GET /api/languages, POST /api/voices/preview. The work is in src/voices/library.ts.
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { JobStore } from '../jobs/types.ts';
import type { Logger } from '../log.ts';
import type { Storage } from '../storage.ts';
import { withRequestId } from '../request-context.ts';
import { VoiceLibrary, type PreviewRequest } from '../voices/library.ts';
import { sendFile } from './http.ts';
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
  },
  { $id: 'BundledVoice' },
);

export const LanguageSchema = Type.Object({ code: Type.String({ description: 'BCP-47' }), name: Type.String() }, { $id: 'Language' });

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
  gpuServerUrls: string[];
  /** Bearer token for the GPU servers (ServiceConfig.gpuServerToken). */
  gpuServerToken?: string | null;
  /** Engine for previews with neither a voice nor a reference clip (ServiceConfig.tts.backend). */
  ttsBackend?: string;
  voicesDir?: string;
}

export async function voiceRoutes(app: FastifyInstance, opts: VoiceRoutesOptions): Promise<VoiceLibrary> {
  const library = new VoiceLibrary({
    modelsDir: opts.modelsDir,
    gpuServerUrls: opts.gpuServerUrls,
    gpuServerToken: opts.gpuServerToken,
    defaultEngine: opts.ttsBackend,
    voicesDir: opts.voicesDir,
    jobs: opts.jobs,
    resolveUploadPath: (p) => opts.storage.resolve(p),
    cacheDir: opts.storage.cacheDir,
    log: opts.log,
  });
  app.addSchema(BundledVoice);
  app.addSchema(LanguageSchema);
  app.addHook('onClose', async () => library.close());

  app.get(
    '/api/voices',
    { schema: { summary: 'Bundled voices, with whether each is available on this install', response: { 200: Type.Array(Type.Ref('BundledVoice')), ...errors(503) } } },
    async () => library.list(),
  );

  app.get(
    '/api/voices/:voice_id/audio',
    {
      schema: {
        summary: "A voice's sample: its reference clip, or a sentence in its language synthesized once and cached",
        description: AUDIO_DOC,
        params: Type.Object({ voice_id: Type.String() }),
        response: { ...errors(404, 416) },
      },
    },
    async (req, reply) => {
      const a = await library.sample((req.params as { voice_id: string }).voice_id);
      return sendFile(req, reply, a.file, a.contentType, a.filename, true);
    },
  );

  app.get(
    '/api/languages',
    { schema: { summary: 'Languages the installed speech engines speak (eSpeak NG and installed Piper voices)', response: { 200: Type.Array(Type.Ref('Language')) } } },
    async () => library.languages(),
  );

  app.post(
    '/api/voices/preview',
    {
      schema: {
        summary: 'A short speech preview',
        description: `${AUDIO_DOC} Cached on disk by (text, voice, language, reference hash): a repeated preview answers from the cache. The spoken text is in the X-Preview-Text header (URI-encoded). Errors: 404 unknown voice or upload; 422 a reference clip with an engine voice that cannot clone, reference audio with no GPU server configured, or a document type the snippet picker cannot read; 502 the GPU server could not be reached (named).`,
        body: PreviewBody,
        response: { ...errors(404, 422, 502) },
      },
    },
    async (req, reply) => {
      const a = await withRequestId(req.id, () => library.preview(req.body as PreviewRequest));
      if (a.text) reply.header('x-preview-text', encodeURIComponent(a.text));
      return sendFile(req, reply, a.file, a.contentType, a.filename, true);
    },
  );
  return library;
}
