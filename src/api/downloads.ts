// How a stored file reaches a client, in each storage mode (the contract's download "kinds"):
//   - the bytes, from the API: the local store, S3 with LECTERN_STORAGE_DOWNLOAD=proxy, and
//     local files (voice previews). HTTP Range, If-None-Match / If-Modified-Since (304) and
//     If-Range are honoured the same way for all of them.
//   - a redirect: S3 by default answers 302 to a presigned GET that carries the file name and
//     type. A client that asks for JSON (`Accept: application/json`) gets the link as JSON
//     instead ({url, expires_at, filename, content_type}), so a browser holding a bearer token
//     can hand the URL to <audio> or a download link without sending the token to the store.
//     JSON files themselves (timeline.json) are then streamed through, since that is what such
//     a client asked for and a cross-origin fetch of them would need CORS on the bucket.
import fs from 'node:fs';
import type { Readable } from 'node:stream';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { LecternError, notFound } from '../core/errors.ts';
import type { ByteRange, DownloadMeta, Storage } from '../storage.ts';
import { contentDisposition } from '../storage/disposition.ts';

/** Only media a browser plays without running anything may be shown inline; everything else is a download. */
const INLINE_SAFE = /^(audio|video)\/[a-z0-9.+-]+$/i;

export const DownloadLink = Type.Object(
  {
    url: Type.String({ description: 'Presigned GET URL of the object store; fetch it without the bearer token' }),
    expires_at: Type.String({ format: 'date-time', description: 'When the URL stops working (LECTERN_STORAGE_LINK_EXPIRES_S after the request)' }),
    filename: Type.String(),
    content_type: Type.String(),
  },
  { $id: 'DownloadLink', description: 'Where to download a file from, when the service stores files in an S3-compatible bucket' },
);

/** Registers the schemas download routes refer to (once per app; every route group that sends files calls it). */
export function addDownloadSchemas(app: FastifyInstance): void {
  if (!app.getSchema('DownloadLink')) app.addSchema(DownloadLink);
}

/** The OpenAPI text every download route shares. */
export const DOWNLOAD_KINDS =
  'How it is sent depends on the storage backend. Local data dir, or S3 with LECTERN_STORAGE_DOWNLOAD=proxy: the bytes, with HTTP Range (206/416) and conditional requests (ETag, Last-Modified, If-None-Match/If-Modified-Since → 304, If-Range). S3 (LECTERN_STORAGE_URL=s3://…, default LECTERN_STORAGE_DOWNLOAD=redirect): 302 to a presigned GET URL valid for LECTERN_STORAGE_LINK_EXPIRES_S (default 300 s) whose response carries the same Content-Disposition file name and Content-Type; with `Accept: application/json` the link is answered as a DownloadLink JSON object instead of the redirect (a JSON file is then sent itself). 503 when the object store cannot be reached.';

/** Response schemas of a download route for the OpenAPI document. */
export function downloadResponses(what: string) {
  return {
    200: {
      description: `${what}; or, with Accept: application/json under S3 redirect mode, a DownloadLink`,
      content: {
        'application/octet-stream': { schema: { type: 'string', format: 'binary' } },
        'application/json': { schema: Type.Ref('DownloadLink') },
      },
    },
    206: { description: 'The requested byte range', content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } } },
    302: { description: 'S3 redirect mode: Location is a presigned GET URL of the object store', type: 'null' },
    304: { description: 'Not modified (If-None-Match / If-Modified-Since)', type: 'null' },
  };
}

interface Validators {
  size: number;
  etag: string;
  lastModified: Date;
}

function wantsJson(req: FastifyRequest): boolean {
  return /\bapplication\/json\b/i.test(String(req.headers.accept ?? ''));
}

/** A stored object, in whichever kind the store gives: redirect, JSON link or bytes. 404 when it is missing. */
export async function sendStored(req: FastifyRequest, reply: FastifyReply, storage: Storage, key: string, meta: DownloadMeta): Promise<FastifyReply> {
  meta = { ...meta, inline: meta.inline && INLINE_SAFE.test(meta.contentType.split(';')[0]!.trim()) };
  const stat = await storage.stat(key);
  if (!stat) throw notFound(`${meta.filename} is missing from the store`);
  const json = wantsJson(req);
  const isJsonFile = /^application\/json\b/i.test(meta.contentType);
  if (!(json && isJsonFile)) {
    const link = await storage.directLink(key, meta);
    if (link) {
      reply.header('cache-control', 'no-store');
      if (json) return reply.code(200).send({ url: link.url, expires_at: link.expiresAt.toISOString(), filename: meta.filename, content_type: meta.contentType });
      return reply.code(302).header('location', link.url).send();
    }
  }
  return sendBytes(req, reply, stat, (range) => storage.read(key, range), meta);
}

/** A file on the API's own disk (voice previews and samples), with the same Range and conditional handling. */
export async function sendFile(req: FastifyRequest, reply: FastifyReply, file: string, meta: DownloadMeta): Promise<FastifyReply> {
  meta = { ...meta, inline: meta.inline && INLINE_SAFE.test(meta.contentType.split(';')[0]!.trim()) };
  const st = await fs.promises.stat(file);
  const validators = { size: st.size, lastModified: st.mtime, etag: `"${st.size.toString(16)}-${Math.floor(st.mtimeMs).toString(16)}"` };
  return sendBytes(req, reply, validators, async (range) => fs.createReadStream(file, range ?? {}), meta);
}

/**
 * The bytes, honouring one `Range: bytes=a-b` and the conditional headers. The content type
 * is what the service knows the file to be; `nosniff` stops browsers from guessing otherwise,
 * and a sandboxing CSP keeps anything opened in place from running in the service's origin.
 */
async function sendBytes(req: FastifyRequest, reply: FastifyReply, v: Validators, open: (range?: ByteRange) => Promise<Readable>, meta: DownloadMeta): Promise<FastifyReply> {
  const { size } = v;
  // HTTP dates have whole seconds: compare at that precision.
  const modified = Math.floor(v.lastModified.getTime() / 1000) * 1000;
  // Conditions first (RFC 9110 §13.2.2): a client holding this version gets 304 whatever its Range.
  if (notModified(req, v.etag, modified)) return reply.code(304).header('etag', v.etag).header('last-modified', new Date(modified).toUTCString()).send();
  const range = req.headers.range && ifRangeHolds(req, v.etag, modified) ? byteRange(req.headers.range, size) : null;
  if (range === 'unsatisfiable') {
    reply.header('accept-ranges', 'bytes').header('content-range', `bytes */${size}`);
    throw new LecternError('RANGE_NOT_SATISFIABLE', `range ${req.headers.range} is not satisfiable for ${size} bytes`);
  }
  reply
    .header('content-type', meta.contentType)
    .header('accept-ranges', 'bytes')
    .header('x-content-type-options', 'nosniff')
    .header('content-security-policy', "default-src 'none'; sandbox")
    .header('content-disposition', contentDisposition(meta.filename, meta.inline))
    .header('etag', v.etag)
    .header('last-modified', new Date(modified).toUTCString());

  if (range) {
    reply.code(206).header('content-range', `bytes ${range.start}-${range.end}/${size}`).header('content-length', range.end - range.start + 1);
    return reply.send(await open(range));
  }
  reply.header('content-length', size);
  if (size === 0) return reply.send('');
  return reply.send(await open());
}

/** A single `bytes=a-b`, `bytes=a-` or `bytes=-n` range within `size` bytes. */
function byteRange(header: string, size: number): ByteRange | 'unsatisfiable' {
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  let start = m && m[1] !== '' ? Number(m[1]) : NaN;
  let end = m && m[2] !== '' ? Number(m[2]) : NaN;
  if (m && m[1] === '' && m[2] !== '') {
    start = Math.max(0, size - Number(m[2]));
    end = size - 1;
  } else if (m && Number.isNaN(end)) end = size - 1;
  if (!m || Number.isNaN(start) || start > end || start >= size) return 'unsatisfiable';
  return { start, end: Math.min(end, size - 1) };
}

/** If-None-Match wins over If-Modified-Since (RFC 9110 §13.2.2); only for GET and HEAD. */
function notModified(req: FastifyRequest, etag: string, modified: number): boolean {
  if (req.method !== 'GET' && req.method !== 'HEAD') return false;
  const inm = req.headers['if-none-match'];
  if (inm !== undefined) {
    if (inm.trim() === '*') return true;
    const weak = (t: string) => t.trim().replace(/^W\//, '');
    return inm.split(',').some((t) => weak(t) === weak(etag));
  }
  const ims = req.headers['if-modified-since'];
  if (ims !== undefined) {
    const t = Date.parse(ims);
    return !Number.isNaN(t) && modified <= t;
  }
  return false;
}

/** A Range is used only when If-Range (if any) still names this version: a strong ETag or the exact date. */
function ifRangeHolds(req: FastifyRequest, etag: string, modified: number): boolean {
  const ir = req.headers['if-range'];
  if (ir === undefined) return true;
  const v = String(ir).trim();
  if (v.startsWith('"') || v.startsWith('W/')) return v === etag;
  const t = Date.parse(v);
  return !Number.isNaN(t) && t === modified;
}
