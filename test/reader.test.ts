// The offline reader (highlight pipeline, format=reader) end to end: made through the API on
// the embedded default with eSpeak, unzipped, and opened from file:// in headless Chromium
// with no server: it plays, the highlighted word follows the narration, clicking a word
// seeks there, the keyboard works. Screenshots go to test-output/.
import fs from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningService } from '../src/service.ts';
import type { TimelineWord } from '../src/pipelines/narrate-document.ts';
import { buildReaderZip, readerData, readerHtml } from '../src/reader/build.ts';
import { ffmpeg } from '../src/media/ffmpeg.ts';
import os from 'node:os';
import { launchChromium, unzipTo } from './helpers/browser.ts';
import { makePdf } from './helpers/make-documents.ts';
import { json, readEvents, testEnv, upload, type TestEnv } from './helpers/service.ts';

const PDF = makePdf({
  title: 'Field Notes',
  author: 'Ada Tester',
  pages: [
    [
      { text: 'Morning', x: 72, y: 700, size: 24 },
      { text: 'The birds began to sing before the sun was up. We walked to the', x: 72, y: 660, size: 12 },
      { text: 'river and counted forty-two herons on the far bank.', x: 72, y: 646, size: 12 },
    ],
    [
      { text: 'Evening', x: 72, y: 700, size: 24 },
      { text: 'By night the water was still, and the herons had gone.', x: 72, y: 660, size: 12 },
    ],
  ],
});
const MARKDOWN = '# A Short Walk\n\nWe left at dawn and **walked** to the old mill by the river.\n\n## The Mill\n\n- The wheel was still.\n- Nobody was there.\n';
const OUT = path.resolve('test-output');
/** A property of the page's <audio> element (strings keep DOM types out of the Node typecheck). */
const audio = (page: Page, prop: 'currentTime' | 'playbackRate') => page.evaluate(`document.getElementById('audio').${prop}`) as Promise<number>;

describe('offline reader through the API (embedded)', () => {
  let t: TestEnv;
  let svc: RunningService;

  beforeAll(async () => {
    t = testEnv('embedded', 'reader');
    svc = await t.start();
    fs.mkdirSync(OUT, { recursive: true });
  });
  afterAll(async () => {
    await svc?.close();
    await t?.cleanup();
  });

  async function makeReader(name: string, data: Buffer | string) {
    const up = await upload(svc.url, name, data);
    expect(up.status, JSON.stringify(up.body)).toBe(201);
    const created = await json(svc.url, 'POST', '/api/jobs', { pipeline_type: 'highlight', uploaded_file_id: up.body.id, language: 'en-US', options: { format: 'reader' } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const events = await readEvents(`${svc.url}/api/jobs/${created.body.id}/events`, 120_000);
    const job = (await json(svc.url, 'GET', `/api/jobs/${created.body.id}`)).body;
    expect(job.error).toBeNull();
    expect(job.status).toBe('completed');
    const res = await fetch(`${svc.url}/api/jobs/${job.id}/download`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/zip');
    const zip = path.join(t.dataDir, `${name}.zip`);
    fs.writeFileSync(zip, Buffer.from(await res.arrayBuffer()));
    const dir = path.join(t.dataDir, `${name}-reader`);
    fs.mkdirSync(dir);
    const entries = await unzipTo(zip, dir);
    const timeline = JSON.parse(fs.readFileSync(path.join(t.dataDir, 'outputs', job.id, 'timeline.json'), 'utf8'));
    return { job, events, dir, entries, timeline: timeline.words as TimelineWord[] };
  }

  it('PDF → reader.zip that plays, highlights and jumps from file:// in Chromium', async () => {
    const { job, events, dir, entries, timeline } = await makeReader('notes.pdf', PDF);
    expect(job.config_json.result).toMatchObject({ output: 'reader.zip', files: ['reader.zip', 'narration.mp3', 'timeline.json', 'narration.vtt'] });
    expect(events.some((e) => e.event === 'progress' && e.data.phase === 'pages')).toBe(true);
    expect(entries.sort()).toEqual(['index.html', 'narration.mp3', 'pages/page-0001.png', 'pages/page-0002.png']);
    const html = fs.readFileSync(path.join(dir, 'index.html'), 'utf8');
    // Self-contained: nothing fetched, nothing from the network.
    expect(html).not.toMatch(/https?:\/\//);
    expect(html).not.toMatch(/fetch\(|XMLHttpRequest|<link /);

    const browser = await launchChromium();
    try {
      const page = await browser.context.newPage();
      const requests: string[] = [];
      page.on('request', (r) => requests.push(r.url()));
      const errors: string[] = [];
      page.on('pageerror', (e) => errors.push(e.message));
      await page.goto(`file://${path.join(dir, 'index.html')}`);
      // One clickable box per word part over the page images, each tied to its timeline word.
      expect(await page.locator('.page.pdf').count()).toBe(2);
      expect(await page.locator('.box[data-i]').count()).toBeGreaterThanOrEqual(timeline.length);
      expect(await page.getByRole('button', { name: 'Play' }).count()).toBe(1);

      await page.getByRole('button', { name: 'Play' }).click();
      await page.waitForFunction("document.getElementById('audio').currentTime > 0.9", null, { timeout: 15_000 });
      const first = Number(await page.locator('.w.current').first().getAttribute('data-i'));
      await page.waitForFunction(`Number(document.querySelector('.w.current')?.getAttribute('data-i')) > ${first}`, null, { timeout: 15_000 });
      const later = Number(await page.locator('.w.current').first().getAttribute('data-i'));
      expect(later).toBeGreaterThan(first);
      // The lit word is the one being heard.
      const t1 = await audio(page, 'currentTime');
      const lit = Number(await page.locator('.w.current').first().getAttribute('data-i'));
      expect(timeline[lit]!.start).toBeLessThanOrEqual(t1 + 0.05);
      expect(timeline[lit + 1]?.start ?? Infinity).toBeGreaterThan(t1 - 0.3);
      await page.screenshot({ path: path.join(OUT, 'reader-pdf-playing.png') });

      // Pause (space), then click a word on page 2: the narration seeks to it and it lights up.
      await page.keyboard.press('Space');
      await page.waitForFunction("document.getElementById('audio').paused");
      const target = timeline.findIndex((w) => w.page === 2 && w.word === 'water');
      await page.locator(`.box[data-i="${target}"]`).first().click();
      const afterClick = await audio(page, 'currentTime');
      expect(Math.abs(afterClick - timeline[target]!.start)).toBeLessThan(0.05);
      expect(await page.locator('.w.current').first().getAttribute('data-i')).toBe(String(target));
      expect(await page.locator('.w.current').first().getAttribute('aria-current')).toBe('true');

      // Keyboard: + speeds up, ← goes back 5 s, ↓ steps to the next word.
      await page.keyboard.press('+');
      expect(await audio(page, 'playbackRate')).toBe(1.25);
      expect(await page.locator('#speed').inputValue()).toBe('1.25');
      await page.keyboard.press('ArrowDown');
      expect(await page.locator('.w.current').first().getAttribute('data-i')).toBe(String(target + 1));
      await page.keyboard.press('ArrowLeft');
      const back = await audio(page, 'currentTime');
      expect(Math.abs(back - Math.max(0, timeline[target + 1]!.start - 5))).toBeLessThan(0.05);
      await page.locator(`.box[data-i="${target}"]`).first().click();
      await page.screenshot({ path: path.join(OUT, 'reader-pdf-clicked.png') });
      expect(requests.every((u) => u.startsWith('file://'))).toBe(true);
      expect(errors).toEqual([]);
    } finally {
      await browser.close();
    }
  }, 180_000);

  it('Markdown → reader with text pages: headings and items kept, click a word to jump', async () => {
    const { dir, entries, timeline } = await makeReader('walk.md', MARKDOWN);
    expect(entries.sort()).toEqual(['index.html', 'narration.mp3']);
    const browser = await launchChromium();
    try {
      const page = await browser.context.newPage();
      await page.goto(`file://${path.join(dir, 'index.html')}`);
      expect(await page.locator('.page.text h1').innerText()).toBe('A Short Walk');
      expect(await page.locator('.page.text li').count()).toBe(2);
      // Formatting stripped for speech, but every word is on the page and tied to its time.
      expect(await page.locator('.w[data-i]').count()).toBe(timeline.length);
      const mill = timeline.findIndex((w) => w.word === 'mill');
      await page.locator(`.w[data-i="${mill}"]`).click();
      expect(Math.abs((await audio(page, 'currentTime')) - timeline[mill]!.start)).toBeLessThan(0.05);
      await page.getByRole('button', { name: 'Play' }).click();
      await page.waitForFunction(`Number(document.querySelector('.w.current')?.getAttribute('data-i')) > ${mill}`, null, { timeout: 15_000 });
      await page.screenshot({ path: path.join(OUT, 'reader-markdown.png') });
    } finally {
      await browser.close();
    }
  }, 120_000);
});

describe('reader builder', () => {
  const words: TimelineWord[] = [
    { word: 'Hello', start: 0, end: 0.4, page: 1, block: 0 },
    { word: '</script><b>', start: 0.4, end: 0.9, page: 1, block: 0 },
  ];
  const pages = [{ number: 1, blocks: [{ kind: 'paragraph' as const, words: [{ text: 'Hello' }, { text: '</script><b>' }] }] }];

  it('embeds the timeline so no text can close the script element', () => {
    const html = readerHtml(readerData({ title: 'T <x>', author: null, language: 'en', audioFile: 'a.mp3', words, duration: 1, pages }), 'en');
    expect(html.match(/<\/script>/g)).toHaveLength(2);
    expect(html).toContain('<title>T &lt;x&gt;</title>');
  });

  it('refuses a timeline whose words are not the pages’ words', () => {
    const wrong = [words[0]!, { ...words[1]!, word: 'Other' }];
    expect(() => readerData({ title: 'T', author: null, language: 'en', audioFile: 'a.mp3', words: wrong, duration: 1, pages })).toThrow(/not word 1 of page 1 block 0/);
  });

  it('adds the presenter window only when a presenter video is given', () => {
    const base = { title: 'T', author: null, language: 'en', audioFile: 'a.mp3', words, duration: 1, pages };
    expect(readerHtml(readerData(base), 'en')).not.toContain('id="presenter"');
    const html = readerHtml(readerData({ ...base, presenter: { videoFile: 'p.mp4' } }), 'en');
    expect(html).toContain('id="presenter"');
    expect(html).toContain('src="presenter.mp4"');
  });
});

describe('reader with a presenter video', () => {
  it('shows the presenter in a draggable window that follows the narration clock', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lectern-presenter-'));
    const browser = await launchChromium();
    try {
      // A 4 s tone as the narration and a 4 s test picture as the presenter (made here with ffmpeg).
      const mp3 = path.join(dir, 'n.mp3');
      const mp4 = path.join(dir, 'p.mp4');
      await ffmpeg(['-y', '-f', 'lavfi', '-i', 'sine=frequency=300:duration=4', '-c:a', 'libmp3lame', mp3]);
      await ffmpeg(['-y', '-f', 'lavfi', '-i', 'testsrc=size=320x240:rate=25:duration=4', '-pix_fmt', 'yuv420p', '-c:v', 'libx264', '-preset', 'ultrafast', mp4]);
      const text = ['One', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight'];
      const words = text.map((w, i) => ({ word: w, start: i * 0.5, end: i * 0.5 + 0.4, page: 1, block: 0 }));
      const zip = path.join(dir, 'reader.zip');
      await buildReaderZip({ outPath: zip, title: 'Presenter', author: null, language: 'en', audioFile: mp3, words, duration: 4, pages: [{ number: 1, blocks: [{ kind: 'paragraph', words: text.map((t) => ({ text: t })) }] }], presenter: { videoFile: mp4 } });
      const out = path.join(dir, 'out');
      fs.mkdirSync(out);
      expect((await unzipTo(zip, out)).sort()).toEqual(['index.html', 'narration.mp3', 'presenter.mp4']);
      const page = await browser.context.newPage();
      await page.goto(`file://${path.join(out, 'index.html')}`);
      const win = page.getByRole('dialog', { name: 'Presenter video' });
      const before = (await win.boundingBox())!;
      const grip = (await page.locator('#presenter .grip').boundingBox())!;
      await page.mouse.move(grip.x + 20, grip.y + grip.height / 2);
      await page.mouse.down();
      await page.mouse.move(grip.x - 280, grip.y - 300, { steps: 5 });
      await page.mouse.up();
      const after = (await win.boundingBox())!;
      expect(before.x - after.x).toBeGreaterThan(250);
      expect(before.y - after.y).toBeGreaterThan(250);
      expect(await page.evaluate("getComputedStyle(document.getElementById('presenter')).resize")).toBe('both');
      await page.getByRole('button', { name: 'Play' }).click();
      await page.waitForFunction("document.getElementById('audio').currentTime > 1.5", null, { timeout: 15_000 });
      const [a, v, paused] = (await page.evaluate("[document.getElementById('audio').currentTime, document.getElementById('presenter-video').currentTime, document.getElementById('presenter-video').paused]")) as [number, number, boolean];
      expect(paused).toBe(false);
      expect(Math.abs(a - v)).toBeLessThan(0.3);
      // Seeking the narration moves the presenter with it.
      await page.locator('.w[data-i="1"]').click();
      await page.waitForFunction("Math.abs(document.getElementById('presenter-video').currentTime - document.getElementById('audio').currentTime) < 0.3");
      await page.screenshot({ path: path.join(OUT, 'reader-presenter.png') });
    } finally {
      await browser.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
