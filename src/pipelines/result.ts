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

export interface PipelineResult extends JobResult {
  /**
   * `stopped`: the pipeline saw its cancel flag after making part of its output (the lip-sync
   * reader's pages done) and built the outputs from that part; the job ends `stopped`, not `completed`.
   */
  status?: 'stopped';
}
