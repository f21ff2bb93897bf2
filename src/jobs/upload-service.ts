// Uploads, independent of HTTP: a stream typed from its first bytes, stored under
// `uploads/ID.EXT`, then its row. The object is written before the row, so a crash in between
// leaves an object without a row, which the storage sweep removes; never a row without bytes.
import { createHash, randomUUID } from 'node:crypto';
import path from 'node:path';
import { Readable } from 'node:stream';
import type { Caller } from '../core/caller.ts';
import { badRequest, conflict, notFound, tooLarge, unsupportedType } from '../core/errors.ts';
import type { Logger } from '../log.ts';
import { sniff, SNIFF_BYTES } from '../media/sniff.ts';
import { declaredLanguage, declaresLanguage, type ByteSource } from '../documents/model.ts';
import { DocumentError } from '../documents/types.ts';
import { isId, StorageNotFound, StorageUnavailable, uploadKey, type DownloadMeta, type Storage } from '../storage.ts';
import type { JobStore, UploadRecord } from './types.ts';

export const ACCEPTED_UPLOADS = 'PDF, EPUB, Markdown or plain text documents; WAV, MP3, M4A, FLAC or OGG audio; MP4, MOV or WebM video';

/** Thrown by an upload's source stream when it passes the size limit (@fastify/multipart's code). */
const TOO_LARGE_CODE = 'FST_REQ_FILE_TOO_LARGE';

export class UploadService {
  constructor(
    private readonly jobs: JobStore,
    private readonly storage: Storage,
    private readonly log: Logger,
    private readonly maxUploadBytes: number,
  ) {}

  /**
   * Stores an upload streamed from `source`. The type is decided from the first bytes before
   * anything is written; a refused, oversized or broken upload leaves no object and no row.
   * `owner`: the uploading token's name (null with authentication off).
   */
  async create(source: Readable, originalName: string, owner: string | null, signal?: AbortSignal): Promise<UploadRecord> {
    const name = cleanName(originalName);
    const it = source[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
    const head: Buffer[] = [];
    let headLen = 0;
    let ended = false;
    try {
      while (headLen < SNIFF_BYTES) {
        const r = await it.next();
        if (r.done) {
          ended = true;
          break;
        }
        head.push(r.value);
        headLen += r.value.length;
      }
    } catch (err) {
      throw this.sourceError(err);
    }
    const first = Buffer.concat(head);
    if (first.length === 0) throw badRequest('the uploaded file is empty');
    const type = sniff(first.subarray(0, SNIFF_BYTES), name);
    if (!type) {
      // Read (and drop) the rest, so the client gets the answer rather than a reset connection.
      if (!ended) await drain(it);
      throw unsupportedType(`unsupported file type for "${name}"; accepted: ${ACCEPTED_UPLOADS}`);
    }

    const id = randomUUID();
    const key = uploadKey(id, type.ext);
    const hash = createHash('sha256');
    const body = Readable.from(
      (async function* () {
        hash.update(first);
        yield first;
        if (ended) return;
        for (;;) {
          const r = await it.next();
          if (r.done) return;
          hash.update(r.value);
          yield r.value;
        }
      })(),
      { objectMode: false },
    );
    let size: number;
    try {
      ({ size } = await this.storage.put(key, body, { contentType: type.contentType, signal }));
    } catch (err) {
      throw this.sourceError(err);
    }
    const language = type.kind === 'document' ? await readDocumentLanguage(this.storage, { id, path: key, content_type: type.contentType }, this.log) : null;
    try {
      const record = await this.jobs.createUpload({
        id,
        original_name: name,
        size_bytes: size,
        content_type: type.contentType,
        kind: type.kind,
        path: key,
        sha256: hash.digest('hex'),
        language,
        owner,
        created_at: new Date().toISOString(),
      });
      this.log.info({ upload_id: id, kind: type.kind, size }, 'upload stored');
      return record;
    } catch (err) {
      await this.storage.delete(key).catch(() => undefined); // else the sweep removes it
      throw err;
    }
  }

  private sourceError(err: unknown): unknown {
    if ((err as { code?: string }).code === TOO_LARGE_CODE) return tooLarge(`upload is larger than the limit of ${this.maxUploadBytes} bytes`);
    return err;
  }

  /** The upload if the caller may see it; another token's answers the same 404, from the same query, as a missing one. */
  async get(id: string, caller: Caller): Promise<UploadRecord> {
    const u = isId(id) ? await this.jobs.getUpload(id, caller) : null;
    if (!u) throw uploadNotFound(id);
    return u;
  }

  /**
   * Deletes the row, then the object; 409 while any job (anyone's) refers to the upload. The
   * check and the delete are one transaction in the store, so a job being created with this
   * upload either counts here or finds it gone.
   */
  async delete(id: string, caller: Caller): Promise<void> {
    const r = isId(id) ? await this.jobs.deleteUpload(id, caller) : ({ outcome: 'missing' } as const);
    if (r.outcome === 'missing') throw uploadNotFound(id);
    if (r.outcome === 'in-use') throw conflict(`upload ${id} is used by ${r.jobs} job${r.jobs > 1 ? 's' : ''}; delete ${r.jobs > 1 ? 'them' : 'it'} first`);
    await this.storage.delete(r.upload.path);
  }

  /** The stored bytes: always an attachment, typed from the bytes, named after the original with the detected extension. */
  async file(id: string, caller: Caller): Promise<{ key: string; meta: DownloadMeta }> {
    const u = await this.get(id, caller);
    const ext = path.extname(u.path);
    const stem = path.parse(u.original_name).name.replace(/[^\p{L}\p{N}._ -]+/gu, '_').slice(0, 120) || 'upload';
    return { key: u.path, meta: { filename: `${stem}${ext}`, contentType: u.content_type, inline: false } };
  }
}

/**
 * The language a stored document declares (EPUB dc:language, PDF /Lang), read from the ranges
 * of the object that hold it (a bucket's object is not copied for its metadata); null when it
 * declares none or cannot be read (a job's pipeline then says why).
 *
 * A read that fails for another reason than the document (a store's body cut mid-range, which
 * the SDK does not retry) is tried once more, and logged as a warning if it fails again: the
 * upload still succeeds, and job creation reads the language again where the record has none.
 */
export async function readDocumentLanguage(storage: Storage, doc: Pick<UploadRecord, 'id' | 'path' | 'content_type'>, log: Logger): Promise<string | null> {
  if (!declaresLanguage(doc.content_type)) return null;
  for (let attempt = 1; ; attempt++) {
    try {
      return await declaredLanguage(await storedSource(storage, doc.path), doc.content_type);
    } catch (err) {
      if (err instanceof DocumentError) {
        log.debug({ upload: doc.id, err: err.message }, 'no declared language read from the document');
        return null;
      }
      if (attempt < 2) continue;
      log.warn({ upload: doc.id, err: (err as Error).message }, 'the declared language of the document could not be read; job creation will read it again');
      return null;
    }
  }
}

/** A stored object as a ByteSource: each read is one ranged read of the store. */
async function storedSource(storage: Storage, key: string): Promise<ByteSource> {
  const size = (await storage.stat(key))?.size;
  if (size === undefined) throw new StorageNotFound(key);
  return {
    size,
    async read(begin, end) {
      const last = Math.min(end, size) - 1;
      if (last < begin) return new Uint8Array(0);
      const parts: Buffer[] = [];
      try {
        for await (const chunk of await storage.read(key, { start: begin, end: last })) parts.push(chunk as Buffer);
      } catch (err) {
        if (err instanceof StorageNotFound || err instanceof StorageUnavailable) throw err;
        throw new StorageUnavailable(`object store unavailable while reading ${key}: ${(err as Error).message}`, { cause: err }); // the body was cut
      }
      return Buffer.concat(parts);
    },
  };
}

const uploadNotFound = (id: string) => notFound(`upload ${id} not found`);

async function drain(it: AsyncIterator<Buffer>): Promise<void> {
  try {
    for (let r = await it.next(); !r.done; r = await it.next());
  } catch {
    // the refusal is the answer either way
  }
}

function cleanName(name: string | undefined): string {
  const base = path.basename((name ?? '').replace(/\\/g, '/'));
  // eslint-disable-next-line no-control-regex
  const clean = base.replace(/[\u0000-\u001f\u007f]/g, '').trim().slice(0, 255);
  return clean || 'upload';
}
