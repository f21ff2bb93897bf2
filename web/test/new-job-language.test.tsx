// The New job form's language follows the document's declared one (the upload's `language`)
// until the user picks one, against a MOCKED fetch and a fake XMLHttpRequest for the uploads
// (both in-process, named so). The real service reads the declaration in
// test/job-service.test.ts, and the browser shows it in test/web-e2e.test.ts.
import { cleanup, fireEvent, render, screen } from '@testing-library/react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { NewJob } from '../src/pages/NewJob.tsx';
import { languageForDocument } from '../src/pages/new-job/language.ts';
import type { Voice } from '../src/types.ts';
import { fakeXhr } from './fake-xhr.ts';
import { jsonResponse, mockFetch } from './mock-fetch.ts';

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
});

/** What the fake service reads from each file name's "metadata". */
const DECLARED: Record<string, string | null> = { 'livre.epub': 'fr-FR', 'buch.pdf': 'de', 'libro.epub': 'es-MX', 'book.epub': 'en', 'notes.md': null };

/** Every upload is a document with the language its name declares in DECLARED. */
const FakeXhr = fakeXhr((file, id) => ({ id, original_name: file.name, size_bytes: file.size, content_type: 'application/epub+zip', kind: 'document', language: DECLARED[file.name] ?? null }));

const voice = (id: string, language: string): Voice => ({ id, name: id, language, description: '', ref_text: '', available: true, default: true });
const LANGUAGES = [
  { code: 'en-US', name: 'English (US)' },
  { code: 'fr-FR', name: 'French' },
  { code: 'de', name: 'German' },
];

function routes(onCreate: (body: any) => Response) {
  return {
    'GET /api/voices': () => jsonResponse([voice('piper-en-us-joe', 'en-US'), voice('espeak-fr-fr', 'fr-FR'), voice('espeak-de', 'de'), voice('espeak-es', 'es')]),
    'GET /api/languages': () => jsonResponse(LANGUAGES),
    'GET /api/voices/cloning': () => jsonResponse({ available: false, detail: 'no GPU server' }),
    'POST /api/jobs': (_url: URL, init: RequestInit) => onCreate(JSON.parse(String(init.body))),
  };
}

async function uploadDocument(name: string) {
  fireEvent.change(screen.getByLabelText('Document to narrate'), { target: { files: [new File(['x'], name)] } });
  await screen.findByText(name);
}

const select = () => screen.getByLabelText('Language') as HTMLSelectElement;
const checkedVoice = () => (screen.getAllByRole('radio').find((r) => (r as HTMLInputElement).name === 'voice' && (r as HTMLInputElement).checked) as HTMLInputElement | undefined)?.value;

describe('new job form: the language of the document (mocked fetch and uploads)', () => {
  it('shows the listed code the declaration names, en-US for a bare "en", else the tag as declared', () => {
    expect(languageForDocument('fr-FR', LANGUAGES)).toBe('fr-FR');
    expect(languageForDocument('FR-fr', LANGUAGES)).toBe('fr-FR');
    expect(languageForDocument('de', LANGUAGES)).toBe('de');
    expect(languageForDocument('en', LANGUAGES)).toBe('en-US');
    expect(languageForDocument('en-GB', LANGUAGES)).toBe('en-GB');
    expect(languageForDocument('es-MX', LANGUAGES)).toBe('es-MX');
  });

  it('follows the uploaded document: its language, its default voice and a hint; the job is created in it', async () => {
    vi.stubGlobal('XMLHttpRequest', FakeXhr);
    let sent: any = null;
    mockFetch(routes((body) => ((sent = body), jsonResponse({ id: '00000000-0000-4000-8000-0000000000aa' }, 201))));
    render(<NewJob />);
    await screen.findByRole('option', { name: 'French (fr-FR)' });
    expect(select().value).toBe('en-US');
    await uploadDocument('livre.epub');
    await vi.waitFor(() => expect(select().value).toBe('fr-FR'));
    await vi.waitFor(() => expect(checkedVoice()).toBe('espeak-fr-fr'));
    expect(screen.getByText('The document declares fr-FR')).toBeTruthy();
    // A tag the list lacks is shown as declared, and its primary language's voice chosen.
    await uploadDocument('libro.epub');
    await vi.waitFor(() => expect(select().value).toBe('es-MX'));
    await vi.waitFor(() => expect(checkedVoice()).toBe('espeak-es'));
    // A document that declares nothing: back to the default.
    await uploadDocument('notes.md');
    await vi.waitFor(() => expect(select().value).toBe('en-US'));
    expect(screen.queryByText(/The document declares/)).toBeNull();
    await uploadDocument('buch.pdf');
    await vi.waitFor(() => expect(select().value).toBe('de'));
    await vi.waitFor(() => expect(checkedVoice()).toBe('espeak-de'));
    const create = screen.getByRole('button', { name: 'Create job' }) as HTMLButtonElement;
    expect(create.disabled).toBe(false);
    // Submitted directly: jsdom's constraint validation finds the speed slider (step 0.05,
    // value 1) a step mismatch, a floating-point quirk no browser has, and blocks the click.
    fireEvent.submit(create.form!);
    await vi.waitFor(() => expect(sent).not.toBeNull());
    expect(sent).toMatchObject({ language: 'de', voice_id: 'espeak-de' });
  });

  it('once the user picks a language, another document no longer changes it', async () => {
    vi.stubGlobal('XMLHttpRequest', FakeXhr);
    mockFetch(routes(() => jsonResponse({}, 500)));
    render(<NewJob />);
    await screen.findByRole('option', { name: 'German (de)' });
    await uploadDocument('livre.epub');
    await vi.waitFor(() => expect(select().value).toBe('fr-FR'));
    fireEvent.change(select(), { target: { value: 'en-US' } });
    expect(screen.queryByText(/The document declares/)).toBeNull();
    await uploadDocument('buch.pdf');
    await new Promise((r) => setTimeout(r, 20));
    expect(select().value).toBe('en-US');
  });
});
