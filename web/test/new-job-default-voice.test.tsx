// The New job form preselects the voice the service marks as its language's default
// (GET /api/voices `default`), against a MOCKED fetch; the real service's marks are tested
// in test/default-voice.test.ts.
import { cleanup, fireEvent, render, screen } from '@testing-library/react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { defaultVoiceFor, NewJob } from '../src/pages/NewJob.tsx';
import type { Voice } from '../src/types.ts';
import { jsonResponse, mockFetch } from './mock-fetch.ts';

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
});

const voice = (id: string, language: string, isDefault: boolean, available = true): Voice => ({ id, name: id, language, description: '', ref_text: '', available, default: isDefault });
const VOICES = [
  voice('espeak-en-us', 'en-US', false),
  voice('piper-en-us-joe', 'en-US', true),
  voice('espeak-en-gb', 'en-GB', false),
  voice('espeak-fr-fr', 'fr-FR', true),
  voice('espeak-de', 'de', true),
];
const routes = (voices: Voice[]) => ({
  'GET /api/voices': () => jsonResponse(voices),
  'GET /api/languages': () => jsonResponse([{ code: 'en-US', name: 'English (US)' }, { code: 'fr-FR', name: 'French' }, { code: 'de', name: 'German' }, { code: 'ja', name: 'Japanese' }]),
  'GET /api/voices/cloning': () => jsonResponse({ available: false, detail: 'no GPU server' }),
});
const checked = () => (screen.getAllByRole('radio').filter((r) => (r as HTMLInputElement).name === 'voice' && (r as HTMLInputElement).checked) as HTMLInputElement[]).map((r) => r.value);

describe('new job form: the default voice (mocked fetch)', () => {
  it('chooses the marked voice of the language, else of the same primary language, else none', () => {
    expect(defaultVoiceFor(VOICES, 'en-US')?.id).toBe('piper-en-us-joe');
    expect(defaultVoiceFor(VOICES, 'en-GB')?.id).toBe('piper-en-us-joe');
    expect(defaultVoiceFor(VOICES, 'fr')?.id).toBe('espeak-fr-fr');
    expect(defaultVoiceFor(VOICES, 'de-AT')?.id).toBe('espeak-de');
    expect(defaultVoiceFor(VOICES, 'ja')).toBeUndefined();
    expect(defaultVoiceFor([voice('piper-en-us-joe', 'en-US', true, false)], 'en-US')).toBeUndefined();
  });

  it('preselects the default voice, follows the language until the user picks one', async () => {
    mockFetch(routes(VOICES));
    render(<NewJob />);
    await vi.waitFor(() => expect(checked()).toEqual(['piper-en-us-joe']));
    expect(screen.getByText('(default)')).toBeTruthy();
    await screen.findByRole('option', { name: 'French (fr-FR)' });
    const select = screen.getByLabelText('Language') as HTMLSelectElement;
    fireEvent.change(select, { target: { value: 'fr-FR' } });
    await vi.waitFor(() => expect(checked()).toEqual(['espeak-fr-fr']));
    fireEvent.change(select, { target: { value: 'ja' } });
    await vi.waitFor(() => expect(checked()).toEqual(['']));
    // A voice the user picked stays picked when the language changes.
    fireEvent.change(select, { target: { value: 'en-US' } });
    await vi.waitFor(() => expect(checked()).toEqual(['piper-en-us-joe']));
    fireEvent.click(screen.getByDisplayValue('espeak-en-us'));
    fireEvent.change(select, { target: { value: 'de' } });
    await vi.waitFor(() => expect(select.value).toBe('de'));
    expect(checked()).toEqual(['espeak-en-us']);
  });

  it('a service that marks no default (older, or GPU servers decide): the Default voice option', async () => {
    mockFetch(routes(VOICES.map((v) => ({ ...v, default: false }))));
    render(<NewJob />);
    await screen.findByText('piper-en-us-joe');
    expect(checked()).toEqual(['']);
  });
});
