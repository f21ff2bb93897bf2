// Dashboard paging/filtering and the reader's layout, against a MOCKED fetch (the real
// service drives the same pages in test/web-e2e.test.ts; lip-sync jobs with a presenter
// cannot be made by this version of the service, so the presenter window is checked here).
import { act, cleanup, fireEvent, render, screen } from '@testing-library/react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Dashboard } from '../src/pages/Dashboard.tsx';
import { Reader } from '../src/pages/Reader.tsx';
import { job, jsonResponse, mockFetch } from './mock-fetch.ts';

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
});

describe('dashboard (mocked fetch)', () => {
  it('pages with limit/offset, filters by status in the URL, and shows the empty and error states', async () => {
    const jobs = Array.from({ length: 23 }, (_, i) => job({ id: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`, config_json: { title: `Job ${i}` } }));
    const { calls } = mockFetch({
      'GET /api/jobs': (url) => {
        const status = url.searchParams.get('status');
        if (status === 'failed') return jsonResponse({ detail: 'database unavailable' }, 503);
        const pool = status ? jobs.filter((j) => j.status === status) : jobs;
        const limit = Number(url.searchParams.get('limit'));
        const offset = Number(url.searchParams.get('offset'));
        return jsonResponse({ jobs: pool.slice(offset, offset + limit), total: pool.length, limit, offset });
      },
    });
    history.replaceState(null, '', '/');
    render(<Dashboard />);
    expect(await screen.findByText('Job 0')).toBeTruthy();
    expect(screen.getByText('Page 1 of 3 (23 jobs)')).toBeTruthy();
    await act(async () => fireEvent.click(screen.getByRole('button', { name: 'Next' })));
    expect(await screen.findByText('Job 10')).toBeTruthy();
    expect(location.search).toBe('?page=2');
    expect(calls.at(-1)!.path).toBe('/api/jobs?limit=10&offset=10');

    await act(async () => fireEvent.change(screen.getByLabelText('Status'), { target: { value: 'running' } }));
    expect(await screen.findByText('No running jobs.')).toBeTruthy();
    expect(calls.at(-1)!.path).toBe('/api/jobs?limit=10&offset=0&status=running');

    await act(async () => fireEvent.change(screen.getByLabelText('Status'), { target: { value: 'failed' } }));
    expect((await screen.findByRole('alert')).textContent).toBe('Could not load the jobs: database unavailable');
  });

  it("says on a finished read-along job's row how much of the book its recording matched, and nothing of the kind on other rows", async () => {
    const result = { output: 'book.epub', words: 739, words_timed: 93, words_skipped: 646, text_matched: 93 / 739, audio_unmatched: 0.2, sentences_skipped: 0, files: [] };
    const jobs = [
      job({ id: '00000000-0000-4000-8000-000000000001', pipeline_type: 'readalong', config_json: { title: 'Read along', result } }),
      job({ id: '00000000-0000-4000-8000-000000000002', config_json: { title: 'Narrated', result: { output: 'a.mp3', duration_seconds: 3 } } }),
      job({ id: '00000000-0000-4000-8000-000000000003', pipeline_type: 'readalong', status: 'running', config_json: { title: 'Aligning' } }),
    ];
    mockFetch({ 'GET /api/jobs': () => jsonResponse({ jobs, total: jobs.length, limit: 10, offset: 0 }) });
    history.replaceState(null, '', '/?status=completed');
    render(<Dashboard />);
    expect(await screen.findByText('Narrated')).toBeTruthy();
    const shown = screen.getAllByTestId('row-words-timed');
    expect(shown.map((e) => e.textContent)).toEqual(['Recording: 93 of 739 words matched (12.5 %)']);
    expect(shown[0]!.closest('li')!.getAttribute('data-job-id')).toBe(jobs[0]!.id);
  });
});

describe('reader (mocked fetch)', () => {
  const timeline = {
    title: 'Two pages',
    duration: 3,
    pages: 2,
    words: [
      { word: 'Hello', start: 0, end: 0.4, page: 1, block: 0 },
      { word: 'there.', start: 0.5, end: 1, page: 1, block: 0 },
      { word: 'New', start: 1.2, end: 1.5, page: 1, block: 1 },
      { word: 'page.', start: 2, end: 2.5, page: 2, block: 0 },
    ],
  };
  const routes = (files: string[], output: string) => {
    const j = job({ pipeline_type: 'lipsync', download_url: '/api/jobs/x/download', config_json: { title: 'T', result: { output, files } } });
    return mockFetch({
      [`GET /api/jobs/${j.id}`]: () => jsonResponse(j),
      [`GET /api/jobs/${j.id}/files/timeline.json`]: () => jsonResponse(timeline),
      [`GET /api/jobs/${j.id}/files/narration.mp3`]: () => new Response(new Uint8Array([1, 2, 3]), { headers: { 'content-type': 'audio/mpeg' } }),
      [`GET /api/jobs/${j.id}/files/presenter.mp4`]: () => new Response(new Uint8Array([4, 5]), { headers: { 'content-type': 'video/mp4' } }),
    });
  };
  const id = job().id;

  it('lays out the words of the first page by block, with the presenter window and the offline reader download', async () => {
    const { calls } = routes(['reader.zip', 'narration.mp3', 'timeline.json', 'presenter.mp4'], 'reader.zip');
    render(<Reader id={id} />);
    expect(await screen.findByText('Hello')).toBeTruthy();
    const blocks = document.querySelectorAll('.read-text p');
    expect([...blocks].map((b) => b.textContent!.trim())).toEqual(['Hello there.', 'New']);
    expect(screen.getByText('Page 1 of 2')).toBeTruthy();
    expect(screen.getByRole('region', { name: 'Presenter' })).toBeTruthy();
    expect(screen.getByRole('button', { name: 'Download the offline reader (ZIP)' })).toBeTruthy();
    expect(calls.map((c) => c.path)).toContain(`/api/jobs/${id}/files/presenter.mp4`);
    await act(async () => fireEvent.click(screen.getByRole('button', { name: 'Next page' })));
    expect(document.querySelector('.read-text')!.textContent!.trim()).toBe('page.');
  });

  it('has no presenter window or ZIP link for an audio job', async () => {
    routes(['narration.mp3', 'timeline.json', 'narration.vtt'], 'narration.mp3');
    render(<Reader id={id} />);
    expect(await screen.findByText('Hello')).toBeTruthy();
    expect(screen.queryByRole('region', { name: 'Presenter' })).toBeNull();
    expect(screen.queryByRole('button', { name: /offline reader/ })).toBeNull();
  });

  it('says plainly when the job has no timeline', async () => {
    routes(['out.mp4'], 'out.mp4');
    render(<Reader id={id} />);
    expect((await screen.findByRole('alert')).textContent).toMatch(/no read-along timeline/);
  });
});
