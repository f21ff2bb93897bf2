// POST/GET/DELETE /api/uploads: files streamed to disk under a size limit, typed from their bytes.
import { createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { FastifyInstance } from 'fastify';
import multipart from '@fastify/multipart';
import { badRequest, conflict, notFound, tooLarge, unsupportedType } from '../errors.ts';
import type { Stores, UploadRecord } from '../jobs/types.ts';
import { sniff, SNIFF_BYTES } from '../media/sniff.ts';
import { isId, type Storage } from '../storage.ts';
import { sendFile } from './http.ts';
import { Detail, errors, UploadParams } from './schemas.ts';

export interface UploadRoutesOptions {
  stores: Stores;
  storage: Storage;
  maxUploadBytes: number;
}

const ACCEPTED = 'PDF, EPUB, Markdown or plain text documents; WAV, MP3, M4A, FLAC or OGG audio; MP4, MOV or WebM video';

export function publicUpload(u: UploadRecord) {
  const { path: _path, sha256: _sha, ...pub } = u;
  return pub;
}

export async function uploadRoutes(app: FastifyInstance, opts: UploadRoutesOptions): Promise<void> {
  const { stores, storage, maxUploadBytes } = opts;
  await app.register(multipart, { limits: { fileSize: maxUploadBytes, files: 1, fields: 10, parts: 12 } });

  app.post(
    '/api/uploads',
    {
      schema: {
        summary: 'Upload a document, reference audio or presenter video',
        description: `multipart/form-data with the file in the field "file". Accepted: ${ACCEPTED}. The type is detected from the bytes; HTML and SVG are refused. Size limit: LECTERN_MAX_UPLOAD_BYTES (default 200 MB).`,
        consumes: ['multipart/form-data'],
        response: { 201: { $ref: 'UploadResponse#' }, ...errors(400, 413, 415) },
      },
    },
    async (req, reply) => {
      if (!req.isMultipart()) throw unsupportedType('send the file as multipart/form-data in the field "file"');
      // Refuse what is plainly too big before reading a byte of it.
      const declared = Number(req.headers['content-length'] ?? NaN);
      if (declared > maxUploadBytes + 64 * 1024) throw tooLarge(`upload is larger than the limit of ${maxUploadBytes} bytes`);
      const part = await req.file();
      if (!part) throw badRequest('no file in the request (multipart field "file")');
      if (part.fieldname !== 'file') {
        part.file.resume();
        throw badRequest(`the file must be in the multipart field "file", not "${part.fieldname}"`);
      }
      const originalName = cleanName(part.filename);
      const tmp = storage.tmpPath('.upload');
      const hash = createHash('sha256');
      const head: Buffer[] = [];
      let headLen = 0;
      let size = 0;
      const tap = new Transform({
        transform(chunk: Buffer, _enc, cb) {
          hash.update(chunk);
          size += chunk.length;
          if (headLen < SNIFF_BYTES) {
            head.push(chunk.subarray(0, SNIFF_BYTES - headLen));
            headLen += Math.min(chunk.length, SNIFF_BYTES - headLen);
          }
          cb(null, chunk);
        },
      });
      try {
        await pipeline(part.file, tap, fs.createWriteStream(tmp, { flags: 'wx' }));
        if (part.file.truncated) throw tooLarge(`upload is larger than the limit of ${maxUploadBytes} bytes`);
        if (size === 0) throw badRequest('the uploaded file is empty');
        const type = sniff(Buffer.concat(head), originalName);
        if (!type) throw unsupportedType(`unsupported file type for "${originalName}"; accepted: ${ACCEPTED}`);
        const id = randomUUID();
        const final = storage.uploadPath(id, type.ext);
        const fh = await fs.promises.open(tmp, 'r');
        await fh.sync(); // the upload is on disk before the service says it has it
        await fh.close();
        await fs.promises.rename(tmp, final);
        const record = await stores.jobs.createUpload({
          id,
          original_name: originalName,
          size_bytes: size,
          content_type: type.contentType,
          kind: type.kind,
          path: storage.relative(final),
          sha256: hash.digest('hex'),
          created_at: new Date().toISOString(),
        });
        req.log.info({ upload_id: id, kind: type.kind, size }, 'upload stored');
        return reply.code(201).send(publicUpload(record));
      } catch (err) {
        await fs.promises.rm(tmp, { force: true });
        const e = err as { code?: string; statusCode?: number };
        if (e.code === 'FST_REQ_FILE_TOO_LARGE') throw tooLarge(`upload is larger than the limit of ${maxUploadBytes} bytes`);
        throw err;
      }
    },
  );

  app.get(
    '/api/uploads/:upload_id',
    { schema: { summary: 'Read an upload record', params: UploadParams, response: { 200: { $ref: 'UploadResponse#' }, ...errors(404) } } },
    async (req) => publicUpload(await getUpload(stores, (req.params as { upload_id: string }).upload_id)),
  );

  app.get(
    '/api/uploads/:upload_id/file',
    {
      schema: {
        summary: 'Download the uploaded bytes',
        description:
          'Always an attachment, with the content type detected from the bytes at upload (never the one the client sent), X-Content-Type-Options: nosniff and a sandboxing Content-Security-Policy; the file name keeps the original stem with the detected extension. HTTP Range is supported.',
        params: UploadParams,
        response: { 200: { type: 'string', format: 'binary' }, 206: { type: 'string', format: 'binary' }, ...errors(404, 416) },
      },
    },
    async (req, reply) => {
      const u = await getUpload(stores, (req.params as { upload_id: string }).upload_id);
      const file = storage.resolve(u.path);
      const ext = path.extname(file);
      const stem = path.parse(u.original_name).name.replace(/[^\p{L}\p{N}._ -]+/gu, '_').slice(0, 120) || 'upload';
      return sendFile(req, reply, file, u.content_type, `${stem}${ext}`);
    },
  );

  app.delete(
    '/api/uploads/:upload_id',
    { schema: { summary: 'Delete an upload (409 while a job refers to it)', params: UploadParams, response: { 200: Detail, ...errors(404, 409) } } },
    async (req) => {
      const u = await getUpload(stores, (req.params as { upload_id: string }).upload_id);
      const users = await stores.jobs.countJobsUsingUpload(u.id);
      if (users > 0) throw conflict(`upload ${u.id} is used by ${users} job${users > 1 ? 's' : ''}; delete ${users > 1 ? 'them' : 'it'} first`);
      await stores.jobs.deleteUpload(u.id);
      await fs.promises.rm(storage.resolve(u.path), { force: true });
      return { detail: 'upload deleted' };
    },
  );
}

async function getUpload(stores: Stores, id: string): Promise<UploadRecord> {
  const u = isId(id) ? await stores.jobs.getUpload(id) : null;
  if (!u) throw notFound(`upload ${id} not found`);
  return u;
}

function cleanName(name: string | undefined): string {
  const base = path.basename((name ?? '').replace(/\\/g, '/'));
  // eslint-disable-next-line no-control-regex
  const clean = base.replace(/[\u0000-\u001f\u007f]/g, '').trim().slice(0, 255);
  return clean || 'upload';
}
