// The readalong pipeline ("bring your own narration"): a document and a person's recording of
// it (an audiobook of one or many files, in any order) → the same outputs as a narrated
// highlight job (read-along EPUB 3, highlight video or offline reader, with narration.mp3,
// timeline.json and narration.vtt beside it), the narration being the recording itself.
//   1. align: alignRecording (src/speech/align/long) finds the files' reading order and times
//      every word it hears; words nobody reads are skipped (no time is invented). A recording
//      of another text, or one that is not speech, fails the job saying so.
//   2. narration.mp3: the files joined in that order, each exactly as long as the aligner
//      measured it, so the global times hold in the joined file.
//   3. the highlight pipeline's render stage (renderReadAlong) on that narration.
// The alignment is cached by content (the files' hashes, the words, the language), so a job
// whose worker died after aligning resumes from the render instead of aligning again.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { OUTPUT_FILES } from '../core/output-files.ts';
import { readDocument, sourceWords, type SourceWord } from '../documents/model.ts';
import { ffmpeg } from '../media/ffmpeg.ts';
import { alignRecording, RecordingAlignmentStopped, type RecordingAlignment } from '../speech/align/long/recording.ts';
import { createAligner, defaultAlignerThreads, type ClosableAligner } from '../speech/align/aligners.ts';
import type { Aligner } from '../speech/types.ts';
import { writeFileAtomic } from '../storage.ts';
import { chapterMarks } from './audio.ts';
import { renderReadAlong } from './highlight.ts';
import { roundTime, type TimelineEntry } from './narrate-document.ts';
import { writeTimelineFiles } from './write-narration.ts';
import type { RecordingCoverageResult } from './result.ts';
import { JobCancelled, type Pipeline, type PipelineContext, type PipelineResult, type RecordingFile } from './types.ts';

/** Bumped when the alignment or its cached form changes: older cache entries are then not read. */
const CACHE_VERSION = 2; // 2: skipped sentences and retakes inside segments, block ends
/** narration.mp3 from a recording: 44.1 kHz mono MP3 (the EPUB cuts its own CBR parts from it). */
const NARRATION_ARGS = ['-ar', '44100', '-ac', '1', '-c:a', 'libmp3lame', '-b:a', '96k'];

export const readalongPipeline: Pipeline = {
  async run(ctx: PipelineContext): Promise<PipelineResult> {
    const recording = ctx.input.recording ?? [];
    if (!recording.length) throw new Error('a read-along job needs its recording (audio_file_ids)');
    if (ctx.input.options.speed !== 1) throw new Error('a read-along job plays the recording as it is (speed 1)');
    ctx.progress('extract', 0, 1);
    const doc = await readDocument(ctx.input.document.path, ctx.input.document.contentType);
    const source = sourceWords(doc);
    if (!source.length) throw new Error('the document has no words to align the recording to');
    ctx.progress('extract', 1, 1);

    const started = Date.now();
    const { alignment, cached } = await alignCached(ctx, recording, source);
    const alignSeconds = (Date.now() - started) / 1000;
    const { words, dropped } = recordingTimeline(source, alignment);

    ctx.progress('audio', 0, 1);
    const audioPath = path.join(ctx.outputDir, OUTPUT_FILES.narration);
    const duration = roundTime(await joinRecording(recording, alignment, audioPath, ctx.signal));
    const title = doc.title ?? ctx.input.title;
    const timed = words.length - words.filter((w) => w.start === null).length;
    const coverage = {
      words_total: words.length,
      words_timed: timed,
      words_skipped: words.length - timed,
      text_matched: round4(timed / words.length),
      audio_unmatched: round4(alignment.coverage.audioUnmatched),
      heard_matched: round4(alignment.coverage.heardMatched),
      // sentences inside the read text that the narrator left out (alignments cached before this field: 0)
      sentences_skipped: alignment.coverage.sentencesSkipped ?? 0,
    };
    const order = alignment.order.map((i) => recording[i]!.name);
    // Where each file sits in narration.mp3 (the times of timeline.json are in that file).
    const parts = alignment.order.map((i) => ({ file: recording[i]!.name, offset: roundTime(alignment.files[i]!.offset), duration: roundTime(alignment.files[i]!.duration) }));
    const files = await writeTimelineFiles(ctx.outputDir, {
      title,
      author: doc.author,
      duration,
      pages: doc.pages.length,
      chapters: chapterMarks(doc, words, duration, title),
      words,
      extra: { narration: 'recording', recording: parts, coverage },
    });
    ctx.progress('audio', 1, 1);
    ctx.log.info({ ...coverage, align_seconds: alignSeconds, cached, dropped }, 'recording aligned');

    const out = await renderReadAlong(ctx, doc, files);
    const found: RecordingCoverageResult = {
      words: words.length,
      words_timed: timed,
      words_skipped: words.length - timed,
      text_matched: coverage.text_matched,
      audio_unmatched: coverage.audio_unmatched,
      sentences_skipped: coverage.sentences_skipped,
    };
    return {
      ...out,
      duration_seconds: duration,
      ...found,
      recording_files: recording.length,
      recording_order: order,
      align_seconds: roundTime(alignSeconds),
      alignment_cached: cached,
      pages: doc.pages.length,
    };
  },
};

const round4 = (x: number) => Math.round(x * 10000) / 10000;

/** The alignment, from the cache when this recording and text were aligned before (a resumed job). */
async function alignCached(ctx: PipelineContext, recording: RecordingFile[], source: SourceWord[]): Promise<{ alignment: RecordingAlignment; cached: boolean }> {
  const words = source.map((s) => s.word.text);
  // a heading, list item or paragraph without final punctuation still ends a sentence
  const blockEnds = source.flatMap((s, i) => (i + 1 === source.length || source[i + 1]!.page !== s.page || source[i + 1]!.block !== s.block ? [i] : []));
  const key = createHash('sha256')
    // the names too: they place files that match no text (readingOrder)
    .update(JSON.stringify({ v: CACHE_VERSION, language: ctx.input.language.toLowerCase(), files: recording.map((f) => f.sha256), names: recording.map((f) => f.name), words, blockEnds }))
    .digest('hex');
  const cacheFile = path.join(ctx.cacheDir, 'recording-alignments', `${key}.json`);
  try {
    const hit = JSON.parse(await fs.promises.readFile(cacheFile, 'utf8')) as RecordingAlignment;
    if (Array.isArray(hit.words) && hit.words.length === words.length && Array.isArray(hit.order) && hit.order.length === recording.length) {
      ctx.progress('align', 1, 1);
      return { alignment: hit, cached: true };
    }
  } catch {
    // not aligned yet (or an unreadable entry): align
  }
  let own: ClosableAligner | null = null;
  const aligner: Aligner = ctx.aligner ? await ctx.aligner() : (own = await createAligner('auto', { modelsDir: 'models', device: 'cpu', threads: defaultAlignerThreads() }));
  // dtw for segments the main aligner finds no path through (made only if one needs it)
  const fallback: { made: Promise<ClosableAligner> | null } = { made: null };
  const fallbackAligner: Aligner = {
    name: 'dtw',
    align: async (...args) => (await (fallback.made ??= createAligner('dtw', { modelsDir: 'models', device: 'cpu' }))).align(...args),
  };
  const workDir = path.join(ctx.outputDir, '.recording');
  await fs.promises.mkdir(workDir, { recursive: true });
  try {
    const alignment = await alignRecording({
      files: recording.map((f) => f.path),
      names: recording.map((f) => f.name),
      words,
      blockEnds,
      language: ctx.input.language,
      aligner,
      fallbackAligner,
      workDir,
      signal: ctx.signal,
      shouldStop: () => ctx.cancelled(),
      onProgress: ({ phase, done, total }) => ctx.progress(phase, done, total),
    });
    await fs.promises.mkdir(path.dirname(cacheFile), { recursive: true });
    await writeFileAtomic(cacheFile, JSON.stringify(alignment));
    return { alignment, cached: false };
  } catch (err) {
    if (err instanceof RecordingAlignmentStopped && !ctx.signal.aborted) throw new JobCancelled('stopped on request while aligning the recording; nothing was made');
    throw err;
  } finally {
    await own?.close();
    if (fallback.made) await (await fallback.made.catch(() => null))?.close();
    await fs.promises.rm(workDir, { recursive: true, force: true });
  }
}

/**
 * Every source word with its time in the joined recording, or skipped. Players and readers
 * follow the words in reading order, so the timed words must start in order too: the longest
 * run of words whose times increase with the text is kept (a passage the recording holds out
 * of the text's order, in a file placed elsewhere, is skipped rather than played out of order).
 */
export function recordingTimeline(source: SourceWord[], alignment: Pick<RecordingAlignment, 'words'>): { words: TimelineEntry[]; dropped: number } {
  const times = alignment.words.map((w) => (w ? { start: roundTime(w.globalStart), end: roundTime(Math.max(w.globalEnd, w.globalStart)) } : null));
  const keep = longestIncreasing(times.map((t) => t?.start ?? null));
  let dropped = 0;
  const words = source.map((s, i): TimelineEntry => {
    const t = times[i];
    if (t && !keep.has(i)) dropped++;
    return t && keep.has(i)
      ? { word: s.word.text, start: t.start, end: t.end, page: s.page + 1, block: s.block }
      : { word: s.word.text, start: null, end: null, page: s.page + 1, block: s.block, skipped: true };
  });
  return { words, dropped };
}

/** Indices of a longest non-decreasing subsequence of the non-null values (patience sorting, n log n). */
function longestIncreasing(values: (number | null)[]): Set<number> {
  const tails: number[] = []; // index of the smallest tail of a run of each length
  const prev = new Int32Array(values.length).fill(-1);
  values.forEach((v, i) => {
    if (v === null) return;
    let lo = 0, hi = tails.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (values[tails[mid]!]! <= v) lo = mid + 1;
      else hi = mid;
    }
    if (lo > 0) prev[i] = tails[lo - 1]!;
    tails[lo] = i;
  });
  const keep = new Set<number>();
  for (let i = tails.length ? tails[tails.length - 1]! : -1; i >= 0; i = prev[i]!) keep.add(i);
  return keep;
}

/**
 * narration.mp3: the recording's files in the detected order, each padded or cut to the length
 * the aligner decoded (its global offsets), joined in one ffmpeg run. Returns its duration.
 */
async function joinRecording(recording: RecordingFile[], alignment: RecordingAlignment, out: string, signal: AbortSignal): Promise<number> {
  const inputs: string[] = [];
  const filters: string[] = [];
  let total = 0;
  alignment.order.forEach((fileIndex, k) => {
    const d = alignment.files[fileIndex]!.duration;
    total += d;
    inputs.push('-i', recording[fileIndex]!.path);
    filters.push(`[${k}:a:0]aresample=44100,aformat=sample_fmts=fltp:channel_layouts=mono,apad,atrim=end=${d.toFixed(6)},asetpts=PTS-STARTPTS[a${k}]`);
  });
  filters.push(`${alignment.order.map((_, k) => `[a${k}]`).join('')}concat=n=${alignment.order.length}:v=0:a=1[out]`);
  const tmp = `${out}.tmp.mp3`;
  await ffmpeg(['-y', ...inputs, '-filter_complex', filters.join(';'), '-map', '[out]', ...NARRATION_ARGS, '-write_xing', '1', tmp], { signal });
  await fs.promises.rename(tmp, out);
  return total;
}
