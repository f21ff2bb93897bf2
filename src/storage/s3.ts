// An S3-compatible bucket as a store (AWS S3, MinIO, Ceph RGW, Garage, SeaweedFS, R2…),
// through the AWS SDK v3: multipart uploads from lib-storage, presigned GETs from the
// request presigner. Endpoint, region and credentials follow the SDK's own chain; a custom
// endpoint switches to path-style addressing, which the self-hosted stores need.
import fs from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  AbortMultipartUploadCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { oneLine } from '../core/errors.ts';
import { checkKey, StorageNotFound, StorageUnavailable, type ByteRange, type DirectLink, type DownloadMeta, type Storage, type StoredObject } from '../storage.ts';
import { contentDisposition } from './disposition.ts';

export interface S3StorageOptions {
  bucket: string;
  /** Key prefix inside the bucket, without slashes at either end ('' for none). */
  prefix: string;
  /** Custom endpoint (AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL); null → AWS S3 itself. */
  endpoint: string | null;
  /** null → the SDK's chain (profile); us-east-1 where a custom endpoint is set and none is given. */
  region: string | null;
  /** Explicit keys (from the environment Lectern was given); null → the SDK's credential chain. */
  credentials: { accessKeyId: string; secretAccessKey: string; sessionToken?: string } | null;
  /** `redirect`: clients get a presigned URL; `proxy`: the API streams the bytes. */
  download: 'redirect' | 'proxy';
  /** Lifetime of a presigned download URL. */
  linkExpiresSeconds: number;
  /** Local scratch and cache folders (the worker's data dir). */
  tmpDir: string;
  cacheDir: string;
}

/** Multipart part size: memory per upload in flight is about PART_SIZE × QUEUE_SIZE. */
const PART_SIZE = 8 * 1024 * 1024;
const QUEUE_SIZE = 4;

export class S3Storage implements Storage {
  readonly kind = 's3' as const;
  readonly where: string;
  readonly tmpDir: string;
  readonly cacheDir: string;
  readonly directLinks: boolean;
  linkOrigin: string | null = null;
  private readonly client: S3Client;
  private readonly bucket: string;
  /** Prepended to every key: PREFIX/ from the storage URL, or nothing. */
  readonly prefix: string;

  constructor(private readonly opts: S3StorageOptions) {
    this.bucket = opts.bucket;
    this.prefix = opts.prefix ? `${opts.prefix}/` : '';
    this.tmpDir = opts.tmpDir;
    this.cacheDir = opts.cacheDir;
    this.directLinks = opts.download === 'redirect';
    this.where = `bucket "${opts.bucket}"${opts.prefix ? ` (prefix ${opts.prefix}/)` : ''} at ${opts.endpoint ?? `AWS S3${opts.region ? ` ${opts.region}` : ''}`}`;
    this.client = new S3Client({
      ...(opts.endpoint ? { endpoint: opts.endpoint, forcePathStyle: true } : {}),
      ...(opts.region ? { region: opts.region } : opts.endpoint ? { region: 'us-east-1' } : {}),
      ...(opts.credentials ? { credentials: opts.credentials } : {}),
      // Checksums only where S3 requires them: the stores this targets do not all read the
      // newer trailing-checksum uploads (aws-chunked bodies) the SDK sends by default.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      maxAttempts: 3,
    });
  }

  private objectKey(key: string): string {
    return this.prefix + checkKey(key);
  }

  private fromObjectKey(k: string): string {
    return k.slice(this.prefix.length);
  }

  /** An SDK failure as the error the layers above understand: not found, or the store unavailable (503). */
  private fail(err: unknown, doing: string, key?: string): Error {
    const status = (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
    const name = err instanceof S3ServiceException ? err.name : (err as { code?: string; name?: string }).code ?? (err as Error).name;
    if (key !== undefined && (name === 'NoSuchKey' || name === 'NotFound' || (status === 404 && name !== 'NoSuchBucket'))) return new StorageNotFound(key);
    return new StorageUnavailable(`object store unavailable while ${doing}: ${describeFailure(err, this.bucket)} (${this.where})`);
  }

  async init(): Promise<void> {
    await fs.promises.mkdir(this.tmpDir, { recursive: true });
    await fs.promises.mkdir(this.cacheDir, { recursive: true });
    try {
      await this.client.send(new HeadBucketCommand({ Bucket: this.bucket }));
      // Where presigned URLs point (virtual-hosted or path-style, as the SDK builds them).
      const probe = await this.directLink('probe', { filename: 'probe', contentType: 'application/octet-stream', inline: false });
      this.linkOrigin = probe ? new URL(probe.url).origin : null;
    } catch (err) {
      throw new StorageUnavailable(`cannot use ${this.where}: ${describeFailure(err, this.bucket)}`);
    }
  }

  async put(key: string, body: Readable, opts: { contentType: string; signal?: AbortSignal }): Promise<{ size: number }> {
    let size = 0;
    const count = new Transform({
      transform(chunk: Buffer, _enc, cb) {
        size += chunk.length;
        cb(null, chunk);
      },
    });
    // A failing source must fail the upload, not end it early: pipe errors through.
    body.on('error', (e) => count.destroy(e));
    body.pipe(count);
    const upload = new Upload({
      client: this.client,
      params: { Bucket: this.bucket, Key: this.objectKey(key), Body: count, ContentType: opts.contentType },
      partSize: PART_SIZE,
      queueSize: QUEUE_SIZE,
      leavePartsOnError: false, // an error aborts the multipart upload: no part is left behind
    });
    // Aborting fails the source: the upload then aborts its multipart upload before done() settles
    // (Upload.abort() would settle at once and leave that to a loop still waiting on the source).
    const onAbort = () => count.destroy(opts.signal?.reason instanceof Error ? opts.signal.reason : new Error('upload aborted'));
    if (opts.signal?.aborted) onAbort();
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    try {
      await upload.done();
      return { size };
    } catch (err) {
      body.destroy();
      // The source's own error (too large, client gone) is the reason; anything else is the store's.
      throw body.errored ?? count.errored ?? this.fail(err, `storing ${key}`);
    } finally {
      opts.signal?.removeEventListener('abort', onAbort);
    }
  }

  async putFile(key: string, file: string, opts: { contentType: string; move?: boolean }): Promise<void> {
    await this.put(key, fs.createReadStream(file), { contentType: opts.contentType });
    if (opts.move) await fs.promises.rm(file, { force: true });
  }

  async stat(key: string): Promise<StoredObject | null> {
    try {
      const h = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: this.objectKey(key) }));
      return { key, size: h.ContentLength ?? 0, lastModified: h.LastModified ?? new Date(0), etag: h.ETag ?? '""' };
    } catch (err) {
      const e = this.fail(err, `reading ${key}`, key);
      if (e instanceof StorageNotFound) return null;
      throw e;
    }
  }

  async read(key: string, range?: ByteRange): Promise<Readable> {
    try {
      const r = await this.client.send(
        new GetObjectCommand({ Bucket: this.bucket, Key: this.objectKey(key), ...(range ? { Range: `bytes=${range.start}-${range.end}` } : {}) }),
      );
      return r.Body as Readable;
    } catch (err) {
      throw this.fail(err, `reading ${key}`, key);
    }
  }

  async localCopy(key: string, dir: string): Promise<string> {
    await fs.promises.mkdir(dir, { recursive: true });
    const file = path.join(dir, path.basename(key));
    const part = `${file}.${randomUUID()}.part`;
    try {
      await pipeline(await this.read(key), fs.createWriteStream(part));
      await fs.promises.rename(part, file);
      return file;
    } catch (err) {
      await fs.promises.rm(part, { force: true });
      if (err instanceof StorageNotFound || err instanceof StorageUnavailable) throw err;
      throw this.fail(err, `reading ${key}`);
    }
  }

  async *list(prefix: string): AsyncIterable<StoredObject> {
    let token: string | undefined;
    do {
      let page;
      try {
        page = await this.client.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: this.prefix + prefix, ContinuationToken: token }));
      } catch (err) {
        throw this.fail(err, `listing ${prefix}`);
      }
      for (const o of page.Contents ?? []) {
        if (!o.Key) continue;
        yield { key: this.fromObjectKey(o.Key), size: o.Size ?? 0, lastModified: o.LastModified ?? new Date(0), etag: o.ETag ?? '""' };
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  async delete(key: string): Promise<void> {
    try {
      await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.objectKey(key) }));
    } catch (err) {
      throw this.fail(err, `deleting ${key}`);
    }
  }

  async deletePrefix(prefix: string): Promise<number> {
    if (!prefix.endsWith('/')) throw new Error(`a prefix to delete ends with "/": ${prefix}`);
    checkKey(prefix.slice(0, -1));
    let n = 0;
    let batch: string[] = [];
    const flush = async () => {
      if (!batch.length) return;
      const keys = batch;
      batch = [];
      try {
        const r = await this.client.send(new DeleteObjectsCommand({ Bucket: this.bucket, Delete: { Objects: keys.map((Key) => ({ Key })), Quiet: true } }));
        if (r.Errors?.length) throw new Error(`${r.Errors.length} objects not deleted: ${r.Errors[0]!.Code ?? ''} ${r.Errors[0]!.Message ?? ''}`);
      } catch (err) {
        throw this.fail(err, `deleting ${prefix}`);
      }
      n += keys.length;
    };
    // Listed in full first: deleting while paging could skip keys on some stores.
    for await (const o of this.list(prefix)) {
      batch.push(this.objectKey(o.key));
      if (batch.length === 1000) await flush();
    }
    await flush();
    return n;
  }

  async abortStaleUploads(olderThan: Date): Promise<number> {
    let n = 0;
    let keyMarker: string | undefined;
    let uploadIdMarker: string | undefined;
    do {
      let page;
      try {
        page = await this.client.send(new ListMultipartUploadsCommand({ Bucket: this.bucket, Prefix: this.prefix || undefined, KeyMarker: keyMarker, UploadIdMarker: uploadIdMarker }));
      } catch (err) {
        throw this.fail(err, 'listing unfinished uploads');
      }
      for (const u of page.Uploads ?? []) {
        if (!u.Key || !u.UploadId || !u.Initiated || u.Initiated >= olderThan) continue;
        try {
          await this.client.send(new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: u.Key, UploadId: u.UploadId }));
          n++;
        } catch (err) {
          throw this.fail(err, `aborting the unfinished upload of ${u.Key}`);
        }
      }
      keyMarker = page.IsTruncated ? page.NextKeyMarker : undefined;
      uploadIdMarker = page.IsTruncated ? page.NextUploadIdMarker : undefined;
    } while (keyMarker);
    return n;
  }

  async directLink(key: string, meta: DownloadMeta): Promise<DirectLink | null> {
    if (!this.directLinks) return null;
    const expiresIn = this.opts.linkExpiresSeconds;
    const url = await getSignedUrl(
      this.client,
      new GetObjectCommand({
        Bucket: this.bucket,
        Key: this.objectKey(key),
        ResponseContentDisposition: contentDisposition(meta.filename, meta.inline),
        ResponseContentType: meta.contentType,
      }),
      { expiresIn },
    );
    return { url, expiresAt: new Date(Date.now() + expiresIn * 1000) };
  }

  async close(): Promise<void> {
    this.client.destroy();
  }
}

/** One line on why an S3 call failed, for operators: unreachable, no bucket, refused credentials… */
export function describeFailure(err: unknown, bucket: string): string {
  const e = err as { name?: string; code?: string; message?: string; $metadata?: { httpStatusCode?: number }; errors?: Array<{ code?: string }> };
  const status = e.$metadata?.httpStatusCode;
  const code = e.code ?? e.errors?.[0]?.code ?? (err instanceof S3ServiceException ? undefined : e.name);
  if (code && /^(ECONNREFUSED|ENOTFOUND|EAI_AGAIN|ETIMEDOUT|ECONNRESET|EHOSTUNREACH|ENETUNREACH)$/.test(code)) return `the store cannot be reached (${code})`;
  if (e.name === 'TimeoutError') return 'the store did not answer in time';
  if (e.name === 'NoSuchBucket' || (status === 404 && !e.name?.startsWith('NoSuchKey'))) return `the bucket "${bucket}" does not exist`;
  if (e.name === 'InvalidAccessKeyId' || e.name === 'SignatureDoesNotMatch' || e.name === 'AccessDenied' || e.name === 'Forbidden' || status === 403 || status === 401) {
    return `the credentials were refused (${e.name ?? status})`;
  }
  if (e.name === 'CredentialsProviderError' || /Could not load credentials/i.test(e.message ?? '')) return 'no credentials found (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE)';
  if (/Region is missing/i.test(e.message ?? '')) return 'no region configured (set AWS_REGION)';
  return oneLine(err) + (status ? ` (HTTP ${status})` : '');
}
