// The audio pipeline end to end through the API (embedded default, eSpeak): a PDF with an
// outline to M4B with chapters, an EPUB 3 to MP3, a scanned PDF failing with its reason.
// The documents are small ones made here so the narration takes seconds, not hours.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readDocument, sourceWords } from '../src/documents/model.ts';
import { ffprobe } from '../src/media/ffmpeg.ts';
import { createLogger } from '../src/log.ts';
import { chapterMarks, ffmetadata, type TimelineWord } from '../src/pipelines/audio.ts';
import { runPipelineOnFile } from '../src/pipelines/run-file.ts';
import type { RunningService } from '../src/service.ts';
import { makeEpub3, makePdf } from './helpers/make-documents.ts';
import { json, readEvents, testEnv, upload, type TestEnv } from './helpers/service.ts';

const PDF_SPEC = {
  title: 'Field Notes',
  author: 'Ada Tester',
  outline: [
    { title: 'Morning', page: 0 },
    { title: 'Evening', page: 1 },
  ],
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
};

describe('audio pipeline through the API (embedded)', () => {
  let t: TestEnv;
  let svc: RunningService;
  let url: string;

  beforeAll(async () => {
    t = testEnv('embedded', 'pipeline_audio');
    svc = await t.start();
    url = svc.url;
  });
  afterAll(async () => {
    await svc?.close();
    await t?.cleanup();
  });

  async function runJob(name: string, data: Buffer, options: Record<string, unknown>) {
    const up = await upload(url, name, data);
    expect(up.status, JSON.stringify(up.body)).toBe(201);
    const created = await json(url, 'POST', '/api/jobs', { pipeline_type: 'audio', uploaded_file_id: up.body.id, language: 'en-US', options });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const events = await readEvents(`${url}/api/jobs/${created.body.id}/events`, 120_000);
    const job = (await json(url, 'GET', `/api/jobs/${created.body.id}`)).body;
    return { job, events, outDir: path.join(t.dataDir, 'outputs', job.id as string) };
  }

  it('PDF with an outline → M4B with one chapter per outline entry, timeline with pages and blocks', async () => {
    const pdf = makePdf(PDF_SPEC);
    const { job, events, outDir } = await runJob('notes.pdf', pdf, { format: 'm4b' });
    expect(job.error).toBeNull();
    expect(job.status).toBe('completed');
    expect(events.some((e) => e.event === 'progress' && e.data.phase === 'extract')).toBe(true);
    const result = job.config_json.result;
    expect(result).toMatchObject({ output: 'narration.m4b', files: ['narration.m4b', 'timeline.json', 'narration.vtt'], pages: 2, chapters: 2 });

    const timeline = JSON.parse(fs.readFileSync(path.join(outDir, 'timeline.json'), 'utf8'));
    expect(timeline).toMatchObject({ title: 'Field Notes', author: 'Ada Tester', duration: result.duration_seconds });
    // Every source word, in order, with its page (1-based) and block; the hyphenated line end is one word.
    const tmpPdf = path.join(t.dataDir, 'notes.pdf');
    fs.writeFileSync(tmpPdf, pdf);
    const doc = await readDocument(tmpPdf, 'application/pdf');
    const expected = sourceWords(doc).map((s) => ({ word: s.word.text, page: s.page + 1, block: s.block }));
    expect(sourceWords(doc).every((s) => s.word.box && s.word === doc.pages[s.page]!.blocks[s.block]!.words[s.index])).toBe(true);
    expect(timeline.words.map((w: TimelineWord) => ({ word: w.word, page: w.page, block: w.block }))).toEqual(expected);
    expect(expected.map((w) => w.word)).toContain('forty-two');
    for (let i = 1; i < timeline.words.length; i++) expect(timeline.words[i].start).toBeGreaterThanOrEqual(timeline.words[i - 1].start);

    const probe = await ffprobe(path.join(outDir, 'narration.m4b'));
    expect(probe.streams[0]!.codec_name).toBe('aac');
    expect(Math.abs(probe.durationSeconds - result.duration_seconds)).toBeLessThan(0.1);
    expect(probe.chapters.map((c) => c.tags?.title)).toEqual(['Morning', 'Evening']);
    const evening = timeline.words.find((w: TimelineWord) => w.page === 2)!;
    expect(Number(probe.chapters[0]!.start_time)).toBe(0);
    expect(Math.abs(Number(probe.chapters[1]!.start_time) - evening.start)).toBeLessThan(0.01);
    expect(Math.abs(Number(probe.chapters[1]!.end_time) - result.duration_seconds)).toBeLessThan(0.1);

    const vtt = fs.readFileSync(path.join(outDir, 'narration.vtt'), 'utf8');
    expect(vtt.startsWith('WEBVTT\n')).toBe(true);
    expect(vtt.match(/ --> /g)).toHaveLength(timeline.words.length);

    const res = await fetch(`${url}/api/jobs/${job.id}/download`);
    expect(res.headers.get('content-type')).toBe('audio/mp4');
  }, 120_000);

  it('EPUB 3 → MP3: each chapter is a page of the timeline', async () => {
    const epub = makeEpub3({
      title: 'Two Short Chapters',
      author: 'Ada Tester',
      language: 'en',
      chapters: [
        { title: 'One', paragraphs: ['It was a <em>bright</em> day, and Dr. Lane said "Hello!" to everyone.'] },
        { title: 'Two', paragraphs: ['Then it rained.', 'The end.'] },
      ],
    });
    const { job, outDir } = await runJob('book.epub', epub, {});
    expect(job.error).toBeNull();
    const result = job.config_json.result;
    expect(result.output).toBe('narration.mp3');
    const timeline = JSON.parse(fs.readFileSync(path.join(outDir, 'timeline.json'), 'utf8'));
    expect(timeline.words.map((w: TimelineWord) => `${w.page}.${w.block}:${w.word}`)).toEqual([
      '1.0:One',
      ...'It was a bright day, and Dr. Lane said "Hello!" to everyone.'.split(' ').map((w) => `1.1:${w}`),
      '2.0:Two',
      '2.1:Then', '2.1:it', '2.1:rained.',
      '2.2:The', '2.2:end.',
    ]);
    const probe = await ffprobe(path.join(outDir, 'narration.mp3'));
    expect(probe.streams[0]!.codec_name).toBe('mp3');
    expect(Math.abs(probe.durationSeconds - result.duration_seconds)).toBeLessThan(0.1);
    expect(timeline.words.at(-1).end).toBeLessThanOrEqual(result.duration_seconds);
  }, 120_000);

  it('a scanned PDF fails the job with a one-line reason', async () => {
    const { job } = await runJob('scan.pdf', makePdf({ ...PDF_SPEC, scanned: true }), {});
    expect(job.status).toBe('failed');
    expect(job.error).toMatch(/no text layer/);
    expect(job.error).not.toContain('\n');
  }, 60_000);
});

describe('lectern run audio (no API)', () => {
  it('narrates a PDF to M4B beside the input with the same pipeline', async () => {
    const t = testEnv('embedded', 'run_audio');
    try {
      const file = path.join(t.dataDir, 'notes.pdf');
      fs.writeFileSync(file, makePdf(PDF_SPEC));
      const phases = new Set<string>();
      const out = await runPipelineOnFile({
        config: t.config(),
        log: createLogger('warn', 'test'),
        pipeline: 'audio',
        file,
        out: null,
        language: 'en-US',
        voice: null,
        speed: 1.5,
        format: 'm4b',
        signal: new AbortController().signal,
        onProgress: (phase) => phases.add(phase),
      });
      expect(out.files.map((f) => path.basename(f))).toEqual(['notes.m4b', 'notes.json', 'notes.vtt']);
      expect([...phases]).toEqual(expect.arrayContaining(['extract', 'segment', 'synthesize', 'render']));
      const probe = await ffprobe(out.files[0]!);
      expect(Math.abs(probe.durationSeconds - out.duration)).toBeLessThan(0.1);
      expect(probe.chapters.map((c) => c.tags?.title)).toEqual(['Morning', 'Evening']);
      // At 1.5x the chapter marks and word times are in the sped-up audio's time.
      const timeline = JSON.parse(fs.readFileSync(out.files[1]!, 'utf8'));
      const evening = timeline.words.find((w: TimelineWord) => w.page === 2)!;
      expect(Math.abs(Number(probe.chapters[1]!.start_time) - evening.start)).toBeLessThan(0.01);
      expect(timeline.words.at(-1).end).toBeLessThanOrEqual(out.duration + 0.001);
    } finally {
      await t.cleanup();
    }
  }, 60_000);
});

describe('chapter marks', () => {
  const w = (page: number, block: number, start: number): TimelineWord => ({ word: 'x', start, end: start + 0.2, page, block });
  const words = [w(1, 0, 0.1), w(1, 1, 1), w(2, 0, 2), w(2, 3, 3), w(4, 0, 4)];

  it('starts each TOC entry at its first word; same-moment entries keep the outer one; first at 0', () => {
    const toc = [
      { title: 'Part', page: 0, level: 1 },
      { title: 'Chapter 1', page: 0, level: 2 },
      { title: 'Chapter 2', page: 1, level: 2 },
      { title: 'Section', page: 1, block: 2, level: 3 },
      { title: 'Empty page', page: 2, level: 2 },
      { title: 'Past the end', page: 9, level: 1 },
    ];
    expect(chapterMarks({ toc }, words, 5, 'Book')).toEqual([
      { title: 'Part', start: 0, end: 2 },
      { title: 'Chapter 2', start: 2, end: 3 },
      { title: 'Section', start: 3, end: 4 },
      { title: 'Empty page', start: 4, end: 5 },
    ]);
    expect(chapterMarks({ toc: [] }, words, 5, 'Book')).toEqual([{ title: 'Book', start: 0, end: 5 }]);
  });

  it('writes an FFMETADATA file with escaped titles', () => {
    const meta = ffmetadata({ title: 'A=B; #1', author: 'Ada', chapters: [{ title: 'One', start: 0, end: 1.5 }] });
    expect(meta).toBe(';FFMETADATA1\ntitle=A\\=B\\; \\#1\nalbum=A\\=B\\; \\#1\nartist=Ada\ngenre=Audiobook\n\n[CHAPTER]\nTIMEBASE=1/1000\nSTART=0\nEND=1500\ntitle=One\n');
  });
});
