// The Stop button's inline confirmation on a running lip-sync job, against a MOCKED fetch
// (focus handling and the one POST are pinned here; the real stop of a real lip-sync job runs
// in chromium in test/web-e2e.test.ts). The job shapes are the service's: while running, a
// lip-sync job reports `page` progress counting pages finished; when it ends, `pages_done`
// and `pages_total` are in config_json.
import { act, cleanup, fireEvent, render, screen } from '@testing-library/react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { JobPage } from '../src/pages/JobPage.tsx';
import { job, jsonResponse, mockFetch } from './mock-fetch.ts';

const running = job({ pipeline_type: 'lipsync', status: 'running', progress: { phase: 'page', current: 3, total: 10 }, finished_at: null, config_json: { title: 'Presenter job', options: { format: 'reader' } } });

function setup() {
  return mockFetch({
    [`GET /api/jobs/${running.id}`]: () => jsonResponse(running),
    // An open event stream that has sent its snapshot.
    [`GET /api/jobs/${running.id}/events`]: () =>
      new Response(new ReadableStream({ start: (c) => c.enqueue(new TextEncoder().encode(`event: snapshot\ndata: ${JSON.stringify(running)}\n\n`)) }), { headers: { 'content-type': 'text/event-stream' } }),
    [`POST /api/jobs/${running.id}/stop`]: () => jsonResponse({ detail: 'stop requested' }),
  });
}

describe('job page Stop (mocked fetch)', () => {
  afterEach(() => {
    cleanup();
    vi.unstubAllGlobals();
  });

  it('shows pages done and progress of a running lip-sync job', async () => {
    setup();
    render(<JobPage id={running.id} />);
    expect(await screen.findByText('Presenter job')).toBeTruthy();
    expect(screen.getByTestId('pages-done').textContent).toBe('3 of 10');
    expect(screen.getByRole('progressbar').getAttribute('aria-valuenow')).toBe('30');
    expect(screen.getByTestId('phase').textContent).toBe('Lip-syncing page by page (3 of 10)');
  });

  it('asks inline before stopping; Cancel sends nothing and gives focus back', async () => {
    const { calls } = setup();
    render(<JobPage id={running.id} />);
    const stop = await screen.findByRole('button', { name: 'Stop' });
    fireEvent.click(stop);
    expect(screen.getByText(/Stop after the page in progress\?/)).toBeTruthy();
    const cancel = screen.getByRole('button', { name: 'Cancel' });
    expect(document.activeElement).toBe(cancel);
    fireEvent.click(cancel);
    expect(screen.queryByText(/Stop after the page in progress\?/)).toBeNull();
    expect(document.activeElement).toBe(screen.getByRole('button', { name: 'Stop' }));
    expect(calls.filter((c) => c.path.endsWith('/stop'))).toEqual([]);
  });

  it('stops after "Yes, stop it": one POST /stop', async () => {
    const { calls } = setup();
    render(<JobPage id={running.id} />);
    fireEvent.click(await screen.findByRole('button', { name: 'Stop' }));
    await act(async () => {
      fireEvent.click(screen.getByRole('button', { name: 'Yes, stop it' }));
    });
    expect(calls.filter((c) => c.method === 'POST' && c.path === `/api/jobs/${running.id}/stop`)).toHaveLength(1);
  });

  it('offers no Stop for an audio job or a finished lip-sync job', async () => {
    mockFetch({ [`GET /api/jobs/${running.id}`]: () => jsonResponse({ ...running, pipeline_type: 'audio' }), [`GET /api/jobs/${running.id}/events`]: () => new Response('') });
    render(<JobPage id={running.id} />);
    await screen.findByText('Presenter job');
    expect(screen.queryByRole('button', { name: 'Stop' })).toBeNull();
    cleanup();
    mockFetch({
      [`GET /api/jobs/${running.id}`]: () =>
        jsonResponse({ ...running, status: 'stopped', progress: { phase: 'assemble', current: 1, total: 1 }, config_json: { ...running.config_json, pages_done: 2, pages_total: 10 } }),
      [`GET /api/jobs/${running.id}/export-epub/status`]: () => jsonResponse({ detail: 'no route' }, 404),
    });
    render(<JobPage id={running.id} />);
    await screen.findByText('Presenter job');
    expect(screen.queryByRole('button', { name: 'Stop' })).toBeNull();
    expect(screen.getByTestId('pages-done').textContent).toBe('2 of 10');
    expect(screen.getByRole('progressbar').getAttribute('aria-valuenow')).toBe('20'); // not the assembly's 1 of 1
    // The service has no EPUB export endpoints (404): said plainly, no button.
    expect(await screen.findByText('EPUB export is not available on this server.')).toBeTruthy();
    expect(screen.queryByRole('button', { name: 'Export as EPUB' })).toBeNull();
  });
});
