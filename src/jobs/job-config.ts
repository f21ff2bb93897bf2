// The job as a client asks for it (POST /api/jobs: one TypeBox schema for validation, types
// and OpenAPI) and config_json as the domain reads it back from a row. No runtime imports
// beyond TypeBox: the web app type-checks against this file.
import { Type, type Static } from '@sinclair/typebox';
import { JobOptions } from '../pipelines/options.ts';
import { EXPORT_STATUSES, PIPELINE_TYPES, type JobConfig } from './types.ts';

const Id = Type.String({ description: 'UUID' });
/** Most audio files one read-along job may name (an audiobook's chapters). */
export const MAX_RECORDING_FILES = 200;
const LanguageCode = Type.String({ pattern: '^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$', maxLength: 35, description: 'BCP-47 language code, e.g. en-US' });

export const JobCreateRequest = Type.Object(
  {
    pipeline_type: Type.Union(PIPELINE_TYPES.map((p) => Type.Literal(p)), {
      description:
        'audio: narration; highlight: word-highlight video/reader/EPUB; lipsync: presenter reader; readalong (a Lectern extension of the spec): the same outputs as highlight, narrated by your own recording (audio_file_ids) aligned to the document',
    }),
    uploaded_file_id: Id,
    language: Type.Optional({ ...LanguageCode, description: "BCP-47 language code, e.g. en-US. Omitted: the language the document declares (an EPUB's dc:language, a PDF's /Lang; `fr_CA` read as fr-CA), else en-US. The job's config_json shows the one used" }),
    voice_id: Type.Optional(Type.String({ maxLength: 128, description: 'Bundled voice or engine voice id' })),
    ref_audio_file_id: Type.Optional(Id),
    ref_text: Type.Optional(Type.String({ maxLength: 4000, description: 'Transcript of the reference clip' })),
    ref_video_file_id: Type.Optional(Id),
    audio_file_ids: Type.Optional(
      Type.Array(Id, {
        minItems: 1,
        maxItems: MAX_RECORDING_FILES,
        uniqueItems: true,
        description:
          'readalong only (required there): uploads of the recording read from the document (MP3, M4A/M4B, WAV, FLAC, OGG; one file or an audiobook of many, in any order). Each must be audio the decoder reads (422 otherwise)',
      }),
    ),
    title: Type.Optional(Type.String({ maxLength: 300 })),
    options: Type.Optional(JobOptions),
  },
  { additionalProperties: false, $id: 'JobCreateRequest' },
);
export type JobCreateRequest = Static<typeof JobCreateRequest>;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const nullableString = (v: unknown) => v === null || typeof v === 'string';

/** Keys the worker and the export add later, and the two creation keys older rows lack: what each must hold to be read. */
const LATER_KEYS: Partial<Record<keyof JobConfig, (v: unknown) => boolean>> = {
  created_by: nullableString,
  request_id: nullableString,
  ref_text_source: (v) => v === 'transcribed',
  result: (v) => isObject(v) && typeof v.output === 'string' && Array.isArray(v.files) && v.files.every((f) => typeof f === 'string'),
  pages_done: (v) => typeof v === 'number',
  pages_total: (v) => typeof v === 'number',
  epub_export_status: (v) => v === null || (EXPORT_STATUSES as readonly unknown[]).includes(v),
  epub_export_output: nullableString,
  epub_export_error: nullableString,
  epub_export_started_at: nullableString,
  epub_export_finished_at: nullableString,
  epub_export_task_id: (v) => typeof v === 'string',
};

/**
 * A row's config_json (text on SQLite, jsonb on PostgreSQL) as a JobConfig: the one place it
 * is read. The creation keys are JobService's own writing and are taken as they are; a later
 * key holding something else (an older or hand-edited row) is left out rather than trusted.
 * Nothing is added, so the API shows config_json as stored.
 */
export function parseJobConfig(raw: unknown): JobConfig {
  const c: Record<string, unknown> = isObject(raw) ? { ...raw } : {};
  for (const [key, valid] of Object.entries(LATER_KEYS)) if (key in c && !valid(c[key])) delete c[key];
  return c as JobConfig;
}

/** Request fields that name an upload. A new one (a pipeline's audio uploads…) is added here and nowhere else. */
export const UPLOAD_FIELDS = ['uploaded_file_id', 'ref_audio_file_id', 'ref_video_file_id', 'audio_file_ids'] as const;
export type UploadField = (typeof UPLOAD_FIELDS)[number];

/**
 * Every upload a job request refers to, with the field that names it: the one list that
 * creation checks (each must exist and be the caller's to use, 404 otherwise), that the job
 * records as upload_ids, and that keeps an upload from being deleted while the job exists.
 */
export function jobUploadRefs(req: JobCreateRequest): Array<{ field: UploadField; id: string }> {
  return UPLOAD_FIELDS.flatMap((field) => {
    const value: unknown = req[field];
    const ids = Array.isArray(value) ? value : [value];
    return ids.filter((id): id is string => typeof id === 'string').map((id) => ({ field, id }));
  });
}
