// The storage conformance suite: every promise of the Storage interface, against the local
// data dir and against a real S3 server (s3rver on 127.0.0.1, started here), plus what only
// one of them has (presigned links, multipart uploads, start-up errors).
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { text } from 'node:stream/consumers';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { CreateMultipartUploadCommand, S3Client, UploadPartCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadServiceConfig } from '../src/config.ts';
import { STALE_UPLOAD_MS, sweepStorage, UPLOAD_ROW_GRACE_MS } from '../src/jobs/storage-sweep.ts';
import { readDocumentLanguage } from '../src/jobs/upload-service.ts';
import { createLogger } from '../src/log.ts';
import { isOrphanedScratch, jobPrefix, outputKey, scratchName, StorageNotFound, StorageUnavailable, uploadKey, type Storage } from '../src/storage.ts';
import { createStorage } from '../src/storage/index.ts';
import type { S3Storage } from '../src/storage/s3.ts';
import { makeEpub3 } from './helpers/make-documents.ts';
import { startS3, type TestS3 } from './helpers/s3.ts';

let s3: TestS3;
const dirs: string[] = [];
const tmpDataDir = () => {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'lectern-storage-'));
  dirs.push(d);
  return d;
};

beforeAll(async () => {
  s3 = await startS3('conformance');
});
afterAll(async () => {
  await s3?.stop();
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

type Kind = 'local' | 's3';
async function makeStorage(kind: Kind, extra: Record<string, string> = {}): Promise<Storage> {
  const env = { LECTERN_DATA_DIR: tmpDataDir(), ...(kind === 's3' ? s3.env(`run-${randomUUID().slice(0, 8)}`) : {}), ...extra };
  const storage = createStorage(loadServiceConfig({}, env));
  await storage.init();
  return storage;
}

/** A stream that yields `chunks` and then fails, as a client that goes away mid-upload. */
function failingStream(chunks: Buffer[], error: Error): Readable {
  let i = 0;
  return new Readable({
    read() {
      if (i < chunks.length) this.push(chunks[i++]);
      else this.destroy(error);
    },
  });
}

async function keysUnder(storage: Storage, prefix: string): Promise<string[]> {
  const keys: string[] = [];
  for await (const o of storage.list(prefix)) keys.push(o.key);
  return keys.sort();
}

describe.each<Kind>(['local', 's3'])('storage conformance (%s)', (kind) => {
  let storage: Storage;
  beforeAll(async () => {
    storage = await makeStorage(kind);
  });
  afterAll(async () => storage?.close());

  it('puts a stream and reads it back whole and by range, with its size, date and entity tag', async () => {
    const key = uploadKey(randomUUID(), 'txt');
    const body = Buffer.from('0123456789abcdefghij'.repeat(1000));
    const { size } = await storage.put(key, Readable.from([body.subarray(0, 7000), body.subarray(7000)]), { contentType: 'text/plain' });
    expect(size).toBe(body.length);
    const st = await storage.stat(key);
    expect(st).toMatchObject({ key, size: body.length });
    expect(st!.etag).toMatch(/^".+"$/);
    expect(Math.abs(st!.lastModified.getTime() - Date.now())).toBeLessThan(60_000);
    expect(Buffer.concat(await (await storage.read(key)).toArray())).toEqual(body);
    expect(await text(await storage.read(key, { start: 10, end: 19 }))).toBe('abcdefghij');
    expect(await storage.stat(uploadKey(randomUUID(), 'txt'))).toBeNull();
    await expect(storage.read(uploadKey(randomUUID(), 'txt'))).rejects.toBeInstanceOf(StorageNotFound);
  });

  it('stores files (copied or moved) and gives tools a local copy', async () => {
    const job = randomUUID();
    const src = path.join(tmpDataDir(), 'narration.mp3');
    fs.writeFileSync(src, 'mp3 bytes');
    await storage.putFile(outputKey(job, 'narration.mp3'), src, { contentType: 'audio/mpeg' });
    expect(fs.existsSync(src)).toBe(true);
    await storage.putFile(outputKey(job, 'pages/p1.png'), src, { contentType: 'image/png', move: true });
    expect(fs.existsSync(src)).toBe(false);
    const scratch = tmpDataDir();
    const copy = await storage.localCopy(outputKey(job, 'pages/p1.png'), scratch);
    expect(fs.readFileSync(copy, 'utf8')).toBe('mp3 bytes');
    await expect(storage.localCopy(outputKey(job, 'missing.mp3'), scratch)).rejects.toBeInstanceOf(StorageNotFound);
    expect(await keysUnder(storage, jobPrefix(job))).toEqual([outputKey(job, 'narration.mp3'), outputKey(job, 'pages/p1.png')]);
  });

  it('overwrites an object in place', async () => {
    const key = outputKey(randomUUID(), 'timeline.json');
    await storage.put(key, Readable.from([Buffer.from('first')]), { contentType: 'application/json' });
    await storage.put(key, Readable.from([Buffer.from('second version')]), { contentType: 'application/json' });
    expect(await text(await storage.read(key))).toBe('second version');
  });

  it('leaves nothing under the key, and no part, when the source fails or the put is aborted', async () => {
    const key = uploadKey(randomUUID(), 'pdf');
    // Larger than one multipart part, so the S3 store is mid-way through a multipart upload.
    const mb = Buffer.alloc(1024 * 1024, 7);
    const chunks = Array.from({ length: 12 }, () => mb);
    await expect(storage.put(key, failingStream(chunks, new Error('client went away')), { contentType: 'application/pdf' })).rejects.toThrow('client went away');
    expect(await storage.stat(key)).toBeNull();
    // A small failing source too (S3: below one part, so a single PUT that never starts).
    await expect(storage.put(key, failingStream([Buffer.from('tiny')], new Error('too large')), { contentType: 'application/pdf' })).rejects.toThrow('too large');
    expect(await storage.stat(key)).toBeNull();
    const ac = new AbortController();
    const slow = new Readable({ read() {} });
    const put = storage.put(key, slow, { contentType: 'application/pdf', signal: ac.signal });
    for (let i = 0; i < 10; i++) slow.push(mb);
    setTimeout(() => ac.abort(new Error('shutting down')), 50);
    await expect(put).rejects.toThrow();
    expect(await storage.stat(key)).toBeNull();
    if (kind === 's3') expect(s3.pendingUploads().filter((k) => k.endsWith(key))).toEqual([]);
    else expect(fs.readdirSync(storage.tmpDir).filter((f) => f.endsWith('.part'))).toEqual([]);
  });

  it('lists by prefix and deletes one object or a whole prefix', async () => {
    const a = randomUUID();
    const b = randomUUID();
    for (const name of ['one.mp3', 'two.json', 'deep/three.png']) {
      await storage.put(outputKey(a, name), Readable.from([Buffer.from(name)]), { contentType: 'application/octet-stream' });
    }
    await storage.put(outputKey(b, 'keep.mp3'), Readable.from([Buffer.from('keep')]), { contentType: 'audio/mpeg' });
    expect(await keysUnder(storage, jobPrefix(a))).toEqual(['deep/three.png', 'one.mp3', 'two.json'].map((n) => outputKey(a, n)));
    await storage.delete(outputKey(a, 'two.json'));
    await storage.delete(outputKey(a, 'never-was.json')); // deleting what is not there is no error
    expect(await storage.deletePrefix(jobPrefix(a))).toBe(2);
    expect(await keysUnder(storage, jobPrefix(a))).toEqual([]);
    expect(await keysUnder(storage, jobPrefix(b))).toEqual([outputKey(b, 'keep.mp3')]);
    expect(await storage.deletePrefix(jobPrefix(randomUUID()))).toBe(0);
  });

  it('refuses keys that leave their folder', async () => {
    expect(() => outputKey(randomUUID(), '../escape.mp3')).toThrow(/invalid storage key/);
    expect(() => outputKey(randomUUID(), '/etc/passwd')).toThrow(/invalid storage key/);
    expect(() => jobPrefix('../x')).toThrow(/invalid job id/);
    await expect(storage.stat('uploads/../../x')).rejects.toThrow(/invalid storage key/);
  });

  it('sweeps the objects of deleted jobs and uploads, keeps young uploads, aborts stale unfinished uploads', async () => {
    const storage = await makeStorage(kind); // a store of its own: the other cases' objects have no rows
    const live = randomUUID();
    const gone = randomUUID();
    const liveUpload = randomUUID();
    const goneUpload = randomUUID();
    for (const [k, v] of [
      [outputKey(live, 'narration.mp3'), 'a'],
      [outputKey(gone, 'narration.mp3'), 'b'],
      [outputKey(gone, 'book.epub'), 'c'],
      [uploadKey(liveUpload, 'md'), 'd'],
      [uploadKey(goneUpload, 'md'), 'e'],
    ] as const) {
      await storage.put(k, Readable.from([Buffer.from(v)]), { contentType: 'application/octet-stream' });
    }
    const jobs = {
      getJob: async (id: string) => (id === live ? ({ id } as never) : null),
      getUpload: async (id: string) => (id === liveUpload ? ({ id } as never) : null),
    };
    // Now: the job without a row goes at once; an upload's object without a row may still get one.
    const first = await sweepStorage(storage, jobs, new Date());
    expect(first).toEqual({ jobs: 1, uploads: 0, aborted: 0 });
    expect(await keysUnder(storage, jobPrefix(gone))).toEqual([]);
    expect(await keysUnder(storage, jobPrefix(live))).toEqual([outputKey(live, 'narration.mp3')]);
    expect(await storage.stat(uploadKey(goneUpload, 'md'))).not.toBeNull();
    // Past the grace period, and an unfinished upload from over a day before that.
    const later = new Date(Date.now() + UPLOAD_ROW_GRACE_MS + 1000);
    const stale = await makeStaleUpload(kind, storage, s3, new Date(later.getTime() - STALE_UPLOAD_MS - 60_000));
    const fresh = await makeStaleUpload(kind, storage, s3, new Date(later.getTime() - STALE_UPLOAD_MS + 60_000));
    const second = await sweepStorage(storage, jobs, later);
    expect(second).toEqual({ jobs: 0, uploads: 1, aborted: 1 });
    expect(await storage.stat(uploadKey(goneUpload, 'md'))).toBeNull();
    expect(await storage.stat(uploadKey(liveUpload, 'md'))).not.toBeNull();
    expect(stale()).toBe(false);
    expect(fresh()).toBe(true);
    await storage.close();
  });
});

/** Leaves an unfinished upload dated `at`, as a process that died mid-upload would; returns whether it is still there. */
async function makeStaleUpload(kind: Kind, storage: Storage, s3: TestS3, at: Date): Promise<() => boolean> {
  if (kind === 'local') {
    const f = path.join(storage.tmpDir, `x.${randomUUID()}.part`);
    fs.writeFileSync(f, 'partial');
    fs.utimesSync(f, at, at);
    return () => fs.existsSync(f);
  }
  const client = new S3Client({ endpoint: s3.endpoint, forcePathStyle: true, region: 'us-east-1', credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } });
  const Key = `${(storage as S3Storage).prefix}${uploadKey(randomUUID(), 'mp4')}`;
  const { UploadId } = await client.send(new CreateMultipartUploadCommand({ Bucket: s3.bucket, Key }));
  await client.send(new UploadPartCommand({ Bucket: s3.bucket, Key, UploadId, PartNumber: 1, Body: Buffer.alloc(1024, 1) }));
  client.destroy();
  const d = path.join(s3.dir, s3.bucket, '._S3rver_uploads', UploadId!);
  fs.utimesSync(d, at, at); // s3rver dates an upload by its folder
  return () => fs.existsSync(d);
}

describe('local store specifics', () => {
  it('leaves no .part file when puts are aborted while the fs thread pool is busy (the file opens after the abort)', async () => {
    const storage = await makeStorage('local');
    const { pbkdf2 } = await import('node:crypto');
    // measured before the fix: 3 of 300 such puts left their .part behind
    for (let i = 0; i < 300; i++) {
      for (let j = 0; j < 6; j++) pbkdf2(String(j), 's', 20000, 32, 'sha256', () => {}); // keep libuv's threads busy
      const ac = new AbortController();
      const body = new Readable({ read() {} });
      const put = storage.put(uploadKey(randomUUID(), 'pdf'), body, { contentType: 'application/pdf', signal: ac.signal });
      body.push(Buffer.alloc(1 << 20));
      if (i % 2) ac.abort(new Error('now'));
      else setImmediate(() => ac.abort(new Error('soon')));
      await expect(put).rejects.toThrow();
    }
    expect(fs.readdirSync(storage.tmpDir).filter((f) => f.endsWith('.part'))).toEqual([]);
  }, 60_000);
});

describe('S3 store specifics', () => {
  it('presigns a GET that carries the file name, type and expiry, and serves the bytes', async () => {
    const storage = await makeStorage('s3', { LECTERN_STORAGE_LINK_EXPIRES_S: '120' });
    const key = outputKey(randomUUID(), 'narration.mp3');
    await storage.put(key, Readable.from([Buffer.from('ID3 audio')]), { contentType: 'audio/mpeg' });
    const link = await storage.directLink(key, { filename: 'Mon livre.mp3', contentType: 'audio/mpeg', inline: false });
    expect(link).not.toBeNull();
    const u = new URL(link!.url);
    expect(u.origin).toBe(s3.endpoint);
    expect(u.pathname).toBe(`/${s3.bucket}/${u.pathname.split('/').slice(2).join('/')}`); // path-style
    expect(u.searchParams.get('X-Amz-Expires')).toBe('120');
    expect(u.searchParams.get('response-content-type')).toBe('audio/mpeg');
    expect(u.searchParams.get('response-content-disposition')).toBe(`attachment; filename="Mon livre.mp3"; filename*=UTF-8''Mon%20livre.mp3`);
    expect(Math.abs(link!.expiresAt.getTime() - (Date.now() + 120_000))).toBeLessThan(5000);
    const res = await fetch(link!.url);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('audio/mpeg');
    expect(res.headers.get('content-disposition')).toContain('Mon%20livre.mp3');
    expect(await res.text()).toBe('ID3 audio');
    await storage.close();
  });

  it('proxy mode gives no direct link; the local store never does', async () => {
    const proxy = await makeStorage('s3', { LECTERN_STORAGE_DOWNLOAD: 'proxy' });
    expect(await proxy.directLink(outputKey(randomUUID(), 'a.mp3'), { filename: 'a.mp3', contentType: 'audio/mpeg', inline: false })).toBeNull();
    const local = await makeStorage('local');
    expect(await local.directLink(outputKey(randomUUID(), 'a.mp3'), { filename: 'a.mp3', contentType: 'audio/mpeg', inline: false })).toBeNull();
    await proxy.close();
  });

  it('stores a stream larger than a part as a multipart upload, and completes it', async () => {
    const storage = await makeStorage('s3');
    const key = uploadKey(randomUUID(), 'mp4');
    const total = 20 * 1024 * 1024 + 123; // three parts of 8 MiB at most
    const chunk = Buffer.alloc(256 * 1024, 3);
    let sent = 0;
    const src = new Readable({
      read() {
        if (sent >= total) return void this.push(null);
        const n = Math.min(chunk.length, total - sent);
        sent += n;
        this.push(chunk.subarray(0, n));
      },
    });
    expect(await storage.put(key, src, { contentType: 'video/mp4' })).toEqual({ size: total });
    expect((await storage.stat(key))!.size).toBe(total);
    let read = 0;
    for await (const c of await storage.read(key)) read += (c as Buffer).length;
    expect(read).toBe(total);
    expect(s3.pendingUploads().filter((k) => k.endsWith(key))).toEqual([]);
    await storage.close();
  });

  it('start-up names the bucket and endpoint: missing bucket, unreachable store, refused credentials', async () => {
    const missing = createStorage(loadServiceConfig({}, { LECTERN_DATA_DIR: tmpDataDir(), ...s3.env(), LECTERN_STORAGE_URL: 's3://no-such-bucket' }));
    const e1 = await missing.init().catch((e: unknown) => e);
    expect(e1).toBeInstanceOf(StorageUnavailable);
    expect((e1 as Error).message).toBe(`cannot use bucket "no-such-bucket" at ${s3.endpoint}: the bucket "no-such-bucket" does not exist`);

    const down = createStorage(loadServiceConfig({}, { LECTERN_DATA_DIR: tmpDataDir(), ...s3.env(), AWS_ENDPOINT_URL_S3: 'http://127.0.0.1:9' }));
    const e2 = await down.init().catch((e: unknown) => e);
    expect((e2 as Error).message).toBe(`cannot use bucket "${s3.bucket}" at http://127.0.0.1:9: the store cannot be reached (ECONNREFUSED)`);

    const refused = createStorage(loadServiceConfig({}, { LECTERN_DATA_DIR: tmpDataDir(), ...s3.env(), AWS_ACCESS_KEY_ID: 'WRONG', AWS_SECRET_ACCESS_KEY: 'WRONG' }));
    const e3 = await refused.init().catch((e: unknown) => e);
    expect((e3 as Error).message).toMatch(new RegExp(`^cannot use bucket "${s3.bucket}" at ${s3.endpoint.replace(/\./g, '\\.')}: the credentials were refused`));
    for (const s of [missing, down, refused]) await s.close();
  });

  it("a document's language is read again when the store cuts a ranged body; a read that keeps failing is a warning, a bad document is not", async () => {
    // A proxy in front of s3rver that cuts the body of ranged GETs mid-way (a dropped connection,
    // which the SDK does not retry once the headers have come): `cuts` of them, then it forwards.
    let cuts = 0;
    const target = new URL(s3.endpoint);
    const proxy = http.createServer((req, res) => {
      const up = http.request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers }, (r) => {
        res.writeHead(r.statusCode!, r.headers);
        if (req.method === 'GET' && req.headers.range && cuts > 0) {
          cuts--;
          r.once('data', (b: Buffer) => res.write(b.subarray(0, Math.ceil(b.length / 2)), () => res.destroy()));
        } else r.pipe(res);
      });
      req.pipe(up);
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    const storage = await makeStorage('s3', { AWS_ENDPOINT_URL_S3: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}` });
    const lines: { level: number; msg: string; err?: string }[] = [];
    const log = createLogger('debug', 'test', { write: (l: string) => void lines.push(JSON.parse(l)) });
    const epub = (id: string) => ({ id, path: uploadKey(id, 'epub'), content_type: 'application/epub+zip' });
    const book = epub(randomUUID());
    await storage.put(book.path, Readable.from([makeEpub3({ title: 'Le livre', author: 'A. Auteur', language: 'fr_CA', chapters: [{ title: 'Un', paragraphs: ['Il était une fois.'] }] })]), { contentType: book.content_type });

    cuts = 1;
    expect(await readDocumentLanguage(storage, book, log)).toBe('fr-CA');
    expect(cuts).toBe(0);
    expect(lines.filter((l) => l.level >= 40)).toEqual([]);

    cuts = 1000;
    expect(await readDocumentLanguage(storage, book, log)).toBeNull();
    expect(lines.filter((l) => l.level >= 40)).toEqual([expect.objectContaining({ msg: expect.stringMatching(/could not be read; job creation will read it again/), err: expect.stringMatching(/^object store unavailable while reading .*: aborted$/) })]);

    cuts = 0;
    lines.length = 0;
    const broken = epub(randomUUID());
    await storage.put(broken.path, Readable.from([Buffer.from('PK\x03\x04 not really a zip')]), { contentType: broken.content_type });
    expect(await readDocumentLanguage(storage, broken, log)).toBeNull();
    expect(lines.map((l) => [l.level, l.msg])).toEqual([[20, 'no declared language read from the document']]);
    await storage.close();
    await new Promise((r) => proxy.close(r));
  });

  it('at request time an unreachable store is a 503 error naming it', async () => {
    const storage = createStorage(loadServiceConfig({}, { LECTERN_DATA_DIR: tmpDataDir(), ...s3.env(), AWS_ENDPOINT_URL_S3: 'http://127.0.0.1:9' }));
    const e = await storage.stat(outputKey(randomUUID(), 'a.mp3')).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(StorageUnavailable);
    expect((e as StorageUnavailable).statusCode).toBe(503);
    expect((e as Error).message).toContain('http://127.0.0.1:9');
    await storage.close();
  });

  it('start-up cleans only the scratch entries of processes that are gone', async () => {
    const { spawnSync } = await import('node:child_process');
    const dead = spawnSync(process.execPath, ['-e', '0']).pid!;
    const mine = scratchName('job-x');
    expect(isOrphanedScratch(mine)).toBe(false); // this process is alive
    expect(isOrphanedScratch(mine.replace(`_${process.pid}@`, `_${dead}@`))).toBe(true);
    expect(isOrphanedScratch(mine.replace(`@${os.hostname()}_`, '@another-host_'))).toBe(false);
    expect(isOrphanedScratch('1234-legacy.upload')).toBe(true);
  });

  it('refuses malformed storage settings at configuration', () => {
    expect(() => loadServiceConfig({}, { LECTERN_STORAGE_URL: 'http://bucket' })).toThrow(/LECTERN_STORAGE_URL must be s3:\/\/BUCKET/);
    expect(() => loadServiceConfig({}, { LECTERN_STORAGE_URL: 's3://B' })).toThrow(/LECTERN_STORAGE_URL/);
    expect(() => loadServiceConfig({}, { LECTERN_STORAGE_URL: 's3://bucket/a/../b' })).toThrow(/invalid prefix/);
    expect(() => loadServiceConfig({}, { LECTERN_STORAGE_DOWNLOAD: 'stream' })).toThrow(/redirect or proxy/);
    const c = loadServiceConfig({}, { LECTERN_STORAGE_URL: 's3://my.bucket/lectern/prod/', AWS_ENDPOINT_URL: 'http://minio:9000' });
    expect(c.storage.s3).toMatchObject({ bucket: 'my.bucket', prefix: 'lectern/prod', endpoint: 'http://minio:9000', credentials: null });
    expect(loadServiceConfig({}, {}).storage.s3).toBeNull();
  });
});
