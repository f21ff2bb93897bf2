// Request and response schemas: one TypeBox definition gives validation, types and OpenAPI.
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { JOB_STATUSES } from '../jobs/types.ts';

/** Said on every route that takes a job or upload id (and in the app's description). */
export const OWNERSHIP =
  'Each job and upload belongs to the token that made it. A token sees only its own: an id another token owns answers 404 exactly as an unknown id does (same body, same query). Tokens named in LECTERN_API_ADMINS see and act on everything; with authentication off (no tokens) everything belongs to everyone.';

export { ErrorBody } from '../http/server.ts';

const Id = Type.String({ description: 'UUID' });
const ProgressSchema = Type.Union([
  Type.Object({ phase: Type.String(), current: Type.Number(), total: Type.Number() }),
  Type.Null(),
]);

export const JobResponse = Type.Object(
  {
    id: Id,
    pipeline_type: Type.String(),
    status: Type.Union(JOB_STATUSES.map((s) => Type.Literal(s))),
    owner: Type.Union([Type.String(), Type.Null()], {
      description: 'The token name that created the job (config_json.created_by). null: made with authentication off, or before ownership existed; such jobs are visible to admins only while tokens are configured.',
    }),
    config_json: Type.Record(Type.String(), Type.Unknown(), {
      description:
        'The request as created, defaults made explicit (pipeline_type, uploaded_file_id, language, voice_id, ref_audio_file_id, ref_text, ref_video_file_id, title, options, document, created_by, request_id), then what the worker adds (result: {output, files, duration_seconds, …}; pages_done, pages_total; ref_text_source) and the EPUB export state (epub_export_status, epub_export_output, epub_export_error, …). The type is JobConfig in src/jobs/types.ts.',
    }),
    worker_task_id: Type.Union([Type.String(), Type.Null()]),
    progress: ProgressSchema,
    error: Type.Union([Type.String(), Type.Null()]),
    attempts: Type.Integer(),
    created_at: Type.String(),
    updated_at: Type.String(),
    started_at: Type.Union([Type.String(), Type.Null()]),
    finished_at: Type.Union([Type.String(), Type.Null()]),
    download_url: Type.Union([Type.String(), Type.Null()], { description: 'Set once the job has an output' }),
  },
  { $id: 'JobResponse' },
);

export const JobListResponse = Type.Object(
  {
    jobs: Type.Array(Type.Ref('JobResponse')),
    total: Type.Integer({ description: "Jobs matching the filter, over all pages: only the calling token's own jobs, unless it is an admin" }),
    limit: Type.Integer(),
    offset: Type.Integer(),
  },
  { $id: 'JobListResponse' },
);

export const JobListQuery = Type.Object(
  {
    status: Type.Optional(Type.Union(JOB_STATUSES.map((s) => Type.Literal(s)))),
    owner: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 64,
        description: "Only jobs this token name owns. For an admin, any owner's; for another token it narrows its own list (another name gives an empty list).",
      }),
    ),
    limit: Type.Integer({ minimum: 1, maximum: 100, default: 20 }),
    offset: Type.Integer({ minimum: 0, default: 0 }),
  },
  { additionalProperties: false },
);

export type JobListQuery = Static<typeof JobListQuery>;

/** GET /api/me: who the token is, and what the web app should offer it. */
export const MeResponse = Type.Object(
  {
    name: Type.Union([Type.String(), Type.Null()], { description: "The calling token's name; null with authentication off" }),
    admin: Type.Boolean({ description: 'Whether this token sees and acts on every job and upload (LECTERN_API_ADMINS)' }),
    authentication: Type.Boolean({ description: 'Whether the server has tokens configured; without, everything belongs to everyone' }),
    owners: Type.Union([Type.Array(Type.String()), Type.Null()], {
      description: "For an admin: every configured token name (what the job list's owner filter takes); null for other tokens",
    }),
  },
  { $id: 'Me' },
);

export const IdParams = Type.Object({ job_id: Type.String() });
export type IdParams = Static<typeof IdParams>;
export const UploadParams = Type.Object({ upload_id: Type.String() });
export type UploadParams = Static<typeof UploadParams>;

export const UploadResponse = Type.Object(
  {
    id: Id,
    original_name: Type.String(),
    size_bytes: Type.Integer(),
    content_type: Type.String({ description: 'Detected from the bytes' }),
    kind: Type.Union([Type.Literal('document'), Type.Literal('audio'), Type.Literal('video')]),
    owner: Type.Union([Type.String(), Type.Null()], {
      description: 'The token name that uploaded it; null with authentication off or from before ownership (then admins only). Jobs may use only their creator\'s uploads (an admin may use any).',
    }),
    language: Type.Union([Type.String(), Type.Null()], {
      description:
        'The language a document declares in its metadata (EPUB dc:language, PDF /Lang; a BCP 47 tag such as "fr-CA"), read at upload; null when it declares none, and for audio and video. A job on this document that names no language uses it (else en-US); the web app preselects it.',
    }),
    created_at: Type.String(),
  },
  { $id: 'UploadResponse' },
);

export const Detail = Type.Object({ detail: Type.String() });

/** Error responses for the OpenAPI document. */
export function errors(...codes: number[]): Record<number, TSchema> {
  return Object.fromEntries(codes.map((c) => [c, Type.Ref('Error')]));
}

export const ExportStateResponse = Type.Object(
  {
    export_status: Type.Union([Type.Literal('running'), Type.Literal('done'), Type.Literal('failed'), Type.Null()], {
      description: 'config_json.epub_export_status; null before any export was requested',
    }),
    export_output: Type.Union([Type.String(), Type.Null()], { description: 'The exported file in the job\'s output dir, once done' }),
    export_error: Type.Union([Type.String(), Type.Null()], { description: 'One line, when the export failed' }),
  },
  { $id: 'ExportState' },
);
