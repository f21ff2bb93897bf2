// POST/GET/DELETE /api/uploads: thin routes over UploadService (streamed into the store
// under a size limit, typed from their bytes, owned by the token that sent them and read,
// downloaded and deleted through the request's Caller).
import type { FastifyInstance, FastifyRequest } from 'fastify';
import multipart, { type MultipartFile } from '@fastify/multipart';
import { badRequest, unsupportedType } from '../core/errors.ts';
import type { UploadRecord } from '../jobs/types.ts';
import { ACCEPTED_UPLOADS, type UploadService } from '../jobs/upload-service.ts';
import { callerOf } from '../security/http.ts';
import type { Storage } from '../storage.ts';
import { addDownloadSchemas, DOWNLOAD_KINDS, downloadResponses, sendStored } from './downloads.ts';
import { uploadTooLarge } from '../http/server.ts';
import { Detail, errors, OWNERSHIP, UploadParams, UploadResponse } from './schemas.ts';

export interface UploadRoutesOptions {
  uploads: UploadService;
  storage: Storage;
  maxUploadBytes: number;
}

export function publicUpload(u: UploadRecord) {
  const { path: _path, sha256: _sha, ...pub } = u;
  return pub;
}

/**
 * The uploads route group, a Fastify plugin: multipart is registered here, so only
 * POST /api/uploads parses file uploads.
 */
export async function uploadRoutes(app: FastifyInstance, opts: UploadRoutesOptions): Promise<void> {
  await app.register(multipart, { limits: { fileSize: opts.maxUploadBytes, files: 1, fields: 10, parts: 12 } });
  app.addSchema(UploadResponse);
  addDownloadSchemas(app);
  createUploadRoute(app, opts);
  readUploadRoutes(app, opts);
  deleteUploadRoute(app, opts);
}

function createUploadRoute(app: FastifyInstance, { uploads, maxUploadBytes }: UploadRoutesOptions): void {
  app.post(
    '/api/uploads',
    {
      schema: {
        summary: 'Upload a document, reference audio or presenter video',
        description: `multipart/form-data with the file in the field "file". Accepted: ${ACCEPTED_UPLOADS}. The type is detected from the first bytes, before anything is stored; HTML and SVG are refused. Size limit: LECTERN_MAX_UPLOAD_BYTES (default 2 GiB, for an audiobook in one file). The file is streamed into the store (the data dir, or the S3 bucket as a multipart upload, with the API's memory bounded whatever the size); a refused, oversized or interrupted upload leaves no file, no part and no record. The upload belongs to the calling token. ${OWNERSHIP}`,
        consumes: ['multipart/form-data'],
        response: { 201: { $ref: 'UploadResponse#' }, ...errors(400, 413, 415, 503, 507) },
      },
    },
    async (req, reply) => {
      const part = await filePart(req, maxUploadBytes);
      const record = await untilClientLeaves(req, (signal) => uploads.create(part.file, part.filename, callerOf(req).name, signal));
      return reply.code(201).send(publicUpload(record));
    },
  );
}

function readUploadRoutes(app: FastifyInstance, { uploads, storage }: UploadRoutesOptions): void {
  app.get<{ Params: UploadParams }>(
    '/api/uploads/:upload_id',
    { schema: { summary: 'Read an upload record', description: OWNERSHIP, params: UploadParams, response: { 200: { $ref: 'UploadResponse#' }, ...errors(404) } } },
    async (req) => publicUpload(await uploads.get(req.params.upload_id, callerOf(req))),
  );

  app.get<{ Params: UploadParams }>(
    '/api/uploads/:upload_id/file',
    {
      schema: {
        summary: 'Download the uploaded bytes',
        description: `Always an attachment, with the content type detected from the bytes at upload (never the one the client sent), X-Content-Type-Options: nosniff and a sandboxing Content-Security-Policy; the file name keeps the original stem with the detected extension. ${DOWNLOAD_KINDS} ${OWNERSHIP}`,
        params: UploadParams,
        response: { ...downloadResponses('The uploaded bytes'), ...errors(404, 416, 503) },
      },
    },
    async (req, reply) => {
      const f = await uploads.file(req.params.upload_id, callerOf(req));
      return sendStored(req, reply, storage, f.key, f.meta);
    },
  );
}

function deleteUploadRoute(app: FastifyInstance, { uploads }: UploadRoutesOptions): void {
  app.delete<{ Params: UploadParams }>(
    '/api/uploads/:upload_id',
    {
      schema: {
        summary: 'Delete an upload (409 while a job refers to it)',
        description: `409 while any job refers to the upload, whoever owns the job and whatever its state (a running job reads it; a finished lip-sync job's EPUB export reads its document again); delete the jobs first. Checked and deleted in one transaction, so a job created at the same moment either counts or gets 404. ${OWNERSHIP}`,
        params: UploadParams,
        response: { 200: Detail, ...errors(404, 409, 503) },
      },
    },
    async (req) => {
      await uploads.delete(req.params.upload_id, callerOf(req));
      return { detail: 'upload deleted' };
    },
  );
}

/**
 * Runs `store` with a signal that aborts when the client goes away mid-upload, so the
 * store's upload is aborted with it; then nobody is left to answer, nothing was stored,
 * and it is not the service's failure: a 400 that says so.
 */
async function untilClientLeaves<T>(req: FastifyRequest, store: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const gone = new AbortController();
  const onClose = () => {
    if (!req.raw.complete) gone.abort(new Error('the client closed the connection during the upload'));
  };
  req.raw.once('close', onClose);
  try {
    return await store(gone.signal);
  } catch (err) {
    if (gone.signal.aborted) {
      req.log.info('upload interrupted by the client; nothing stored');
      throw badRequest('the upload was interrupted');
    }
    throw err;
  } finally {
    req.raw.off('close', onClose);
  }
}

/** The request's one file, in the field "file"; refused before a byte is read when it is plainly too big. */
async function filePart(req: FastifyRequest, maxUploadBytes: number): Promise<MultipartFile> {
  if (!req.isMultipart()) throw unsupportedType('send the file as multipart/form-data in the field "file"');
  const declared = Number(req.headers['content-length'] ?? NaN);
  if (declared > maxUploadBytes + 64 * 1024) throw uploadTooLarge(maxUploadBytes);
  const part = await req.file();
  if (!part) throw badRequest('no file in the request (multipart field "file")');
  if (part.fieldname !== 'file') {
    part.file.resume();
    throw badRequest(`the file must be in the multipart field "file", not "${part.fieldname}"`);
  }
  return part;
}
