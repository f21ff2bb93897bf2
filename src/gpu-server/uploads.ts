// Multipart parsing by hand, for routes whose files are streamed to disk (lip-sync videos)
// rather than validated in the body: small files in memory, the named ones on disk, with
// the size limit mapped to 413.
import { createWriteStream } from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { FastifyRequest } from 'fastify';
import { fileTooLarge, uploadTooLarge } from '../http/server.ts';
import { badRequest } from '../core/errors.ts';

export interface ParsedForm {
  fields: Record<string, string>;
  /** Files read into memory (fieldname → bytes). */
  files: Record<string, Buffer>;
  /** Files streamed to disk (fieldname → path). */
  paths: Record<string, string>;
}

export async function readMultipart(req: FastifyRequest, limitBytes: number, toDisk?: { dir: string; fields: string[] }): Promise<ParsedForm> {
  if (!req.isMultipart()) throw badRequest('expected a multipart/form-data body');
  const out: ParsedForm = { fields: {}, files: {}, paths: {} };
  for await (const part of req.parts({ limits: { fileSize: limitBytes } })) {
    if (part.type === 'field') {
      if (typeof part.value !== 'string') throw badRequest(`form field ${part.fieldname} must be text`);
      out.fields[part.fieldname] = part.value;
      continue;
    }
    if (toDisk && toDisk.fields.includes(part.fieldname)) {
      const ext = path.extname(part.filename ?? '').replace(/[^.a-zA-Z0-9]/g, '').slice(0, 8);
      const dest = path.join(toDisk.dir, `${part.fieldname}${ext}`);
      await pipeline(part.file, createWriteStream(dest));
      if (part.file.truncated) throw uploadTooLarge(limitBytes);
      out.paths[part.fieldname] = dest;
    } else {
      out.files[part.fieldname] = await part.toBuffer().catch(fileTooLarge(limitBytes));
    }
  }
  return out;
}
