// Word timings every layer shares: what an engine or aligner gives (WordTiming, seconds in
// its audio) and a narration's timeline word (TimelineWord: also which source block it is),
// which the outputs (audio captions, highlight video, EPUB overlays, reader) draw from.

export interface WordTiming {
  word: string;
  /** Seconds from the start of the audio. */
  start: number;
  end: number;
}

/** One source word, in document order: (page, block) and its position among the block's words identify it. */
export interface TimelineWord extends WordTiming {
  /** 1-based page (PDF page, EPUB chapter; 1 for text and Markdown). */
  page: number;
  /** 0-based block index within the page. */
  block: number;
}

/**
 * A source word the narration never speaks (a recording that skips it: no time is invented).
 * timeline.json writes it as `{word, start: null, end: null, page, block, skipped: true}`.
 */
export interface SkippedWord {
  word: string;
  start: null;
  end: null;
  page: number;
  block: number;
  skipped: true;
}

/**
 * What the render stages (EPUB, highlight video, reader, cues, chapters) take: every source
 * word in reading order, timed, or skipped when the narration does not speak it. A narration
 * Lectern made times every word; one from a person's recording may skip some.
 */
export type TimelineEntry = TimelineWord | SkippedWord;

export const isTimed = (w: TimelineEntry): w is TimelineWord => w.start !== null;
