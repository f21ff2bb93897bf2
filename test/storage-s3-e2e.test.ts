// Lectern on an S3-compatible store, end to end: the API and two `lectern worker` processes,
// each with its own empty data dir and no folder in common, on PostgreSQL + Redis + s3rver
// (a real S3 server on 127.0.0.1, started here). Then the other download kinds (proxy mode,
// the local store's conditional requests), and the store failing at start-up and at request time.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../src/config.ts';
import { INTERNAL } from '../src/core/caller.ts';
import type { RunningService } from '../src/service.ts';
import { jobPrefix, outputKey, type Storage } from '../src/storage.ts';
import { makeEpub3 } from './helpers/make-documents.ts';
import { startS3, type TestS3 } from './helpers/s3.ts';
import { json, testEnv, upload, waitFor, type TestEnv } from './helpers/service.ts';

/** One distinct sentence per paragraph: long enough to be mid-synthesis when the store goes away. */
function longDocument(n: number): string {
  const words = ['amber', 'river', 'quiet', 'lantern', 'harbour', 'meadow', 'copper', 'whistle', 'orchard', 'ledger'];
  return Array.from({ length: n }, (_, i) => `Sentence ${i + 1} keeps the ${words[i % 10]} beside the ${words[(i * 7) % 10]} and the ${words[(i * 3) % 10]}.`).join('\n\n');
}

const DOC = '# Stored elsewhere\n\nThe narration of this page is made on one machine and kept in a bucket.\n\nA second paragraph gives the reader a little more to hear.\n';

let s3: TestS3;
const envs: TestEnv[] = [];
const children: ChildProcess[] = [];
const scratchDirs: string[] = [];

beforeAll(async () => {
  s3 = await startS3('lectern-e2e');
});
afterAll(async () => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  for (const t of envs) await t.cleanup();
  for (const d of scratchDirs) fs.rmSync(d, { recursive: true, force: true });
  await s3?.stop();
});

function emptyDir(label: string): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), `lectern-${label}-`));
  scratchDirs.push(d);
  return d;
}

/** `lectern worker|serve` as its own process; resolves once it logs `ready` (or fails with its stderr). */
function spawnLectern(args: string[], env: Record<string, string>): { child: ChildProcess; stderr: () => string; exited: Promise<number | null> } {
  const child = spawn(process.execPath, [path.join(PROJECT_ROOT, 'bin/lectern.js'), ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
  children.push(child);
  let err = '';
  child.stderr!.on('data', (b: Buffer) => (err += b.toString()));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  return { child, stderr: () => err, exited };
}

async function keysUnder(storage: Storage, prefix: string): Promise<string[]> {
  const keys: string[] = [];
  for await (const o of storage.list(prefix)) keys.push(o.key);
  return keys.sort();
}

function filesUnder(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return (fs.readdirSync(dir, { recursive: true }) as string[]).filter((f) => fs.statSync(path.join(dir, f)).isFile());
}

describe('S3 store, distributed: API + two workers with no shared disk', () => {
  let t: TestEnv;
  let api: RunningService;
  let workerDirs: string[];

  beforeAll(async () => {
    t = testEnv('distributed', 's3_e2e');
    envs.push(t);
    const storeEnv = s3.env('lectern');
    const webDir = emptyDir('web');
    fs.writeFileSync(path.join(webDir, 'index.html'), '<!doctype html><title>app</title>');
    api = await t.start({ ...storeEnv, LECTERN_NO_EMBEDDED_WORKER: '1', LECTERN_WEB_DIR: webDir });
    workerDirs = [emptyDir('worker-a'), emptyDir('worker-b')];
    for (const dir of workerDirs) spawnLectern(['worker'], { ...t.env, ...storeEnv, LECTERN_DATA_DIR: dir, LECTERN_LOG_LEVEL: 'warn' });
  }, 120_000);
  afterAll(async () => {
    for (const c of children) c.kill('SIGTERM');
    await api?.close();
  });

  it('runs a job on a worker; the download redirects to the store and the bytes are the output; DELETE empties its prefix', { timeout: 180_000 }, async () => {
    const doc = await upload(api.url, 'stored.md', DOC);
    expect(doc.status).toBe(201);
    const created = await json(api.url, 'POST', '/api/jobs', { pipeline_type: 'audio', uploaded_file_id: doc.body.id });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    const job = await waitFor(async () => {
      const j = (await json(api.url, 'GET', `/api/jobs/${id}`)).body;
      return j.status === 'completed' || j.status === 'failed' ? j : null;
    }, 150_000, 'the job');
    expect(job.error).toBeNull();
    expect(job.status).toBe('completed');

    // Every output is in the bucket under the job's prefix; no data dir holds one.
    expect(await keysUnder(api.storage, jobPrefix(id))).toEqual(['narration.mp3', 'narration.vtt', 'timeline.json'].map((f) => outputKey(id, f)));
    expect(fs.existsSync(path.join(s3.dir, s3.bucket, 'lectern', 'outputs', id))).toBe(true);
    for (const dir of [...workerDirs, t.dataDir]) {
      expect(filesUnder(path.join(dir, 'outputs'))).toEqual([]);
      expect(filesUnder(path.join(dir, 'uploads'))).toEqual([]);
      expect(filesUnder(path.join(dir, 'tmp'))).toEqual([]); // scratch removed when the job ended
    }
    // One of the workers made it (its chunk cache holds the narration), the API did not.
    const cached = workerDirs.map((d) => filesUnder(path.join(d, 'cache', 'tts')).length);
    expect(cached.some((n) => n > 0)).toBe(true);
    expect(filesUnder(path.join(t.dataDir, 'cache', 'tts'))).toEqual([]);

    // The download: 302 to a presigned GET of the store, which names the file and types it.
    const res = await fetch(`${api.url}/api/jobs/${id}/download`, { redirect: 'manual' });
    expect(res.status).toBe(302);
    const location = new URL(res.headers.get('location')!);
    expect(location.origin).toBe(s3.endpoint);
    expect(location.pathname).toBe(`/${s3.bucket}/lectern/outputs/${id}/narration.mp3`);
    expect(location.searchParams.get('X-Amz-Expires')).toBe('300');
    expect(location.searchParams.get('response-content-disposition')).toBe(`attachment; filename="stored.mp3"; filename*=UTF-8''stored.mp3`);
    const fromStore = await fetch(location);
    expect(fromStore.status).toBe(200);
    expect(fromStore.headers.get('content-type')).toBe('audio/mpeg');
    const bytes = Buffer.from(await fromStore.arrayBuffer());
    const stored = Buffer.concat(await (await api.storage.read(outputKey(id, 'narration.mp3'))).toArray());
    expect(bytes.equals(stored)).toBe(true);
    expect(bytes.length).toBeGreaterThan(10_000);
    expect(bytes.subarray(0, 3).toString('latin1') === 'ID3' || (bytes[0] === 0xff && (bytes[1]! & 0xe0) === 0xe0)).toBe(true);

    // As JSON (what the web app asks for): the same link, with its expiry; JSON files come through the API.
    const link = await fetch(`${api.url}/api/jobs/${id}/files/narration.mp3`, { headers: { accept: 'application/json' } });
    expect(link.status).toBe(200);
    const body = (await link.json()) as { url: string; expires_at: string; filename: string; content_type: string };
    expect(body).toMatchObject({ filename: 'narration.mp3', content_type: 'audio/mpeg' });
    expect(new URL(body.url).searchParams.get('response-content-disposition')).toMatch(/^inline; filename="narration.mp3"/);
    expect(Math.abs(Date.parse(body.expires_at) - (Date.now() + 300_000))).toBeLessThan(30_000);
    const timeline = await fetch(`${api.url}/api/jobs/${id}/files/timeline.json`, { headers: { accept: 'application/json' } });
    expect(timeline.status).toBe(200);
    expect(((await timeline.json()) as { words: unknown[] }).words.length).toBeGreaterThan(10);
    // Without Accept: application/json a JSON file redirects like any other.
    expect((await fetch(`${api.url}/api/jobs/${id}/files/timeline.json`, { redirect: 'manual' })).status).toBe(302);

    // The upload's bytes, too, come from the store.
    const up = await fetch(`${api.url}/api/uploads/${doc.body.id}/file`, { redirect: 'manual' });
    expect(up.status).toBe(302);
    expect(await (await fetch(up.headers.get('location')!)).text()).toBe(DOC);

    // DELETE: the row, then every object under the job's prefix.
    expect((await json(api.url, 'DELETE', `/api/jobs/${id}`)).status).toBe(200);
    expect(await keysUnder(api.storage, jobPrefix(id))).toEqual([]);
    expect((await fetch(`${api.url}/api/jobs/${id}/download`, { redirect: 'manual' })).status).toBe(404);
  });

  it('exports an EPUB on a worker from the narration in the store; its download redirects too', { timeout: 180_000 }, async () => {
    // A finished lip-sync reader job whose narration a worker made (an audio job's real files).
    const doc = await upload(api.url, 'reader.md', DOC);
    const audio = await json(api.url, 'POST', '/api/jobs', { pipeline_type: 'audio', uploaded_file_id: doc.body.id });
    await waitFor(async () => (await json(api.url, 'GET', `/api/jobs/${audio.body.id}`)).body.status === 'completed', 150_000, 'the narration');
    const id = randomUUID();
    await api.stores.jobs.createJob({
      id,
      pipeline_type: 'lipsync',
      config_json: {
        pipeline_type: 'lipsync',
        uploaded_file_id: String(doc.body.id),
        language: 'en-US',
        voice_id: null,
        ref_audio_file_id: null,
        ref_text: null,
        ref_video_file_id: null,
        title: null,
        options: { format: 'reader', speed: 1 },
        document: { original_name: 'reader.md', content_type: 'text/markdown' },
        created_by: null,
        request_id: null,
      },
      upload_ids: [String(doc.body.id)],
      owner: null,
    }, INTERNAL);
    await api.stores.jobs.updateJob(id, { status: 'completed', finished_at: new Date().toISOString() });
    for (const f of ['narration.mp3', 'timeline.json']) {
      await api.storage.put(outputKey(id, f), await api.storage.read(outputKey(audio.body.id, f)), { contentType: 'application/octet-stream' });
    }

    expect((await json(api.url, 'POST', `/api/jobs/${id}/export-epub`)).status).toBe(202);
    const state = await waitFor(async () => {
      const s = (await json(api.url, 'GET', `/api/jobs/${id}/export-epub/status`)).body;
      return s.export_status === 'done' || s.export_status === 'failed' ? s : null;
    }, 120_000, 'the export');
    expect(state).toMatchObject({ export_status: 'done', export_error: null });
    const res = await fetch(`${api.url}/api/jobs/${id}/export-epub/download`, { redirect: 'manual' });
    expect(res.status).toBe(302);
    const loc = new URL(res.headers.get('location')!);
    expect(loc.pathname).toBe(`/${s3.bucket}/lectern/outputs/${id}/book.epub`);
    expect(loc.searchParams.get('response-content-type')).toBe('application/epub+zip');
    expect(loc.searchParams.get('response-content-disposition')).toContain('filename="reader.epub"');
    const epub = Buffer.from(await (await fetch(loc)).arrayBuffer());
    expect(epub.subarray(30, 58).toString('latin1')).toBe('mimetypeapplication/epub+zip');
    for (const dir of workerDirs) expect(filesUnder(path.join(dir, 'tmp'))).toEqual([]);
  });

  it("a voice's sample is put in the bucket once and redirected to, like every download", { timeout: 60_000 }, async () => {
    const res = await fetch(`${api.url}/api/voices/espeak-en-us/audio`, { redirect: 'manual' });
    expect(res.status).toBe(302);
    const loc = new URL(res.headers.get('location')!);
    expect(loc.pathname).toMatch(new RegExp(`^/${s3.bucket}/lectern/voice-samples/[0-9a-f]{40}\\.wav$`));
    expect(loc.searchParams.get('response-content-type')).toBe('audio/wav');
    expect(loc.searchParams.get('response-content-disposition')).toMatch(/^inline; filename="espeak-en-us.wav"/);
    const wav = Buffer.from(await (await fetch(loc)).arrayBuffer());
    expect(wav.subarray(0, 4).toString('latin1')).toBe('RIFF');
    const again = await fetch(`${api.url}/api/voices/espeak-en-us/audio`, { headers: { accept: 'application/json' } });
    expect(new URL(((await again.json()) as { url: string }).url).pathname).toBe(loc.pathname); // the same object
    expect(await keysUnder(api.storage, 'voice-samples/')).toHaveLength(1);
  });

  it("the web app may play media from the store's origin, and from nowhere else new", async () => {
    const res = await fetch(`${api.url}/`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-security-policy')).toContain(`media-src 'self' blob: ${s3.endpoint};`);
    expect(res.headers.get('content-security-policy')).toContain("connect-src 'self';");
  });

  it("a document's declared language is read from the bucket at upload, in ranges: no scratch copy", async () => {
    const epub = makeEpub3({ title: 'Le livre', author: 'A. Auteur', language: 'fr_CA', chapters: [{ title: 'Un', paragraphs: ['Il était une fois.'] }] });
    const r = await upload(api.url, 'livre.epub', epub);
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ kind: 'document', language: 'fr-CA' });
    expect(fs.readdirSync(api.storage.tmpDir).filter((f) => f.startsWith(`language-${r.body.id}`))).toEqual([]);
  });

  it('an upload the client aborts leaves no object, no part and no row', { timeout: 60_000 }, async () => {
    const before = await keysUnder(api.storage, 'uploads/');
    const boundary = `----lectern${randomUUID()}`;
    const total = 40 * 1024 * 1024;
    const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.pdf"\r\nContent-Type: application/pdf\r\n\r\n%PDF-1.7\n`);
    const u = new URL(api.url);
    const req = http.request({ host: u.hostname, port: u.port, path: '/api/uploads', method: 'POST', headers: { 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': head.length + total + 100 } });
    req.on('error', () => undefined);
    req.write(head);
    const mb = Buffer.alloc(1024 * 1024, 0x20);
    // More than a multipart part (8 MiB) reaches the store before the client goes away.
    for (let i = 0; i < 20; i++) await new Promise<void>((r) => (req.write(mb) ? r() : req.once('drain', () => r())));
    await waitFor(async () => s3.pendingUploads().some((k) => k.startsWith('lectern/uploads/')), 20_000, 'the multipart upload to start');
    req.destroy();
    await waitFor(async () => !s3.pendingUploads().some((k) => k.startsWith('lectern/uploads/')), 20_000, 'the multipart upload to be aborted');
    expect(await keysUnder(api.storage, 'uploads/')).toEqual(before);
    const rows = await api.stores.jobs.countActiveJobs(null); // the store still answers
    expect(typeof rows).toBe('number');
    // No upload row: every object under uploads/ is an upload the test made, and each has its row.
    for (const k of await keysUnder(api.storage, 'uploads/')) expect(await api.stores.jobs.getUpload(path.basename(k).split('.')[0]!, INTERNAL)).not.toBeNull();
  });

  it('refused uploads (type, size) never start an object', async () => {
    const before = await keysUnder(api.storage, 'uploads/');
    const html = await upload(api.url, 'page.html', '<!doctype html><html><body>hi</body></html>');
    expect(html.status).toBe(415);
    const small = await t.start({ ...s3.env('lectern'), LECTERN_NO_EMBEDDED_WORKER: '1', LECTERN_MAX_UPLOAD_BYTES: String(9 * 1024 * 1024) });
    try {
      const big = await upload(small.url, 'big.pdf', Buffer.concat([Buffer.from('%PDF-1.7\n'), Buffer.alloc(10 * 1024 * 1024, 0x20)]));
      expect(big.status).toBe(413);
    } finally {
      await small.close();
    }
    expect(await keysUnder(api.storage, 'uploads/')).toEqual(before);
    expect(s3.pendingUploads().filter((k) => k.startsWith('lectern/uploads/'))).toEqual([]);
  });
});

describe('S3 store: proxy mode, failures', () => {
  it('proxy mode streams the bytes through the API with Range and conditional requests', { timeout: 120_000 }, async () => {
    const t = testEnv('embedded', 's3_proxy');
    envs.push(t);
    const svc = await t.start({ ...s3.env('proxy'), LECTERN_STORAGE_DOWNLOAD: 'proxy' });
    try {
      const doc = await upload(svc.url, 'proxied.md', DOC);
      const res = await fetch(`${svc.url}/api/uploads/${doc.body.id}/file`, { redirect: 'manual' });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-disposition')).toBe(`attachment; filename="proxied.md"; filename*=UTF-8''proxied.md`);
      expect(await res.text()).toBe(DOC);
      const etag = res.headers.get('etag')!;
      expect(etag).toMatch(/^".+"$/);
      const part = await fetch(`${svc.url}/api/uploads/${doc.body.id}/file`, { headers: { range: 'bytes=2-7' } });
      expect(part.status).toBe(206);
      expect(part.headers.get('content-range')).toBe(`bytes 2-7/${Buffer.byteLength(DOC)}`);
      expect(await part.text()).toBe(DOC.slice(2, 8));
      expect((await fetch(`${svc.url}/api/uploads/${doc.body.id}/file`, { headers: { 'if-none-match': etag } })).status).toBe(304);
      // JSON asked for, but there is no link to give in proxy mode: the bytes.
      const asJson = await fetch(`${svc.url}/api/uploads/${doc.body.id}/file`, { headers: { accept: 'application/json' } });
      expect(await asJson.text()).toBe(DOC);
    } finally {
      await svc.close();
    }
  });

  it('`serve` and `worker` refuse to start on a missing bucket or an unreachable store, naming both', { timeout: 60_000 }, async () => {
    const dir = emptyDir('badstore');
    const missing = spawnLectern(['serve'], { ...s3.env(), LECTERN_STORAGE_URL: 's3://no-such-bucket/x', LECTERN_DATA_DIR: dir, LECTERN_PORT: '0' });
    expect(await missing.exited).toBe(1);
    expect(missing.stderr()).toContain(`lectern: cannot use bucket "no-such-bucket" (prefix x/) at ${s3.endpoint}: the bucket "no-such-bucket" does not exist`);
    expect(missing.stderr()).not.toMatch(/\n\s+at /); // no stack trace
    const down = spawnLectern(['worker'], { ...s3.env(), AWS_ENDPOINT_URL_S3: 'http://127.0.0.1:9', LECTERN_DATA_DIR: dir });
    expect(await down.exited).toBe(1);
    expect(down.stderr()).toContain(`lectern: cannot use bucket "${s3.bucket}" at http://127.0.0.1:9: the store cannot be reached (ECONNREFUSED)`);
  });

  it('a store that goes away: 503 with a detail at request time; a job whose outputs cannot be stored fails saying why, and runs again once it is back', { timeout: 180_000 }, async () => {
    const own = await startS3('lectern-flaky');
    const t = testEnv('embedded', 's3_down');
    envs.push(t);
    const svc = await t.start(own.env());
    try {
      const doc = await upload(svc.url, 'gone.md', DOC);
      expect(doc.status).toBe(201);
      const first = await json(svc.url, 'POST', '/api/jobs', { pipeline_type: 'audio', uploaded_file_id: doc.body.id });
      const done = await waitFor(async () => {
        const j = (await json(svc.url, 'GET', `/api/jobs/${first.body.id}`)).body;
        return j.status === 'completed' ? j : null;
      }, 120_000, 'the first job');
      expect(done.status).toBe('completed');
      // A longer document: the store goes away while the worker speaks it, after its input was fetched.
      const long = await upload(svc.url, 'long.txt', longDocument(80));
      const second = await json(svc.url, 'POST', '/api/jobs', { pipeline_type: 'audio', uploaded_file_id: long.body.id });
      expect(second.status).toBe(201);
      await waitFor(async () => (await json(svc.url, 'GET', `/api/jobs/${second.body.id}`)).body.progress?.phase === 'synthesize', 60_000, 'the job to be speaking');
      const port = new URL(own.endpoint).port;
      // Stop the store, keeping its folder, and bring another up later on the same port and folder.
      const keep = emptyDir('s3-keep');
      fs.cpSync(own.dir, keep, { recursive: true });
      await own.stop();
      const failed = await waitFor(async () => {
        const j = (await json(svc.url, 'GET', `/api/jobs/${second.body.id}`)).body;
        return j.status === 'failed' || j.status === 'completed' ? j : null;
      }, 120_000, 'the job to end');
      expect(failed.status).toBe('failed');
      expect(failed.error).toMatch(/^could not store the job's output narration\.mp3 in bucket "lectern-flaky" at http:\/\/127\.0\.0\.1:\d+: object store unavailable while storing outputs\/.+: the store cannot be reached \(ECONNREFUSED\)/);

      const dl = await json(svc.url, 'GET', `/api/jobs/${first.body.id}/download`);
      expect(dl.status).toBe(503);
      expect(dl.body.detail).toMatch(/^object store unavailable while reading outputs\/.+narration\.mp3: the store cannot be reached \(ECONNREFUSED\) \(bucket "lectern-flaky" at http:\/\/127\.0\.0\.1:\d+\)$/);
      const up = await upload(svc.url, 'later.md', DOC);
      expect(up.status).toBe(503);
      expect(String(up.body.detail)).toContain('bucket "lectern-flaky"');

      // Back: the same request runs again and completes.
      const again = await restartS3On(keep, 'lectern-flaky', Number(port));
      try {
        const retry = await json(svc.url, 'POST', '/api/jobs', { pipeline_type: 'audio', uploaded_file_id: long.body.id });
        const ok = await waitFor(async () => {
          const j = (await json(svc.url, 'GET', `/api/jobs/${retry.body.id}`)).body;
          return j.status === 'completed' || j.status === 'failed' ? j : null;
        }, 120_000, 'the job run again');
        expect(ok.status).toBe('completed');
      } finally {
        await again.stop();
      }
    } finally {
      await svc.close();
    }
  });
});

describe('local store: conditional requests', () => {
  it('answers If-None-Match and If-Modified-Since with 304 and honours If-Range', async () => {
    const t = testEnv('embedded', 'local_cond');
    envs.push(t);
    const svc = await t.start({ LECTERN_NO_EMBEDDED_WORKER: '1' });
    try {
      const doc = await upload(svc.url, 'cond.md', DOC);
      const url = `${svc.url}/api/uploads/${doc.body.id}/file`;
      const res = await fetch(url);
      expect(res.status).toBe(200);
      const etag = res.headers.get('etag')!;
      const modified = res.headers.get('last-modified')!;
      expect(etag).toMatch(/^"[0-9a-f]+-[0-9a-f]+"$/);
      expect((await fetch(url, { headers: { 'if-none-match': etag } })).status).toBe(304);
      expect((await fetch(url, { headers: { 'if-none-match': `"other", ${etag}` } })).status).toBe(304);
      expect((await fetch(url, { headers: { 'if-none-match': '"other"' } })).status).toBe(200);
      expect((await fetch(url, { headers: { 'if-modified-since': modified } })).status).toBe(304);
      expect((await fetch(url, { headers: { 'if-modified-since': new Date(Date.parse(modified) - 5000).toUTCString() } })).status).toBe(200);
      const ranged = await fetch(url, { headers: { range: 'bytes=0-3', 'if-range': etag } });
      expect(ranged.status).toBe(206);
      expect(await ranged.text()).toBe(DOC.slice(0, 4));
      const stale = await fetch(url, { headers: { range: 'bytes=0-3', 'if-range': '"old"' } });
      expect(stale.status).toBe(200);
      expect(await stale.text()).toBe(DOC);
      // The local store never redirects, whatever the client accepts.
      expect((await fetch(url, { headers: { accept: 'application/json' }, redirect: 'manual' })).status).toBe(200);

      // OpenAPI documents both kinds on every download route.
      const openapi = (await json(svc.url, 'GET', '/openapi.json')).body;
      for (const p of ['/api/jobs/{job_id}/download', '/api/jobs/{job_id}/export-epub/download', '/api/jobs/{job_id}/files/{*}', '/api/uploads/{upload_id}/file', '/api/voices/{voice_id}/audio']) {
        const r = openapi.paths[p]?.get?.responses;
        expect(r, p).toBeDefined();
        expect(Object.keys(r)).toEqual(expect.arrayContaining(['200', '206', '302', '304', '503']));
        expect(r['200'].content['application/json'].schema.$ref).toBe('#/components/schemas/DownloadLink');
        expect(openapi.paths[p].get.description).toContain('302 to a presigned GET URL');
      }
      expect(openapi.components.schemas.DownloadLink.required).toEqual(['url', 'expires_at', 'filename', 'content_type']);
    } finally {
      await svc.close();
    }
  });
});

/** s3rver again on a given port, over a copy of the folder the stopped one had. */
async function restartS3On(dir: string, bucket: string, port: number): Promise<{ stop(): Promise<void> }> {
  const child = spawn(process.execPath, [path.join(import.meta.dirname, 'helpers', 's3rver-main.mjs'), dir, bucket], { env: { ...process.env, S3RVER_PORT: String(port) }, stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((resolve, reject) => {
    child.stdout!.once('data', () => resolve());
    child.once('exit', (code) => reject(new Error(`s3rver exited ${code}`)));
  });
  return {
    async stop() {
      const gone = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await gone;
    },
  };
}
