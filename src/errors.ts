// Errors that carry an HTTP status and a one-line `detail` for clients.
// Anything else that reaches a route handler is logged and answered as a bare 500.

export class HttpError extends Error {
  constructor(
    readonly statusCode: number,
    readonly detail: string,
  ) {
    super(detail);
    this.name = 'HttpError';
  }
}

export const badRequest = (detail: string) => new HttpError(400, detail);
export const notFound = (detail: string) => new HttpError(404, detail);
export const conflict = (detail: string) => new HttpError(409, detail);
export const tooLarge = (detail: string) => new HttpError(413, detail);
export const unsupportedType = (detail: string) => new HttpError(415, detail);
export const invalid = (detail: string) => new HttpError(422, detail);
export const badGateway = (detail: string) => new HttpError(502, detail);
export const notReady = (detail: string) => new HttpError(503, detail);

/** One line, no stack: what a job's `error` field and a client's `detail` may show. */
export function oneLine(err: unknown): string {
  const msg = err instanceof Error ? err.message : String(err);
  const line = msg.split('\n').map((s) => s.trim()).find((s) => s.length > 0) ?? 'unknown error';
  return line.length > 500 ? `${line.slice(0, 497)}...` : line;
}
