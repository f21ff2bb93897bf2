// OpenAI's error body on the /v1 routes: {"error": {"message", "type", "param", "code"}},
// with the statuses OpenAI uses (a bad field is 400, never 422), so the SDKs raise their
// typed errors (BadRequestError, AuthenticationError, …). The errors are the same
// LecternErrors every route throws; only their formatting is this plugin's own.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { errorHandler, type ErrorReply } from '../../http/server.ts';
import { LecternError, type ErrorCode } from '../../core/errors.ts';

/** A /v1 request error that names the field (`param`) and OpenAI's `code` beside the message. */
export class OpenAIRequestError extends LecternError {
  constructor(
    code: ErrorCode,
    message: string,
    readonly param: string | null = null,
    readonly openaiCode: string | null = null,
  ) {
    super(code, message);
  }
}

export const badParam = (param: string, message: string, openaiCode = 'invalid_value') => new OpenAIRequestError('INVALID', message, param, openaiCode);

/** Statuses OpenAI spells otherwise: an invalid field or file type is 400 there. */
const openaiStatus = (e: ErrorReply) => (e.status === 422 || e.status === 415 ? 400 : e.status);

function errorType(status: number): string {
  if (status === 403) return 'permission_error';
  if (status === 429) return 'rate_limit_error';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error'; // 401 included: OpenAI's own wrong-key answer says so, with code invalid_api_key
}

const DEFAULT_CODES: Record<number, string> = { 401: 'invalid_api_key', 404: 'not_found', 413: 'request_too_large', 429: 'rate_limit_exceeded', 503: 'server_overloaded' };

export function openaiErrorBody(status: number, message: string, param: string | null = null, code: string | null = null) {
  return { error: { message, type: errorType(status), param, code: code ?? DEFAULT_CODES[status] ?? null } };
}

/** The field a schema error points at (TypeBox's path "/voice"). */
function validationParam(err: unknown): string | null {
  const v = (err as { validation?: Array<{ path?: string; instancePath?: string }> }).validation?.[0];
  return (v?.path ?? v?.instancePath ?? '').replace(/^\//, '').split('/')[0] || null;
}

/** This plugin's error handler: the shared one, with OpenAI's status and body. */
export function openaiErrors(app: FastifyInstance): void {
  const thrown = new WeakMap<FastifyRequest, unknown>();
  const handle = errorHandler((e, req) => {
    const err = thrown.get(req);
    if (err instanceof OpenAIRequestError) return openaiErrorBody(e.status, e.message, err.param, err.openaiCode);
    if ((err as FastifyError)?.code === 'FST_ERR_VALIDATION') return openaiErrorBody(e.status, e.message, validationParam(err), 'invalid_value');
    return openaiErrorBody(e.status, e.message);
  }, openaiStatus);
  app.setErrorHandler((err: Error, req: FastifyRequest, reply: FastifyReply) => {
    thrown.set(req, err);
    return handle(err, req, reply);
  });
}
