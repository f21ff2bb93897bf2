// The request the new-job form sends for each pipeline (jobRequest): only the options and
// voice fields that pipeline uses.
import { describe, expect, it } from 'vitest';
import { jobRequest, type JobForm } from '../src/pages/NewJob.tsx';
import { DEFAULT_OPTIONS } from '../src/pages/new-job/PipelineFieldset.tsx';
import type { Upload } from '../src/types.ts';

const upload = (id: string, name = `${id}.bin`) => ({ id, original_name: name }) as Upload;
const form = (over: Partial<JobForm>): JobForm => ({
  doc: upload('doc'),
  pipeline: 'audio',
  language: 'en-US',
  options: DEFAULT_OPTIONS,
  voice: { mode: 'library', voiceId: '', refAudio: null, refText: '' },
  refVideo: null,
  recording: [],
  ...over,
});

describe('jobRequest', () => {
  it('audio with a library voice: format and speed, no frame size; the default voice sends no voice_id', () => {
    expect(jobRequest(form({ options: { ...DEFAULT_OPTIONS, speed: 1.25, width: 640, title: '  ' } }))).toEqual({
      pipeline_type: 'audio',
      uploaded_file_id: 'doc',
      language: 'en-US',
      options: { format: 'mp3', speed: 1.25 },
    });
    expect(jobRequest(form({ voice: { mode: 'library', voiceId: 'v1', refAudio: null, refText: 'ignored' } })).voice_id).toBe('v1');
  });

  it('lip-sync with a cloned voice: frame size, trimmed preset and title, the presenter video and the clip', () => {
    const body = jobRequest(
      form({
        pipeline: 'lipsync',
        options: { ...DEFAULT_OPTIONS, format: 'mp4', preset: ' calm ', title: ' Talk ', width: 1920, height: 1080, fps: 30 },
        voice: { mode: 'clone', voiceId: 'v1', refAudio: upload('clip'), refText: '  ' },
        refVideo: upload('face'),
      }),
    );
    expect(body).toEqual({
      pipeline_type: 'lipsync',
      uploaded_file_id: 'doc',
      language: 'en-US',
      options: { format: 'mp4', speed: 1, width: 1920, height: 1080, fps: 30, lipsync_preset: 'calm' },
      ref_audio_file_id: 'clip',
      ref_text: undefined,
      title: 'Talk',
      ref_video_file_id: 'face',
    });
  });

  it('highlight sends no preset or presenter even when the form still holds them', () => {
    const body = jobRequest(form({ pipeline: 'highlight', options: { ...DEFAULT_OPTIONS, format: 'epub', preset: 'calm' }, refVideo: upload('face') }));
    expect(body.options).toEqual({ format: 'epub', speed: 1, width: 1280, height: 720, fps: 25 });
    expect(body).not.toHaveProperty('ref_video_file_id');
  });

  it('read-along: the recordings as audio_file_ids, no voice and no speed', () => {
    const body = jobRequest(form({ pipeline: 'readalong', options: { ...DEFAULT_OPTIONS, format: 'epub' }, recording: [upload('r1'), upload('r2')], voice: { mode: 'library', voiceId: 'v1', refAudio: null, refText: '' } }));
    expect(body).toEqual({ pipeline_type: 'readalong', uploaded_file_id: 'doc', language: 'en-US', options: { format: 'epub', width: 1280, height: 720, fps: 25 }, audio_file_ids: ['r1', 'r2'] });
  });
});
