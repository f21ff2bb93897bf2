// Ownership over real HTTP, in both modes: two users (alice, bob) and an admin (root). Every
// route that takes a job or upload id is tried by each of them (a table: route × caller →
// status), and wherever bob gets 404 for alice's id, the same request with an id that does
// not exist must answer the same status, the same body (ids aside) and the same headers.
// Then lists and their totals, what was made before tokens, GET /api/me, and the config.
import fs from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadServiceConfig } from '../src/config.ts';
import type { RunningService } from '../src/service.ts';
import { MODES, testEnv, upload, waitFor, type TestEnv } from './helpers/service.ts';

const FIX = path.join(import.meta.dirname, 'fixtures');
const CLIP = fs.readFileSync(path.join(FIX, 'speech', 'cards-001.wav'));
const VIDEO = fs.readFileSync(path.join(FIX, 'video', 'presenter.mp4'));
const TOKENS = { alice: 'alice-owner-token-0123456789', bob: 'bob-owner-token-0123456789abc', root: 'root-owner-token-0123456789ab' } as const;
type Who = keyof typeof TOKENS;
const CALLERS: Who[] = ['alice', 'bob', 'root'];
const AUTH_ENV = { LECTERN_API_TOKENS: Object.entries(TOKENS).map(([n, t]) => `${n}:${t}`).join(','), LECTERN_API_ADMINS: 'root', LECTERN_TTS_BACKEND: 'espeak' };

interface Answer {
  status: number;
  text: string;
  headers: Headers;
}

async function send(url: string, who: Who | null, method: string, p: string, body?: unknown): Promise<Answer> {
  const headers: Record<string, string> = who ? { authorization: `Bearer ${TOKENS[who]}` } : {};
  let payload: RequestInit['body'];
  if (body instanceof FormData) payload = body;
  else if (body !== undefined) {
    headers['content-type'] = 'application/json';
    payload = JSON.stringify(body);
  }
  const res = await fetch(`${url}${p}`, { method, headers, body: payload });
  return { status: res.status, text: await res.text(), headers: res.headers };
}

const parse = (a: Answer) => JSON.parse(a.text);

function form(name: string, data: string | Buffer): FormData {
  const f = new FormData();
  f.append('file', new Blob([typeof data === 'string' ? Buffer.from(data) : data]), name);
  return f;
}

/** The headers that may differ between any two answers (time, request id, rate-limit counters, keep-alive). */
const VOLATILE = new Set(['date', 'x-request-id', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'keep-alive', 'connection']);
const stableHeaders = (h: Headers) => [...h.entries()].filter(([k]) => !VOLATILE.has(k)).sort();

describe.each(MODES)('ownership of jobs and uploads (%s)', (mode) => {
  let t: TestEnv;
  let svc: RunningService;
  let url: string;
  // Made with authentication off, before tokens were configured.
  const legacy = { job: '', upload: '' };
  // Each caller's document; alice's audio clip, video and finished job.
  const docs = {} as Record<Who, string>;
  const alice = { clip: '', video: '', job: '' };

  const api = (who: Who | null, method: string, p: string, body?: unknown) => send(url, who, method, p, body);
  const finished = (who: Who, id: string) =>
    waitFor(
      async () => {
        const j = parse(await api(who, 'GET', `/api/jobs/${id}`));
        return j.status === 'completed' || j.status === 'failed' ? j : null;
      },
      120_000,
      `job ${id}`,
    );
  const createJob = async (who: Who, body: Record<string, unknown>) => {
    const r = await api(who, 'POST', '/api/jobs', { pipeline_type: 'audio', ...body });
    expect(r.status, r.text).toBe(201);
    return parse(r).id as string;
  };
  const uploadAs = async (who: Who, name: string, data: string | Buffer) => {
    const r = await api(who, 'POST', '/api/uploads', form(name, data));
    expect(r.status, r.text).toBe(201);
    expect(parse(r).owner).toBe(who);
    return parse(r).id as string;
  };

  beforeAll(async () => {
    t = testEnv(mode, `own_${mode}`);
    // First without tokens (loopback): everything belongs to everyone, nothing has an owner.
    const open = await t.start({ LECTERN_TTS_BACKEND: 'espeak' });
    const up = await upload(open.url, 'before.md', '# Before tokens\n\nMade with authentication off.');
    legacy.upload = up.body.id as string;
    const made = await fetch(`${open.url}/api/jobs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ pipeline_type: 'audio', uploaded_file_id: legacy.upload }) });
    const job = (await made.json()) as { id: string; owner: string | null };
    expect(job.owner).toBeNull();
    legacy.job = job.id;
    await waitFor(async () => ['completed', 'failed'].includes(((await (await fetch(`${open.url}/api/jobs/${legacy.job}`)).json()) as { status: string }).status), 120_000, 'the job made without tokens');
    await open.close();

    svc = await t.start(AUTH_ENV);
    url = svc.url;
    for (const who of CALLERS) docs[who] = await uploadAs(who, `${who}.md`, `# ${who}'s notes\n\nThese are ${who}'s own words, read aloud.`);
    alice.clip = await uploadAs('alice', 'clip.wav', CLIP);
    alice.video = await uploadAs('alice', 'presenter.mp4', VIDEO);
    alice.job = await createJob('alice', { uploaded_file_id: docs.alice });
    expect((await finished('alice', alice.job)).status).toBe('completed');
  }, 300_000);

  afterAll(async () => {
    await svc?.close();
    await t?.cleanup();
  });

  /**
   * One row per route: the request for an id (`missing` → a fresh id that does not exist), and
   * the status each caller gets for alice's. `fresh` makes a new target for each caller
   * (routes that delete it).
   */
  interface Row {
    route: string;
    target: () => string | Promise<string>;
    request: (id: string, who: Who) => [method: string, path: string, body?: unknown];
    expect: Record<Who, number>;
  }
  const freshJob = () => createJob('alice', { uploaded_file_id: docs.alice });
  const freshUpload = () => uploadAs('alice', 'spare.md', '# Spare\n\nNobody uses this one.');
  const rows: Row[] = [
    { route: 'GET /api/jobs/{id}', target: () => alice.job, request: (id) => ['GET', `/api/jobs/${id}`], expect: { alice: 200, bob: 404, root: 200 } },
    { route: 'GET /api/jobs/{id}/events', target: () => alice.job, request: (id) => ['GET', `/api/jobs/${id}/events`], expect: { alice: 200, bob: 404, root: 200 } },
    { route: 'GET /api/jobs/{id}/download', target: () => alice.job, request: (id) => ['GET', `/api/jobs/${id}/download`], expect: { alice: 200, bob: 404, root: 200 } },
    { route: 'GET /api/jobs/{id}/files/timeline.json', target: () => alice.job, request: (id) => ['GET', `/api/jobs/${id}/files/timeline.json`], expect: { alice: 200, bob: 404, root: 200 } },
    { route: 'POST /api/jobs/{id}/stop', target: () => alice.job, request: (id) => ['POST', `/api/jobs/${id}/stop`], expect: { alice: 409, bob: 404, root: 409 } },
    { route: 'POST /api/jobs/{id}/export-epub', target: () => alice.job, request: (id) => ['POST', `/api/jobs/${id}/export-epub`], expect: { alice: 409, bob: 404, root: 409 } },
    { route: 'GET /api/jobs/{id}/export-epub/status', target: () => alice.job, request: (id) => ['GET', `/api/jobs/${id}/export-epub/status`], expect: { alice: 200, bob: 404, root: 200 } },
    { route: 'GET /api/jobs/{id}/export-epub/download', target: () => alice.job, request: (id) => ['GET', `/api/jobs/${id}/export-epub/download`], expect: { alice: 409, bob: 404, root: 409 } },
    { route: 'DELETE /api/jobs/{id}', target: freshJob, request: (id) => ['DELETE', `/api/jobs/${id}`], expect: { alice: 200, bob: 404, root: 200 } },
    { route: 'GET /api/uploads/{id}', target: () => docs.alice, request: (id) => ['GET', `/api/uploads/${id}`], expect: { alice: 200, bob: 404, root: 200 } },
    { route: 'GET /api/uploads/{id}/file', target: () => docs.alice, request: (id) => ['GET', `/api/uploads/${id}/file`], expect: { alice: 200, bob: 404, root: 200 } },
    { route: 'DELETE /api/uploads/{id} (a job uses it)', target: () => docs.alice, request: (id) => ['DELETE', `/api/uploads/${id}`], expect: { alice: 409, bob: 404, root: 409 } },
    { route: 'DELETE /api/uploads/{id} (unused)', target: freshUpload, request: (id) => ['DELETE', `/api/uploads/${id}`], expect: { alice: 200, bob: 404, root: 200 } },
    {
      route: 'POST /api/jobs uploaded_file_id',
      target: () => docs.alice,
      request: (id) => ['POST', '/api/jobs', { pipeline_type: 'audio', uploaded_file_id: id }],
      expect: { alice: 201, bob: 404, root: 201 },
    },
    {
      // Each caller's own document; the reference clip is alice's. Without a GPU server cloning is refused (422) once the uploads pass.
      route: 'POST /api/jobs ref_audio_file_id',
      target: () => alice.clip,
      request: (id, who) => ['POST', '/api/jobs', { pipeline_type: 'audio', uploaded_file_id: docs[who], ref_audio_file_id: id }],
      expect: { alice: 422, bob: 404, root: 422 },
    },
    {
      route: 'POST /api/jobs ref_video_file_id',
      target: () => alice.video,
      request: (id, who) => ['POST', '/api/jobs', { pipeline_type: 'audio', uploaded_file_id: docs[who], ref_video_file_id: id }],
      expect: { alice: 201, bob: 404, root: 201 },
    },
    {
      route: 'POST /api/voices/preview uploaded_file_id',
      target: () => docs.alice,
      request: (id) => ['POST', '/api/voices/preview', { uploaded_file_id: id }],
      expect: { alice: 200, bob: 404, root: 200 },
    },
    {
      route: 'POST /api/voices/preview ref_audio_file_id',
      target: () => alice.clip,
      request: (id) => ['POST', '/api/voices/preview', { ref_audio_file_id: id, text: 'A short preview.' }],
      expect: { alice: 422, bob: 404, root: 422 },
    },
  ];

  it('every route that takes an id: route × caller → status; another owner\'s id answers exactly as an id that does not exist', { timeout: 240_000 }, async () => {
    const got: Record<string, Record<Who, number>> = {};
    const want: Record<string, Record<Who, number>> = {};
    for (const row of rows) {
      want[row.route] = row.expect;
      got[row.route] = {} as Record<Who, number>;
      // bob first: his tries must change nothing for the others.
      for (const who of ['bob', 'alice', 'root'] as Who[]) {
        const id = await row.target();
        const [method, p, body] = row.request(id, who);
        const r = await api(who, method, p, body);
        got[row.route][who] = r.status;
        if (r.status !== 404) continue;
        // The same request naming an id nobody has: the same answer, byte for byte once the ids are set aside.
        const other = randomUUID();
        const [m2, p2, b2] = row.request(other, who);
        const unknown = await api(who, m2, p2, b2);
        expect(unknown.status, row.route).toBe(404);
        expect(r.text.replaceAll(id, '<id>'), row.route).toBe(unknown.text.replaceAll(other, '<id>'));
        expect(stableHeaders(r.headers), row.route).toEqual(stableHeaders(unknown.headers));
      }
    }
    expect(got).toEqual(want);
    // What bob tried left alice's things as they were; what root made is root's.
    expect(parse(await api('alice', 'GET', `/api/jobs/${alice.job}`)).status).toBe('completed');
    expect(parse(await api('alice', 'GET', `/api/uploads/${docs.alice}`)).owner).toBe('alice');
    const rootJobs = parse(await api('root', 'GET', '/api/jobs?owner=root&limit=100')).jobs;
    expect(rootJobs.length).toBe(2); // the two 201 creations above
    expect(rootJobs.every((j: { owner: string; config_json: { created_by: string } }) => j.owner === 'root' && j.config_json.created_by === 'root')).toBe(true);
  });

  it('lists: each token its own jobs and totals, pages that add up; an admin sees all with their owners and filters by owner', { timeout: 240_000 }, async () => {
    for (let i = 0; i < 2; i++) await createJob('bob', { uploaded_file_id: docs.bob, title: `bob ${i}` });
    const all = async (who: Who, q = '') => {
      const ids: string[] = [];
      let total = -1;
      for (let offset = 0; ; offset += 2) {
        const page = parse(await api(who, 'GET', `/api/jobs?limit=2&offset=${offset}${q}`));
        expect(total === -1 || page.total === total).toBe(true);
        total = page.total;
        ids.push(...page.jobs.map((j: { id: string }) => j.id));
        if (page.jobs.length < 2) break;
      }
      expect(ids.length).toBe(total);
      expect(new Set(ids).size).toBe(ids.length);
      return ids;
    };
    const everything = parse(await api('root', 'GET', '/api/jobs?limit=100')).jobs as Array<{ id: string; owner: string | null; status: string }>;
    const owned = (o: string | null) => everything.filter((j) => j.owner === o).map((j) => j.id);
    expect(owned('bob').length).toBe(2);
    expect(owned(null)).toEqual([legacy.job]);
    expect(await all('alice')).toEqual(owned('alice'));
    expect(await all('bob')).toEqual(owned('bob'));
    expect(await all('root')).toEqual(everything.map((j) => j.id));
    expect(await all('root', '&owner=bob')).toEqual(owned('bob'));
    expect(await all('root', '&owner=alice')).toEqual(owned('alice'));
    expect(await all('alice', '&owner=bob')).toEqual([]);
    expect(await all('bob', '&owner=bob')).toEqual(owned('bob'));
    // Status filter counts within what the caller sees.
    for (const id of everything.map((j) => j.id)) await finished('root', id);
    const statuses = parse(await api('root', 'GET', '/api/jobs?limit=100')).jobs as Array<{ id: string; owner: string | null; status: string }>;
    for (const who of CALLERS) {
      const mine = who === 'root' ? statuses : statuses.filter((j) => j.owner === who);
      for (const status of ['completed', 'failed']) {
        const r = parse(await api(who, 'GET', `/api/jobs?status=${status}&limit=100`));
        expect(r.total, `${who} ${status}`).toBe(mine.filter((j) => j.status === status).length);
      }
    }
  });

  it('what was made with authentication off belongs to no one once tokens are on: admins only', async () => {
    for (const who of ['alice', 'bob'] as Who[]) {
      expect((await api(who, 'GET', `/api/jobs/${legacy.job}`)).status).toBe(404);
      expect((await api(who, 'GET', `/api/uploads/${legacy.upload}`)).status).toBe(404);
      expect((await api(who, 'POST', '/api/jobs', { pipeline_type: 'audio', uploaded_file_id: legacy.upload })).status).toBe(404);
    }
    expect(parse(await api('root', 'GET', `/api/jobs/${legacy.job}`))).toMatchObject({ id: legacy.job, owner: null, status: 'completed' });
    expect(parse(await api('root', 'GET', `/api/uploads/${legacy.upload}`))).toMatchObject({ id: legacy.upload, owner: null });
    expect((await api('root', 'GET', `/api/jobs/${legacy.job}/download`)).status).toBe(200);
  });

  it('GET /api/me says who the token is and, for an admin, the owners to filter by', async () => {
    expect(parse(await api('alice', 'GET', '/api/me'))).toEqual({ name: 'alice', admin: false, authentication: true, owners: null });
    expect(parse(await api('root', 'GET', '/api/me'))).toEqual({ name: 'root', admin: true, authentication: true, owners: ['alice', 'bob', 'root'] });
    expect((await api(null, 'GET', '/api/me')).status).toBe(401);
  });

  it('an upload a running job uses is not deleted (409), by its owner or an admin; once the job is gone it is', { timeout: 120_000 }, async () => {
    const doc = await uploadAs('bob', 'long.md', `# Long\n\n${'A sentence that keeps the worker busy for a moment. '.repeat(40)}`);
    const job = await createJob('bob', { uploaded_file_id: doc });
    await waitFor(async () => parse(await api('bob', 'GET', `/api/jobs/${job}`)).status === 'running', 60_000, 'the job to run');
    for (const who of ['bob', 'root'] as Who[]) {
      const r = await api(who, 'DELETE', `/api/uploads/${doc}`);
      expect(r.status).toBe(409);
      expect(parse(r).detail).toMatch(/used by 1 job/);
    }
    expect((await api('alice', 'DELETE', `/api/uploads/${doc}`)).status).toBe(404);
    expect((await api('bob', 'DELETE', `/api/jobs/${job}`)).status).toBe(200);
    expect((await api('bob', 'DELETE', `/api/uploads/${doc}`)).status).toBe(200);
    expect((await api('bob', 'GET', `/api/uploads/${doc}`)).status).toBe(404);
  });

  it('the OpenAPI document says it on every route that takes an id', async () => {
    const doc = parse(await api(null, 'GET', '/openapi.json'));
    for (const [p, ops] of Object.entries(doc.paths as Record<string, Record<string, { description?: string }>>)) {
      if (!/\{(job_id|upload_id)\}/.test(p)) continue;
      for (const [method, op] of Object.entries(ops)) expect(op.description ?? '', `${method} ${p}`).toMatch(/another token owns answers 404 exactly as an unknown id/);
    }
    expect(doc.paths['/api/jobs'].get.description).toMatch(/own jobs/);
  });
});

describe('ownership configuration', () => {
  it('LECTERN_API_ADMINS must name configured tokens, and needs tokens at all', () => {
    const env = { LECTERN_API_TOKENS: AUTH_ENV.LECTERN_API_TOKENS };
    expect(loadServiceConfig({}, { ...env, LECTERN_API_ADMINS: ' root , alice,root' }).security.admins).toEqual(['root', 'alice']);
    expect(loadServiceConfig({}, env).security.admins).toEqual([]);
    expect(() => loadServiceConfig({}, { ...env, LECTERN_API_ADMINS: 'rooot' })).toThrow(ConfigError);
    expect(() => loadServiceConfig({}, { ...env, LECTERN_API_ADMINS: 'rooot' })).toThrow(/"rooot", which no token/);
    expect(() => loadServiceConfig({}, { LECTERN_API_ADMINS: 'root' })).toThrow(/no tokens/);
  });
});
