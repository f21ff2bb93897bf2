// The web app end to end in a real browser: Debian's chromium, headless and kept off the
// network, driven by playwright-core against the real service on an ephemeral port serving
// the real build of web/ (eSpeak NG narration, the viseme lip-sync provider on the real
// presenter clip). A second service with API tokens checks the token prompt. Each case
// saves a screenshot under test-output/web-e2e/.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningService } from '../src/service.ts';
import { startTestGpuServer, type RunningGpuServer } from './helpers/gpu-server-fixture.ts';
import { makeEpub3, makePdf } from './helpers/make-documents.ts';
import { smallMessyBook, writeMessyBookText } from './helpers/messy-book.ts';
import { measureSpeech, semitones } from './helpers/pitch.ts';
import { json, testEnv, upload, waitFor, type TestEnv } from './helpers/service.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const WEB = path.join(ROOT, 'web');
const SHOTS = path.join(ROOT, 'test-output', 'web-e2e');
const WELCOME = path.join(ROOT, 'samples', 'welcome.md');
const JFK_WAV = path.join(ROOT, 'test', 'fixtures', 'speech', 'jfk.wav');
const PRESENTER = path.join(ROOT, 'test', 'fixtures', 'video', 'presenter.mp4');
const CHROMIUM = '/usr/bin/chromium';
// The lip-sync service settings of test/lipsync-pipeline.test.ts: eSpeak, the viseme provider,
// and a long lease (a page's clip keeps the worker busy for seconds).
const LIPSYNC_ENV = { LECTERN_TTS_BACKEND: 'espeak', LECTERN_LIPSYNC_PROVIDER: 'viseme', LECTERN_LEASE_MS: '60000', LECTERN_HEARTBEAT_MS: '1000' };

/** A PDF of `n` pages, one short sentence each (a lip-sync job makes one presenter clip per page). */
const pagesPdf = (n: number) =>
  makePdf({ title: `A ${n}-page test`, pages: Array.from({ length: n }, (_, i) => [{ text: `This is page ${i + 1} of the lip-sync test.`, x: 72, y: 700, size: 14 }]) });

async function launch(profile: string): Promise<BrowserContext> {
  return chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    acceptDownloads: true,
    viewport: { width: 1100, height: 800 },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--autoplay-policy=no-user-gesture-required', '--mute-audio'],
  });
}

/** True when web/dist holds React's development runtime (a build made with NODE_ENV other than production). */
function isDevBuild(): boolean {
  const assets = path.join(WEB, 'dist', 'assets');
  return fs.existsSync(assets) && fs.readdirSync(assets).some((f) => f.endsWith('.js') && fs.readFileSync(path.join(assets, f), 'utf8').includes('jsxDEV'));
}

/** Builds web/ when its build is missing, older than its sources, or a development build (the test runs what the user gets). */
function ensureBuilt(): void {
  const built = path.join(WEB, 'dist', 'index.html');
  const newest = (dir: string): number =>
    Math.max(0, ...fs.readdirSync(dir, { withFileTypes: true }).map((e) => (e.isDirectory() ? newest(path.join(dir, e.name)) : fs.statSync(path.join(dir, e.name)).mtimeMs)));
  const srcTime = Math.max(newest(path.join(WEB, 'src')), fs.statSync(path.join(WEB, 'index.html')).mtimeMs, fs.statSync(path.join(WEB, 'vite.config.ts')).mtimeMs);
  if (fs.existsSync(built) && fs.statSync(built).mtimeMs >= srcTime && !isDevBuild()) return;
  // vitest sets NODE_ENV=test, and Vite keeps an inherited NODE_ENV: React's development
  // runtime (StrictMode's doubled effects and requests included) would be what the test runs.
  execFileSync('npm', ['--prefix', WEB, 'run', 'build'], { stdio: 'pipe', timeout: 180_000, env: { ...process.env, NODE_ENV: 'production' } });
  if (isDevBuild()) throw new Error('web/dist is a development build of React');
}

/** A fresh chromium profile with one page (30 s default timeout); `shot` saves a full-page screenshot under test-output/web-e2e/. */
async function openBrowser(label: string) {
  ensureBuilt();
  fs.mkdirSync(SHOTS, { recursive: true });
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), `lectern-chromium-${label}-`));
  const ctx = await launch(profile);
  const page = ctx.pages()[0] ?? (await ctx.newPage());
  page.setDefaultTimeout(30_000);
  return {
    ctx,
    page,
    shot: (name: string) => page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true }),
    async close() {
      await ctx.close();
      fs.rmSync(profile, { recursive: true, force: true });
    },
  };
}

describe.skipIf(!fs.existsSync(CHROMIUM))('web app in chromium', () => {
  let t: TestEnv;
  let svc: RunningService;
  let browser: Awaited<ReturnType<typeof openBrowser>> | undefined;
  let page: Page;
  let jobId: string;

  const shot = (name: string) => browser!.shot(name);

  beforeAll(async () => {
    t = testEnv('embedded', 'webe2e');
    svc = await t.start(LIPSYNC_ENV);
    browser = await openBrowser('main');
    page = browser.page;
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    await svc?.close();
    await t?.cleanup();
  });

  it('shows the empty dashboard with a way to start', async () => {
    await page.goto(svc.url);
    await expect.poll(() => page.getByText('No jobs yet').isVisible()).toBe(true);
    expect(await page.title()).toBe('Jobs · Lectern');
    await shot('01-empty-dashboard');
  });

  it('plays a voice sample, previews the document in that voice, and offers no cloning without a GPU server (disabled, saying why)', async () => {
    await page.goto(`${svc.url}/new`);
    await page.getByLabel('Document to narrate').setInputFiles(WELCOME);
    await page.getByText('Uploaded welcome.md').waitFor();
    // A voice's sample plays (fetched with the token, played from a blob: URL)…
    await page.getByRole('button', { name: 'Play a sample of American English (eSpeak NG)' }).click();
    await page.getByRole('button', { name: 'Stop the sample of American English (eSpeak NG)' }).waitFor();
    // …and the preview speaks a snippet of the uploaded document (real eSpeak NG).
    await page.getByRole('radio', { name: /American English \(eSpeak NG\)/ }).check();
    await page.getByRole('button', { name: 'Preview with the document' }).click();
    await page.getByText(/^Speaking: “Lectern reads your documents aloud/).waitFor();
    // Cloning from a reference clip needs a GPU server that declares it, which this install has not.
    await page.getByText(/^Cloning is not available on this install: voice cloning needs a GPU server/).waitFor();
    expect(await page.getByLabel(/Clone a voice from a clip/).isDisabled()).toBe(true);
    expect(new URL(page.url()).pathname).toBe('/new');
    await shot('02-cloning-unavailable');
  });

  it('uploads a real document, creates an audio job and watches the progress bar reach 100 %', async () => {
    await page.goto(`${svc.url}/new`);
    await page.getByLabel('Document to narrate').setInputFiles(WELCOME);
    await page.getByText('Uploaded welcome.md').waitFor();
    expect(await page.getByLabel(/Audio narration/).isChecked()).toBe(true);
    await page.getByLabel('Title (optional)').fill('Welcome, read aloud');
    await page.getByRole('button', { name: 'Create job' }).click();
    await page.waitForURL(/\/jobs\/[0-9a-f-]{36}$/);
    jobId = new URL(page.url()).pathname.split('/')[2]!;
    const bar = page.getByRole('progressbar', { name: 'Progress of Welcome, read aloud' });
    await expect.poll(() => bar.getAttribute('aria-valuenow'), { timeout: 60_000 }).toBe('100');
    await page.locator('.badge-completed').waitFor();
    const job = (await json(svc.url, 'GET', `/api/jobs/${jobId}`)).body;
    expect(job).toMatchObject({ status: 'completed', pipeline_type: 'audio', config_json: { title: 'Welcome, read aloud' } });
    await page.getByRole('link', { name: 'Open the reader' }).waitFor();
    await shot('03-job-completed');

    // The dashboard lists it, completed, at 100 %.
    await page.getByRole('link', { name: 'Jobs', exact: true }).click();
    const row = page.locator(`[data-job-id="${jobId}"]`);
    await row.waitFor();
    expect(await row.getByRole('progressbar').getAttribute('aria-valuenow')).toBe('100');
    await shot('04-dashboard');
  });

  it('takes the language a French EPUB declares: the selector, the hint and a French voice; the job is narrated in it', async () => {
    const epub = path.join(os.tmpdir(), `lectern-e2e-livre-${process.pid}.epub`);
    fs.writeFileSync(epub, makeEpub3({ title: 'Un petit livre', author: 'A. Auteur', language: 'fr-FR', chapters: [{ title: 'Un', paragraphs: ['Il était une fois un petit livre écrit en français.'] }] }));
    try {
      await page.goto(`${svc.url}/new`);
      const select = page.getByLabel('Language', { exact: true });
      await expect.poll(() => select.inputValue()).toBe('en-US');
      await page.getByLabel('Document to narrate').setInputFiles(epub);
      await page.getByText(`Uploaded ${path.basename(epub)}`).waitFor();
      await expect.poll(() => select.inputValue()).toMatch(/^fr-fr$/i);
      await page.getByText('The document declares fr-FR').waitFor();
      const voice = await page.locator('input[name="voice"]:checked').inputValue();
      await shot('04b-declared-language');
      await page.getByRole('button', { name: 'Create job' }).click();
      await page.waitForURL(/\/jobs\/[0-9a-f-]{36}$/);
      const id = new URL(page.url()).pathname.split('/')[2]!;
      const job = (await json(svc.url, 'GET', `/api/jobs/${id}`)).body;
      expect(job.config_json.language).toMatch(/^fr-fr$/i);
      expect(job.config_json.voice_id ?? '').toBe(voice);
      const voices = (await json(svc.url, 'GET', '/api/voices')).body as Array<{ id: string; language: string }>;
      if (voice) expect(voices.find((v) => v.id === voice)?.language).toMatch(/^fr/i);
      await waitFor(async () => ['completed', 'failed'].includes((await json(svc.url, 'GET', `/api/jobs/${id}`)).body.status), 60_000, 'the French job to finish');
      expect((await json(svc.url, 'GET', `/api/jobs/${id}`)).body.status).toBe('completed');
      // the later cases expect the welcome job alone on the dashboard
      expect((await json(svc.url, 'DELETE', `/api/jobs/${id}`)).status).toBe(200);
    } finally {
      fs.rmSync(epub, { force: true });
    }
  });

  it('read-along from a recording: the book and its three shuffled chapter files uploaded in the form, the job aligned, and what it matched shown', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lectern-e2e-readalong-'));
    try {
      const book = await smallMessyBook(dir);
      const text = writeMessyBookText(book, path.join(dir, 'book.txt'));
      await page.goto(`${svc.url}/new`);
      await page.getByLabel('Document to narrate').setInputFiles(text);
      await page.getByText('Uploaded book.txt').waitFor();
      await page.getByLabel(/Read-along from your recording/).check();
      await page.getByLabel(/Your recording of the document/).setInputFiles(book.files);
      const list = page.getByRole('list', { name: 'Recording files' });
      await expect.poll(() => list.getByRole('listitem').count(), { timeout: 30_000 }).toBe(book.files.length);
      await page.getByRole('button', { name: 'Create job' }).click();
      await page.waitForURL(/\/jobs\/[0-9a-f-]{36}$/);
      const id = new URL(page.url()).pathname.split('/')[2]!;
      await page.locator('.badge-completed').waitFor({ timeout: 120_000 });
      const job = (await json(svc.url, 'GET', `/api/jobs/${id}`)).body;
      expect(job).toMatchObject({ status: 'completed', pipeline_type: 'readalong' });
      expect(job.config_json.audio_file_ids).toHaveLength(book.files.length);
      const r = job.config_json.result;
      // the page says what the service found: every spoken word, the never-read paragraphs without a time
      const spoken = book.spoken.filter(Boolean).length;
      expect(r.words).toBe(book.words.length);
      expect(r.words_timed).toBeGreaterThanOrEqual(Math.floor(spoken * 0.85));
      expect(r.words_timed).toBeLessThanOrEqual(spoken);
      const shown = await page.getByTestId('words-timed').textContent();
      expect(shown).toContain(`${r.words_timed.toLocaleString('en-US')} of ${r.words.toLocaleString('en-US')} (`);
      expect(shown).toContain('are not read in the recording');
      await page.getByText('Audio not in the text').waitFor();
      await shot('04c-readalong-job');
      // its reader opens on the document's words
      await page.getByRole('link', { name: 'Open the reader' }).click();
      await page.waitForURL(`${svc.url}/jobs/${id}/read`);
      await page.locator('.word').first().waitFor();
      // and its row in the job list says the same in one line
      await page.goto(`${svc.url}/`);
      const row = page.locator(`li[data-job-id="${id}"]`);
      expect(await row.getByTestId('row-words-timed').textContent()).toBe(`Recording: ${r.words_timed.toLocaleString('en-US')} of ${r.words.toLocaleString('en-US')} words matched (${(Math.floor((r.words_timed / r.words) * 1000) / 10).toFixed(1)} %)`);
      expect((await json(svc.url, 'DELETE', `/api/jobs/${id}`)).status).toBe(200); // the later cases expect the welcome job alone
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('opens the reader and the highlighted word moves while the narration plays; a click seeks', async () => {
    await page.goto(`${svc.url}/jobs/${jobId}/read`);
    const words = page.locator('.read-text .word');
    await words.first().waitFor();
    const timeline = (await (await fetch(`${svc.url}/api/jobs/${jobId}/files/timeline.json`)).json()) as { words: Array<{ word: string; start: number }> };
    expect(await words.count()).toBe(timeline.words.length);
    expect(await words.first().textContent()).toBe(timeline.words[0]!.word);

    const current = () => page.evaluate<number>("Number(document.querySelector('.word.current')?.dataset.i ?? -1)");
    await page.locator('body').press(' '); // space plays (focus is not on a control)
    await expect.poll(current, { timeout: 15_000 }).toBeGreaterThanOrEqual(0);
    const first = await current();
    await expect.poll(current, { timeout: 15_000 }).toBeGreaterThan(first + 1);
    await shot('05-reader-playing');

    // Click a word far along: the audio jumps to its start and it is highlighted.
    const target = Math.floor(timeline.words.length * 0.75);
    await words.nth(target).click();
    await expect.poll(current, { timeout: 10_000 }).toBeGreaterThanOrEqual(target);
    const at = await page.evaluate<number>("document.querySelector('audio').currentTime");
    expect(at).toBeGreaterThanOrEqual(timeline.words[target]!.start);
    // Space pauses.
    await page.locator('body').press(' ');
    await expect.poll(() => page.evaluate<boolean>("document.querySelector('audio').paused")).toBe(true);
    await shot('06-reader-seeked');
  });

  it('downloads the output through fetch, with the service\'s file name and bytes', async () => {
    await page.goto(`${svc.url}/jobs/${jobId}`);
    const [dl] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download', exact: true }).click()]);
    expect(dl.suggestedFilename()).toBe('welcome.mp3');
    const saved = path.join(t.dataDir, 'downloaded.mp3');
    await dl.saveAs(saved);
    const direct = Buffer.from(await (await fetch(`${svc.url}/api/jobs/${jobId}/download`)).arrayBuffer());
    expect(fs.readFileSync(saved).equals(direct)).toBe(true);
    await page.getByText('Saved welcome.mp3').waitFor();
    await shot('07-downloaded');
  });

  it('is usable at phone width (390 px): no sideways scrolling on the dashboard, job and reader pages', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    for (const [p, name] of [['/', '08-phone-dashboard'], [`/jobs/${jobId}`, '09-phone-job'], [`/jobs/${jobId}/read`, '10-phone-reader'], ['/new', '11-phone-new-job']] as const) {
      await page.goto(`${svc.url}${p}`);
      await page.locator('main h1').first().waitFor();
      if (p.endsWith('/read')) await page.locator('.word').first().waitFor();
      if (p === '/new') await page.locator('.voices').waitFor();
      const overflow = await page.evaluate<number>('document.documentElement.scrollWidth - document.documentElement.clientWidth');
      expect(overflow, p).toBeLessThanOrEqual(0);
      await shot(name);
    }
    await page.setViewportSize({ width: 1100, height: 800 });
  });

  it('deletes a job only after the inline confirmation; cancel keeps it', async () => {
    await page.goto(`${svc.url}/jobs/${jobId}`);
    await page.getByRole('button', { name: 'Delete' }).click();
    const cancel = page.getByRole('button', { name: 'Cancel' });
    expect(await cancel.evaluate((el) => el === el.ownerDocument.activeElement)).toBe(true); // focus on the safe choice
    await page.getByText(/Delete “Welcome, read aloud” and its outputs\?/).waitFor();
    await shot('12-delete-confirm');
    await cancel.click();
    expect((await json(svc.url, 'GET', `/api/jobs/${jobId}`)).status).toBe(200);
    await page.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('button', { name: 'Yes, delete' }).click();
    await page.waitForURL(`${svc.url}/`);
    await page.getByText('No jobs yet').waitFor();
    expect((await json(svc.url, 'GET', `/api/jobs/${jobId}`)).status).toBe(404);
    await shot('13-deleted');
  });

  it('stops a running lip-sync job after the inline confirmation: it ends stopped with the pages done, and its reader ZIP downloads', async () => {
    const PAGES = 24; // 1–2 s a page here: the stop lands with many pages to go
    await page.goto(`${svc.url}/new`);
    await page.getByLabel('Document to narrate').setInputFiles({ name: 'long.pdf', mimeType: 'application/pdf', buffer: pagesPdf(PAGES) });
    await page.getByText('Uploaded long.pdf').waitFor();
    await page.getByLabel(/Lip-sync presenter/).check();
    await page.getByLabel(/Presenter video/).setInputFiles(PRESENTER);
    await page.getByText('Uploaded presenter.mp4').waitFor();
    await page.getByLabel('Lip-sync preset (optional)').fill('fast');
    await page.getByLabel('Title (optional)').fill('Many pages, lip-synced');
    await page.getByRole('button', { name: 'Create job' }).click();
    await page.waitForURL(/\/jobs\/[0-9a-f-]{36}$/);
    const id = new URL(page.url()).pathname.split('/')[2]!;
    expect((await json(svc.url, 'GET', `/api/jobs/${id}`)).body).toMatchObject({ pipeline_type: 'lipsync', config_json: { options: { format: 'reader', lipsync_preset: 'fast' } } });

    // Stop once the first page's clip is done (the SSE progress counts pages finished), so
    // the stop always lands with pages done and pages to go: the outcome is `stopped`.
    const pagesDone = page.getByTestId('pages-done');
    const doneNow = () => page.evaluate<string>("document.querySelector('[data-testid=pages-done]')?.textContent ?? ''");
    await expect.poll(async () => Number(new RegExp(`^(\\d+) of ${PAGES}$`).exec(await doneNow())?.[1] ?? 0), { timeout: 180_000, interval: 200 }).toBeGreaterThanOrEqual(1);
    await page.getByRole('button', { name: 'Stop' }).click();
    const question = page.getByText(/Stop after the page in progress\?/);
    await question.waitFor();
    const cancel = page.getByRole('button', { name: 'Cancel' });
    expect(await cancel.evaluate((el) => el === el.ownerDocument.activeElement)).toBe(true);
    expect((await json(svc.url, 'GET', `/api/jobs/${id}`)).body.status).toBe('running'); // asking sent nothing
    await shot('14-lipsync-stop-confirm');
    await page.getByRole('button', { name: 'Yes, stop it' }).click();
    await page.locator('.badge-stopped').waitFor({ timeout: 120_000 });

    const job = (await json(svc.url, 'GET', `/api/jobs/${id}`)).body;
    expect(job.status).toBe('stopped');
    expect(job.error).toBeNull();
    expect(job.config_json.pages_total).toBe(PAGES);
    expect(job.config_json.pages_done).toBeGreaterThanOrEqual(1);
    expect(job.config_json.pages_done).toBeLessThan(PAGES);
    expect(await pagesDone.textContent()).toBe(`${job.config_json.pages_done} of ${PAGES}`);
    const bar = page.getByRole('progressbar', { name: 'Progress of Many pages, lip-synced' });
    expect(await bar.getAttribute('aria-valuenow')).toBe(String(Math.round((job.config_json.pages_done / PAGES) * 100)));
    await page.getByText('Stopped on request; the output holds the pages done.').waitFor();
    expect(await page.getByRole('button', { name: 'Stop' }).count()).toBe(0);

    const [dl] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download the offline reader (ZIP)' }).click()]);
    expect(dl.suggestedFilename()).toBe('long.zip');
    const saved = path.join(t.dataDir, 'stopped-reader.zip');
    await dl.saveAs(saved);
    const direct = Buffer.from(await (await fetch(`${svc.url}/api/jobs/${id}/download`)).arrayBuffer());
    expect(fs.readFileSync(saved).equals(direct)).toBe(true);
    expect(direct.subarray(0, 4).toString('latin1')).toBe('PK\x03\x04');
    await page.getByText('Saved long.zip').waitFor();
    await shot('15-lipsync-stopped');
  }, 400_000);

  it('opens the reader of a finished lip-sync job: the presenter window shows and plays in step with the narration', async () => {
    // Made through the API (the UI path is the case above): one page, completed.
    const doc = (await upload(svc.url, 'one-page.pdf', pagesPdf(1), 'application/pdf')).body.id;
    const presenterVideo = (await upload(svc.url, 'presenter.mp4', fs.readFileSync(PRESENTER), 'video/mp4')).body.id;
    const created = await json(svc.url, 'POST', '/api/jobs', { pipeline_type: 'lipsync', uploaded_file_id: doc, ref_video_file_id: presenterVideo, title: 'One page, lip-synced', options: { format: 'reader', lipsync_preset: 'fast' } });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    const job = await waitFor(async () => {
      const j = (await json(svc.url, 'GET', `/api/jobs/${id}`)).body;
      return ['completed', 'failed', 'stopped'].includes(j.status) ? j : null;
    }, 240_000, 'the lip-sync job to finish');
    expect(job.error).toBeNull();
    expect(job.status).toBe('completed');
    expect(job.config_json.result.files).toContain('presenter.mp4');

    await page.goto(`${svc.url}/jobs/${id}/read`);
    await page.locator('.read-text .word').first().waitFor();
    const presenter = page.getByRole('region', { name: 'Presenter' });
    await presenter.waitFor();
    expect(await presenter.isVisible()).toBe(true);
    const box = (await presenter.boundingBox())!;
    expect(box.width).toBeGreaterThan(100);
    const video = <T,>(expr: string) => page.evaluate<T>(`(v => ${expr})(document.querySelector('.presenter-video'))`);
    await expect.poll(() => video<number>('v.videoWidth')).toBeGreaterThan(0); // a decodable video, not a blank box
    await page.getByRole('button', { name: 'Download the offline reader (ZIP)' }).waitFor();

    await page.locator('body').press(' ');
    await expect.poll(() => video<boolean>('!v.paused && v.currentTime > 0.5'), { timeout: 15_000 }).toBe(true);
    // In step: within the reader's 0.25 s resync threshold (plus a frame) of the narration.
    const drift = await page.evaluate<number>("Math.abs(document.querySelector('.presenter-video').currentTime - document.querySelector('audio').currentTime)");
    expect(drift).toBeLessThan(0.35);
    await expect.poll(() => page.evaluate<number>("Number(document.querySelector('.word.current')?.dataset.i ?? -1)")).toBeGreaterThanOrEqual(0);
    await shot('16-lipsync-reader-presenter');
    await page.locator('body').press(' ');
    await expect.poll(() => video<boolean>('v.paused')).toBe(true);
  }, 300_000);

  it('opens the reader of a highlight job (offline reader of a PDF): the same read-along from its timeline, and its ZIP', async () => {
    // The job lists narration.mp3, timeline.json, narration.vtt and reader.zip; the PDF's page
    // images and word boxes exist only inside reader.zip, so the web reader lays out the words.
    const doc = (await upload(svc.url, 'two-pages.pdf', pagesPdf(2), 'application/pdf')).body.id;
    const created = await json(svc.url, 'POST', '/api/jobs', { pipeline_type: 'highlight', uploaded_file_id: doc, title: 'Two pages, highlighted', options: { format: 'reader' } });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    const job = await waitFor(async () => {
      const j = (await json(svc.url, 'GET', `/api/jobs/${id}`)).body;
      return ['completed', 'failed', 'stopped'].includes(j.status) ? j : null;
    }, 120_000, 'the highlight job to finish');
    expect(job.error).toBeNull();
    expect(job.config_json.result.files).toEqual(expect.arrayContaining(['reader.zip', 'narration.mp3', 'timeline.json']));

    await page.goto(`${svc.url}/jobs/${id}/read`);
    const words = page.locator('.read-text .word');
    await words.first().waitFor();
    expect(await words.allTextContents()).toEqual(['This', 'is', 'page', '1', 'of', 'the', 'lip-sync', 'test.']);
    await page.getByText('Page 1 of 2').waitFor();
    expect(await page.locator('.presenter').count()).toBe(0); // no presenter for a highlight job
    await page.getByRole('button', { name: 'Download the offline reader (ZIP)' }).waitFor();
    // Following the audio onto page 2: click its first word via the pager, then play.
    await page.getByRole('button', { name: 'Next page' }).click();
    await page.getByText('Page 2 of 2').waitFor();
    await page.locator('.read-text .word').first().click();
    await expect.poll(() => page.evaluate<string>("document.querySelector('.word.current')?.textContent ?? ''")).toBe('This');
    expect(await page.locator('.read-text .word').nth(3).textContent()).toBe('2');
    await shot('17-highlight-reader');
  }, 180_000);
});

describe.skipIf(!fs.existsSync(CHROMIUM))('web app in chromium, with a GPU server whose model process declares voice cloning', () => {
  // The GPU server runs --backend process with the test model process (eSpeak NG following the
  // clip's measured pitch and rate; no cloning model can be installed here).
  let gpu: RunningGpuServer;
  let t: TestEnv;
  let svc: RunningService;
  let browser: Awaited<ReturnType<typeof openBrowser>> | undefined;
  let page: Page;

  const shot = (name: string) => browser!.shot(name);

  beforeAll(async () => {
    gpu = await startTestGpuServer({ backend: 'process', ttsProcess: `python3 ${path.join(ROOT, 'test', 'helpers', 'espeak-pitch-rate-adapter.py')}`, workers: 1, transcriber: 'pocketsphinx' });
    t = testEnv('embedded', 'webe2e_clone');
    svc = await t.start({ LECTERN_GPU_SERVER_URL: gpu.url, LECTERN_LEASE_MS: '60000' });
    browser = await openBrowser('clone');
    page = browser.page;
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    await svc?.close();
    await gpu?.close();
    await t?.cleanup();
  });

  it('offers cloning, previews the document in a voice that follows the clip, and narrates a job with it', async () => {
    await page.goto(`${svc.url}/new`);
    await page.getByLabel('Document to narrate').setInputFiles(WELCOME);
    await page.getByText('Uploaded welcome.md').waitFor();
    const clone = page.getByLabel(/Clone a voice from a clip/);
    await expect.poll(() => clone.isEnabled()).toBe(true);
    expect(await page.getByText(/Cloning is not available/).count()).toBe(0);
    await clone.check();
    await page.getByLabel(/Reference clip of the voice/).setInputFiles(JFK_WAV);
    await page.getByText('Uploaded jfk.wav').waitFor();
    await page.getByLabel(/Transcript of the clip/).fill('And so my fellow Americans, ask not what your country can do for you, ask what you can do for your country.');
    const previewed = page.waitForResponse((r) => new URL(r.url()).pathname === '/api/voices/preview');
    await page.getByRole('button', { name: 'Preview with the document' }).click();
    const preview = await previewed;
    expect(preview.status()).toBe(200);
    await page.getByText(/^Speaking: “Lectern reads your documents aloud/).waitFor();
    // The same preview through the API answers from the service's cache: the bytes the page played.
    const again = await fetch(`${svc.url}/api/voices/preview`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: preview.request().postData()! });
    expect(again.status).toBe(200);
    const heard = await measureSpeech(Buffer.from(await again.arrayBuffer()));
    const clip = await measureSpeech(JFK_WAV);
    expect(Math.abs(semitones(heard.f0!, clip.f0!))).toBeLessThan(1.5);
    await shot('21-cloning-preview');

    await page.getByRole('button', { name: 'Create job' }).click();
    await page.waitForURL(/\/jobs\/[0-9a-f-]{36}$/);
    const id = new URL(page.url()).pathname.split('/')[2]!;
    const bar = page.getByRole('progressbar', { name: 'Progress of welcome.md' });
    await expect.poll(() => bar.getAttribute('aria-valuenow'), { timeout: 180_000 }).toBe('100');
    await page.locator('.badge-completed').waitFor();
    const job = (await json(svc.url, 'GET', `/api/jobs/${id}`)).body;
    expect(job.config_json.ref_audio_file_id).toBeTruthy();
    await shot('22-cloning-job-completed');
  }, 300_000);
});

describe.skipIf(!fs.existsSync(CHROMIUM))('web app in chromium, against a service that needs a token', () => {
  const TOKEN = 'e2e-browser-token-0123456789abcdef';
  let t: TestEnv;
  let svc: RunningService;
  let browser: Awaited<ReturnType<typeof openBrowser>> | undefined;
  let page: Page;

  const shot = (name: string) => browser!.shot(name);

  beforeAll(async () => {
    t = testEnv('embedded', 'webe2e_token');
    svc = await t.start({ LECTERN_API_TOKENS: `browser:${TOKEN}` });
    browser = await openBrowser('token');
    page = browser.page;
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    await svc?.close();
    await t?.cleanup();
  });

  it('asks for the token on the first 401, again for a wrong one, then loads; SSE progress and a download carry it', async () => {
    // Every /api request the page makes, with the Authorization header it carried.
    const sent: Array<{ path: string; auth: string | null; status: number }> = [];
    page.on('response', async (r) => {
      const u = new URL(r.url());
      if (u.pathname.startsWith('/api/')) sent.push({ path: u.pathname, auth: (await r.request().allHeaders())['authorization'] ?? null, status: r.status() });
    });

    const first401 = page.waitForResponse((r) => new URL(r.url()).pathname === '/api/jobs' && r.status() === 401);
    await page.goto(svc.url);
    expect((await first401).headers()['www-authenticate']).toBe('Bearer');
    const dialog = page.getByRole('dialog', { name: 'Access token needed' });
    await dialog.waitFor();
    const input = page.getByRole('textbox', { name: 'Access token' });
    expect(await input.evaluate((el) => el === el.ownerDocument.activeElement)).toBe(true);
    await shot('18-token-prompt');

    await input.fill('not-the-right-token-at-all');
    await page.getByRole('button', { name: 'Continue' }).click();
    await dialog.getByRole('alert').filter({ hasText: 'That token was not accepted' }).waitFor();
    await shot('19-token-refused');
    await input.fill(TOKEN);
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByText('No jobs yet').waitFor();
    expect(await dialog.count()).toBe(0);
    expect(sent.filter((r) => r.path === '/api/jobs').map((r) => [r.auth, r.status])).toEqual([
      [null, 401],
      ['Bearer not-the-right-token-at-all', 401],
      [`Bearer ${TOKEN}`, 200],
    ]);
    await shot('20-token-dashboard');

    // A job made and watched with the token: upload (XHR), creation, the event stream, the download.
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'New job' }).click();
    await page.getByLabel('Document to narrate').setInputFiles(WELCOME);
    await page.getByText('Uploaded welcome.md').waitFor();
    await page.getByRole('button', { name: 'Create job' }).click();
    await page.waitForURL(/\/jobs\/[0-9a-f-]{36}$/);
    const id = new URL(page.url()).pathname.split('/')[2]!;
    const bar = page.getByRole('progressbar', { name: 'Progress of welcome.md' });
    await expect.poll(() => bar.getAttribute('aria-valuenow'), { timeout: 60_000 }).toBe('100');
    await page.locator('.badge-completed').waitFor();
    const [dl] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download', exact: true }).click()]);
    expect(dl.suggestedFilename()).toBe('welcome.mp3');
    const saved = path.join(t.dataDir, 'downloaded.mp3');
    await dl.saveAs(saved);
    const direct = await fetch(`${svc.url}/api/jobs/${id}/download`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(fs.readFileSync(saved).equals(Buffer.from(await direct.arrayBuffer()))).toBe(true);
    expect((await fetch(`${svc.url}/api/jobs/${id}/download`)).status).toBe(401); // it really needs the token
    await page.getByText('Saved welcome.mp3').waitFor();

    const events = sent.filter((r) => r.path === `/api/jobs/${id}/events`);
    expect(events.length).toBeGreaterThanOrEqual(1);
    expect(events.every((r) => r.auth === `Bearer ${TOKEN}` && r.status === 200)).toBe(true);
    expect(sent.filter((r) => r.path === `/api/jobs/${id}/download`)).toEqual([{ path: `/api/jobs/${id}/download`, auth: `Bearer ${TOKEN}`, status: 200 }]);
    expect(sent.filter((r) => r.path === '/api/uploads').map((r) => r.auth)).toEqual([`Bearer ${TOKEN}`]);
    // After the token was given, nothing went without it, and nothing more was refused.
    const after = sent.slice(sent.findIndex((r) => r.auth === `Bearer ${TOKEN}`));
    expect(after.filter((r) => r.auth !== `Bearer ${TOKEN}` || r.status === 401)).toEqual([]);
    await shot('21-token-job-downloaded');
  }, 180_000);
});

describe.skipIf(!fs.existsSync(CHROMIUM))('web app in chromium, shared by two people and an admin', () => {
  const TOKENS = { alice: 'e2e-alice-token-0123456789abcd', bob: 'e2e-bob-token-0123456789abcdef', root: 'e2e-root-token-0123456789abcde' };
  let t: TestEnv;
  let svc: RunningService;
  let browser: Awaited<ReturnType<typeof openBrowser>> | undefined;
  let page: Page;
  const jobs = { alice: '', bob: '' };

  const shot = (name: string) => browser!.shot(name);
  /** Uploads welcome.md and narrates it as `who`, through the API with that person's token. */
  async function narrateAs(who: 'alice' | 'bob', title: string): Promise<string> {
    const auth = { authorization: `Bearer ${TOKENS[who]}` };
    const form = new FormData();
    form.append('file', new Blob([fs.readFileSync(WELCOME)]), 'welcome.md');
    const up = (await (await fetch(`${svc.url}/api/uploads`, { method: 'POST', headers: auth, body: form })).json()) as { id: string };
    const res = await fetch(`${svc.url}/api/jobs`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ pipeline_type: 'audio', uploaded_file_id: up.id, title }) });
    expect(res.status).toBe(201);
    const id = ((await res.json()) as { id: string }).id;
    await waitFor(async () => ((await (await fetch(`${svc.url}/api/jobs/${id}`, { headers: auth })).json()) as { status: string }).status === 'completed', 120_000, `${who}'s job`);
    return id;
  }
  /** Answers the token prompt that the page's first request brings up. */
  async function signIn(token: string) {
    await page.getByRole('dialog', { name: 'Access token needed' }).waitFor();
    await page.getByRole('textbox', { name: 'Access token' }).fill(token);
    await page.getByRole('button', { name: 'Continue' }).click();
  }

  beforeAll(async () => {
    t = testEnv('embedded', 'webe2e_owners');
    svc = await t.start({ LECTERN_API_TOKENS: Object.entries(TOKENS).map(([n, tok]) => `${n}:${tok}`).join(','), LECTERN_API_ADMINS: 'root', LECTERN_TTS_BACKEND: 'espeak' });
    jobs.alice = await narrateAs('alice', "Alice's narration");
    jobs.bob = await narrateAs('bob', "Bob's narration");
    browser = await openBrowser('owners');
    page = browser.page;
  }, 300_000);

  afterAll(async () => {
    await browser?.close();
    await svc?.close();
    await t?.cleanup();
  });

  it("each person sees only their own jobs (another's job page is not found); signed out and in as the admin, every job shows its owner and the owner filter narrows the list", async () => {
    await page.goto(svc.url);
    await signIn(TOKENS.alice);
    await page.getByRole('link', { name: "Alice's narration" }).waitFor();
    expect(await page.getByText('Signed in as alice').count()).toBe(1);
    expect(await page.locator('.job-row').count()).toBe(1);
    expect(await page.getByRole('link', { name: "Bob's narration" }).count()).toBe(0);
    expect(await page.getByLabel('Owner').count()).toBe(0);
    expect(await page.locator('.job-owner').count()).toBe(0);
    await shot('23-owners-alice-dashboard');

    // Bob's job by its address: the service answers 404, as for a job that does not exist.
    const refused = page.waitForResponse((r) => new URL(r.url()).pathname === `/api/jobs/${jobs.bob}`);
    await page.goto(`${svc.url}/jobs/${jobs.bob}`);
    expect((await refused).status()).toBe(404);
    // (The token stays in sessionStorage across the page load: no prompt.)
    await page.getByRole('alert').filter({ hasText: `Not found: job ${jobs.bob} not found` }).waitFor();
    await shot('24-owners-alice-not-found');

    // Another person at the same browser: sign out, and the admin signs in.
    await page.getByRole('link', { name: 'Back to the jobs' }).click();
    await page.getByRole('button', { name: 'Sign out' }).click();
    await signIn(TOKENS.root);
    await page.getByText('Signed in as root (admin: sees every job)').waitFor();
    await page.getByRole('link', { name: "Bob's narration" }).waitFor();
    await page.getByRole('link', { name: "Alice's narration" }).waitFor();
    const owners = await page.locator('.job-row').evaluateAll((rows) => rows.map((r) => [r.querySelector('.job-title')?.textContent, r.querySelector('.job-owner')?.textContent]));
    expect(owners).toEqual([
      ["Bob's narration", 'Owner: bob'],
      ["Alice's narration", 'Owner: alice'],
    ]);
    await shot('25-owners-admin-dashboard');
    // The header with its sign-out and the owner filter fit a phone (390 px) without sideways scrolling.
    await page.setViewportSize({ width: 390, height: 844 });
    expect(await page.evaluate<number>('document.documentElement.scrollWidth - document.documentElement.clientWidth')).toBeLessThanOrEqual(0);
    await shot('25b-owners-admin-phone');
    await page.setViewportSize({ width: 1100, height: 800 });
    const listed = page.waitForResponse((r) => new URL(r.url()).pathname === '/api/jobs' && new URL(r.url()).searchParams.get('owner') === 'bob');
    await page.getByLabel('Owner').selectOption('bob');
    expect((await listed).status()).toBe(200);
    await expect.poll(() => page.locator('.job-row').count()).toBe(1);
    expect(await page.getByRole('link', { name: "Bob's narration" }).count()).toBe(1);
    expect(new URL(page.url()).searchParams.get('owner')).toBe('bob');
    // The admin opens bob's job as bob would.
    await page.getByRole('link', { name: "Bob's narration" }).click();
    await page.locator('.badge-completed').waitFor();
    await shot('26-owners-admin-filtered-job');
  }, 120_000);
});
