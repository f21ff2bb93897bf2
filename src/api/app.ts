// The service's HTTP app: job, upload and event routes, health and the OpenAPI document.
import type { FastifyInstance } from 'fastify';
import { JobService } from '../jobs/job-service.ts';
import type { Stores } from '../jobs/types.ts';
import type { Logger } from '../log.ts';
import type { Storage } from '../storage.ts';
import { createHttpApp } from './http.ts';
import { jobRoutes } from './jobs.ts';
import { ExportStateResponse, JobListResponse, JobResponse, UploadResponse } from './schemas.ts';
import { uploadRoutes } from './uploads.ts';
import { voiceRoutes, type VoiceRoutesOptions } from './voices.ts';

export interface ServiceAppOptions {
  stores: Stores;
  storage: Storage;
  log: Logger;
  maxUploadBytes: number;
  /** What the voice library needs from the config (ServiceConfig.modelsDir, gpuServerUrls, tts.backend). */
  speech: Pick<VoiceRoutesOptions, 'modelsDir' | 'gpuServerUrls' | 'ttsBackend'>;
}

export async function buildServiceApp(opts: ServiceAppOptions): Promise<FastifyInstance> {
  const app = await createHttpApp({
    log: opts.log,
    title: 'Lectern',
    description:
      'Job API, uploads and events of Lectern. Errors are JSON {"detail": "..."}: 400 malformed, 404 unknown id, 409 wrong state, 413 too large, 415 unsupported type, 422 invalid field, 503 not ready.',
  });
  app.addSchema(JobResponse);
  app.addSchema(JobListResponse);
  app.addSchema(UploadResponse);
  app.addSchema(ExportStateResponse);
  const service = new JobService(opts.stores, opts.storage, opts.log);
  await uploadRoutes(app, { stores: opts.stores, storage: opts.storage, maxUploadBytes: opts.maxUploadBytes });
  await jobRoutes(app, { service, stores: opts.stores });
  await voiceRoutes(app, { jobs: opts.stores.jobs, storage: opts.storage, log: opts.log, ...opts.speech });
  app.get('/health', { schema: { summary: 'Liveness and mode', hide: false } }, async () => ({ status: 'ok', mode: opts.stores.mode }));
  return app;
}
