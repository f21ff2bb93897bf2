// The lip-sync reader pipeline through the real job API (embedded mode, eSpeak, the viseme
// provider on the real presenter clip): a whole job, a stop during page 2 of 3 (→ stopped,
// outputs over the pages done, download works), a stop before any page (→ failed), a job
// without a presenter video refused; and the same pipeline with its clips made by a real
// GPU server on an ephemeral port (LECTERN_GPU_SERVER_URL).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import yauzl from 'yauzl';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT, loadGpuServerConfig } from '../src/config.ts';
import { startGpuServer } from '../src/gpu-server/index.ts';
import { createLogger } from '../src/log.ts';
import { ffprobe } from '../src/media/ffmpeg.ts';
import type { RunningService } from '../src/service.ts';
import { makePdf } from './helpers/make-documents.ts';
import { epubcheck, readZipEntries } from './helpers/epub-inspect.ts';
import { json, testEnv, upload, waitFor, type TestEnv } from './helpers/service.ts';

const VIDEO = fs.readFileSync(path.join(import.meta.dirname, 'fixtures/video/presenter.mp4'));
const PAGES = ['Hello from the first page.', 'The second page is here.', 'And this is the third.'];
const PDF = makePdf({ title: 'Three pages', pages: PAGES.map((text) => [{ text, x: 72, y: 700, size: 14 }]) });

const duration = async (file: string) => (await ffprobe(file)).durationSeconds;

async function jobUntil(url: string, id: string, statuses: string[], timeoutMs = 180_000) {
  return waitFor(
    async () => {
      const j = (await json(url, 'GET', `/api/jobs/${id}`)).body;
      return statuses.includes(j.status) ? j : null;
    },
    timeoutMs,
    `job ${id} to be ${statuses.join('/')}`,
  );
}

async function download(url: string, id: string, dir: string): Promise<string> {
  const res = await fetch(`${url}/api/jobs/${id}/download`);
  expect(res.status).toBe(200);
  const name = /filename="?([^";]+)"?/.exec(res.headers.get('content-disposition') ?? '')?.[1] ?? 'out';
  const file = path.join(dir, `${id}-${name}`);
  fs.writeFileSync(file, Buffer.from(await res.arrayBuffer()));
  return file;
}

/** POST export-epub, wait for it, download the book and validate it; returns the book's content pages. */
async function exportAndCheckEpub(url: string, id: string, dir: string): Promise<string[]> {
  const post = await json(url, 'POST', `/api/jobs/${id}/export-epub`);
  expect(post.status).toBe(202);
  const state = await waitFor(async () => {
    const s = (await json(url, 'GET', `/api/jobs/${id}/export-epub/status`)).body;
    return s.export_status === 'running' ? null : s;
  }, 180_000, 'the EPUB export');
  expect(state).toMatchObject({ export_status: 'done', export_error: null });
  const res = await fetch(`${url}/api/jobs/${id}/export-epub/download`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toBe('application/epub+zip');
  const file = path.join(dir, `${id}.epub`);
  fs.writeFileSync(file, Buffer.from(await res.arrayBuffer()));
  const { summary, output } = await epubcheck(file);
  expect(summary, output).toBe('Messages: 0 fatals / 0 errors / 0 warnings / 0 infos');
  return (await readZipEntries(file)).map((e) => e.name).filter((n) => /page-\d+\.xhtml$/.test(n));
}

async function zipEntries(file: string): Promise<string[]> {
  return new Promise((resolve, reject) => {
    yauzl.open(file, { lazyEntries: true }, (err, zip) => {
      if (err || !zip) return reject(err);
      const names: string[] = [];
      zip.on('entry', (e: yauzl.Entry) => {
        names.push(e.fileName);
        zip.readEntry();
      });
      zip.on('end', () => resolve(names));
      zip.on('error', reject);
      zip.readEntry();
    });
  });
}

/** Checks the files a lip-sync job leaves in its output dir cover exactly `pages` pages. */
async function checkOutputs(dataDir: string, job: any, pages: number) {
  const out = path.join(dataDir, 'outputs', job.id);
  const timeline = JSON.parse(fs.readFileSync(path.join(out, 'timeline.json'), 'utf8'));
  const wordPages = [...new Set(timeline.words.map((w: { page: number }) => w.page))];
  expect(wordPages).toEqual(Array.from({ length: pages }, (_, i) => i + 1));
  const expectedWords = PAGES.slice(0, pages).join(' ').split(/\s+/).length;
  expect(timeline.words).toHaveLength(expectedWords);
  const narration = await duration(path.join(out, 'narration.mp3'));
  const presenter = await duration(path.join(out, 'presenter.mp4'));
  expect(Math.abs(narration - timeline.duration)).toBeLessThan(0.15);
  // The clips joined speak the narration: same length, within a frame or two per page.
  expect(Math.abs(presenter - timeline.duration)).toBeLessThan(0.1 * pages + 0.1);
  expect(timeline.words.at(-1).end).toBeLessThanOrEqual(timeline.duration);
  expect(fs.existsSync(path.join(out, 'narration.vtt'))).toBe(true);
  expect(fs.existsSync(path.join(out, 'pages'))).toBe(false); // per-page work files are gone
  return { out, timeline };
}

describe('lip-sync reader pipeline through the job API (embedded, eSpeak, viseme)', () => {
  let t: TestEnv;
  let svc: RunningService;
  let url: string;
  let docId: string;
  let videoId: string;
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'lectern-lipsync-pipeline-'));

  beforeAll(async () => {
    t = testEnv('embedded', 'lipsync_pipeline');
    svc = await t.start({ LECTERN_TTS_BACKEND: 'espeak', LECTERN_LIPSYNC_PROVIDER: 'viseme', LECTERN_LEASE_MS: '60000', LECTERN_HEARTBEAT_MS: '1000', LECTERN_WORKER_CONCURRENCY: '1' });
    url = svc.url;
    docId = (await upload(url, 'three.pdf', PDF)).body.id as string;
    videoId = (await upload(url, 'presenter.mp4', VIDEO)).body.id as string;
  }, 60_000);
  afterAll(async () => {
    await svc?.close();
    await t?.cleanup();
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  it('refuses a lip-sync job without a presenter video (422)', async () => {
    const r = await json(url, 'POST', '/api/jobs', { pipeline_type: 'lipsync', uploaded_file_id: docId });
    expect(r.status).toBe(422);
    expect(r.body.detail).toMatch(/presenter video/);
    const bad = await json(url, 'POST', '/api/jobs', { pipeline_type: 'lipsync', uploaded_file_id: docId, ref_video_file_id: videoId, options: { presenter_scale: 2 } });
    expect(bad.status).toBe(422);
  });

  it('makes the reader: presenter.mp4, narration and timeline over every page, reader.zip with the presenter', async () => {
    const created = await json(url, 'POST', '/api/jobs', {
      pipeline_type: 'lipsync',
      uploaded_file_id: docId,
      ref_video_file_id: videoId,
      options: { format: 'reader', lipsync_preset: 'fast' },
    });
    expect(created.status).toBe(201);
    const seen = new Set<string>();
    const job = await waitFor(async () => {
      const j = (await json(url, 'GET', `/api/jobs/${created.body.id}`)).body;
      if (j.progress?.phase === 'page') seen.add(`${j.progress.current}/${j.progress.total}`);
      return ['completed', 'failed', 'stopped'].includes(j.status) ? j : null;
    }, 300_000);
    expect(job.error).toBeNull();
    expect(job.status).toBe('completed');
    expect(job.config_json).toMatchObject({ pages_done: 3, pages_total: 3 });
    expect([...seen].every((s) => s.endsWith('/3'))).toBe(true);
    const { out } = await checkOutputs(t.dataDir, job, 3);
    expect(job.config_json.result.files).toEqual(expect.arrayContaining(['presenter.mp4', 'narration.mp3', 'timeline.json', 'narration.vtt']));

    // Frames of the presenter: the face moves its mouth (frames differ around the mouth).
    const frames = path.join(tmp, 'frames');
    fs.mkdirSync(frames);
    execFileSync('ffmpeg', ['-v', 'error', '-i', path.join(out, 'presenter.mp4'), '-vf', 'fps=2', path.join(frames, 'f%03d.png')]);
    expect(fs.readdirSync(frames).length).toBeGreaterThanOrEqual(4);
    const file = await download(url, job.id, tmp);
    expect(job.config_json.result.output).toBe('reader.zip');
    const names = await zipEntries(file);
    expect(names.some((n) => /presenter\.mp4$/.test(n))).toBe(true);
    expect(names.some((n) => /narration\.mp3$/.test(n))).toBe(true);

    // The read-along EPUB export of this real job: validates, one content page per page, and
    // reuses the job's narration (the TTS cache gains nothing).
    const cached = fs.readdirSync(path.join(t.dataDir, 'cache', 'tts')).length;
    expect(await exportAndCheckEpub(url, job.id, tmp)).toHaveLength(3);
    expect(fs.readdirSync(path.join(t.dataDir, 'cache', 'tts')).length).toBe(cached);
  }, 420_000);

  it('stops during page 2 of 3: the job ends stopped with the pages done, and the download works', async () => {
    const created = await json(url, 'POST', '/api/jobs', {
      pipeline_type: 'lipsync',
      uploaded_file_id: docId,
      ref_video_file_id: videoId,
      options: { format: 'reader', lipsync_preset: 'fast' },
    });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    // Page 1 done, page 2 in flight.
    await waitFor(async () => {
      const j = (await json(url, 'GET', `/api/jobs/${id}`)).body;
      if (j.status !== 'running' && j.status !== 'pending') throw new Error(`job ended ${j.status} before page 2: ${j.error}`);
      return j.progress?.phase === 'page' && j.progress.current === 1 ? j : null;
    }, 300_000, 'page 2 to start');
    const stop = await json(url, 'POST', `/api/jobs/${id}/stop`);
    expect(stop.status).toBe(200);
    const job = await jobUntil(url, id, ['completed', 'failed', 'stopped']);
    expect(job.error).toBeNull();
    expect(job.status).toBe('stopped');
    expect(job.config_json.pages_total).toBe(3);
    expect([1, 2]).toContain(job.config_json.pages_done);
    await checkOutputs(t.dataDir, job, job.config_json.pages_done);
    const file = await download(url, id, tmp);
    expect((await zipEntries(file)).some((n) => /presenter\.mp4$/.test(n))).toBe(true);
    // A stopped job cannot be stopped again.
    expect((await json(url, 'POST', `/api/jobs/${id}/stop`)).status).toBe(409);
    // Its EPUB export holds exactly the pages done.
    expect(await exportAndCheckEpub(url, id, tmp)).toHaveLength(job.config_json.pages_done);
  }, 420_000);

  it('format=mp4: the presenter composited over the highlight video at the chosen corner and scale', async () => {
    const twoPages = (await upload(url, 'two.pdf', makePdf({ pages: PAGES.slice(0, 2).map((text) => [{ text, x: 72, y: 700, size: 14 }]) }))).body.id;
    const created = await json(url, 'POST', '/api/jobs', {
      pipeline_type: 'lipsync',
      uploaded_file_id: twoPages,
      ref_video_file_id: videoId,
      options: { format: 'mp4', lipsync_preset: 'fast', width: 640, height: 360, fps: 12, presenter_position: 'top-left', presenter_scale: 0.4 },
    });
    expect(created.status).toBe(201);
    const job = await jobUntil(url, created.body.id, ['completed', 'failed', 'stopped'], 300_000);
    expect(job.error).toBeNull();
    expect(job.config_json.result.output).toBe('lipsync.mp4');
    const { out, timeline } = await checkOutputs(t.dataDir, job, 2);
    const file = await download(url, job.id, tmp);
    const probe = await ffprobe(file);
    expect(probe.streams.find((s) => s.codec_type === 'video')).toMatchObject({ width: 640, height: 360 });
    expect(Math.abs(probe.durationSeconds - timeline.duration)).toBeLessThan(0.3);
    // The presenter (256 px wide, top-left) differs from the highlight video there, not in the bottom-right.
    const grab = (f: string, png: string) => execFileSync('ffmpeg', ['-v', 'error', '-y', '-ss', '1', '-i', f, '-frames:v', '1', '-f', 'rawvideo', '-pix_fmt', 'gray', '-s', '640x360', png]);
    grab(file, path.join(tmp, 'comp.gray'));
    grab(path.join(out, 'highlight.mp4'), path.join(tmp, 'bg.gray'));
    const a = fs.readFileSync(path.join(tmp, 'comp.gray')), b = fs.readFileSync(path.join(tmp, 'bg.gray'));
    const diff = (x0: number, y0: number, x1: number, y1: number) => {
      let d = 0, n = 0;
      for (let y = y0; y < y1; y++) for (let x = x0; x < x1; x++, n++) d += Math.abs(a[y * 640 + x]! - b[y * 640 + x]!);
      return d / n;
    };
    expect(diff(20, 20, 250, 140)).toBeGreaterThan(20);
    expect(diff(400, 250, 630, 350)).toBeLessThan(4);
  }, 320_000);

  it('stopped before any page was generated → failed with that reason', async () => {
    const created = await json(url, 'POST', '/api/jobs', { pipeline_type: 'lipsync', uploaded_file_id: docId, ref_video_file_id: videoId, options: { lipsync_preset: 'fast' } });
    expect(created.status).toBe(201);
    expect((await json(url, 'POST', `/api/jobs/${created.body.id}/stop`)).status).toBe(200);
    const job = await jobUntil(url, created.body.id, ['completed', 'failed', 'stopped']);
    expect(job.status).toBe('failed');
    expect(job.error).toBe('stopped before any page was generated');
    expect((await fetch(`${url}/api/jobs/${job.id}/download`)).status).toBe(409);
  }, 200_000);
});

describe('lip-sync reader pipeline with its clips from a real GPU server', () => {
  let gpu: { url: string; close(): Promise<void> } | null = null;
  let t: TestEnv;
  let svc: RunningService;
  const gpuData = fs.mkdtempSync(path.join(os.tmpdir(), 'lectern-lipsync-gpu-'));

  beforeAll(async () => {
    gpu = await startGpuServer(
      { ...loadGpuServerConfig({}, {}), host: '127.0.0.1', port: 0, backend: 'espeak', workers: 1, modelsDir: path.join(PROJECT_ROOT, 'models'), dataDir: gpuData, lipsyncCommand: null, lipsyncProvider: 'viseme' },
      createLogger('silent', 'gpu-test'),
    );
    t = testEnv('embedded', 'lipsync_remote');
    svc = await t.start({ LECTERN_GPU_SERVER_URL: gpu.url, LECTERN_LIPSYNC_POLL_MS: '200', LECTERN_LEASE_MS: '60000', LECTERN_HEARTBEAT_MS: '1000' });
  }, 60_000);
  afterAll(async () => {
    await svc?.close();
    await gpu?.close();
    await t?.cleanup();
    fs.rmSync(gpuData, { recursive: true, force: true });
  });

  it('generates every page on the server, which keeps no job afterwards', async () => {
    const twoPages = makePdf({ pages: PAGES.slice(0, 2).map((text) => [{ text, x: 72, y: 700, size: 14 }]) });
    const doc = await upload(svc.url, 'two.pdf', twoPages);
    const video = await upload(svc.url, 'presenter.mp4', VIDEO);
    const created = await json(svc.url, 'POST', '/api/jobs', { pipeline_type: 'lipsync', uploaded_file_id: doc.body.id, ref_video_file_id: video.body.id, options: { lipsync_preset: 'fast' } });
    expect(created.status).toBe(201);
    const job = await jobUntil(svc.url, created.body.id, ['completed', 'failed', 'stopped'], 300_000);
    expect(job.error).toBeNull();
    expect(job.status).toBe('completed');
    expect(job.config_json).toMatchObject({ pages_done: 2, pages_total: 2 });
    await checkOutputs(t.dataDir, job, 2);
    const h = (await (await fetch(`${gpu!.url}/health`)).json()) as { lipsync_jobs: Record<string, number> };
    // Two clips were made there, and the client DELETEd both.
    expect(Object.values(h.lipsync_jobs).reduce((a, b) => a + b, 0)).toBe(0);
    const served = await (await fetch(`${gpu!.url}/metrics`)).text();
    expect(served).toMatch(/lipsync/);
  }, 320_000);
});
