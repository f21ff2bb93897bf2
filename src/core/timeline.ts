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
