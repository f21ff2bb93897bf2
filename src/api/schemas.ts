// Request and response schemas: one TypeBox definition gives validation, types and OpenAPI.
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { JOB_STATUSES, PIPELINE_TYPES } from '../jobs/types.ts';

export const ErrorBody = Type.Object({ detail: Type.String() }, { $id: 'Error', description: 'Every error: one line, no stack trace.' });

const Id = Type.String({ description: 'UUID' });
const LanguageCode = Type.String({ pattern: '^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$', maxLength: 35, description: 'BCP-47 language code, e.g. en-US' });

export const JobOptions = Type.Object(
  {
    format: Type.Optional(Type.Union([Type.Literal('mp3'), Type.Literal('m4b'), Type.Literal('mp4'), Type.Literal('reader'), Type.Literal('epub')], { description: 'Output format; which ones a pipeline accepts is listed in the README. audio: mp3 (default)' })),
    speed: Type.Optional(Type.Number({ minimum: 0.5, maximum: 2, description: 'Speaking rate multiplier (default 1)' })),
    width: Type.Optional(Type.Integer({ minimum: 320, maximum: 3840 })),
    height: Type.Optional(Type.Integer({ minimum: 240, maximum: 2160 })),
    fps: Type.Optional(Type.Integer({ minimum: 1, maximum: 60 })),
    lipsync_preset: Type.Optional(Type.String({ maxLength: 64, description: 'lipsync: the lip-sync provider\'s preset (viseme: fast, quality); the provider\'s first when absent' })),
    presenter_position: Type.Optional(
      Type.Union([Type.Literal('bottom-right'), Type.Literal('bottom-left'), Type.Literal('top-right'), Type.Literal('top-left')], { description: 'lipsync mp4: corner of the presenter over the highlight video (default bottom-right)' }),
    ),
    presenter_scale: Type.Optional(Type.Number({ minimum: 0.1, maximum: 0.5, description: 'lipsync mp4: presenter width as a fraction of the video width (default 0.3)' })),
  },
  { additionalProperties: false },
);

export const JobCreateRequest = Type.Object(
  {
    pipeline_type: Type.Union(PIPELINE_TYPES.map((p) => Type.Literal(p)), { description: 'audio: narration; highlight: word-highlight video/reader/EPUB; lipsync: presenter reader' }),
    uploaded_file_id: Id,
    language: Type.Optional({ ...LanguageCode, default: 'en-US' }),
    voice_id: Type.Optional(Type.String({ maxLength: 128, description: 'Bundled voice or engine voice id' })),
    ref_audio_file_id: Type.Optional(Id),
    ref_text: Type.Optional(Type.String({ maxLength: 4000, description: 'Transcript of the reference clip' })),
    ref_video_file_id: Type.Optional(Id),
    title: Type.Optional(Type.String({ maxLength: 300 })),
    options: Type.Optional(JobOptions),
  },
  { additionalProperties: false, $id: 'JobCreateRequest' },
);
export type JobCreateRequest = Static<typeof JobCreateRequest>;

const ProgressSchema = Type.Union([
  Type.Object({ phase: Type.String(), current: Type.Number(), total: Type.Number() }),
  Type.Null(),
]);

export const JobResponse = Type.Object(
  {
    id: Id,
    pipeline_type: Type.String(),
    status: Type.Union(JOB_STATUSES.map((s) => Type.Literal(s))),
    config_json: Type.Record(Type.String(), Type.Unknown()),
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
    total: Type.Integer({ description: 'Jobs matching the filter, over all pages' }),
    limit: Type.Integer(),
    offset: Type.Integer(),
  },
  { $id: 'JobListResponse' },
);

export const JobListQuery = Type.Object(
  {
    status: Type.Optional(Type.Union(JOB_STATUSES.map((s) => Type.Literal(s)))),
    limit: Type.Integer({ minimum: 1, maximum: 100, default: 20 }),
    offset: Type.Integer({ minimum: 0, default: 0 }),
  },
  { additionalProperties: false },
);

export const IdParams = Type.Object({ job_id: Type.String() });
export const UploadParams = Type.Object({ upload_id: Type.String() });

export const UploadResponse = Type.Object(
  {
    id: Id,
    original_name: Type.String(),
    size_bytes: Type.Integer(),
    content_type: Type.String({ description: 'Detected from the bytes' }),
    kind: Type.Union([Type.Literal('document'), Type.Literal('audio'), Type.Literal('video')]),
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
