// Who sees what in the web app, against a MOCKED fetch (the real service answers the same
// in chromium in test/web-e2e.test.ts): the list is whatever the service gives the token; an
// admin's rows name their owner and an owner filter narrows the list through the API; a
// token that is not an admin gets neither. The header says who is signed in and signs out.
import { act, cleanup, fireEvent, render, screen } from '@testing-library/react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { App } from '../src/App.tsx';
import { Dashboard } from '../src/pages/Dashboard.tsx';
import type { Me } from '../src/types.ts';
import { job, jsonResponse, mockFetch } from './mock-fetch.ts';

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
  sessionStorage.clear();
});

const jobs = [
  job({ id: '00000000-0000-4000-8000-000000000001', owner: 'alice', config_json: { title: "Alice's notes" } }),
  job({ id: '00000000-0000-4000-8000-000000000002', owner: 'bob', config_json: { title: "Bob's letter" } }),
  job({ id: '00000000-0000-4000-8000-000000000003', owner: null, config_json: { title: 'From before tokens' } }),
];

/** The service's list: an `owner` query narrows it, as the API does. */
function listRoute() {
  return mockFetch({
    'GET /api/jobs': (url) => {
      const owner = url.searchParams.get('owner');
      const pool = owner ? jobs.filter((j) => j.owner === owner) : jobs;
      return jsonResponse({ jobs: pool, total: pool.length, limit: 10, offset: 0 });
    },
  });
}

const admin: Me = { name: 'root', admin: true, authentication: true, owners: ['alice', 'bob', 'root'] };
const alice: Me = { name: 'alice', admin: false, authentication: true, owners: null };

describe('job list owners (mocked fetch)', () => {
  it("an admin sees each job's owner and filters by owner through the API, kept in the URL", async () => {
    const { calls } = listRoute();
    history.replaceState(null, '', '/');
    render(<Dashboard me={admin} />);
    expect(await screen.findByText("Alice's notes")).toBeTruthy();
    const owners = [...document.querySelectorAll('.job-owner')].map((e) => e.textContent);
    expect(owners).toEqual(['Owner: alice', 'Owner: bob', 'Owner: no owner (made without a token)']);
    const filter = screen.getByLabelText('Owner') as HTMLSelectElement;
    expect([...filter.options].map((o) => o.textContent)).toEqual(['Everyone', 'alice', 'bob', 'root']);

    await act(async () => fireEvent.change(filter, { target: { value: 'bob' } }));
    expect(calls.at(-1)!.path).toBe('/api/jobs?limit=10&offset=0&owner=bob');
    expect(location.search).toBe('?owner=bob');
    await screen.findByText("Bob's letter");
    expect(screen.queryByText("Alice's notes")).toBeNull();

    await act(async () => fireEvent.change(filter, { target: { value: 'root' } }));
    expect(await screen.findByText('No jobs of root.')).toBeTruthy();
  });

  it('a token that is not an admin gets no owner column and no owner filter, even with ?owner= in the URL', async () => {
    const { calls } = mockFetch({ 'GET /api/jobs': () => jsonResponse({ jobs: [jobs[0]], total: 1, limit: 10, offset: 0 }) });
    history.replaceState(null, '', '/?owner=bob');
    render(<Dashboard me={alice} />);
    expect(await screen.findByText("Alice's notes")).toBeTruthy();
    expect(screen.queryByLabelText('Owner')).toBeNull();
    expect(document.querySelectorAll('.job-owner').length).toBe(0);
    expect(calls.map((c) => c.path)).toEqual(['/api/jobs?limit=10&offset=0']);
  });
});

describe('header: who is signed in (mocked fetch)', () => {
  it('names the token and, for an admin, says so; Sign out forgets the token', async () => {
    sessionStorage.setItem('lectern.token', 'root-token');
    const { calls } = mockFetch({
      'GET /api/me': () => jsonResponse(admin),
      'GET /api/jobs': () => jsonResponse({ jobs, total: 3, limit: 10, offset: 0 }),
    });
    history.replaceState(null, '', '/');
    const assign = vi.spyOn(window.location, 'assign').mockImplementation(() => undefined);
    render(<App />);
    expect((await screen.findByText(/Signed in as/)).textContent).toBe('Signed in as root (admin: sees every job)');
    expect(calls.find((c) => c.path === '/api/me')!.auth).toBe('Bearer root-token');
    await screen.findAllByText(/Owner:/);
    await act(async () => fireEvent.click(screen.getByRole('button', { name: 'Sign out' })));
    expect(sessionStorage.getItem('lectern.token')).toBeNull();
    expect(assign).toHaveBeenCalledWith('/');
  });

  it('shows no one with authentication off', async () => {
    mockFetch({
      'GET /api/me': () => jsonResponse({ name: null, admin: false, authentication: false, owners: null }),
      'GET /api/jobs': () => jsonResponse({ jobs: [], total: 0, limit: 10, offset: 0 }),
    });
    history.replaceState(null, '', '/');
    render(<App />);
    expect(await screen.findByText(/No jobs yet/)).toBeTruthy();
    expect(screen.queryByText(/Signed in as/)).toBeNull();
    expect(screen.queryByRole('button', { name: 'Sign out' })).toBeNull();
  });
});
