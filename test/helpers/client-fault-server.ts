// A small GPU server stand-in for the client tests: real HTTP on 127.0.0.1:0 that records
// every request it receives and answers from a script, so the tests can produce the faults
// a healthy server never does (5xx, hangs, dropped connections, failed jobs, legacy bytes).
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedRequest {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  /** Multipart / urlencoded fields (files as {name, size, type}); JSON bodies parsed. */
  fields: Record<string, string | { filename: string; size: number; type: string }>;
  json: unknown;
  at: number;
}

export type Handler = (req: RecordedRequest, res: http.ServerResponse) => void | Promise<void>;

export interface FaultServer {
  url: string;
  requests: RecordedRequest[];
  /** Requests matching `METHOD /path` exactly. */
  count(request: string): number;
  handler: Handler;
  close(): Promise<void>;
}

export function sendJson(res: http.ServerResponse, status: number, body: unknown): void {
  const s = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(s) });
  res.end(s);
}

/** Drops the connection without an HTTP answer. */
export function reset(res: http.ServerResponse): void {
  res.socket?.destroy();
}

async function parseBody(req: http.IncomingMessage, raw: Buffer): Promise<Pick<RecordedRequest, 'fields' | 'json'>> {
  const type = req.headers['content-type'] ?? '';
  const fields: RecordedRequest['fields'] = {};
  if (type.startsWith('multipart/form-data')) {
    const form = await new Request('http://x/', { method: 'POST', headers: { 'content-type': type }, body: raw }).formData();
    for (const [k, v] of form.entries()) {
      fields[k] = typeof v === 'string' ? v : { filename: (v as File).name, size: v.size, type: v.type };
    }
    return { fields, json: null };
  }
  if (type.includes('json') && raw.length) return { fields, json: JSON.parse(raw.toString('utf8')) };
  return { fields, json: null };
}

export async function startFaultServer(handler: Handler): Promise<FaultServer> {
  const requests: RecordedRequest[] = [];
  const fs: FaultServer = {
    url: '',
    requests,
    count: (r) => requests.filter((x) => `${x.method} ${x.path}` === r).length,
    handler,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    try {
      for await (const c of req) chunks.push(c as Buffer);
    } catch {
      return; // the client gave up mid-upload (its timeout): there is no one left to answer
    }
    const parsed = await parseBody(req, Buffer.concat(chunks));
    const rec: RecordedRequest = { method: req.method ?? '', path: (req.url ?? '').split('?')[0]!, headers: req.headers, ...parsed, at: Date.now() };
    requests.push(rec);
    try {
      await fs.handler(rec, res);
    } catch (err) {
      if (!res.headersSent) sendJson(res, 500, { detail: String(err) });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  fs.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return fs;
}

/** What one GET /lipsync/{id} (or /result) does. */
export type Step =
  | { status: 'queued' | 'running' | 'done' | 'failed' | 'cancelled'; elapsed?: number; error?: string }
  | { http: number; detail?: string }
  | { hang: true }
  | { reset: true };

export interface LipsyncScript {
  id?: string;
  /** Answers to successive status polls; the last one repeats. */
  polls: Step[];
  /** Answers to successive result downloads; the last repeats. Default: the video bytes. */
  results?: (Step | { partial: true })[];
  video: Buffer;
  /** What the POST answers; default the JSON handle. */
  submit?: 'handle' | 'legacy' | Step;
  /** Called on POST /cancel; by default later polls say `cancelled`. */
  onCancel?: () => void;
}

/** A scripted lip-sync job table for one job. */
export function lipsyncHandler(script: LipsyncScript): Handler {
  const id = script.id ?? 'job-1';
  let poll = 0;
  let result = 0;
  let cancelled = false;
  const play = (step: Step, res: http.ServerResponse): boolean => {
    if ('hang' in step) return true; // never answer; the client's timeout must fire
    if ('reset' in step) {
      reset(res);
      return true;
    }
    if ('http' in step) {
      sendJson(res, step.http, { detail: step.detail ?? `injected HTTP ${step.http}` });
      return true;
    }
    return false;
  };
  return (req, res) => {
    if (req.method === 'POST' && req.path === '/lipsync') {
      const submit = script.submit ?? 'handle';
      if (submit === 'legacy') {
        res.writeHead(200, { 'content-type': 'video/mp4', 'content-length': script.video.length });
        res.end(script.video);
      } else if (submit === 'handle') {
        sendJson(res, 200, { lipsync_id: id, status: 'queued' });
      } else if (!play(submit, res)) {
        sendJson(res, 200, { lipsync_id: id, status: 'queued' });
      }
      return;
    }
    if (req.method === 'GET' && req.path === `/lipsync/${id}`) {
      const step = cancelled ? ({ status: 'cancelled' } as Step) : script.polls[Math.min(poll, script.polls.length - 1)]!;
      poll++;
      if (!play(step, res)) sendJson(res, 200, { lipsync_id: id, error: null, ...step });
      return;
    }
    if (req.method === 'GET' && req.path === `/lipsync/${id}/result`) {
      const steps = script.results ?? [{ status: 'done' }];
      const step = steps[Math.min(result, steps.length - 1)]!;
      result++;
      if ('partial' in step) {
        // Promise the whole video, send half, then drop the connection.
        res.writeHead(200, { 'content-type': 'video/mp4', 'content-length': script.video.length });
        res.write(script.video.subarray(0, script.video.length >> 1), () => setTimeout(() => reset(res), 20));
        return;
      }
      if (!play(step as Step, res)) {
        res.writeHead(200, { 'content-type': 'video/mp4', 'content-length': script.video.length });
        res.end(script.video);
      }
      return;
    }
    if (req.method === 'POST' && req.path === `/lipsync/${id}/cancel`) {
      cancelled = true;
      script.onCancel?.();
      sendJson(res, 200, { lipsync_id: id, status: 'cancelled' });
      return;
    }
    if (req.method === 'DELETE' && req.path === `/lipsync/${id}`) {
      sendJson(res, 200, { detail: 'deleted' });
      return;
    }
    if (req.method === 'GET' && req.path === '/health') {
      sendJson(res, 200, { status: 'ok', backend: 'fault', output_format: 'wav', max_chunk_bytes: 1000, device: 'cpu', aligner: 'dtw', lipsync_provider: 'auto', capabilities: ['lipsync'] });
      return;
    }
    sendJson(res, 404, { detail: `no route ${req.method} ${req.path}` });
  };
}
