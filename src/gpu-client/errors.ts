// Typed failures of calls to a GPU inference server. Every message names the server
// and the request (method + path), so a job's one-line error says where it went wrong.
// All are UPSTREAM_FAILED (502) to our own clients, but for a cancellation (CANCELLED).
import { LecternError, type ErrorCode } from '../core/errors.ts';

/** Base class: which server and which request. */
export class GpuClientError extends LecternError {
  constructor(
    message: string,
    readonly serverUrl: string,
    /** e.g. `POST /lipsync` or `GET /lipsync/abc`. */
    readonly request: string,
    code: ErrorCode = 'UPSTREAM_FAILED',
  ) {
    super(code, message);
    this.name = 'GpuClientError';
  }
}

/** The server answered with a non-2xx status (or a body the protocol does not allow). */
export class GpuServerError extends GpuClientError {
  constructor(
    serverUrl: string,
    request: string,
    readonly status: number,
    /** The server's `{"detail"}` when it sent one, else the start of the body. */
    readonly detail: string,
  ) {
    super(`GPU server ${serverUrl} answered ${request} with HTTP ${status}: ${detail}`, serverUrl, request);
    this.name = 'GpuServerError';
  }

  /** 5xx: the server may recover; a 4xx means the request itself is wrong. */
  get transient(): boolean {
    return this.status >= 500;
  }
}

/** One HTTP operation ran past its per-request timeout. */
export class GpuServerTimeout extends GpuClientError {
  constructor(
    serverUrl: string,
    request: string,
    readonly timeoutMs: number,
  ) {
    super(`GPU server ${serverUrl} did not complete ${request} within ${timeoutMs} ms`, serverUrl, request);
    this.name = 'GpuServerTimeout';
  }
}

/** No HTTP answer at all: connection refused or reset, DNS failure, or no healthy server to send to. */
export class GpuServerUnreachable extends GpuClientError {
  constructor(serverUrl: string, request: string, reason: string) {
    super(`GPU server ${serverUrl} could not be reached for ${request}: ${reason}`, serverUrl, request);
    this.name = 'GpuServerUnreachable';
  }
}

/** Polling a lip-sync job failed too many times in a row (spec §7: the 5th consecutive transient failure). */
export class GpuServerLost extends GpuClientError {
  constructor(
    serverUrl: string,
    request: string,
    readonly failures: number,
    readonly lastError: Error,
  ) {
    super(
      `contact with the GPU server ${serverUrl} was lost: ${failures} consecutive failures of ${request} (last: ${lastError.message})`,
      serverUrl,
      request,
    );
    this.name = 'GpuServerLost';
  }
}

/** The server reports that it could not generate the lip-sync video; carries the server's own message. */
export class LipsyncFailed extends GpuClientError {
  constructor(
    serverUrl: string,
    request: string,
    readonly lipsyncId: string,
    readonly serverMessage: string,
  ) {
    super(`GPU server ${serverUrl} failed lip-sync job ${lipsyncId} (${request}): ${serverMessage}`, serverUrl, request);
    this.name = 'LipsyncFailed';
  }
}

/** The job was cancelled: by the caller's cancel predicate, or (reported by the server) by someone else. */
export class LipsyncCancelled extends GpuClientError {
  constructor(
    serverUrl: string,
    request: string,
    /** Null when cancelled before the server accepted the job. */
    readonly lipsyncId: string | null,
    readonly byServer = false,
  ) {
    const what = lipsyncId ? `lip-sync job ${lipsyncId}` : 'lip-sync job (not yet submitted)';
    super(
      byServer
        ? `${what} on GPU server ${serverUrl} was cancelled on the server (seen at ${request})`
        : `${what} on GPU server ${serverUrl} was cancelled (during ${request})`,
      serverUrl,
      request,
      'CANCELLED',
    );
    this.name = 'LipsyncCancelled';
  }
}

/** Errors worth retrying: no answer, a timeout, or a 5xx. */
export function isTransient(err: unknown): boolean {
  if (err instanceof GpuServerTimeout || err instanceof GpuServerUnreachable) return true;
  if (err instanceof GpuServerError) return err.transient;
  return false;
}
