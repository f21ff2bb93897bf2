// Typed job records: config_json read once at the store boundary (parseJobConfig) and the
// pipelines' options with their defaults filled (fillOptions). Pure functions, no services.
import { describe, expect, it } from 'vitest';
import { parseJobConfig } from '../src/jobs/job-config.ts';
import { fillOptions } from '../src/pipelines/options.ts';

/** config_json as JobService writes it, then the worker's result. */
const written = {
  pipeline_type: 'lipsync',
  uploaded_file_id: 'u1',
  language: 'en-US',
  voice_id: null,
  ref_audio_file_id: null,
  ref_text: null,
  ref_video_file_id: 'v1',
  title: null,
  options: { format: 'reader', speed: 1, lipsync_preset: 'fast' },
  document: { original_name: 'Book.pdf', content_type: 'application/pdf' },
  created_by: 'alice',
  request_id: 'req-1',
  result: { output: 'reader.zip', files: ['reader.zip', 'presenter.mp4'], duration_seconds: 12.5, pages_done: 2, pages_total: 3, words: 40 },
  pages_done: 2,
  pages_total: 3,
  epub_export_status: 'done',
  epub_export_output: 'book.epub',
  epub_export_error: null,
};

describe('parseJobConfig', () => {
  it('reads a row as written: same keys, same order, same JSON on the wire', () => {
    const c = parseJobConfig(JSON.parse(JSON.stringify(written)));
    expect(JSON.stringify(c)).toBe(JSON.stringify(written));
    expect(c.result?.files).toContain('presenter.mp4');
    expect(c.options.format).toBe('reader');
  });

  it('tolerates an older row (no created_by, no request_id) and adds nothing to it', () => {
    const { created_by: _c, request_id: _r, ...old } = written;
    const c = parseJobConfig(structuredClone(old));
    expect(c).toEqual(old);
    expect('created_by' in c || 'request_id' in c).toBe(false);
    // Keys this version does not know stay as stored.
    expect(parseJobConfig({ ...old, legacy_field: [1, 2] })).toMatchObject({ legacy_field: [1, 2] });
  });

  it('leaves out a later key holding the wrong type instead of trusting it', () => {
    const c = parseJobConfig({
      ...written,
      result: { output: 'narration.mp3' }, // no file list
      pages_done: '2',
      epub_export_status: 'exporting',
      request_id: 42,
    });
    expect(c.result).toBeUndefined();
    expect(c.pages_done).toBeUndefined();
    expect(c.epub_export_status).toBeUndefined();
    expect(c.request_id).toBeUndefined();
    expect(c.pages_total).toBe(3);
  });

  it('reads a row that is no object as an empty config', () => {
    expect(parseJobConfig(null)).toEqual({});
    expect(parseJobConfig([1])).toEqual({});
  });
});

describe('fillOptions', () => {
  it('fills every default once', () => {
    expect(fillOptions({ format: 'mp3' })).toEqual({
      format: 'mp3',
      speed: 1,
      width: 1280,
      height: 720,
      fps: 24,
      lipsync_preset: null,
      presenter_position: 'bottom-right',
      presenter_scale: 0.3,
    });
  });

  it('keeps what the job asked for; video sizes are rounded down to even (H.264 4:2:0)', () => {
    expect(fillOptions({ format: 'mp4', speed: 1.5, width: 641, height: 361, fps: 12, lipsync_preset: 'quality', presenter_position: 'top-left', presenter_scale: 0.4 })).toEqual({
      format: 'mp4',
      speed: 1.5,
      width: 640,
      height: 360,
      fps: 12,
      lipsync_preset: 'quality',
      presenter_position: 'top-left',
      presenter_scale: 0.4,
    });
  });
});
