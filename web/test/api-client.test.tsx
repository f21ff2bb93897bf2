// The API client against a MOCKED fetch: bearer token, the 401 → prompt → retry flow, and
// the fetch-based event stream parser. (The real service answers it in test/web-e2e.test.ts.)
import { cleanup, fireEvent, render, screen } from '@testing-library/react';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { api, ApiError, download, fileUrl, parseEvent, setTokenPrompt, streamEvents } from '../src/api.ts';
import { App } from '../src/App.tsx';
import { wordAt } from '../src/pages/Reader.tsx';
import { jsonResponse, mockFetch } from './mock-fetch.ts';

const list = { jobs: [], total: 0, limit: 10, offset: 0 };
const protectedRoutes = (token: string) => ({
  'GET /api/jobs': (_u: URL, init: RequestInit) => (new Headers(init.headers).get('authorization') === `Bearer ${token}` ? jsonResponse(list) : jsonResponse({ detail: 'missing or invalid bearer token' }, 401)),
});

describe('API client (mocked fetch)', () => {
  beforeEach(() => sessionStorage.clear());
  afterEach(() => {
    cleanup();
    setTokenPrompt(null);
    vi.unstubAllGlobals();
  });

  it('on a 401 asks once for the token, keeps it in sessionStorage and retries with it', async () => {
    const { calls } = mockFetch(protectedRoutes('s3cret'));
    const prompt = vi.fn(async () => 's3cret');
    setTokenPrompt(prompt);
    const [a, b] = await Promise.all([api.listJobs({ limit: 10, offset: 0 }), api.listJobs({ limit: 10, offset: 10 })]);
    expect(a).toEqual(list);
    expect(b).toEqual(list);
    expect(prompt).toHaveBeenCalledTimes(1); // concurrent 401s share one prompt
    expect(sessionStorage.getItem('lectern.token')).toBe('s3cret');
    expect(calls.filter((c) => c.auth === 'Bearer s3cret')).toHaveLength(2);
    await api.listJobs({ limit: 10, offset: 0 });
    expect(calls.at(-1)!.auth).toBe('Bearer s3cret'); // sent up front from now on
    expect(prompt).toHaveBeenCalledTimes(1);
  });

  it('asks again saying the token was refused, and gives the 401 detail when cancelled', async () => {
    mockFetch(protectedRoutes('right'));
    const answers = ['wrong', null];
    const prompt = vi.fn(async (_refused: boolean) => answers.shift() ?? null);
    setTokenPrompt(prompt);
    const err = await api.listJobs({ limit: 10, offset: 0 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).status).toBe(401);
    expect((err as ApiError).detail).toBe('Not signed in: missing or invalid bearer token');
    expect(prompt.mock.calls.map((c) => c[0])).toEqual([false, true]);
  });

  it('the app shows the token form on a 401 and loads the page after it', async () => {
    mockFetch(protectedRoutes('abc'));
    history.replaceState(null, '', '/');
    render(<App />);
    const input = await screen.findByLabelText('Access token');
    expect(screen.getByRole('dialog', { name: 'Access token needed' })).toBeTruthy();
    expect(document.activeElement).toBe(input);
    fireEvent.change(input, { target: { value: 'abc' } });
    fireEvent.click(screen.getByRole('button', { name: 'Continue' }));
    expect(await screen.findByText(/No jobs yet/)).toBeTruthy();
    expect(screen.queryByRole('dialog')).toBeNull();
  });

  it('reads an event stream split at any byte, skipping keep-alives', async () => {
    const text = 'event: snapshot\ndata: {"id":"j","status":"running"}\n\n: keep-alive\n\nevent: progress\ndata: {"phase":"synthesize","current":2,"total":4}\n\nevent: end\ndata: {"id":"j","status":"completed"}\n\n';
    const bytes = new TextEncoder().encode(text);
    mockFetch({
      'GET /api/jobs/j/events': () =>
        new Response(
          new ReadableStream({
            start(c) {
              for (let i = 0; i < bytes.length; i += 7) c.enqueue(bytes.subarray(i, i + 7));
              c.close();
            },
          }),
        ),
    });
    const seen: unknown[] = [];
    await streamEvents('j', (e) => seen.push(e), new AbortController().signal);
    expect(seen).toEqual([
      { event: 'snapshot', data: { id: 'j', status: 'running' } },
      { event: 'progress', data: { phase: 'synthesize', current: 2, total: 4 } },
      { event: 'end', data: { id: 'j', status: 'completed' } },
    ]);
    expect(parseEvent(': keep-alive')).toBeNull();
  });

  it('plays and saves stored files from the store\'s presigned link when the service gives one, else from the bytes', async () => {
    sessionStorage.setItem('lectern.token', 'tok');
    const link = { url: 'http://store.test/bucket/outputs/x/narration.mp3?X-Amz-Signature=abc', expires_at: '2026-01-01T10:05:00.000Z', filename: 'Book.mp3', content_type: 'audio/mpeg' };
    const { calls, fn } = mockFetch({
      'GET /api/jobs/s3/download': () => jsonResponse(link),
      'GET /api/jobs/local/download': () => new Response('ID3bytes', { headers: { 'content-type': 'audio/mpeg', 'content-disposition': `attachment; filename="Book.mp3"; filename*=UTF-8''Book.mp3` } }),
    });
    const clicked: Array<{ href: string; download: string }> = [];
    const click = vi.spyOn(HTMLAnchorElement.prototype, 'click').mockImplementation(function (this: HTMLAnchorElement) {
      clicked.push({ href: this.href, download: this.download });
    });
    const created = vi.spyOn(URL, 'createObjectURL').mockReturnValue('blob:local-1');
    expect(await fileUrl('/api/jobs/s3/download')).toEqual({ url: link.url, filename: 'Book.mp3', local: false });
    expect(await download('/api/jobs/s3/download', 'x.mp3')).toBe('Book.mp3');
    expect(clicked.at(-1)).toEqual({ href: link.url, download: '' }); // the store names the file itself
    expect(await download('/api/jobs/local/download', 'x.mp3')).toBe('Book.mp3');
    expect(clicked.at(-1)).toEqual({ href: 'blob:local-1', download: 'Book.mp3' });
    // The token goes to the API only, which is asked for JSON; the store is never fetched here.
    expect(calls.every((c) => c.auth === 'Bearer tok' && c.path.startsWith('/api/'))).toBe(true);
    expect(fn.mock.calls.every(([, init]) => new Headers(init?.headers).get('accept') === 'application/json')).toBe(true);
    click.mockRestore();
    created.mockRestore();
  });
});

describe('reader timing', () => {
  const words = [0, 0.5, 1.2, 2].map((start, i) => ({ word: `w${i}`, start, end: start + 0.4, page: 1, block: 0 }));
  it('finds the word being spoken (the last one started)', () => {
    expect(wordAt(words, -1)).toBe(-1);
    expect(wordAt(words, 0)).toBe(0);
    expect(wordAt(words, 0.45)).toBe(0); // between words: the last one stays highlighted
    expect(wordAt(words, 1.2)).toBe(2);
    expect(wordAt(words, 99)).toBe(3);
  });
});
