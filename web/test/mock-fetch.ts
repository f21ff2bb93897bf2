// A mocked fetch for component tests: a route table answered in-process. The browser
// tests (test/web-e2e.test.ts at the repository root) run the same app against the real service.
import { vi } from 'vitest';

export type Handler = (url: URL, init: RequestInit) => Response | Promise<Response>;

export function jsonResponse(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
}

export function mockFetch(routes: Record<string, Handler>) {
  const calls: Array<{ method: string; path: string; auth: string | null }> = [];
  const fn = vi.fn(async (input: RequestInfo | URL, init: RequestInit = {}) => {
    const url = new URL(String(input), 'http://lectern.test');
    const method = (init.method ?? 'GET').toUpperCase();
    calls.push({ method, path: url.pathname + url.search, auth: new Headers(init.headers).get('authorization') });
    const key = Object.keys(routes).find((k) => {
      const [m, p] = k.split(' ');
      return m === method && new RegExp(`^${p}$`).test(url.pathname);
    });
    if (!key) return jsonResponse({ detail: `no mock for ${method} ${url.pathname}` }, 404);
    return routes[key]!(url, init);
  });
  vi.stubGlobal('fetch', fn);
  return { fn, calls };
}

export function job(over: Record<string, unknown> = {}) {
  return {
    id: '11111111-1111-4111-8111-111111111111',
    pipeline_type: 'audio',
    status: 'completed',
    owner: null as string | null,
    config_json: { title: 'A test job', options: { format: 'mp3' } },
    worker_task_id: '1',
    progress: { phase: 'done', current: 1, total: 1 },
    error: null,
    attempts: 1,
    created_at: '2026-01-01T10:00:00.000Z',
    updated_at: '2026-01-01T10:00:05.000Z',
    started_at: '2026-01-01T10:00:01.000Z',
    finished_at: '2026-01-01T10:00:05.000Z',
    download_url: null,
    ...over,
  };
}
