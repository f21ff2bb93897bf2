// Stage shared by every pipeline: document → blocks → sentence chunks → narration, with
// every source word timed. Audio, highlight video, read-along EPUB and the lip-sync reader
// all start here, so a word's (page, block, index) identity is the same in each output.
import { readDocument, spokenText, type DocumentModel } from '../documents/model.ts';
import { sourceTimings, spokenForms, type SpokenText } from '../speech/spoken-forms.ts';
import { isTimed, type TimelineEntry, type TimelineWord, type WordTiming } from '../core/timeline.ts';
import { tokenizeWords, utf8Bytes } from '../speech/words.ts';
import { synthesizeChunks, type Narration } from './synthesize-chunks.ts';
import { chunkSentences, splitSentences } from '../speech/sentences.ts';
import type { PipelineContext } from './types.ts';

export { isTimed, type SkippedWord, type TimelineEntry, type TimelineWord } from '../core/timeline.ts';


export interface NarrationChunk {
  text: string;
  /** 0-based page index and block index: chunks never cross a block. */
  page: number;
  block: number;
}

export interface DocumentNarration {
  doc: DocumentModel;
  chunks: NarrationChunk[];
  narration: Narration;
  /** Every source word, in reading order, timed at speed 1. */
  timeline: TimelineWord[];
}

export interface NarrateDocumentOptions {
  /** Only these 0-based pages (the lip-sync reader narrates page by page). Default: all. */
  pages?: number[];
}

export async function narrateDocument(ctx: PipelineContext, opts: NarrateDocumentOptions = {}): Promise<DocumentNarration> {
  ctx.progress('extract', 0, 1);
  const doc = await readDocument(ctx.input.document.path, ctx.input.document.contentType);
  ctx.progress('extract', 1, 1);
  return narrateModel(ctx, doc, opts);
}

/** The same, for a document already read (a pipeline that narrates it in parts). */
export async function narrateModel(ctx: PipelineContext, doc: DocumentModel, opts: NarrateDocumentOptions = {}): Promise<DocumentNarration> {
  ctx.progress('segment', 0, 1);
  const maxBytes = await ctx.speech.maxChunkBytes();
  const wanted = opts.pages ? new Set(opts.pages) : null;
  const chunks: NarrationChunk[] = [];
  for (const page of doc.pages) {
    if (wanted && !wanted.has(page.index)) continue;
    page.blocks.forEach((block, b) => {
      // Silent words (running heads, leaders, footnote marks) are not read.
      const text = spokenText(block);
      if (!text) return;
      for (const chunk of chunkSpoken(text, maxBytes, ctx.input.language)) chunks.push({ text: chunk, page: page.index, block: b });
    });
  }
  if (chunks.length === 0) throw new Error(wanted ? `page(s) ${[...wanted].map((p) => p + 1).join(', ')} have no text to narrate` : 'the document has no text to narrate');
  ctx.progress('segment', 1, 1);

  // The voice reads each chunk's spoken form; its word timings fold back onto the source words.
  const spoken = chunks.map((c) => spokenForms(c.text, ctx.input.language));
  const narration = toSourceWords(await synthesizeChunks(ctx, spoken.map((s) => s.text)), chunks, spoken);
  const timeline: TimelineWord[] = narration.words.map((w) => {
    const c = chunks[w.chunk]!;
    return { word: w.word, start: roundTime(w.start), end: roundTime(w.end), page: c.page + 1, block: c.block };
  });
  const expected = chunks.reduce((n, c) => n + tokenizeWords(c.text).length, 0);
  if (timeline.length !== expected) throw new Error(`timeline has ${timeline.length} words, the text ${expected}`);
  return { doc, chunks, narration, timeline };
}

/** Sentence chunks whose spoken forms (longer than the source: "$3.50" → "3 dollars 50") fit the engine's limit. */
function chunkSpoken(text: string, maxBytes: number, language: string): string[] {
  const sentences = splitSentences(text);
  let limit = maxBytes;
  for (;;) {
    const chunks = chunkSentences(sentences, limit);
    if (limit < 64 || chunks.every((c) => utf8Bytes(spokenForms(c, language).text) <= maxBytes)) return chunks;
    limit = Math.floor(limit * 0.8);
  }
}

/** The narration's words (one per spoken token) as one per source token of each chunk. */
function toSourceWords(n: Narration, chunks: NarrationChunk[], spoken: SpokenText[]): Narration {
  const byChunk: WordTiming[][] = chunks.map(() => []);
  for (const w of n.words) byChunk[w.chunk]!.push(w);
  const words = chunks.flatMap((c, i) => sourceTimings(c.text, spoken[i]!, byChunk[i]!).map((w) => ({ ...w, chunk: i })));
  return { ...n, words };
}

/** Times in outputs are kept to the millisecond. */
export const roundTime = (t: number) => Math.round(t * 1000) / 1000;

/** The timeline as heard at a playback speed (the audio is sped up with ffmpeg's atempo). */
export function atSpeed<W extends TimelineEntry>(words: W[], speed: number): W[] {
  return speed === 1 ? words : words.map((w) => (isTimed(w) ? { ...w, start: roundTime(w.start / speed), end: roundTime(w.end / speed) } : w));
}
