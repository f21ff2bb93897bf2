// The job API and uploads through real HTTP, in both modes: embedded (SQLite, in-process
// queue) and distributed (PostgreSQL + BullMQ/Redis on this machine).
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INTERNAL } from '../src/core/caller.ts';
import { ffprobe } from '../src/media/ffmpeg.ts';
import type { RunningService } from '../src/service.ts';
import { json, MODES, readEvents, testEnv, upload, waitFor, type TestEnv } from './helpers/service.ts';

const FIX = path.join(import.meta.dirname, 'fixtures');
const WELCOME = fs.readFileSync(path.join(import.meta.dirname, '..', 'samples', 'welcome.md'));

describe.each(MODES)('job API (%s)', (mode) => {
  let t: TestEnv;
  let svc: RunningService;
  let url: string;

  beforeAll(async () => {
    t = testEnv(mode, `api_${mode}`);
    svc = await t.start({ LECTERN_MAX_UPLOAD_BYTES: String(2 * 1024 * 1024) });
    url = svc.url;
  });
  afterAll(async () => {
    await svc?.close();
    await t?.cleanup();
  });

  describe('uploads', () => {
    it('stores a Markdown document and detects types from the bytes', async () => {
      const md = await upload(url, 'welcome.md', WELCOME, 'application/pdf');
      expect(md.status).toBe(201);
      expect(md.body).toMatchObject({ original_name: 'welcome.md', size_bytes: WELCOME.length, content_type: 'text/markdown; charset=utf-8', kind: 'document' });
      expect(md.body.id).toMatch(/^[0-9a-f-]{36}$/);
      expect(typeof md.body.created_at).toBe('string');

      expect(md.body.language).toBeNull();

      // language: what the document declares in its metadata (this PDF declares none).
      const cases: Array<[string, string, string, string | null]> = [
        ['documents/live-manual.en.pdf', 'application/pdf', 'document', null],
        ['documents/war-of-the-worlds.epub', 'application/epub+zip', 'document', 'en'],
        ['speech/jfk.wav', 'audio/wav', 'audio', null],
        ['video/presenter.mp4', 'video/mp4', 'video', null],
      ];
      for (const [file, type, kind, language] of cases) {
        const r = await upload(url, path.basename(file), fs.readFileSync(path.join(FIX, file)), 'text/plain');
        expect(r.status, file).toBe(201);
        expect(r.body).toMatchObject({ content_type: type, kind, language });
        expect((await json(url, 'GET', `/api/uploads/${r.body.id}`)).body).toMatchObject({ id: r.body.id, language });
      }
      const txt = await upload(url, 'notes.txt', 'Just some text.');
      expect(txt.body).toMatchObject({ content_type: 'text/plain; charset=utf-8', kind: 'document' });
    });

    it('refuses unsupported, empty, oversized and non-multipart uploads and writes nothing', async () => {
      const before = fs.readdirSync(path.join(t.dataDir, 'uploads')).length;
      const html = await upload(url, 'evil.md', '<!doctype html><script>alert(1)</script>', 'text/markdown');
      expect(html.status).toBe(415);
      expect(html.body.detail).toMatch(/unsupported file type/);
      const bin = await upload(url, 'blob.bin', Buffer.from([0, 1, 2, 3, 0, 0, 9, 8]));
      expect(bin.status).toBe(415);
      const empty = await upload(url, 'empty.txt', '');
      expect(empty.status).toBe(400);
      const big = await upload(url, 'big.txt', 'a'.repeat(3 * 1024 * 1024));
      expect(big.status).toBe(413);
      expect(big.body.detail).toMatch(/limit/);
      const notMultipart = await json(url, 'POST', '/api/uploads', { file: 'x' });
      expect(notMultipart.status).toBe(415);
      const form = new FormData();
      form.append('document', new Blob(['hello']), 'a.txt');
      const wrongField = await fetch(`${url}/api/uploads`, { method: 'POST', body: form });
      expect(wrongField.status).toBe(400);
      expect(fs.readdirSync(path.join(t.dataDir, 'uploads')).length).toBe(before);
      expect(fs.readdirSync(path.join(t.dataDir, 'tmp'))).toEqual([]);
    });

    it('reads and deletes an upload; 404 for unknown and malformed ids', async () => {
      const u = await upload(url, 'short.txt', 'A short text.');
      const got = await json(url, 'GET', `/api/uploads/${u.body.id}`);
      expect(got.status).toBe(200);
      expect(got.body).toEqual(u.body);
      expect(got.body.path).toBeUndefined();
      expect((await json(url, 'GET', '/api/uploads/00000000-0000-4000-8000-000000000000')).status).toBe(404);
      expect((await json(url, 'GET', '/api/uploads/..%2F..%2Fetc%2Fpasswd')).status).toBe(404);
      const del = await json(url, 'DELETE', `/api/uploads/${u.body.id}`);
      expect(del).toMatchObject({ status: 200, body: { detail: 'upload deleted' } });
      expect((await json(url, 'GET', `/api/uploads/${u.body.id}`)).status).toBe(404);
      expect((await json(url, 'DELETE', `/api/uploads/${u.body.id}`)).status).toBe(404);
    });
  });

  describe('jobs', () => {
    let docId: string;
    beforeAll(async () => {
      docId = (await upload(url, 'welcome.md', WELCOME)).body.id as string;
    });

    it('validates a job request: unknown fields, missing uploads, wrong kinds, unavailable pipelines', async () => {
      const bad = async (body: unknown, status: number, detail?: RegExp) => {
        const r = await json(url, 'POST', '/api/jobs', body);
        expect(r.status, JSON.stringify(body)).toBe(status);
        expect(typeof r.body.detail).toBe('string');
        if (detail) expect(r.body.detail).toMatch(detail);
      };
      await bad({ pipeline_type: 'audio', uploaded_file_id: docId, colour: 'blue' }, 422, /colour/);
      await bad({ pipeline_type: 'audio' }, 422, /uploaded_file_id/);
      await bad({ pipeline_type: 'podcast', uploaded_file_id: docId }, 422);
      await bad({ pipeline_type: 'audio', uploaded_file_id: docId, options: { speed: 5 } }, 422, /speed/);
      await bad({ pipeline_type: 'audio', uploaded_file_id: docId, options: { format: 'mp4' } }, 422, /format/);
      await bad({ pipeline_type: 'audio', uploaded_file_id: docId, language: 'not a language' }, 422, /language/);
      await bad({ pipeline_type: 'audio', uploaded_file_id: '00000000-0000-4000-8000-000000000000' }, 404, /uploaded_file_id/);
      await bad({ pipeline_type: 'audio', uploaded_file_id: docId, ref_audio_file_id: '00000000-0000-4000-8000-000000000001' }, 404, /ref_audio_file_id/);
      await bad({ pipeline_type: 'audio', uploaded_file_id: docId, ref_audio_file_id: docId }, 422, /not audio/);
      const wav = await upload(url, 'jfk.wav', fs.readFileSync(path.join(FIX, 'speech/jfk.wav')));
      await bad({ pipeline_type: 'audio', uploaded_file_id: wav.body.id }, 422, /not a document/);
      await bad({ pipeline_type: 'audio', uploaded_file_id: docId, options: { format: 'mp4' } }, 422, /not an output of the audio pipeline/);
      await bad({ pipeline_type: 'lipsync', uploaded_file_id: docId }, 422, /presenter video/);
      await bad({ pipeline_type: 'highlight', uploaded_file_id: docId, options: { format: 'm4b' } }, 422, /not an output of the highlight pipeline/);
      const r = await fetch(`${url}/api/jobs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"pipeline_type":' });
      expect(r.status).toBe(400);
      expect(((await r.json()) as { detail: string }).detail).toBeTruthy();
      const list = await json(url, 'GET', '/api/jobs?limit=100');
      expect(list.body.total).toBe(0); // nothing was created by any of those
    });

    it('runs an audio job end to end: pending, events, completed, MP3 download with Range', async () => {
      const created = await json(url, 'POST', '/api/jobs', { pipeline_type: 'audio', uploaded_file_id: docId, language: 'en-US' });
      expect(created.status).toBe(201);
      const job = created.body;
      expect(job.status).toBe('pending');
      expect(job.worker_task_id).toEqual(expect.any(String));
      expect(job.config_json).toMatchObject({ pipeline_type: 'audio', uploaded_file_id: docId, language: 'en-US', options: { format: 'mp3', speed: 1 } });

      const events = await readEvents(`${url}/api/jobs/${job.id}/events`);
      expect(events[0]!.event).toBe('snapshot');
      const end = events.at(-1)!;
      expect(end.event).toBe('end');
      expect(end.data.status).toBe('completed');
      expect(events.some((e) => e.event === 'progress' && e.data.phase === 'synthesize')).toBe(true);

      const done = (await json(url, 'GET', `/api/jobs/${job.id}`)).body;
      expect(done).toMatchObject({ status: 'completed', error: null, download_url: `/api/jobs/${job.id}/download`, attempts: 1 });
      expect(done.progress).toEqual({ phase: 'done', current: 1, total: 1 });
      const result = done.config_json.result;
      expect(result.output).toBe('narration.mp3');

      const res = await fetch(`${url}${done.download_url}`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('audio/mpeg');
      expect(res.headers.get('content-disposition')).toContain('filename="welcome.mp3"');
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      const mp3 = Buffer.from(await res.arrayBuffer());
      const file = path.join(t.dataDir, 'check.mp3');
      fs.writeFileSync(file, mp3);
      const probe = await ffprobe(file);
      expect(probe.streams[0]!.codec_name).toBe('mp3');
      expect(Math.abs(probe.durationSeconds - result.duration_seconds)).toBeLessThan(0.1);
      expect(result.duration_seconds).toBeGreaterThan(20); // ~80 words of English

      const part = await fetch(`${url}${done.download_url}`, { headers: { range: 'bytes=100-199' } });
      expect(part.status).toBe(206);
      expect(part.headers.get('content-range')).toBe(`bytes 100-199/${mp3.length}`);
      expect(Buffer.from(await part.arrayBuffer())).toEqual(mp3.subarray(100, 200));
      expect((await fetch(`${url}${done.download_url}`, { headers: { range: `bytes=${mp3.length + 5}-` } })).status).toBe(416);

      const timeline = JSON.parse(fs.readFileSync(path.join(t.dataDir, 'outputs', job.id, 'timeline.json'), 'utf8'));
      expect(timeline.words[0]).toMatchObject({ word: 'Welcome', page: 1, block: 0 });
      expect(timeline.words.at(-1).word).toBe('along.');

      // The job's own files, for the web app's reader: only those result.files lists.
      expect(result.files).toEqual(['narration.mp3', 'timeline.json', 'narration.vtt']);
      const tl = await fetch(`${url}/api/jobs/${job.id}/files/timeline.json`);
      expect(tl.status).toBe(200);
      expect(tl.headers.get('content-type')).toBe('application/json');
      expect(tl.headers.get('x-content-type-options')).toBe('nosniff');
      // Only audio and video play inline; the reader fetches the rest, so it is an attachment.
      expect(tl.headers.get('content-disposition')).toMatch(/^attachment/);
      expect(await tl.json()).toEqual(timeline);
      const vtt = await fetch(`${url}/api/jobs/${job.id}/files/narration.vtt`);
      expect(vtt.headers.get('content-type')).toBe('text/vtt; charset=utf-8');
      expect((await vtt.text()).startsWith('WEBVTT')).toBe(true);
      const audioPart = await fetch(`${url}/api/jobs/${job.id}/files/narration.mp3`, { headers: { range: 'bytes=0-99' } });
      expect(audioPart.status).toBe(206);
      expect(audioPart.headers.get('content-type')).toBe('audio/mpeg');
      expect(Buffer.from(await audioPart.arrayBuffer())).toEqual(mp3.subarray(0, 100));
      // A file in the output dir that the result does not list, a traversal, an unknown job: 404.
      fs.writeFileSync(path.join(t.dataDir, 'outputs', job.id, 'scratch.txt'), 'not listed');
      for (const p of ['scratch.txt', '..%2F..%2Flectern.db', '../../lectern.db', 'nope.json', '']) {
        const r = await json(url, 'GET', `/api/jobs/${job.id}/files/${p}`);
        expect(r.status, p).toBe(404);
        expect(typeof r.body.detail, p).toBe('string');
      }
      expect((await json(url, 'GET', '/api/jobs/00000000-0000-4000-8000-000000000000/files/timeline.json')).status).toBe(404);

      // After the end: the snapshot and the terminal event at once, then the stream closes.
      const late = await readEvents(`${url}/api/jobs/${job.id}/events`, 5000);
      expect(late.map((e) => e.event)).toEqual(['snapshot', 'end']);

      // The document is in use now.
      expect((await json(url, 'DELETE', `/api/uploads/${docId}`)).status).toBe(409);

      // Stop applies to lip-sync jobs only.
      const stop = await json(url, 'POST', `/api/jobs/${job.id}/stop`);
      expect(stop.status).toBe(409);

      const del = await json(url, 'DELETE', `/api/jobs/${job.id}`);
      expect(del).toMatchObject({ status: 200, body: { detail: 'job deleted' } });
      expect((await json(url, 'GET', `/api/jobs/${job.id}`)).status).toBe(404);
      expect(fs.existsSync(path.join(t.dataDir, 'outputs', job.id))).toBe(false);
      expect((await json(url, 'DELETE', `/api/jobs/${job.id}`)).status).toBe(404);
      expect((await json(url, 'GET', `/api/jobs/${job.id}/download`)).status).toBe(404);
      expect((await json(url, 'GET', `/api/jobs/${job.id}/events`)).status).toBe(404);
    });

    it('lists with status filter, limit and offset, newest first, and rejects out-of-range queries', async () => {
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) {
        const r = await json(url, 'POST', '/api/jobs', { pipeline_type: 'audio', uploaded_file_id: docId, title: `n${i}` });
        ids.push(r.body.id);
      }
      await waitFor(async () => {
        const l = await json(url, 'GET', '/api/jobs?status=completed&limit=100');
        return ids.every((id) => l.body.jobs.some((j: { id: string }) => j.id === id));
      }, 60_000, 'three jobs to complete');
      const all = await json(url, 'GET', '/api/jobs');
      expect(all.body).toMatchObject({ limit: 20, offset: 0 });
      expect(all.body.total).toBeGreaterThanOrEqual(3);
      const page = await json(url, 'GET', '/api/jobs?limit=2&offset=0');
      expect(page.body.jobs.map((j: { id: string }) => j.id)).toEqual([ids[2], ids[1]]);
      const page2 = await json(url, 'GET', '/api/jobs?limit=2&offset=2');
      expect(page2.body.jobs[0].id).toBe(ids[0]);
      expect(page2.body.total).toBe(all.body.total);
      const failed = await json(url, 'GET', '/api/jobs?status=failed');
      expect(failed.body).toMatchObject({ jobs: [], total: 0 });
      for (const q of ['limit=0', 'limit=101', 'offset=-1', 'status=done', 'limit=abc', 'sort=asc']) {
        const r = await json(url, 'GET', `/api/jobs?${q}`);
        expect(r.status, q).toBe(422);
        expect(r.body.detail).toEqual(expect.any(String));
      }
    });

    it('deletes a running job: stopped first, row gone, output directory removed', async () => {
      const text = Array.from({ length: 120 }, (_, i) => `Paragraph ${i + 1} is here to keep the worker busy for a little while longer.`).join('\n\n');
      const doc = await upload(url, 'busy.txt', text);
      const job = (await json(url, 'POST', '/api/jobs', { pipeline_type: 'audio', uploaded_file_id: doc.body.id })).body;
      await waitFor(async () => {
        const j = (await json(url, 'GET', `/api/jobs/${job.id}`)).body;
        return j.status === 'running' && j.progress?.phase === 'synthesize' && j.progress.current > 0;
      }, 60_000, 'the job to run');
      const del = await json(url, 'DELETE', `/api/jobs/${job.id}`);
      expect(del.status).toBe(200);
      expect((await json(url, 'GET', `/api/jobs/${job.id}`)).status).toBe(404);
      // The worker notices between chunks and removes anything it wrote after the delete.
      const out = path.join(t.dataDir, 'outputs', job.id);
      await waitFor(async () => !fs.existsSync(out), 30_000, 'the output dir to be removed');
      await new Promise((r) => setTimeout(r, 1500));
      expect(fs.existsSync(out)).toBe(false);
      expect((await json(url, 'DELETE', `/api/uploads/${doc.body.id}`)).status).toBe(200);
    });

    it('stops a pending lip-sync job with a 24 h cancel flag; 404 unknown, 409 when not running', async () => {
      // The stop rule on a pending lip-sync job record with no worker to run it (the real
      // pipeline's stop is in test/lipsync-pipeline.test.ts).
      const id = crypto.randomUUID();
      await svc.stores.jobs.createJob({ id, pipeline_type: 'lipsync', config_json: { pipeline_type: 'lipsync' }, upload_ids: [], owner: null }, INTERNAL);
      const stop = await json(url, 'POST', `/api/jobs/${id}/stop`);
      expect(stop).toMatchObject({ status: 200, body: { detail: 'stop requested' } });
      expect(await svc.stores.kv.get(`job:${id}:cancel`)).toBe('1');
      const ttl = (await svc.stores.kv.ttl(`job:${id}:cancel`))!;
      expect(ttl).toBeGreaterThan(86_400 - 60);
      expect(ttl).toBeLessThanOrEqual(86_400);
      await svc.stores.jobs.updateJob(id, { status: 'completed' });
      expect((await json(url, 'POST', `/api/jobs/${id}/stop`)).status).toBe(409);
      expect((await json(url, 'POST', `/api/jobs/00000000-0000-4000-8000-000000000000/stop`)).status).toBe(404);
      expect((await json(url, 'GET', `/api/jobs/${id}/download`)).status).toBe(409);
      await json(url, 'DELETE', `/api/jobs/${id}`);
    });

    it('serves an OpenAPI document covering every route with its errors', async () => {
      const doc = (await json(url, 'GET', '/openapi.json')).body;
      for (const [p, methods] of Object.entries({
        '/api/uploads': ['post'],
        '/api/uploads/{upload_id}': ['get', 'delete'],
        '/api/jobs': ['post', 'get'],
        '/api/jobs/{job_id}': ['get', 'delete'],
        '/api/jobs/{job_id}/stop': ['post'],
        '/api/jobs/{job_id}/download': ['get'],
        '/api/jobs/{job_id}/events': ['get'],
        '/api/jobs/{job_id}/files/{*}': ['get'],
      })) {
        for (const m of methods) {
          const op = doc.paths[p]?.[m];
          expect(op, `${m} ${p}`).toBeDefined();
          expect(Object.keys(op.responses).some((c) => c.startsWith('4')), `${m} ${p} errors`).toBe(true);
        }
      }
      expect(doc.components.schemas.Error).toBeDefined();
    });

    it('loses no upload and no job across a restart', async () => {
      const u = await upload(url, 'keep.txt', 'Kept across restarts.');
      const j = await json(url, 'POST', '/api/jobs', { pipeline_type: 'audio', uploaded_file_id: u.body.id });
      await waitFor(async () => (await json(url, 'GET', `/api/jobs/${j.body.id}`)).body.status === 'completed', 60_000, 'job');
      await svc.close();
      svc = await t.start({ LECTERN_MAX_UPLOAD_BYTES: String(2 * 1024 * 1024) });
      url = svc.url;
      expect((await json(url, 'GET', `/api/uploads/${u.body.id}`)).body).toEqual(u.body);
      const again = await json(url, 'GET', `/api/jobs/${j.body.id}`);
      expect(again.body.status).toBe('completed');
      const dl = await fetch(`${url}/api/jobs/${j.body.id}/download`);
      expect(dl.status).toBe(200);
      expect((await dl.arrayBuffer()).byteLength).toBeGreaterThan(1000);
    });
  });
});
