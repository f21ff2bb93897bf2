// One HTTP operation against a GPU server, with its own timeout covering the whole
// exchange (headers and body), and every failure turned into a typed error naming the
// server and the request. Uses Node's built-in fetch (undici); no extra dependency.
import fs from 'node:fs';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { currentRequestId, REQUEST_ID_HEADER } from '../request-context.ts';
import { GpuServerError, GpuServerTimeout, GpuServerUnreachable } from './errors.ts';

export interface CallOptions {
  method: 'GET' | 'POST' | 'DELETE';
  path: string;
  timeoutMs: number;
  body?: FormData | string;
  headers?: Record<string, string>;
  token?: string;
}

export const requestName = (o: Pick<CallOptions, 'method' | 'path'>) => `${o.method} ${o.path}`;

/**
 * Sends one request and hands the 2xx response to `handle`, which reads the body while
 * the same timeout still runs. Non-2xx → GpuServerError; no answer → GpuServerUnreachable;
 * past timeoutMs (anywhere, body included) → GpuServerTimeout.
 */
export async function call<T>(serverUrl: string, opts: CallOptions, handle: (res: Response) => Promise<T>): Promise<T> {
  const name = requestName(opts);
  const signal = AbortSignal.timeout(opts.timeoutMs);
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  // The job's request id, when this call is made on behalf of one (see request-context.ts).
  const requestId = currentRequestId();
  if (requestId && !headers[REQUEST_ID_HEADER]) headers[REQUEST_ID_HEADER] = requestId;
  try {
    const res = await fetch(`${serverUrl}${opts.path}`, { method: opts.method, body: opts.body, headers, signal });
    if (!res.ok) throw new GpuServerError(serverUrl, name, res.status, await errorDetail(res));
    return await handle(res);
  } catch (err) {
    if (err instanceof GpuServerError || err instanceof GpuServerUnreachable) throw err;
    // The abort reason surfaces differently from fetch, body reads and stream pipelines; the signal is the truth.
    if (signal.aborted) throw new GpuServerTimeout(serverUrl, name, opts.timeoutMs);
    if (err instanceof TypeError && err.message === 'fetch failed') throw new GpuServerUnreachable(serverUrl, name, causeOf(err));
    // A connection dropped mid-body ("terminated", ECONNRESET) is also a lost answer.
    if (isNetworkError(err)) throw new GpuServerUnreachable(serverUrl, name, causeOf(err as Error));
    throw err;
  }
}

/** The server's `{"detail"}` when it sent one, else the start of the body. */
async function errorDetail(res: Response): Promise<string> {
  const text = await res.text().catch(() => '');
  try {
    const j = JSON.parse(text) as { detail?: unknown };
    if (j && typeof j.detail === 'string') return j.detail;
    if (j && j.detail !== undefined) return JSON.stringify(j.detail);
  } catch {
    // not JSON
  }
  const line = text.trim().split('\n')[0] ?? '';
  return line ? line.slice(0, 300) : res.statusText || 'no detail';
}

function causeOf(err: Error): string {
  const c = (err as { cause?: unknown }).cause;
  if (c instanceof Error) {
    const code = (c as { code?: string }).code;
    return code && !c.message.includes(code) ? `${code} ${c.message}` : c.message;
  }
  return err.message;
}

function isNetworkError(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: string }).code ?? ((err as { cause?: { code?: string } }).cause?.code);
  if (code && /^(ECONNRESET|ECONNREFUSED|EPIPE|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|UND_ERR_\w+)$/.test(code)) return true;
  return err.message === 'terminated' || (err instanceof TypeError && /terminated|other side closed/i.test(err.message));
}

export async function readJson(serverUrl: string, request: string, res: Response): Promise<unknown> {
  const text = await res.text();
  try {
    return JSON.parse(text);
  } catch {
    throw new GpuServerError(serverUrl, request, res.status, `malformed JSON response: ${text.slice(0, 200)}`);
  }
}

/** A file as a multipart part, read from disk as it is sent rather than loaded whole. */
export async function filePart(filePath: string, type = 'application/octet-stream'): Promise<{ blob: Blob; name: string }> {
  const blob = await fs.openAsBlob(filePath, { type });
  return { blob, name: path.basename(filePath) };
}

/**
 * Streams a response body to `outputPath` atomically: bytes go to a temporary file beside
 * it, which is renamed into place only once complete (and its length checked against
 * Content-Length). On any failure the temporary file is removed and `outputPath` is untouched.
 */
export async function saveBodyAtomically(res: Response, outputPath: string, serverUrl: string, request: string): Promise<number> {
  if (!res.body) throw new GpuServerError(serverUrl, request, res.status, 'response has no body');
  const tmp = path.join(path.dirname(outputPath), `.${path.basename(outputPath)}.${randomUUID().slice(0, 8)}.part`);
  let bytes = 0;
  const counter = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      bytes += chunk.length;
      cb(null, chunk);
    },
  });
  try {
    await pipeline(Readable.fromWeb(res.body as WebReadableStream<Uint8Array>), counter, fs.createWriteStream(tmp, { flags: 'wx' }));
    const expected = res.headers.get('content-length');
    if (expected !== null && Number(expected) !== bytes) {
      throw new GpuServerError(serverUrl, request, res.status, `truncated body: ${bytes} of ${expected} bytes`);
    }
    if (bytes === 0) throw new GpuServerError(serverUrl, request, res.status, 'empty body');
    await fs.promises.rename(tmp, outputPath);
    return bytes;
  } catch (err) {
    await fs.promises.rm(tmp, { force: true });
    throw err;
  }
}
