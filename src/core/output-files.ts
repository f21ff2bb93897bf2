// Names of the files a job leaves in its output directory: what config_json.result lists,
// what GET /api/jobs/{id}/files/{name} serves, what the web app's reader fetches and what
// the offline reader ZIP carries. No other module spells them.

export const OUTPUT_FILES = {
  /** The narration every document pipeline writes beside its output (the audio pipeline's output is narrationFile(format)). */
  narration: 'narration.mp3',
  /** Word timeline: {title, author, duration, pages, chapters, words}. */
  timeline: 'timeline.json',
  /** One WebVTT cue per word. */
  cues: 'narration.vtt',
  /** The lip-sync reader's presenter clips joined. */
  presenter: 'presenter.mp4',
  highlightVideo: 'highlight.mp4',
  /** The presenter over the highlight video. */
  lipsyncVideo: 'lipsync.mp4',
  readerZip: 'reader.zip',
  /** Read-along EPUB 3: the highlight pipeline's format=epub and the lip-sync reader's export. */
  epub: 'book.epub',
} as const;

export type OutputFileName = (typeof OUTPUT_FILES)[keyof typeof OUTPUT_FILES] | `narration.${'mp3' | 'm4b'}`;

/** The audio pipeline's output in its format. */
export const narrationFile = (format: 'mp3' | 'm4b') => `narration.${format}` as const;

/** What every document pipeline leaves beside its output: the narration, its timeline and its cues. */
export const NARRATION_FILES = [OUTPUT_FILES.narration, OUTPUT_FILES.timeline, OUTPUT_FILES.cues] as const;
