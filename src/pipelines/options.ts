// What a job may ask of a pipeline (the `options` of POST /api/jobs, one TypeBox schema for
// validation, types and OpenAPI) and what a pipeline receives: the same options with every
// default filled in once, here (piscina's Options → FilledOptions), so no pipeline re-parses them.
// No runtime imports beyond TypeBox: the web app type-checks against this file.
import { Type, type Static } from '@sinclair/typebox';

export const PIPELINE_TYPES = ['audio', 'highlight', 'lipsync', 'readalong'] as const;
export type PipelineType = (typeof PIPELINE_TYPES)[number];

export const OUTPUT_FORMATS = ['mp3', 'm4b', 'mp4', 'reader', 'epub'] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

export const PRESENTER_POSITIONS = ['bottom-right', 'bottom-left', 'top-right', 'top-left'] as const;
export type PresenterPosition = (typeof PRESENTER_POSITIONS)[number];

export const JobOptions = Type.Object(
  {
    format: Type.Optional(Type.Union(OUTPUT_FORMATS.map((f) => Type.Literal(f)), { description: 'Output format; which ones a pipeline accepts is listed in the README. audio: mp3 (default)' })),
    speed: Type.Optional(Type.Number({ minimum: 0.5, maximum: 2, description: 'Speaking rate multiplier (default 1)' })),
    width: Type.Optional(Type.Integer({ minimum: 320, maximum: 3840 })),
    height: Type.Optional(Type.Integer({ minimum: 240, maximum: 2160 })),
    fps: Type.Optional(Type.Integer({ minimum: 1, maximum: 60 })),
    lipsync_preset: Type.Optional(Type.String({ maxLength: 64, description: 'lipsync: the lip-sync provider\'s preset (viseme: fast, quality); the provider\'s first when absent' })),
    presenter_position: Type.Optional(
      Type.Union(PRESENTER_POSITIONS.map((p) => Type.Literal(p)), { description: 'lipsync mp4: corner of the presenter over the highlight video (default bottom-right)' }),
    ),
    presenter_scale: Type.Optional(Type.Number({ minimum: 0.1, maximum: 0.5, description: 'lipsync mp4: presenter width as a fraction of the video width (default 0.3)' })),
  },
  { additionalProperties: false },
);
export type JobOptions = Static<typeof JobOptions>;

/** The options as a job stores them: the request's, with format and speed made explicit at creation. */
export type StoredJobOptions = JobOptions & { format: OutputFormat; speed: number };

/** What a pipeline receives: every option, defaults filled. */
export interface FilledJobOptions {
  format: OutputFormat;
  speed: number;
  /** Video size in pixels, even (H.264 4:2:0), and frame rate: highlight and lip-sync mp4. */
  width: number;
  height: number;
  fps: number;
  /** The lip-sync provider's preset; null → the provider's first. */
  lipsync_preset: string | null;
  presenter_position: PresenterPosition;
  /** Presenter width as a fraction of the video width. */
  presenter_scale: number;
}

export const OPTION_DEFAULTS = { speed: 1, width: 1280, height: 720, fps: 24, presenter_position: 'bottom-right', presenter_scale: 0.3 } as const;

/** The one place option defaults are applied. The API bounds the values; odd video sizes are rounded down to even. */
export function fillOptions(o: JobOptions & { format: OutputFormat }): FilledJobOptions {
  const even = (v: number | undefined, fallback: number) => (v !== undefined && Number.isFinite(v) ? Math.floor(v / 2) * 2 : fallback);
  return {
    format: o.format,
    speed: o.speed ?? OPTION_DEFAULTS.speed,
    width: even(o.width, OPTION_DEFAULTS.width),
    height: even(o.height, OPTION_DEFAULTS.height),
    fps: o.fps !== undefined ? Math.round(o.fps) : OPTION_DEFAULTS.fps,
    lipsync_preset: o.lipsync_preset ?? null,
    presenter_position: o.presenter_position ?? OPTION_DEFAULTS.presenter_position,
    presenter_scale: o.presenter_scale ?? OPTION_DEFAULTS.presenter_scale,
  };
}
