// Multipart parsing for the GPU server's routes: small files in memory, large ones
// (lip-sync videos) streamed to disk, with the size limit mapped to 413.
import { createWriteStream } from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { FastifyRequest } from 'fastify';
import { badRequest, tooLarge } from '../errors.ts';

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
      if (part.file.truncated) throw tooLarge(`file ${part.fieldname} exceeds the upload limit of ${limitBytes} bytes`);
      out.paths[part.fieldname] = dest;
    } else {
      out.files[part.fieldname] = await part.toBuffer();
    }
  }
  return out;
}
