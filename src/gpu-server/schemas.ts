// Request schemas of the GPU server's routes, and how they are checked. JSON bodies and
// multipart forms (fields as strings, files as Buffers: @fastify/multipart's
// attachFieldsToBody 'keyValues') are validated by the same TypeBox schema with TypeBox's
// compiler: no type coercion (`"text": 42` is an error, not "42"), and errors name the field
// the way clients of this server have always read them (`missing field "text"`).
import { Kind, Type, TypeRegistry, type Static, type TSchema } from '@sinclair/typebox';
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler';
import { ValueErrorType, type ValueError } from '@sinclair/typebox/errors';
import type { FastifySchemaCompiler } from 'fastify';
import { invalid } from '../core/errors.ts';

TypeRegistry.Set('File', (_schema, value) => value instanceof Uint8Array);

/** A file part of a multipart form, read into memory. OpenAPI sees `string`/`binary`; the check wants bytes, so a text field of that name fails. */
export const File = (options: { description?: string } = {}) => Type.Unsafe<Buffer>({ [Kind]: 'File', type: 'string', format: 'binary', ...options });

/** An optional text field; JSON clients may send null for "absent". */
const OptionalText = (options: { description?: string } = {}) => Type.Optional(Type.Union([Type.String(options), Type.Null()]));

export const SynthesizeBody = Type.Object({
  text: Type.String({ description: 'One chunk of text, at most the backend\'s max_chunk_bytes UTF-8 bytes (see /health)' }),
  language: OptionalText({ description: 'BCP-47 code (default en-US); the backend must speak it' }),
  voice: OptionalText({ description: 'Engine voice (default: the backend\'s)' }),
  ref_text: OptionalText({ description: 'Transcript of ref_audio' }),
  ref_audio: Type.Optional(File({ description: 'Reference clip for voice cloning (multipart only; cloning backends only)' })),
});
export type SynthesizeBody = Static<typeof SynthesizeBody>;

export const AlignBody = Type.Object({
  audio: File({ description: 'Speech in any format ffmpeg decodes' }),
  text: Type.String({ description: 'The text spoken in the audio' }),
  language: OptionalText({ description: 'BCP-47 code (default en-US)' }),
  provider: OptionalText({ description: 'Aligner: auto, hmm, dtw or ctc (default: the server\'s --aligner). hmm on English audio of 16 kHz or more decodes it with both English acoustic models and averages their word edges where they agree (within 100 ms; past that, the 16 kHz model\'s edge)' }),
});
export type AlignBody = Static<typeof AlignBody>;

export const TranscribeBody = Type.Object({
  audio: File({ description: 'Speech in any format ffmpeg decodes' }),
  language: OptionalText({ description: 'BCP-47 code (default en-US)' }),
});
export type TranscribeBody = Static<typeof TranscribeBody>;

/** POST /lipsync's text fields; its two files are streamed to disk, not held in the body. */
export const LipsyncFields = Type.Object({
  provider: OptionalText({ description: 'Lip-sync provider (default: the server\'s)' }),
  lipsync_preset: OptionalText({ description: 'One of the provider\'s presets (default: its first)' }),
});
export type LipsyncFields = Static<typeof LipsyncFields>;

const isFile = (s: TSchema | undefined) => s?.[Kind] === 'File';
const acceptsString = (s: TSchema): boolean => s.type === 'string' || (Array.isArray(s.anyOf) && s.anyOf.some((x: TSchema) => x.type === 'string'));

/** One line naming the field and what is wrong with it. */
export function describeFieldError(e: ValueError): string {
  const name = e.path.replace(/^\//, '').replace(/\//g, '.');
  if (!name) return 'expected a JSON object or multipart/form-data fields';
  if (e.type === ValueErrorType.ObjectRequiredProperty) return isFile(e.schema) ? `missing file "${name}"` : `missing field "${name}"`;
  if (isFile(e.schema)) return `field "${name}" must be sent as a multipart file`;
  if (acceptsString(e.schema) && typeof e.value !== 'string') return `field "${name}" must be a string`;
  return `field "${name}": ${e.message}`;
}

const compiled = new WeakMap<TSchema, TypeCheck<TSchema>>();
const checker = (schema: TSchema) => {
  let c = compiled.get(schema);
  if (!c) compiled.set(schema, (c = TypeCompiler.Compile(schema)));
  return c;
};

/** Fastify validator compiler for these schemas (set per plugin with setValidatorCompiler). */
export const typeBoxValidator: FastifySchemaCompiler<TSchema> = ({ schema }) => {
  const check = checker(schema);
  return (value: unknown) => (check.Check(value) ? { value } : { error: [...check.Errors(value)].slice(0, 1) as never });
};

/** Fastify schema error formatter for typeBoxValidator's errors. */
export const fieldErrorFormatter = (errors: unknown[]): Error => new Error(describeFieldError(errors[0] as ValueError));

/** Checks form fields read by hand (the streamed lip-sync upload); 422 naming the field. */
export function checkFields<T extends TSchema>(schema: T, value: unknown): Static<T> {
  const check = checker(schema);
  if (check.Check(value)) return value as Static<T>;
  throw invalid(describeFieldError(check.Errors(value).First()!));
}
