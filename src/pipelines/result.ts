// What a pipeline gives back; the runner keeps it in config_json.result. No runtime imports:
// the web app type-checks against this file.

/** config_json.result: every pipeline's output and files, plus its own figures (words, chunks, width…). */
export interface JobResult {
  /** The downloadable file, relative to the output dir. */
  output: string;
  /** Every file the job made, relative to the output dir (what GET /api/jobs/{id}/files/{name} serves). */
  files: string[];
  duration_seconds?: number;
  /** Lip-sync reader: pages made (all of them unless stopped) and pages with text. */
  pages_done?: number;
  pages_total?: number;
  [key: string]: unknown;
}

/** What a read-along job's result says of how much of the document its recording reads (readalong.ts). */
export interface RecordingCoverageResult {
  /** The document's words, and those the recording was found to read (the rest are `skipped` in timeline.json). */
  words: number;
  words_timed: number;
  words_skipped: number;
  /** words_timed / words. */
  text_matched: number;
  /** The share of the recording's audio that matched no text (a preface, credits, music). */
  audio_unmatched: number;
  /** Sentences inside the read text that the narrator left out. */
  sentences_skipped: number;
}

export interface PipelineResult extends JobResult {
  /**
   * `stopped`: the pipeline saw its cancel flag after making part of its output (the lip-sync
   * reader's pages done) and built the outputs from that part; the job ends `stopped`, not `completed`.
   */
  status?: 'stopped';
}
