// The job API (spec §A), a Fastify plugin of thin routes over JobService: create and list,
// read and delete, stop, download and the job's files, the EPUB export, and the event stream.
// Every route hands the request's Caller to the service, which reads only what it may see.
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { JobCreateRequest } from '../jobs/job-config.ts';
import type { JobService } from '../jobs/job-service.ts';
import type { Stores } from '../jobs/types.ts';
import { callerOf } from '../security/http.ts';
import type { Storage } from '../storage.ts';
import { addDownloadSchemas, DOWNLOAD_KINDS, downloadResponses, sendStored } from './downloads.ts';
import { streamJobEvents } from './job-events.ts';
import { jobResponse } from './job-response.ts';
import { Detail, errors, ExportStateResponse, IdParams, JobListQuery, JobListResponse, JobResponse, OWNERSHIP } from './schemas.ts';

export interface JobRoutesOptions {
  service: JobService;
  stores: Stores;
  /** Where the job's files are: downloads are sent in the kind it gives (bytes, or a link to the store). */
  storage: Storage;
}

type ById = { Params: IdParams };

export async function jobRoutes(app: FastifyInstance, opts: JobRoutesOptions): Promise<void> {
  app.addSchema(JobResponse);
  app.addSchema(JobListResponse);
  app.addSchema(ExportStateResponse);
  addDownloadSchemas(app);
  createAndListRoutes(app, opts);
  oneJobRoutes(app, opts);
  outputRoutes(app, opts);
  epubExportRoutes(app, opts);
  eventRoutes(app, opts);
}

function createAndListRoutes(app: FastifyInstance, { service }: JobRoutesOptions): void {
  app.post<{ Body: JobCreateRequest }>(
    '/api/jobs',
    {
      schema: {
        summary: 'Create a job',
        description:
          'Refuses with 429 when the calling token already has LECTERN_MAX_ACTIVE_JOBS pending or running jobs. Validates every upload the request names (uploaded_file_id, ref_audio_file_id, ref_video_file_id, audio_file_ids): each must exist and be the calling token\'s own (an admin may use any), else 404 naming the field, the same for another token\'s upload as for a missing one; then their kinds. Builds config_json (with created_by, the token name, and request_id); stores the job as pending, owned by the calling token; dispatches the worker task with the job id and stores its id as worker_task_id; answers 201 with the record as created (status pending, worker_task_id set) even where a worker has already claimed it (GET the job for its state now). Unknown fields → 422; a pipeline or format this install cannot produce → 422. pipeline_type readalong is a Lectern extension of the spec (\"bring your own narration\"): the document with audio_file_ids, the person\'s recording of it (one file or many, in any order: files are ordered by the text they hold, and a file that holds none, such as an opening tune, goes where its upload name puts it when the names are track-numbered); outputs as highlight (options.format epub (default), mp4 or reader, with narration.mp3 = the recording joined in reading order, timeline.json whose unspoken words are {start: null, end: null, skipped: true}, narration.vtt). Refused with 422 at creation: no audio_file_ids, an audio file the decoder cannot read (each is probed), a language eSpeak NG has no voice for (English and French are located in the text and timed with acoustic models of their own; every other eSpeak language with a borrowed English model and eSpeak\'s pronunciations, less surely: a few more words untimed, and skipped sentences found less often), voice_id/ref_* or speed ≠ 1. A recording of another text, or one that is not speech, or a document of under 5 spoken words (too few to locate in a recording), fails the job with a message saying so.',
        body: JobCreateRequest,
        response: { 201: { $ref: 'JobResponse#' }, ...errors(400, 404, 422, 429) },
      },
    },
    async (req, reply) => reply.code(201).send(jobResponse(await service.create(req.body, { caller: callerOf(req), requestId: req.id }))),
  );

  app.get<{ Querystring: JobListQuery }>(
    '/api/jobs',
    {
      schema: {
        summary: 'List jobs, newest first',
        description: `The calling token's own jobs; an admin's list has every job, each with its owner, and takes an owner filter. total counts only the jobs the list may show. ${OWNERSHIP}`,
        querystring: JobListQuery,
        response: { 200: { $ref: 'JobListResponse#' }, ...errors(422) },
      },
    },
    async (req) => {
      const { jobs, total } = await service.list(req.query, callerOf(req));
      return { jobs: jobs.map(jobResponse), total, limit: req.query.limit, offset: req.query.offset };
    },
  );
}

function oneJobRoutes(app: FastifyInstance, { service }: JobRoutesOptions): void {
  app.get<ById>(
    '/api/jobs/:job_id',
    { schema: { summary: 'Read a job', description: OWNERSHIP, params: IdParams, response: { 200: { $ref: 'JobResponse#' }, ...errors(404) } } },
    async (req) => jobResponse(await service.get(req.params.job_id, callerOf(req))),
  );

  app.delete<ById>(
    '/api/jobs/:job_id',
    {
      schema: {
        summary: 'Delete a job and its outputs',
        description:
          "A running job is stopped first (cancel flag); then the record is deleted and the job's files removed: its output directory, or every object under PREFIX/outputs/JOB_ID/ in the S3 bucket. Should the service stop between the two, the storage sweep (at start-up and every LECTERN_STORAGE_SWEEP_INTERVAL_S) removes the files of jobs that no longer exist. " + OWNERSHIP,
        params: IdParams,
        response: { 200: Detail, ...errors(404, 503) },
      },
    },
    async (req) => {
      await service.delete(req.params.job_id, callerOf(req));
      return { detail: 'job deleted' };
    },
  );

  app.post<ById>(
    '/api/jobs/:job_id/stop',
    {
      schema: {
        summary: 'Stop a running lip-sync or read-along job early',
        description: `Writes job:{id}:cancel (24 h expiry) for a pending or running lip-sync or readalong job. Lip-sync: the worker finishes the page in flight and builds the output from the pages done. Readalong (a Lectern extension): the alignment stops at its next step and the job fails with "stopped on request while aligning the recording; nothing was made" (a stop during the render stops the highlight video the same way). 409 for other pipelines or states. ${OWNERSHIP}`,
        params: IdParams,
        response: { 200: Detail, ...errors(404, 409) },
      },
    },
    async (req) => {
      await service.stop(req.params.job_id, callerOf(req));
      return { detail: 'stop requested' };
    },
  );
}

function outputRoutes(app: FastifyInstance, { service, storage }: JobRoutesOptions): void {
  app.get<ById>(
    '/api/jobs/:job_id/download',
    {
      schema: {
        summary: "Download the job's output",
        description: `The output file, as an attachment named after the uploaded document. 409 while the job has no output. ${DOWNLOAD_KINDS} ${OWNERSHIP}`,
        params: IdParams,
        response: { ...downloadResponses('The output file'), ...errors(404, 409, 416, 503) },
      },
    },
    async (req, reply) => {
      const out = await service.output(req.params.job_id, callerOf(req));
      return sendStored(req, reply, storage, out.key, out.meta);
    },
  );

  app.get<{ Params: IdParams & { '*': string } }>(
    '/api/jobs/:job_id/files/*',
    {
      schema: {
        summary: "One of the job's files",
        description:
          `A file the job made, by its name as listed in config_json.result.files (e.g. timeline.json, narration.mp3, narration.vtt, presenter.mp4): what the web app's reader reads. Content type from the extension, \`nosniff\`; audio and video inline. 404 for a name the job does not list. ${DOWNLOAD_KINDS} ${OWNERSHIP}`,
        params: Type.Object({ job_id: Type.String(), '*': Type.String({ description: "File name relative to the job's folder" }) }),
        response: { ...downloadResponses('The file'), ...errors(404, 416, 503) },
      },
    },
    async (req, reply) => {
      const f = await service.file(req.params.job_id, req.params['*'], callerOf(req));
      return sendStored(req, reply, storage, f.key, f.meta);
    },
  );
}

function epubExportRoutes(app: FastifyInstance, { service, storage }: JobRoutesOptions): void {
  app.post<ById>(
    '/api/jobs/:job_id/export-epub',
    {
      schema: {
        summary: 'Export a lip-sync reader job as a read-along EPUB 3',
        description:
          "For a completed lip-sync reader job, or a stopped one with pages done: starts an on-demand task (on the job queue) that builds an EPUB 3 with Media Overlays from the job's narration.mp3, timeline.json and document, and answers 202 with the export state. Called again while the export is running or done, it starts nothing and answers the current state; after a failed export it starts again. Other pipelines, formats and job states → 409 with the reason. The presenter video is left out on purpose. " + OWNERSHIP,
        params: IdParams,
        response: { 202: { $ref: 'ExportState#' }, ...errors(404, 409) },
      },
    },
    async (req, reply) => reply.code(202).send(await service.exportEpub(req.params.job_id, callerOf(req))),
  );

  app.get<ById>(
    '/api/jobs/:job_id/export-epub/status',
    {
      schema: {
        summary: "The job's EPUB export state",
        description: `From config_json: epub_export_status (running | done | failed, or null before any export), the output file when done, the error when failed. ${OWNERSHIP}`,
        params: IdParams,
        response: { 200: { $ref: 'ExportState#' }, ...errors(404) },
      },
    },
    async (req) => service.exportStatus(req.params.job_id, callerOf(req)),
  );

  app.get<ById>(
    '/api/jobs/:job_id/export-epub/download',
    {
      schema: {
        summary: 'Download the exported EPUB',
        description: `application/epub+zip, as an attachment named after the uploaded document. 409 until export_status is done. ${DOWNLOAD_KINDS} ${OWNERSHIP}`,
        params: IdParams,
        response: { ...downloadResponses('The EPUB'), ...errors(404, 409, 416, 503) },
      },
    },
    async (req, reply) => {
      const out = await service.exportFile(req.params.job_id, callerOf(req));
      return sendStored(req, reply, storage, out.key, out.meta);
    },
  );
}

function eventRoutes(app: FastifyInstance, { service, stores }: JobRoutesOptions): void {
  app.get<ById>(
    '/api/jobs/:job_id/events',
    {
      schema: {
        summary: 'Server-Sent Events for one job',
        description:
          'text/event-stream. `snapshot` (the job) at once, then `progress` ({phase,current,total}) and `status` events, then one terminal `end` event (the final job) and the stream closes. A client connecting after the end gets the snapshot and `end` at once. ' + OWNERSHIP,
        params: IdParams,
        response: { 200: { type: 'string', description: 'event stream' }, ...errors(404) },
      },
    },
    async (req, reply) => streamJobEvents(req, reply, await service.get(req.params.job_id, callerOf(req)), stores),
  );
}
