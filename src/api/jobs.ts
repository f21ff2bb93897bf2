// The job API (spec §A): thin routes over JobService.
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { JobService } from '../jobs/job-service.ts';
import type { JobRecord, JobStatus, Stores } from '../jobs/types.ts';
import { TERMINAL_STATUSES } from '../jobs/types.ts';
import { sendFile } from './http.ts';
import { Detail, errors, IdParams, JobCreateRequest, JobListQuery, type JobCreateRequest as CreateBody } from './schemas.ts';

export function jobResponse(job: JobRecord) {
  const { upload_ids: _u, ...rest } = job;
  const result = job.config_json.result as { output?: string } | undefined;
  const hasOutput = (job.status === 'completed' || job.status === 'stopped') && Boolean(result?.output);
  return { ...rest, download_url: hasOutput ? `/api/jobs/${job.id}/download` : null };
}

type Params = { job_id: string };

export async function jobRoutes(app: FastifyInstance, opts: { service: JobService; stores: Stores }): Promise<void> {
  const { service, stores } = opts;

  app.post(
    '/api/jobs',
    {
      schema: {
        summary: 'Create a job',
        description:
          'Refuses with 429 when the calling token already has LECTERN_MAX_ACTIVE_JOBS pending or running jobs. Validates the document upload, then the reference uploads; builds config_json (with created_by, the token name, and request_id); stores the job as pending; dispatches the worker task with the job id and stores its id as worker_task_id. Unknown fields → 422; a missing upload → 404; a pipeline or format this install cannot produce → 422.',
        body: JobCreateRequest,
        response: { 201: { $ref: 'JobResponse#' }, ...errors(400, 404, 422, 429) },
      },
    },
    async (req, reply) => reply.code(201).send(jobResponse(await service.create(req.body as CreateBody, { owner: req.tokenName, requestId: req.id }))),
  );

  app.get(
    '/api/jobs',
    {
      schema: {
        summary: 'List jobs, newest first',
        querystring: JobListQuery,
        response: { 200: { $ref: 'JobListResponse#' }, ...errors(422) },
      },
    },
    async (req) => {
      const q = req.query as { status?: JobStatus; limit: number; offset: number };
      const { jobs, total } = await service.list(q);
      return { jobs: jobs.map(jobResponse), total, limit: q.limit, offset: q.offset };
    },
  );

  app.get(
    '/api/jobs/:job_id',
    { schema: { summary: 'Read a job', params: IdParams, response: { 200: { $ref: 'JobResponse#' }, ...errors(404) } } },
    async (req) => jobResponse(await service.get((req.params as Params).job_id)),
  );

  app.delete(
    '/api/jobs/:job_id',
    {
      schema: {
        summary: 'Delete a job and its outputs',
        description: 'A running job is stopped first (cancel flag); then the record is deleted and the output directory removed.',
        params: IdParams,
        response: { 200: Detail, ...errors(404) },
      },
    },
    async (req) => {
      await service.delete((req.params as Params).job_id);
      return { detail: 'job deleted' };
    },
  );

  app.post(
    '/api/jobs/:job_id/stop',
    {
      schema: {
        summary: 'Stop a running lip-sync job early',
        description: 'Writes job:{id}:cancel (24 h expiry) for a pending or running lip-sync job; the worker finishes the page in flight and builds the output from the pages done. 409 for other pipelines or states.',
        params: IdParams,
        response: { 200: Detail, ...errors(404, 409) },
      },
    },
    async (req) => {
      await service.stop((req.params as Params).job_id);
      return { detail: 'stop requested' };
    },
  );

  app.get(
    '/api/jobs/:job_id/download',
    {
      schema: {
        summary: "Download the job's output",
        description: 'The output file from the local data dir, as an attachment named after the uploaded document, with HTTP Range support. 409 while the job has no output.',
        params: IdParams,
        response: { 200: { type: 'string', format: 'binary', description: 'The output file' }, 206: { type: 'string', format: 'binary' }, ...errors(404, 409, 416) },
      },
    },
    async (req, reply) => {
      const out = await service.output((req.params as Params).job_id);
      return sendFile(req, reply, out.path, out.contentType, out.filename);
    },
  );

  app.post(
    '/api/jobs/:job_id/export-epub',
    {
      schema: {
        summary: 'Export a lip-sync reader job as a read-along EPUB 3',
        description:
          "For a completed lip-sync reader job, or a stopped one with pages done: starts an on-demand task (on the job queue) that builds an EPUB 3 with Media Overlays from the job's narration.mp3, timeline.json and document, and answers 202 with the export state. Called again while the export is running or done, it starts nothing and answers the current state; after a failed export it starts again. Other pipelines, formats and job states → 409 with the reason. The presenter video is left out on purpose.",
        params: IdParams,
        response: { 202: { $ref: 'ExportState#' }, ...errors(404, 409) },
      },
    },
    async (req, reply) => reply.code(202).send(await service.exportEpub((req.params as Params).job_id)),
  );

  app.get(
    '/api/jobs/:job_id/export-epub/status',
    {
      schema: {
        summary: "The job's EPUB export state",
        description: 'From config_json: epub_export_status (running | done | failed, or null before any export), the output file when done, the error when failed.',
        params: IdParams,
        response: { 200: { $ref: 'ExportState#' }, ...errors(404) },
      },
    },
    async (req) => service.exportStatus((req.params as Params).job_id),
  );

  app.get(
    '/api/jobs/:job_id/export-epub/download',
    {
      schema: {
        summary: 'Download the exported EPUB',
        description: 'application/epub+zip, as an attachment named after the uploaded document, with Range support. 409 until export_status is done.',
        params: IdParams,
        response: { 200: { type: 'string', format: 'binary', description: 'The EPUB' }, 206: { type: 'string', format: 'binary' }, ...errors(404, 409, 416) },
      },
    },
    async (req, reply) => {
      const out = await service.exportFile((req.params as Params).job_id);
      return sendFile(req, reply, out.path, out.contentType, out.filename);
    },
  );

  app.get(
    '/api/jobs/:job_id/files/*',
    {
      schema: {
        summary: "One of the job's files",
        description:
          "A file the job made, by its name as listed in config_json.result.files (e.g. timeline.json, narration.mp3, narration.vtt, presenter.mp4): what the web app's reader reads. Content type from the extension, `nosniff`, HTTP Range. 404 for a name the job does not list.",
        params: Type.Object({ job_id: Type.String(), '*': Type.String({ description: 'File name relative to the output dir' }) }),
        response: { 200: { type: 'string', format: 'binary', description: 'The file' }, 206: { type: 'string', format: 'binary' }, ...errors(404, 416) },
      },
    },
    async (req, reply) => {
      const p = req.params as Params & { '*': string };
      const f = await service.file(p.job_id, p['*']);
      return sendFile(req, reply, f.path, f.contentType, f.filename, f.inline);
    },
  );

  app.get(
    '/api/jobs/:job_id/events',
    {
      schema: {
        summary: 'Server-Sent Events for one job',
        description:
          'text/event-stream. `snapshot` (the job) at once, then `progress` ({phase,current,total}) and `status` events, then one terminal `end` event (the final job) and the stream closes. A client connecting after the end gets the snapshot and `end` at once.',
        params: IdParams,
        response: { 200: { type: 'string', description: 'event stream' }, ...errors(404) },
      },
    },
    async (req, reply) => {
      const job = await service.get((req.params as Params).job_id);
      reply.hijack();
      const res = reply.raw;
      // Headers set by the hooks (X-Request-Id, CORS) are not sent by a hijacked reply on their own.
      res.writeHead(200, { ...(reply.getHeaders() as Record<string, string | string[] | number>), 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-accel-buffering': 'no' });
      const send = (event: string, data: unknown) => res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
      send('snapshot', jobResponse(job));
      let closed = false;
      let unsubscribe: (() => Promise<void>) | null = null;
      let poll: NodeJS.Timeout | null = null;
      let keepAlive: NodeJS.Timeout | null = null;
      const finish = async (final: JobRecord | null) => {
        if (closed) return;
        closed = true;
        if (poll) clearInterval(poll);
        if (keepAlive) clearInterval(keepAlive);
        if (final) send('end', jobResponse(final));
        res.end();
        await unsubscribe?.().catch(() => undefined);
      };
      if (TERMINAL_STATUSES.includes(job.status)) return finish(job);

      let lastStatus = job.status;
      let lastProgress = JSON.stringify(job.progress);
      const check = async () => {
        // The row is the truth: events may come from a worker in another process, or be missed.
        const cur = await stores.jobs.getJob(job.id).catch(() => undefined);
        if (closed || cur === undefined) return;
        if (cur === null) return finish(null);
        const p = JSON.stringify(cur.progress);
        if (p !== lastProgress && cur.progress) send('progress', cur.progress);
        lastProgress = p;
        if (cur.status !== lastStatus) send('status', { status: cur.status, error: cur.error });
        lastStatus = cur.status;
        if (TERMINAL_STATUSES.includes(cur.status)) return finish(cur);
      };
      unsubscribe = await stores.events.subscribe(job.id, (ev) => {
        if (closed) return;
        if (ev.type === 'progress') {
          lastProgress = JSON.stringify(ev.progress);
          send('progress', ev.progress);
        } else if (ev.type === 'status') {
          if (TERMINAL_STATUSES.includes(ev.status)) void check();
          else if (ev.status !== lastStatus) {
            lastStatus = ev.status;
            send('status', { status: ev.status, error: ev.error ?? null });
          }
        }
      });
      poll = setInterval(() => void check(), 1000);
      keepAlive = setInterval(() => res.write(': keep-alive\n\n'), 15_000);
      req.raw.on('close', () => void finish(null));
      await check(); // anything that happened between the first read and subscribing
    },
  );
}
