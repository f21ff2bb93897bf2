// The only way the app talks to Lectern: fetch with the bearer token when there is one.
// A 401 asks the user for the token (one prompt shared by every request waiting on it),
// keeps it in sessionStorage for this tab's session, and retries the request.
import type { Job, JobCreateRequest, JobList, Upload, Voice, Language, JobEvent, EpubExportStatus, CloningStatus, Me } from './types.ts';

const TOKEN_KEY = 'lectern.token';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly detail: string,
  ) {
    super(detail);
    this.name = 'ApiError';
  }
}

/** Asks the user for a token; resolves null when they cancel. `refused`: the last one got a 401. */
export type TokenPrompt = (refused: boolean) => Promise<string | null>;

let prompt: TokenPrompt | null = null;
let pendingPrompt: Promise<string | null> | null = null;

export function setTokenPrompt(p: TokenPrompt | null): void {
  prompt = p;
}

export function getToken(): string | null {
  try {
    return sessionStorage.getItem(TOKEN_KEY);
  } catch {
    return null;
  }
}

export function setToken(token: string | null): void {
  if (token) sessionStorage.setItem(TOKEN_KEY, token);
  else sessionStorage.removeItem(TOKEN_KEY);
}

function withAuth(init: RequestInit = {}): RequestInit {
  const token = getToken();
  if (!token) return init;
  const headers = new Headers(init.headers);
  headers.set('authorization', `Bearer ${token}`);
  return { ...init, headers };
}

/** One prompt at a time: concurrent 401s wait for the same answer. */
async function askForToken(refused: boolean): Promise<string | null> {
  if (!prompt) return null;
  if (!pendingPrompt) {
    pendingPrompt = prompt(refused).finally(() => {
      pendingPrompt = null;
    });
  }
  return pendingPrompt;
}

/** Runs `send` (which must read the current token) and handles 401 → prompt → retry. */
export async function withTokenRetry<T extends { status: number }>(send: () => Promise<T>): Promise<T> {
  const sentWith = getToken();
  let res = await send();
  // A token another request's prompt got meanwhile is tried before asking again.
  if (res.status === 401 && getToken() !== sentWith) res = await send();
  let refused = Boolean(getToken());
  while (res.status === 401) {
    const token = await askForToken(refused);
    if (!token) return res;
    setToken(token);
    res = await send();
    refused = true;
  }
  return res;
}

export async function apiFetch(path: string, init: RequestInit = {}): Promise<Response> {
  return withTokenRetry(() => fetch(path, withAuth(init)));
}

async function errorOf(res: Response): Promise<ApiError> {
  let detail = `${res.status} ${res.statusText}`.trim();
  try {
    const body = (await res.json()) as { detail?: unknown };
    if (typeof body.detail === 'string') detail = body.detail;
  } catch {
    // not JSON: keep the status line
  }
  if (res.status === 401) detail = `Not signed in: ${detail}`;
  return new ApiError(res.status, detail);
}

/** Asks for JSON: a JSON file is then sent through the API even when files live in an S3 bucket. */
function acceptJson(init: RequestInit): RequestInit {
  const headers = new Headers(init.headers);
  headers.set('accept', 'application/json');
  return { ...init, headers };
}

export async function apiJson<T>(path: string, init: RequestInit = {}): Promise<T> {
  const res = await apiFetch(path, acceptJson(init));
  if (!res.ok) throw await errorOf(res);
  return (await res.json()) as T;
}

function jsonBody(body: unknown, method = 'POST'): RequestInit {
  return { method, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) };
}

/** A response body as an object URL (for <audio>, <video> and downloads, which must carry the token). */
export async function blobOf(path: string, init: RequestInit = {}): Promise<{ url: string; blob: Blob; res: Response }> {
  const res = await apiFetch(path, init);
  if (!res.ok) throw await errorOf(res);
  const blob = await res.blob();
  return { url: URL.createObjectURL(blob), blob, res };
}

/** The file name a Content-Disposition header gives, if any. */
export function filenameOf(res: Response, fallback: string): string {
  const cd = res.headers.get('content-disposition') ?? '';
  const star = /filename\*=UTF-8''([^;]+)/i.exec(cd);
  if (star) {
    try {
      return decodeURIComponent(star[1]!);
    } catch {
      // fall through to the plain name
    }
  }
  return /filename="([^"]+)"/i.exec(cd)?.[1] ?? fallback;
}

/** Where to play or save a stored file from, and its name. */
export interface FileUrl {
  url: string;
  filename: string | null;
  /** A blob: URL made here (revoke it when done), rather than the store's own link. */
  local: boolean;
}

/**
 * A stored file (a job's output, a voice sample) for <audio>, <video> or a download. The
 * request carries the bearer token and asks for JSON: when the service keeps files in an S3
 * bucket it answers a short-lived presigned URL, which the browser then fetches from the store
 * itself (no token goes there, and the bucket needs no CORS rule); otherwise the bytes come
 * back and are played from a blob: URL.
 */
export async function fileUrl(path: string): Promise<FileUrl> {
  const res = await apiFetch(path, acceptJson({}));
  if (!res.ok) throw await errorOf(res);
  if ((res.headers.get('content-type') ?? '').startsWith('application/json')) {
    const link = (await res.json()) as { url?: unknown; filename?: unknown };
    if (typeof link.url === 'string') return { url: link.url, filename: typeof link.filename === 'string' ? link.filename : null, local: false };
    throw new ApiError(res.status, 'the service answered JSON where a file or a link was expected');
  }
  const blob = await res.blob();
  return { url: URL.createObjectURL(blob), filename: filenameOf(res, ''), local: true };
}

/** Downloads a stored file with the server's file name: from the store's link, or through fetch with the token. */
export async function download(path: string, fallbackName: string): Promise<string> {
  const f = await fileUrl(path);
  const name = f.filename || fallbackName;
  const a = document.createElement('a');
  a.href = f.url;
  // A blob: URL needs the name here; the store's link names the file in its Content-Disposition.
  if (f.local) a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  if (f.local) setTimeout(() => URL.revokeObjectURL(f.url), 60_000);
  return name;
}

/** Uploads with progress (XMLHttpRequest: fetch cannot report upload progress). */
export function upload(file: File, onProgress?: (fraction: number) => void, signal?: AbortSignal): Promise<Upload> {
  const send = () =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const xhr = new XMLHttpRequest();
      xhr.open('POST', '/api/uploads');
      const token = getToken();
      if (token) xhr.setRequestHeader('authorization', `Bearer ${token}`);
      xhr.upload.onprogress = (e) => {
        if (e.lengthComputable) onProgress?.(e.loaded / e.total);
      };
      xhr.onload = () => resolve({ status: xhr.status, body: xhr.responseText });
      xhr.onerror = () => reject(new ApiError(0, 'the upload failed: the service could not be reached'));
      xhr.onabort = () => reject(new ApiError(0, 'upload cancelled'));
      signal?.addEventListener('abort', () => xhr.abort());
      const form = new FormData();
      form.append('file', file, file.name);
      xhr.send(form);
    });
  return withTokenRetry(send).then(({ status, body }) => {
    let parsed: unknown = null;
    try {
      parsed = JSON.parse(body);
    } catch {
      // not JSON
    }
    if (status !== 201) {
      const detail = (parsed as { detail?: string } | null)?.detail ?? `upload failed (HTTP ${status})`;
      throw new ApiError(status, status === 401 ? `Not signed in: ${detail}` : detail);
    }
    onProgress?.(1);
    return parsed as Upload;
  });
}

/**
 * Reads a job's Server-Sent Events with fetch (EventSource cannot send the bearer token).
 * Calls `onEvent` per event until the stream ends or `signal` aborts.
 */
export async function streamEvents(jobId: string, onEvent: (e: JobEvent) => void, signal: AbortSignal): Promise<void> {
  const res = await apiFetch(`/api/jobs/${encodeURIComponent(jobId)}/events`, { signal, headers: { accept: 'text/event-stream' } });
  if (!res.ok || !res.body) throw await errorOf(res);
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += value;
    let cut: number;
    while ((cut = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, cut);
      buf = buf.slice(cut + 2);
      const ev = parseEvent(block);
      if (ev) onEvent(ev);
    }
  }
}

export function parseEvent(block: string): JobEvent | null {
  let event = 'message';
  const data: string[] = [];
  for (const line of block.split('\n')) {
    if (line.startsWith(':')) continue; // keep-alive comment
    if (line.startsWith('event:')) event = line.slice(6).trim();
    else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
  }
  if (!data.length) return null;
  try {
    return { event, data: JSON.parse(data.join('\n')) } as JobEvent;
  } catch {
    return null;
  }
}

const id = encodeURIComponent;

export const api = {
  listJobs: (q: { status?: string; owner?: string; limit: number; offset: number }) => {
    const p = new URLSearchParams({ limit: String(q.limit), offset: String(q.offset) });
    if (q.status) p.set('status', q.status);
    if (q.owner) p.set('owner', q.owner);
    return apiJson<JobList>(`/api/jobs?${p}`);
  },
  me: () => apiJson<Me>('/api/me'),
  getJob: (jobId: string) => apiJson<Job>(`/api/jobs/${id(jobId)}`),
  createJob: (body: JobCreateRequest) => apiJson<Job>('/api/jobs', jsonBody(body)),
  deleteJob: (jobId: string) => apiJson<{ detail: string }>(`/api/jobs/${id(jobId)}`, { method: 'DELETE' }),
  stopJob: (jobId: string) => apiJson<{ detail: string }>(`/api/jobs/${id(jobId)}/stop`, { method: 'POST' }),
  voices: () => apiJson<Voice[]>('/api/voices'),
  cloning: () => apiJson<CloningStatus>('/api/voices/cloning'),
  languages: () => apiJson<Language[]>('/api/languages'),
  preview: (body: Record<string, unknown>) => blobOf('/api/voices/preview', jsonBody(body)),
  voiceSample: (voiceId: string) => fileUrl(`/api/voices/${id(voiceId)}/audio`),
  jobFileUrl: (jobId: string, name: string) => `/api/jobs/${id(jobId)}/files/${name.split('/').map(id).join('/')}`,
  exportEpub: (jobId: string) => apiJson<EpubExportStatus | { detail: string }>(`/api/jobs/${id(jobId)}/export-epub`, { method: 'POST' }),
  exportEpubStatus: (jobId: string) => apiJson<EpubExportStatus>(`/api/jobs/${id(jobId)}/export-epub/status`),
};
