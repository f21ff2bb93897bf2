// The New job form's read-along type: the document plus one or more audio files of the
// person's own recording, against a MOCKED fetch and a fake XMLHttpRequest for the uploads
// (both in-process, named so). The real service runs the job in test/readalong.test.ts.
import { cleanup, fireEvent, render, screen, within } from '@testing-library/react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { NewJob } from '../src/pages/NewJob.tsx';
import { recordingCoverage } from '../src/format.ts';
import { timedIndices, wordAt } from '../src/pages/Reader.tsx';
import type { TimelineWord } from '../src/types.ts';
import { fakeXhr } from './fake-xhr.ts';
import { jsonResponse, mockFetch } from './mock-fetch.ts';

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
});

/** Every upload is stored, typed from its extension as the service would from its bytes. */
const FakeXhr = fakeXhr((file, id) => {
  const kind = /\.(mp3|flac|ogg|wav|m4a|m4b)$/i.test(file.name) ? 'audio' : 'document';
  return { id, original_name: file.name, size_bytes: file.size, content_type: kind === 'audio' ? 'audio/mpeg' : 'text/plain; charset=utf-8', kind, language: null };
});

function routes(onCreate: (body: any) => Response) {
  return {
    'GET /api/voices': () => jsonResponse([]),
    'GET /api/languages': () => jsonResponse([{ code: 'en-US', name: 'English (US)' }]),
    'GET /api/voices/cloning': () => jsonResponse({ available: false, detail: 'no GPU server' }),
    'POST /api/jobs': (_url: URL, init: RequestInit) => onCreate(JSON.parse(String(init.body))),
  };
}

async function fillForm() {
  vi.stubGlobal('XMLHttpRequest', FakeXhr);
  fireEvent.change(screen.getByLabelText('Document to narrate'), { target: { files: [new File(['Chapter one. It was a dark night.'], 'book.txt', { type: 'text/plain' })] } });
  expect(await screen.findByText('book.txt')).toBeTruthy();
  fireEvent.click(screen.getByLabelText(/Read-along from your recording/));
}

describe('new job form: read-along from your own recording (mocked fetch and uploads)', () => {
  it('takes several audio files beside the book, drops the voice and speed, and sends their ids as audio_file_ids', async () => {
    let sent: any = null;
    mockFetch(routes((body) => ((sent = body), jsonResponse({ id: '11111111-1111-4111-8111-111111111111', status: 'pending' }, 201))));
    render(<NewJob />);
    await fillForm();
    // no voice to pick and no speed: the recording is the narration
    expect(screen.queryByText('3. Voice')).toBeNull();
    expect(screen.queryByLabelText(/Speed/)).toBeNull();
    expect(screen.getByText(/works in every language of the list/)).toBeTruthy();
    const create = screen.getByRole('button', { name: 'Create job' }) as HTMLButtonElement;
    expect(create.disabled).toBe(true);
    expect(screen.getByText('Upload your recording first.')).toBeTruthy();
    // an audiobook of three chapter files, chosen together, in any order; one removed again
    const picker = screen.getByLabelText(/Your recording of the document/) as HTMLInputElement;
    expect(picker.multiple).toBe(true);
    const mp3 = (name: string) => new File([new Uint8Array([0x49, 0x44, 0x33, 4, 0, 0])], name, { type: 'audio/mpeg' });
    fireEvent.change(picker, { target: { files: [mp3('ch2.mp3'), mp3('ch1.mp3'), mp3('extra.mp3')] } });
    const list = await screen.findByRole('list', { name: 'Recording files' });
    await vi.waitFor(() => expect(within(list).getAllByRole('listitem')).toHaveLength(3));
    fireEvent.click(screen.getByRole('button', { name: 'Remove extra.mp3' }));
    expect(within(list).getAllByRole('listitem').map((li) => li.querySelector('strong')!.textContent)).toEqual(['ch2.mp3', 'ch1.mp3']);
    // a file that is not audio is refused here, before any upload
    fireEvent.change(picker, { target: { files: [new File(['x'], 'notes.pdf')] } });
    expect(await screen.findByText(/“notes\.pdf” is not a recording Lectern reads/)).toBeTruthy();
    expect(create.disabled).toBe(false);
    fireEvent.click(create);
    await vi.waitFor(() => expect(sent).not.toBeNull());
    expect(sent.pipeline_type).toBe('readalong');
    expect(sent.audio_file_ids).toEqual(['00000000-0000-4000-8000-000000000002', '00000000-0000-4000-8000-000000000003']);
    expect(sent.options.format).toBe('epub');
    expect(sent.options.speed).toBeUndefined();
    expect(sent.voice_id).toBeUndefined();
    expect(sent.ref_audio_file_id).toBeUndefined();
  });

  it('shows the service\'s refusal (422) in plain words and keeps the form filled', async () => {
    mockFetch(routes(() => jsonResponse({ detail: 'audio_file_ids[0] (upload x, "ch1.mp3") cannot be read as audio: Invalid data found when processing input' }, 422)));
    render(<NewJob />);
    await fillForm();
    fireEvent.change(screen.getByLabelText(/Your recording of the document/), { target: { files: [new File([new Uint8Array([0x49, 0x44, 0x33])], 'ch1.mp3')] } });
    await screen.findByRole('list', { name: 'Recording files' });
    fireEvent.click(screen.getByRole('button', { name: 'Create job' }));
    const alert = await vi.waitFor(() => screen.getAllByRole('alert').find((a) => /refused/.test(a.textContent ?? ''))!);
    expect(alert.textContent).toBe('The service refused this job: audio_file_ids[0] (upload x, "ch1.mp3") cannot be read as audio: Invalid data found when processing input');
    expect(screen.getByText('ch1.mp3')).toBeTruthy();
  });
});

describe('reader: words a recording skips', () => {
  it('are never the word spoken: the highlight stays on the last word heard', () => {
    const w = (word: string, start: number | null): TimelineWord => ({ word, start, end: start === null ? null : start + 0.3, page: 1, block: 0, ...(start === null ? { skipped: true as const } : {}) });
    const words = [w('Preface', null), w('It', 1), w('was', 1.4), w('unread', null), w('dark', 2)];
    expect(timedIndices(words)).toEqual([1, 2, 4]);
    expect(wordAt(words, 0.5)).toBe(-1);
    expect(wordAt(words, 1.5)).toBe(2);
    expect(wordAt(words, 1.9)).toBe(2);
    expect(wordAt(words, 2.1)).toBe(4);
  });
});

describe('job page: what a read-along job matched', () => {
  const readalong = (result: Record<string, unknown>) => ({ pipeline_type: 'readalong' as const, config_json: { result: { output: 'book.epub', files: [], ...result } } });
  it('says how many words are timed, the sentences left out and the audio not in the text; nothing for other jobs', () => {
    expect(recordingCoverage(readalong({ words: 12500, words_timed: 12345, words_skipped: 155, text_matched: 0.9876, audio_unmatched: 0.0412, sentences_skipped: 2 }))).toEqual({
      words: '12,345 of 12,500 (98.7 %); the other 155 are not read in the recording and are shown without a highlight',
      skipped: '2 sentences inside the read text',
      unmatchedAudio: '4.1 %',
      summary: '12,345 of 12,500 words matched (98.7 %)',
    });
    expect(recordingCoverage(readalong({ words: 93, words_timed: 93, words_skipped: 0, text_matched: 1, audio_unmatched: 0, sentences_skipped: 0 }))).toEqual({ words: '93 of 93 (100.0 %)', skipped: null, unmatchedAudio: '0.0 %', summary: '93 of 93 words matched (100.0 %)' });
    expect(recordingCoverage({ ...readalong({ words: 10, words_timed: 10 }), pipeline_type: 'audio' })).toBeNull();
    expect(recordingCoverage({ pipeline_type: 'readalong', config_json: {} })).toBeNull();
  });
});
