// The New job form offers cloning exactly when the service says it can clone
// (GET /api/voices/cloning), against a MOCKED fetch. The real service and GPU server answer
// that route in test/process-backend-cloning.test.ts, and the browser test drives the form.
import { cleanup, render, screen } from '@testing-library/react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { NewJob } from '../src/pages/NewJob.tsx';
import { jsonResponse, mockFetch } from './mock-fetch.ts';

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
});

const routes = (cloning: unknown, status = 200) => ({
  'GET /api/voices': () => jsonResponse([]),
  'GET /api/languages': () => jsonResponse([{ code: 'en-US', name: 'English (US)' }]),
  'GET /api/voices/cloning': () => jsonResponse(cloning, status),
});

describe('new job form: cloning (mocked fetch)', () => {
  it('a service that can clone: the option is enabled, with no notice', async () => {
    mockFetch(routes({ available: true, detail: null }));
    render(<NewJob />);
    const radio = screen.getByLabelText(/Clone a voice from a clip/) as HTMLInputElement;
    await vi.waitFor(() => expect(radio.disabled).toBe(false));
    expect(screen.queryByText(/Cloning is not available/)).toBeNull();
  });

  it('a service that cannot: the option is disabled and says why', async () => {
    mockFetch(routes({ available: false, detail: 'no configured GPU server (http://gpu:8100) is up with a voice-cloning backend' }));
    render(<NewJob />);
    expect(await screen.findByText('Cloning is not available on this install: no configured GPU server (http://gpu:8100) is up with a voice-cloning backend')).toBeTruthy();
    const radio = screen.getByLabelText(/Clone a voice from a clip/) as HTMLInputElement;
    expect(radio.disabled).toBe(true);
    expect(radio.getAttribute('aria-describedby')).toBe('cloning-status');
  });

  it('an older service without the route: not offered (the 404 is the reason shown)', async () => {
    mockFetch({ 'GET /api/voices': () => jsonResponse([]), 'GET /api/languages': () => jsonResponse([]) });
    render(<NewJob />);
    expect(await screen.findByText(/Cloning is not available on this install: no mock for GET \/api\/voices\/cloning/)).toBeTruthy();
    expect((screen.getByLabelText(/Clone a voice from a clip/) as HTMLInputElement).disabled).toBe(true);
  });
});
