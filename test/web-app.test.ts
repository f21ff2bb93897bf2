// `lectern serve` serves the built web app at `/` (src/api/web-app.ts): files, the
// client-route fallback to index.html, and a clear 503 when the app was never built.
// The web app's own behaviour is tested in a real browser in test/web-e2e.test.ts.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningService } from '../src/service.ts';
import { json, testEnv, type TestEnv } from './helpers/service.ts';

describe('web app serving', () => {
  let t: TestEnv;
  let svc: RunningService;
  let webDir: string;

  beforeAll(async () => {
    t = testEnv('embedded', 'webapp');
    // A small built app of our own, so this test does not depend on `vite build`.
    webDir = path.join(t.dataDir, 'dist');
    fs.mkdirSync(path.join(webDir, 'assets'), { recursive: true });
    fs.writeFileSync(path.join(webDir, 'index.html'), '<!doctype html><title>Lectern</title><div id="root"></div>');
    fs.writeFileSync(path.join(webDir, 'assets', 'app-1234.js'), 'console.log("app")');
    svc = await t.start({ LECTERN_WEB_DIR: webDir });
  });
  afterAll(async () => {
    await svc?.close();
    await t?.cleanup();
  });

  it('serves index.html at / and for client routes, assets by path, with no-sniff and a CSP', async () => {
    for (const p of ['/', '/jobs/00000000-0000-4000-8000-000000000000/read', '/new']) {
      const r = await fetch(`${svc.url}${p}`);
      expect(r.status, p).toBe(200);
      expect(r.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(r.headers.get('content-security-policy')).toContain("default-src 'self'");
      expect(r.headers.get('cache-control')).toBe('no-cache');
      expect(await r.text()).toContain('<div id="root">');
    }
    const js = await fetch(`${svc.url}/assets/app-1234.js`);
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(js.headers.get('x-content-type-options')).toBe('nosniff');
    expect(js.headers.get('cache-control')).toContain('immutable');
    expect(await js.text()).toBe('console.log("app")');
  });

  it('answers 404 for a missing asset and a path outside the app, never index.html', async () => {
    expect((await json(svc.url, 'GET', '/assets/gone-999.js')).status).toBe(404);
    expect((await json(svc.url, 'GET', '/%2e%2e/%2e%2e/lectern.db')).status).toBe(404);
  });

  it('keeps the API, /openapi.json and /health, with JSON 404s for unknown API paths', async () => {
    expect((await json(svc.url, 'GET', '/health')).body).toEqual({ status: 'ok', mode: 'embedded' });
    expect((await json(svc.url, 'GET', '/api/jobs')).body).toMatchObject({ jobs: [], total: 0 });
    const doc = (await json(svc.url, 'GET', '/openapi.json')).body;
    expect(doc.paths['/api/jobs']).toBeDefined();
    expect(Object.keys(doc.paths).filter((p) => !p.startsWith('/api/') && p !== '/health')).toEqual([]);
    const unknown = await json(svc.url, 'GET', '/api/nothing-here');
    expect(unknown.status).toBe(404);
    expect(unknown.body.detail).toBe('no route for GET /api/nothing-here');
  });

  it('answers 503 with how to build the app when it is missing', async () => {
    const t2 = testEnv('embedded', 'webapp_missing');
    const svc2 = await t2.start({ LECTERN_WEB_DIR: path.join(t2.dataDir, 'no-dist') });
    try {
      const r = await json(svc2.url, 'GET', '/');
      expect(r.status).toBe(503);
      expect(r.body.detail).toMatch(/web app is not built.*npm run setup/);
      expect((await json(svc2.url, 'GET', '/jobs/x')).status).toBe(503);
      expect((await json(svc2.url, 'GET', '/health')).status).toBe(200);
    } finally {
      await svc2.close();
      await t2.cleanup();
    }
  });
});
