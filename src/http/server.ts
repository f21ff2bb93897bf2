// Fastify plumbing shared by the service API and the GPU server: the one error handler and
// OpenAPI generation. File responses (Range, conditional requests, store links) are in downloads.ts.
//
// Errors: routes and hooks throw LecternErrors (src/core/errors.ts) and never build error
// answers themselves. errorReply() turns anything thrown — a LecternError, Fastify's own
// errors (schema validation, body limits, content types), or a bug — into a status, a
// catalogue code and a one-line message; the body is `{detail}` unless a plugin formats its
// own: `app.setErrorHandler(errorHandler(myBody))` in its scope (Fastify keeps error handlers
// per plugin), plus `app.setSchemaErrorFormatter(...)` to word validation errors its way.
import Fastify, { type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest, type FastifySchemaValidationError } from 'fastify';
import swagger from '@fastify/swagger';
import { Type } from '@sinclair/typebox';
import { ERRORS, LecternError, notFound, tooLarge, type ErrorCode } from '../core/errors.ts';
import type { Logger } from '../log.ts';
import { requestIdFrom } from '../request-context.ts';

/** Every error's body, in both servers' OpenAPI documents. */
export const ErrorBody = Type.Object({ detail: Type.String() }, { $id: 'Error', description: 'Every error: one line, no stack trace.' });

export interface HttpAppOptions {
  log: Logger;
  title: string;
  description: string;
  bodyLimit?: number;
  /** Fastify's own line per request (default true); off where the app logs its own. */
  requestLogging?: boolean;
}

/** What a thrown error answers with, before it is put in a body. */
export interface ErrorReply {
  status: number;
  /** The catalogue code; INTERNAL for anything that is not a LecternError or a Fastify client error. */
  code: ErrorCode | 'INTERNAL';
  /** One line for the client; never a stack, never an internal error's own text. */
  message: string;
}

/** The body of an error answer. */
export type ErrorBodyFormat = (e: ErrorReply, req: FastifyRequest) => unknown;

/** `{"detail": "..."}`: every error of the job API and the GPU server. */
export const detailBody: ErrorBodyFormat = (e) => ({ detail: e.message });

const codeForStatus = (status: number): ErrorCode => (Object.keys(ERRORS) as ErrorCode[]).find((c) => ERRORS[c].status === status) ?? 'BAD_REQUEST';

export function errorReply(err: unknown, bodyLimit: number): ErrorReply {
  if (err instanceof LecternError) return { status: err.statusCode, code: err.code, message: err.message };
  const fe = err as Partial<FastifyError>;
  // The message is the schema error formatter's line (schemaErrorLine, or a plugin's own).
  if (fe.code === 'FST_ERR_VALIDATION') return { status: 422, code: 'INVALID', message: String(fe.message) };
  if (fe.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return { status: 413, code: 'TOO_LARGE', message: `request body is larger than the limit of ${bodyLimit} bytes` };
  // A full disk is the install's state, not a bug: say so (a 2 GiB upload can fill it).
  const errno = (err as NodeJS.ErrnoException).code;
  if (errno === 'ENOSPC' || errno === 'EDQUOT') {
    return { status: 507, code: 'STORAGE_FULL', message: 'no space left on the server\'s disk for this request; nothing of it was kept (the operator can free space or move LECTERN_DATA_DIR)' };
  }
  const status = fe.statusCode ?? 500;
  if (status >= 400 && status < 500) {
    const s = status === 406 ? 415 : status; // multipart's "not multipart" is a content type we do not take
    return { status: s, code: codeForStatus(s), message: String(fe.message).split('\n')[0]! };
  }
  return { status: status >= 500 && status < 600 ? status : 500, code: 'INTERNAL', message: 'internal error' };
}

/**
 * The error handler of both servers, with the body made by `format`; `statusFor` lets a
 * plugin that speaks another API answer that API's status for a code (OpenAI's 400 for 422).
 */
export function errorHandler(format: ErrorBodyFormat = detailBody, statusFor: (e: ErrorReply) => number = (e) => e.status) {
  return (err: Error, req: FastifyRequest, reply: FastifyReply) => {
    const e = errorReply(err, reply.server.initialConfig.bodyLimit ?? 0);
    if (!(err instanceof LecternError) && e.code === 'INTERNAL') req.log.error({ err }, 'request failed');
    else if (e.status >= 500 && e.status !== 503) req.log.warn({ err: e.message, code: e.code }, 'request failed');
    const status = statusFor(e);
    return reply.code(status).send(format({ ...e, status }, req));
  };
}

/** 413 for an upload over `limitBytes`; `fileTooLarge(limit)` rethrows @fastify/multipart's own as this. */
export const uploadTooLarge = (limitBytes: number) => tooLarge(`upload is larger than the limit of ${limitBytes} bytes`);
export const fileTooLarge = (limitBytes: number) => (e: unknown): never => {
  throw (e as { code?: string })?.code === 'FST_REQ_FILE_TOO_LARGE' ? uploadTooLarge(limitBytes) : e;
};

/** The first schema error as one line: where (body, querystring…) and what. Plugins may set their own formatter. */
function schemaErrorLine(errors: FastifySchemaValidationError[], dataVar: string): Error {
  const v = errors[0];
  const extra = v?.params && 'additionalProperty' in v.params ? ` "${String(v.params.additionalProperty)}"` : '';
  return new Error(`${dataVar}${v?.instancePath ?? ''} ${v?.message ?? 'is invalid'}${extra}`);
}

export async function createHttpApp(opts: HttpAppOptions): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: opts.log,
    disableRequestLogging: opts.requestLogging === false,
    bodyLimit: opts.bodyLimit ?? 1024 * 1024,
    // Unknown fields are an error (422), not silently dropped; query strings are coerced.
    ajv: { customOptions: { removeAdditional: false, coerceTypes: 'array', useDefaults: true, allErrors: false } },
    // x-request-id is taken only when it is a valid id (see request-context.ts), else made here.
    requestIdHeader: false,
    genReqId: (req) => requestIdFrom(req.headers),
    schemaErrorFormatter: schemaErrorLine,
  }) as unknown as FastifyInstance;

  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: { title: opts.title, description: opts.description, version: '0.1.0' },
    },
    // Shared schemas appear in components under their own names (Error, JobResponse…).
    refResolver: { buildLocalReference: (json, _base, _fragment, i) => String(json.$id ?? `def-${i}`) },
  });
  app.addSchema(ErrorBody);

  app.setErrorHandler(errorHandler());
  app.setNotFoundHandler(async (req) => {
    throw notFound(`no route for ${req.method} ${req.url.split('?')[0]}`);
  });

  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  return app;
}
