// The web app end to end in a real browser: Debian's chromium, headless and kept off the
// network, driven by playwright-core against the real service on an ephemeral port serving
// the real build of web/. Each case saves a screenshot under test-output/web-e2e/.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningService } from '../src/service.ts';
import { json, testEnv, type TestEnv } from './helpers/service.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const WEB = path.join(ROOT, 'web');
const SHOTS = path.join(ROOT, 'test-output', 'web-e2e');
const WELCOME = path.join(ROOT, 'samples', 'welcome.md');
const JFK_WAV = path.join(ROOT, 'test', 'fixtures', 'speech', 'jfk.wav');
const CHROMIUM = '/usr/bin/chromium';

/** Builds web/ when its build is missing or older than its sources (the test runs what the user gets). */
function ensureBuilt(): void {
  const built = path.join(WEB, 'dist', 'index.html');
  const newest = (dir: string): number =>
    Math.max(0, ...fs.readdirSync(dir, { withFileTypes: true }).map((e) => (e.isDirectory() ? newest(path.join(dir, e.name)) : fs.statSync(path.join(dir, e.name)).mtimeMs)));
  const srcTime = Math.max(newest(path.join(WEB, 'src')), fs.statSync(path.join(WEB, 'index.html')).mtimeMs, fs.statSync(path.join(WEB, 'vite.config.ts')).mtimeMs);
  if (fs.existsSync(built) && fs.statSync(built).mtimeMs >= srcTime) return;
  execFileSync('npm', ['--prefix', WEB, 'run', 'build'], { stdio: 'pipe', timeout: 180_000 });
}

describe.skipIf(!fs.existsSync(CHROMIUM))('web app in chromium', () => {
  let t: TestEnv;
  let svc: RunningService;
  let ctx: BrowserContext;
  let page: Page;
  let profile: string;
  let jobId: string;

  const shot = (name: string) => page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });

  beforeAll(async () => {
    ensureBuilt();
    fs.mkdirSync(SHOTS, { recursive: true });
    t = testEnv('embedded', 'webe2e');
    svc = await t.start();
    profile = fs.mkdtempSync(path.join(os.tmpdir(), 'lectern-chromium-'));
    ctx = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      acceptDownloads: true,
      viewport: { width: 1100, height: 800 },
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--autoplay-policy=no-user-gesture-required', '--mute-audio'],
    });
    page = ctx.pages()[0] ?? (await ctx.newPage());
    page.setDefaultTimeout(30_000);
  }, 240_000);

  afterAll(async () => {
    await ctx?.close();
    if (profile) fs.rmSync(profile, { recursive: true, force: true });
    await svc?.close();
    await t?.cleanup();
  });

  it('shows the empty dashboard with a way to start', async () => {
    await page.goto(svc.url);
    await expect.poll(() => page.getByText('No jobs yet').isVisible()).toBe(true);
    expect(await page.title()).toBe('Jobs · Lectern');
    await shot('01-empty-dashboard');
  });

  it('plays a voice sample, previews the document in that voice, and shows the 422 of a job this install refuses (cloning without a GPU server)', async () => {
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
    // Cloning from a reference clip needs a GPU server, which this install has not: refused.
    await page.getByLabel(/Clone a voice from a clip/).check();
    await page.getByLabel(/Reference clip of the voice/).setInputFiles(JFK_WAV);
    await page.getByText('Uploaded jfk.wav').waitFor();
    await page.getByRole('button', { name: 'Create job' }).click();
    const alert = page.getByRole('alert').filter({ hasText: 'The service refused this job' });
    await alert.waitFor();
    expect(await alert.textContent()).toMatch(/needs a GPU server/);
    expect(new URL(page.url()).pathname).toBe('/new');
    await shot('02-refused-pipeline');
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
});
