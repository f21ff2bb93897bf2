// The request id that follows one piece of work: accepted from (or made for) an HTTP request
// to the API, stored with the job, bound to the worker's log lines, and sent to the GPU
// server with every call made while the job runs (via AsyncLocalStorage, so the speech
// code in between need not pass it along).
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';

export const REQUEST_ID_HEADER = 'x-request-id';

/** What a client may send as its own request id: short and log-safe (no spaces, quotes or control characters). */
const REQUEST_ID_RE = /^[A-Za-z0-9._:@/+=-]{1,128}$/;

export function validRequestId(v: unknown): string | null {
  const s = Array.isArray(v) ? v[0] : v;
  return typeof s === 'string' && REQUEST_ID_RE.test(s) ? s : null;
}

/** Fastify's genReqId: the client's id when it is valid, else a fresh UUID. */
export function requestIdFrom(headers: Record<string, string | string[] | undefined>): string {
  return validRequestId(headers[REQUEST_ID_HEADER]) ?? randomUUID();
}

const storage = new AsyncLocalStorage<{ requestId: string }>();

export function withRequestId<T>(requestId: string | null | undefined, fn: () => T): T {
  return requestId ? storage.run({ requestId }, fn) : fn();
}

export function currentRequestId(): string | null {
  return storage.getStore()?.requestId ?? null;
}
