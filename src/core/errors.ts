// Every error Lectern raises on purpose is a LecternError: a stable `code` from the catalogue
// below, the HTTP status that code answers with, and a one-line message a client may read.
// Domain code throws these and never builds HTTP answers; the one error handler both servers
// share (src/http/server.ts) turns them into `{detail}`. Errors cross thread boundaries as
// {code, message} (toWire / fromWire), never by matching message text. Anything that is not
// a LecternError is a bug: logged, and answered as a bare 500.

/** The catalogue: code → HTTP status, and when it is raised. Add a code here before throwing it. */
export const ERRORS = {
  // The request is wrong
  BAD_REQUEST: { status: 400, when: 'malformed request (not multipart, no file, bad JSON)' },
  UNAUTHORIZED: { status: 401, when: 'missing or wrong bearer token' },
  NOT_FOUND: { status: 404, when: 'unknown id or route' },
  CONFLICT: { status: 409, when: 'the thing is in the wrong state for this (no output yet, job still running)' },
  TOO_LARGE: { status: 413, when: 'body, upload or text over its limit' },
  RANGE_NOT_SATISFIABLE: { status: 416, when: 'a Range header outside the file' },
  UNSUPPORTED_TYPE: { status: 415, when: 'content type or file type not accepted' },
  INVALID: { status: 422, when: 'a field is invalid' },
  SPEECH_INPUT: { status: 422, when: 'a speech engine cannot take this input (language, voice, unknown engine)' },
  DOCUMENT_UNREADABLE: { status: 422, when: 'a document cannot be read (broken PDF, no text layer)' },
  VOICE_UNAVAILABLE: { status: 422, when: 'a bundled voice cannot be spoken by this engine or install' },
  RATE_LIMITED: { status: 429, when: 'more requests per minute than the token may send' },
  ACTIVE_JOB_LIMIT: { status: 429, when: 'the token already has its limit of pending + running jobs' },
  CANCELLED: { status: 409, when: 'the work was cancelled or stopped before it finished' },
  // The install or a server is not ready
  NOT_READY: { status: 503, when: 'still loading, nothing installed for this, or shutting down' },
  OVERLOADED: { status: 503, when: 'too many requests waiting; retry shortly' },
  MISSING_MODEL: { status: 503, when: 'a model file the request needs is not installed' },
  TOOL_MISSING: { status: 503, when: 'an external program (ffmpeg, espeak-ng…) is not installed' },
  LIPSYNC_UNAVAILABLE: { status: 503, when: 'the named lip-sync provider is not installed' },
  NATIVE_ADDON: { status: 503, when: 'the native addon is not built or does not load' },
  VOICE_MANIFEST: { status: 503, when: 'the voice library manifest is missing or broken' },
  STORAGE_UNAVAILABLE: { status: 503, when: 'the object store cannot be reached, its bucket is missing or its credentials are refused' },
  STORAGE_FULL: { status: 507, when: 'the disk (data dir, scratch folder) has no space or quota left for what the request writes' },
  MODEL_PROCESS_DOWN: { status: 503, when: 'an operator model process (--backend process) crashed and is restarting, or none is running' },
  // Another server failed us
  UPSTREAM_FAILED: { status: 502, when: 'a GPU server answered with an error, timed out, or could not be reached' },
  MODEL_FAILED: { status: 502, when: 'an operator model process (--backend process) reported an error for this request' },
  MODEL_TIMEOUT: { status: 504, when: 'no model process was free in time, or one did not answer a batch in time (it is killed and restarted)' },
  // The client is gone
  CLIENT_GONE: { status: 499, when: 'the client closed the connection before the answer (nobody reads it; the log line says so)' },
  // Not about a request
  CONFIG: { status: 500, when: 'invalid configuration at start-up' },
} as const satisfies Record<string, { status: number; when: string }>;

export type ErrorCode = keyof typeof ERRORS;

export class LecternError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = 'LecternError';
  }

  /** The HTTP status this error answers with. */
  get statusCode(): number {
    return ERRORS[this.code].status;
  }
}

export const isLecternError = (e: unknown): e is LecternError => e instanceof LecternError;

export const badRequest = (message: string) => new LecternError('BAD_REQUEST', message);
export const unauthorized = (message: string) => new LecternError('UNAUTHORIZED', message);
export const notFound = (message: string) => new LecternError('NOT_FOUND', message);
export const conflict = (message: string) => new LecternError('CONFLICT', message);
export const tooLarge = (message: string) => new LecternError('TOO_LARGE', message);
export const unsupportedType = (message: string) => new LecternError('UNSUPPORTED_TYPE', message);
export const invalid = (message: string) => new LecternError('INVALID', message);
export const rateLimited = (message: string) => new LecternError('RATE_LIMITED', message);
export const badGateway = (message: string) => new LecternError('UPSTREAM_FAILED', message);
export const notReady = (message: string) => new LecternError('NOT_READY', message);
export const overloaded = (message: string) => new LecternError('OVERLOADED', message);

/** An error as it crosses a thread or process boundary: its code (null: not a LecternError) and message. */
export interface WireError {
  code: ErrorCode | null;
  message: string;
}

export function toWire(e: unknown): WireError {
  if (e instanceof LecternError) return { code: e.code, message: e.message };
  return { code: null, message: e instanceof Error ? e.message : String(e) };
}

/** The error again on this side: a LecternError with its code, or a plain Error for one that had none. */
export function fromWire(w: WireError): Error {
  return w.code && w.code in ERRORS ? new LecternError(w.code, w.message) : new Error(w.message);
}

/** One line, no stack: what a job's `error` field and a client's `detail` may show. */
export function oneLine(err: unknown): string {
  const msg = err instanceof Error ? err.message : String(err);
  const line = msg.split('\n').map((s) => s.trim()).find((s) => s.length > 0) ?? 'unknown error';
  return line.length > 500 ? `${line.slice(0, 497)}...` : line;
}
