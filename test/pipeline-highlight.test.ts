// The highlight video (highlight pipeline, format=mp4) end to end through the API on the
// embedded default with eSpeak: ffprobe checks (H.264 + AAC, size, duration = narration
// within 100 ms), and frames grabbed at words' mid-times showing the box over that word's
// PDF box, on the page being read. Frames are saved to test-output/ to look at.
import fs from 'node:fs';
import path from 'node:path';
import { loadImage } from '@napi-rs/canvas';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readDocument, sourceWords } from '../src/documents/model.ts';
import { ffmpeg, ffprobe } from '../src/media/ffmpeg.ts';
import { planStates } from '../src/video/highlight-video.ts';
import { createLogger } from '../src/log.ts';
import type { TimelineWord } from '../src/pipelines/narrate-document.ts';
import { runPipelineOnFile } from '../src/pipelines/run-file.ts';
import type { RunningService } from '../src/service.ts';
import { makePdf, PAGE_H, PAGE_W } from './helpers/make-documents.ts';
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

/** The highlight's yellow (multiplied over white paper), not the grey or black of the page. */
const isYellow = (r: number, g: number, b: number) => r > 200 && g > 150 && b < 130;

async function grab(video: string, t: number, png: string) {
  // Through the fps filter, then output seeking: the frame a player shows at t (the picture
  // that started at or before t), not the next stored frame of the variable-rate stream.
  await ffmpeg(['-y', '-i', video, '-vf', 'fps=48', '-ss', t.toFixed(3), '-frames:v', '1', png]);
  const img = await loadImage(fs.readFileSync(png));
  const { createCanvas } = await import('@napi-rs/canvas');
  const c = createCanvas(img.width, img.height);
  const ctx = c.getContext('2d');
  ctx.drawImage(img, 0, 0);
  const data = ctx.getImageData(0, 0, img.width, img.height).data;
  /** Share of yellow pixels in a rectangle of the frame. */
  const yellow = (x0: number, y0: number, w: number, h: number) => {
    let n = 0;
    let all = 0;
    for (let y = Math.max(0, Math.round(y0)); y < Math.min(img.height, Math.round(y0 + h)); y++) {
      for (let x = Math.max(0, Math.round(x0)); x < Math.min(img.width, Math.round(x0 + w)); x++) {
        const o = (y * img.width + x) * 4;
        all++;
        if (isYellow(data[o]!, data[o + 1]!, data[o + 2]!)) n++;
      }
    }
    return all ? n / all : 0;
  };
  return { width: img.width, height: img.height, yellow };
}

describe('highlight video through the API (embedded)', () => {
  let t: TestEnv;
  let svc: RunningService;

  beforeAll(async () => {
    t = testEnv('embedded', 'pipeline_highlight');
    svc = await t.start();
    fs.mkdirSync(OUT, { recursive: true });
  });
  afterAll(async () => {
    await svc?.close();
    await t?.cleanup();
  });

  async function runJob(name: string, data: Buffer | string, options: Record<string, unknown>) {
    const up = await upload(svc.url, name, data);
    expect(up.status, JSON.stringify(up.body)).toBe(201);
    const created = await json(svc.url, 'POST', '/api/jobs', { pipeline_type: 'highlight', uploaded_file_id: up.body.id, language: 'en-US', options });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const events = await readEvents(`${svc.url}/api/jobs/${created.body.id}/events`, 120_000);
    const job = (await json(svc.url, 'GET', `/api/jobs/${created.body.id}`)).body;
    expect(job.error).toBeNull();
    expect(job.status).toBe('completed');
    const outDir = path.join(t.dataDir, 'outputs', job.id as string);
    const timeline = JSON.parse(fs.readFileSync(path.join(outDir, 'timeline.json'), 'utf8')).words as TimelineWord[];
    return { job, events, outDir, timeline, result: job.config_json.result };
  }

  it('PDF → 1280×720 H.264/AAC as long as the narration; the box is over the spoken word on its page', async () => {
    const { outDir, timeline, result, events } = await runJob('notes.pdf', PDF, {});
    expect(result).toMatchObject({ output: 'highlight.mp4', files: ['highlight.mp4', 'narration.mp3', 'timeline.json', 'narration.vtt'], width: 1280, height: 720, fps: 24 });
    expect(events.some((e) => e.event === 'progress' && e.data.phase === 'render' && e.data.current === e.data.total && e.data.total > 1)).toBe(true);
    const video = path.join(outDir, 'highlight.mp4');
    const probe = await ffprobe(video);
    const narration = await ffprobe(path.join(outDir, 'narration.mp3'));
    const v = probe.streams.find((s) => s.codec_type === 'video')!;
    const a = probe.streams.find((s) => s.codec_type === 'audio')!;
    expect(v).toMatchObject({ codec_name: 'h264', width: 1280, height: 720, avg_frame_rate: expect.any(String) });
    expect(a.codec_name).toBe('aac');
    expect(Math.abs(probe.durationSeconds - narration.durationSeconds)).toBeLessThan(0.1);
    expect(Math.abs(Number(v.duration) - narration.durationSeconds)).toBeLessThan(0.1);
    expect(Math.abs(probe.durationSeconds - result.duration_seconds)).toBeLessThan(0.1);

    // The page fills the frame's width (1280 px for 612 pt) from the top: the first lines of
    // each page are on screen unscrolled, so a word's PDF box maps to frame pixels directly.
    const file = path.join(t.dataDir, 'notes.pdf');
    fs.writeFileSync(file, PDF);
    const words = sourceWords(await readDocument(file, 'application/pdf'));
    const scale = 1280 / PAGE_W;
    expect(PAGE_H * scale).toBeGreaterThan(720);
    // 'sun' is read on page 1 and 'water' on page 2: the page turns with the narration.
    for (const [word, page] of [['sun', 1], ['water', 2]] as const) {
      const i = timeline.findIndex((w) => w.word === word && w.page === page);
      const box = words[i]!.word.box!;
      const mid = (timeline[i]!.start + timeline[i]!.end) / 2;
      const f = await grab(video, mid, path.join(OUT, `highlight-pdf-${word}.png`));
      expect([f.width, f.height]).toEqual([1280, 720]);
      const x = box.x * scale;
      const y = box.y * scale;
      const w = box.width * scale;
      const h = box.height * scale;
      // Inside the word's box: mostly highlight (the rest is the word's dark glyphs).
      expect(f.yellow(x + 2, y + 2, w - 4, h - 4)).toBeGreaterThan(0.35);
      // The same-sized areas beside, above and below it: no highlight.
      expect(f.yellow(x - 3 * w, y, w, h)).toBeLessThan(0.02);
      expect(f.yellow(x + w + 2 * h, y, w, h)).toBeLessThan(0.02);
      expect(f.yellow(x, y - 3 * h, w, h)).toBeLessThan(0.02);
      expect(f.yellow(x, y + 3 * h, w, h)).toBeLessThan(0.02);
      // The whole frame holds one highlight: the yellow is this box and nothing else.
      expect(f.yellow(0, 0, 1280, 720) * 1280 * 720).toBeLessThan(w * h * 2);
    }
  }, 180_000);

  it('Markdown → text laid out in pages at a custom size and frame rate; the highlight follows the words', async () => {
    const { outDir, timeline, result } = await runJob('walk.md', MARKDOWN, { format: 'mp4', width: 640, height: 360, fps: 12 });
    expect(result).toMatchObject({ width: 640, height: 360, fps: 12 });
    const video = path.join(outDir, 'highlight.mp4');
    const probe = await ffprobe(video);
    const narration = await ffprobe(path.join(outDir, 'narration.mp3'));
    const v = probe.streams.find((s) => s.codec_type === 'video')!;
    expect(v).toMatchObject({ codec_name: 'h264', width: 640, height: 360, r_frame_rate: '12/1' });
    expect(probe.streams.some((s) => s.codec_type === 'audio' && s.codec_name === 'aac')).toBe(true);
    expect(Math.abs(probe.durationSeconds - narration.durationSeconds)).toBeLessThan(0.1);

    // Where the yellow is, at two words of the same line: it moves right as the words go by.
    const centre = async (word: string) => {
      const i = timeline.findIndex((w) => w.word === word);
      const f = await grab(video, (timeline[i]!.start + timeline[i]!.end) / 2, path.join(OUT, `highlight-md-${word}.png`));
      let sx = 0;
      let n = 0;
      for (let x = 0; x < f.width; x += 2) {
        const share = f.yellow(x, 0, 2, f.height);
        sx += x * share;
        n += share;
      }
      return { x: n ? sx / n : -1, n };
    };
    const left = await centre('dawn');
    const right = await centre('river.');
    expect(left.n).toBeGreaterThan(0);
    expect(right.n).toBeGreaterThan(0);
    expect(right.x).toBeGreaterThan(left.x + 50);
  }, 180_000);
});

describe('highlight video states', () => {
  it('one picture per word from the frame nearest its start, adding up to the whole duration', () => {
    const words = [{ start: 0.5 }, { start: 1.0 }, { start: 1.01 }, { start: 2.0 }];
    expect(planStates(words, 3, 10)).toEqual([
      { word: -1, frames: 5 },
      { word: 0, frames: 5 },
      // word 1 starts within the same frame as word 2: it is never seen on its own.
      { word: 2, frames: 10 },
      { word: 3, frames: 10 },
    ]);
    expect(planStates([{ start: 0 }], 1.02, 24).reduce((n, s) => n + s.frames, 0)).toBe(24);
  });
});

describe('lectern run highlight (no API)', () => {
  it('makes the reader ZIP beside the input with the same pipeline', async () => {
    const t = testEnv('embedded', 'run_highlight');
    try {
      const file = path.join(t.dataDir, 'walk.md');
      fs.writeFileSync(file, MARKDOWN);
      const out = await runPipelineOnFile({
        config: t.config(),
        log: createLogger('warn', 'test'),
        pipeline: 'highlight',
        file,
        out: null,
        language: 'en-US',
        voice: null,
        speed: 1.25,
        format: 'reader',
        signal: new AbortController().signal,
      });
      expect(out.files.map((f) => path.basename(f))).toEqual(['walk.zip', 'walk.mp3', 'walk.json', 'walk.vtt']);
      const probe = await ffprobe(out.files[1]!);
      expect(Math.abs(probe.durationSeconds - out.duration)).toBeLessThan(0.1);
      expect(fs.statSync(out.files[0]!).size).toBeGreaterThan(fs.statSync(out.files[1]!).size);
    } finally {
      await t.cleanup();
    }
  }, 60_000);
});
