// POST/GET /api/jobs/{id}/export-epub through real HTTP in both modes (SQLite + its queue;
// PostgreSQL + BullMQ/Redis), run by the service's own worker.
// SET-UP, NAMED PLAINLY: the lip-sync pipeline is not in this branch yet, so the lip-sync
// jobs here are records created through the job store (status completed or stopped,
// pipeline_type lipsync, config_json as JobService builds it) whose output dir holds a real
// narration.mp3 + timeline.json made by narrateDocument/renderAudio on the uploaded document.
// The lead adds a test with a real lip-sync job after merging.
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Queue } from 'bullmq';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INTERNAL } from '../src/core/caller.ts';
import { openSqlite } from '../src/jobs/db.ts';
import type { JobStatus } from '../src/jobs/types.ts';
import { outputKey } from '../src/storage.ts';
import type { RunningService } from '../src/service.ts';
import { epubcheck, findAll, inspectEpub, textOf, xml } from './helpers/epub-inspect.ts';
import { DOCS, narrateForTest } from './helpers/narrated.ts';
import { json, MODES, REDIS_URL, testEnv, upload, waitFor, type TestEnv } from './helpers/service.ts';

const TMP = fs.mkdtempSync(path.join(os.tmpdir(), 'lectern-export-'));
const CACHE = process.env.LECTERN_TEST_TTS_CACHE ?? path.join(os.tmpdir(), 'lectern-test-tts-cache');
const WELCOME = path.join(import.meta.dirname, '..', 'samples', 'welcome.md');
const WOTW = path.join(DOCS, 'war-of-the-worlds.epub');
/** The stopped job did its first 4 of 35 pages. */
const WOTW_DONE = [0, 1, 2, 3];

let welcomeDir: string;
let wotwDir: string;
beforeAll(async () => {
  welcomeDir = path.join(TMP, 'welcome');
  wotwDir = path.join(TMP, 'wotw');
  await narrateForTest(WELCOME, 'text/markdown; charset=utf-8', welcomeDir, CACHE);
  await narrateForTest(WOTW, 'application/epub+zip', wotwDir, CACHE, WOTW_DONE);
}, 600_000);
afterAll(() => fs.rmSync(TMP, { recursive: true, force: true }));

describe.each(MODES)('EPUB export (%s)', (mode) => {
  let t: TestEnv;
  let svc: RunningService;
  let url: string;
  let welcomeId: string;
  let wotwId: string;

  beforeAll(async () => {
    t = testEnv(mode, `export_${mode}`);
    svc = await t.start();
    url = svc.url;
    welcomeId = (await upload(url, 'welcome.md', fs.readFileSync(WELCOME))).body.id as string;
    wotwId = (await upload(url, 'war-of-the-worlds.epub', fs.readFileSync(WOTW))).body.id as string;
  }, 60_000);
  afterAll(async () => {
    await svc?.close();
    await t?.cleanup();
  });

  /** A job record as JobService builds it, moved to `status`, with the narration files in its output dir. */
  async function storeJob(o: { pipeline: 'lipsync' | 'audio'; format: string; status: JobStatus; uploadId: string; name: string; type: string; files?: string; extra?: Record<string, unknown> }) {
    const id = randomUUID();
    const config_json = {
      pipeline_type: o.pipeline,
      uploaded_file_id: o.uploadId,
      language: 'en-US',
      voice_id: null,
      ref_audio_file_id: null,
      ref_text: null,
      ref_video_file_id: null,
      title: null,
      options: { format: o.format, speed: 1 },
      document: { original_name: o.name, content_type: o.type },
      ...o.extra,
    };
    await svc.stores.jobs.createJob({ id, pipeline_type: o.pipeline, config_json, upload_ids: [o.uploadId], owner: null }, INTERNAL);
    await svc.stores.jobs.updateJob(id, { status: o.status, finished_at: o.status === 'running' ? null : new Date().toISOString() });
    if (o.files) for (const f of ['narration.mp3', 'timeline.json', 'narration.vtt']) await svc.storage.putFile(outputKey(id, f), path.join(o.files, f), { contentType: 'application/octet-stream' });
    return id;
  }

  /** Export tasks the queue holds for a job (any state): exactly one per started export. */
  async function exportTasks(jobId: string): Promise<number> {
    if (mode === 'embedded') {
      const conn = openSqlite(path.join(t.dataDir, 'lectern.db'));
      try {
        const r = await sql<{ n: number }>`select count(*) as n from queue_tasks where job_id = ${jobId} and kind = 'export-epub'`.execute(conn.db);
        return Number(r.rows[0]!.n);
      } finally {
        await conn.close();
      }
    }
    const q = new Queue('lectern-jobs', { connection: { url: REDIS_URL }, prefix: t.namespace });
    try {
      const jobs = await q.getJobs(['waiting', 'active', 'completed', 'failed', 'delayed', 'prioritized']);
      return jobs.filter((j) => j.name === 'export-epub' && j.data.jobId === jobId).length;
    } finally {
      await q.close();
    }
  }

  it('refuses other pipelines, formats and states with 409 and a reason; 404 for an unknown job', async () => {
    const audio = await storeJob({ pipeline: 'audio', format: 'mp3', status: 'completed', uploadId: welcomeId, name: 'welcome.md', type: 'text/markdown', files: welcomeDir });
    const mp4 = await storeJob({ pipeline: 'lipsync', format: 'mp4', status: 'completed', uploadId: welcomeId, name: 'welcome.md', type: 'text/markdown', files: welcomeDir });
    const running = await storeJob({ pipeline: 'lipsync', format: 'reader', status: 'running', uploadId: welcomeId, name: 'welcome.md', type: 'text/markdown' });
    const failed = await storeJob({ pipeline: 'lipsync', format: 'reader', status: 'failed', uploadId: welcomeId, name: 'welcome.md', type: 'text/markdown' });
    const stoppedEmpty = await storeJob({ pipeline: 'lipsync', format: 'reader', status: 'stopped', uploadId: welcomeId, name: 'welcome.md', type: 'text/markdown', extra: { pages_done: 0, pages_total: 1 } });
    for (const [id, reason] of [
      [audio, /only lip-sync reader jobs/],
      [mp4, /only lip-sync reader jobs/],
      [running, /is running/],
      [failed, /is failed/],
      [stoppedEmpty, /stopped before any page/],
    ] as const) {
      const r = await json(url, 'POST', `/api/jobs/${id}/export-epub`);
      expect(r.status, id).toBe(409);
      expect(r.body.detail).toMatch(reason);
      expect(await exportTasks(id)).toBe(0);
    }
    expect((await json(url, 'POST', `/api/jobs/${randomUUID()}/export-epub`)).status).toBe(404);
    expect((await json(url, 'GET', `/api/jobs/${randomUUID()}/export-epub/status`)).status).toBe(404);
  });

  it('starts exactly one export for concurrent POSTs, reports it, and serves the EPUB when done', async () => {
    const id = await storeJob({ pipeline: 'lipsync', format: 'reader', status: 'completed', uploadId: welcomeId, name: 'welcome.md', type: 'text/markdown', files: welcomeDir });
    expect((await json(url, 'GET', `/api/jobs/${id}/export-epub/status`)).body).toEqual({ export_status: null, export_output: null, export_error: null });
    const early = await json(url, 'GET', `/api/jobs/${id}/export-epub/download`);
    expect(early.status).toBe(409);
    expect(early.body.detail).toMatch(/not started/);

    const posts = await Promise.all(Array.from({ length: 8 }, () => json(url, 'POST', `/api/jobs/${id}/export-epub`)));
    for (const p of posts) {
      expect(p.status).toBe(202);
      expect(['running', 'done']).toContain(p.body.export_status);
    }
    const done = await waitFor(async () => {
      const s = await json(url, 'GET', `/api/jobs/${id}/export-epub/status`);
      return s.body.export_status === 'done' || s.body.export_status === 'failed' ? s.body : null;
    }, 120_000, 'the export');
    expect(done).toEqual({ export_status: 'done', export_output: 'book.epub', export_error: null });
    expect(await exportTasks(id)).toBe(1);

    // Again, once done: nothing new starts.
    const again = await json(url, 'POST', `/api/jobs/${id}/export-epub`);
    expect(again).toMatchObject({ status: 202, body: { export_status: 'done', export_output: 'book.epub' } });
    expect(await exportTasks(id)).toBe(1);

    const res = await fetch(`${url}/api/jobs/${id}/export-epub/download`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/epub+zip');
    expect(res.headers.get('content-disposition')).toContain('filename="welcome.epub"');
    const bytes = Buffer.from(await res.arrayBuffer());
    expect(bytes.subarray(30, 38).toString()).toBe('mimetype');
    const file = path.join(TMP, `${mode}-welcome.epub`);
    fs.writeFileSync(file, bytes);
    const book = await inspectEpub(file);
    // The job's narration, reused: the book's overlays add up to its narration.mp3.
    const timeline = JSON.parse(fs.readFileSync(path.join(welcomeDir, 'timeline.json'), 'utf8')) as { words: unknown[]; duration: number };
    expect(book.overlays.reduce((n, o) => n + o.clips.length, 0)).toBe(timeline.words.length);
    const job = (await json(url, 'GET', `/api/jobs/${id}`)).body;
    expect(job.status).toBe('completed');
    expect(job.config_json.epub_export_status).toBe('done');
  }, 180_000);

  it('a stopped job exports only its done pages', async () => {
    const id = await storeJob({
      pipeline: 'lipsync',
      format: 'reader',
      status: 'stopped',
      uploadId: wotwId,
      name: 'war-of-the-worlds.epub',
      type: 'application/epub+zip',
      files: wotwDir,
      extra: { pages_done: WOTW_DONE.length, pages_total: 35 },
    });
    expect((await json(url, 'POST', `/api/jobs/${id}/export-epub`)).status).toBe(202);
    await waitFor(async () => (await json(url, 'GET', `/api/jobs/${id}/export-epub/status`)).body.export_status === 'done', 120_000, 'the export');
    const res = await fetch(`${url}/api/jobs/${id}/export-epub/download`);
    expect(res.headers.get('content-disposition')).toContain('filename="war-of-the-worlds.epub"');
    const file = path.join(TMP, `${mode}-wotw.epub`);
    fs.writeFileSync(file, Buffer.from(await res.arrayBuffer()));
    const book = await inspectEpub(file);
    const narrated = new Set((JSON.parse(fs.readFileSync(path.join(wotwDir, 'timeline.json'), 'utf8')) as { words: Array<{ page: number }> }).words.map((w) => w.page));
    const expected = WOTW_DONE.filter((p) => narrated.has(p + 1)).map((p) => `OEBPS/page-${String(p + 1).padStart(4, '0')}.xhtml`);
    expect(book.spine).toEqual(expected);
    const nav = findAll(xml(book.text('OEBPS/nav.xhtml')), 'a').map((a) => a.attribs!.href!.split('#')[0]);
    for (const href of nav) expect(expected).toContain(`OEBPS/${href}`);
    expect(textOf(findAll(book.opf, 'dc:title')[0]!)).toBe('The War of the Worlds');
    if (mode === 'embedded') {
      const { summary, output } = await epubcheck(file);
      expect(summary, output).toBe('Messages: 0 fatals / 0 errors / 0 warnings / 0 infos');
    }
  }, 240_000);

  it('an export whose narration is missing fails with the reason, and can be started again', async () => {
    const id = await storeJob({ pipeline: 'lipsync', format: 'reader', status: 'completed', uploadId: welcomeId, name: 'welcome.md', type: 'text/markdown' });
    expect((await json(url, 'POST', `/api/jobs/${id}/export-epub`)).status).toBe(202);
    const failed = await waitFor(async () => {
      const s = await json(url, 'GET', `/api/jobs/${id}/export-epub/status`);
      return s.body.export_status === 'failed' ? s.body : null;
    }, 60_000, 'the failure');
    expect(failed.export_error).toMatch(/narration\.mp3|timeline\.json/);
    expect((await json(url, 'GET', `/api/jobs/${id}/export-epub/download`)).status).toBe(409);
    // The files arrive (a restored output dir): a new POST starts a new export, which succeeds.
    for (const f of ['narration.mp3', 'timeline.json']) await svc.storage.putFile(outputKey(id, f), path.join(welcomeDir, f), { contentType: 'application/octet-stream' });
    const again = await json(url, 'POST', `/api/jobs/${id}/export-epub`);
    expect(again).toMatchObject({ status: 202, body: { export_status: 'running', export_error: null } });
    await waitFor(async () => (await json(url, 'GET', `/api/jobs/${id}/export-epub/status`)).body.export_status === 'done', 60_000, 'the second export');
    expect(await exportTasks(id)).toBe(2);
  }, 120_000);
});
