// The service's HTTP app: job, upload and event routes, health and the OpenAPI document.
import type { FastifyInstance } from 'fastify';
import type { ServiceSecurity } from '../config.ts';
import { JobService } from '../jobs/job-service.ts';
import type { Stores } from '../jobs/types.ts';
import type { Logger } from '../log.ts';
import type { Storage } from '../storage.ts';
import { installSecurity } from '../security/http.ts';
import { createHttpApp } from './http.ts';
import { jobRoutes } from './jobs.ts';
import { ExportStateResponse, JobListResponse, JobResponse, UploadResponse } from './schemas.ts';
import { uploadRoutes } from './uploads.ts';
import { voiceRoutes, type VoiceRoutesOptions } from './voices.ts';
import { webAppRoutes } from './web-app.ts';

export interface ServiceAppOptions {
  stores: Stores;
  storage: Storage;
  log: Logger;
  maxUploadBytes: number;
  security: ServiceSecurity;
  /** What the voice library needs from the config (ServiceConfig.modelsDir, gpuServerUrls, gpuServerToken, tts.backend). */
  speech: Pick<VoiceRoutesOptions, 'modelsDir' | 'gpuServerUrls' | 'gpuServerToken' | 'ttsBackend'>;
  /** The built web app served at `/` (default: web/dist of this checkout). */
  webDir?: string;
}

export async function buildServiceApp(opts: ServiceAppOptions): Promise<FastifyInstance> {
  const app = await createHttpApp({
    log: opts.log,
    title: 'Lectern',
    description:
      'Job API, uploads and events of Lectern. Every /api/* route needs `Authorization: Bearer <token>` when the server has tokens configured. Errors are JSON {"detail": "..."}: 400 malformed, 401 missing or wrong token, 404 unknown id, 409 wrong state, 413 too large, 415 unsupported type, 422 invalid field, 429 rate or job limit, 503 not ready.',
    bodyLimit: opts.security.maxBodyBytes,
  });
  await installSecurity(app, {
    security: opts.security,
    isProtected: (p) => p === '/api' || p.startsWith('/api/'),
    rateLimitPerMinute: opts.security.rateLimitPerMinute,
    corsOrigins: opts.security.corsOrigins,
  });
  app.addSchema(JobResponse);
  app.addSchema(JobListResponse);
  app.addSchema(UploadResponse);
  app.addSchema(ExportStateResponse);
  const service = new JobService(opts.stores, opts.storage, opts.log, {
    maxActiveJobsPerOwner: opts.security.maxActiveJobsPerToken,
    cloning: opts.speech.gpuServerUrls.length > 0,
  });
  await uploadRoutes(app, { stores: opts.stores, storage: opts.storage, maxUploadBytes: opts.maxUploadBytes });
  await jobRoutes(app, { service, stores: opts.stores });
  await voiceRoutes(app, { jobs: opts.stores.jobs, storage: opts.storage, log: opts.log, ...opts.speech });
  await webAppRoutes(app, { dir: opts.webDir });
  app.get('/health', { schema: { summary: 'Liveness and mode', hide: false } }, async () => ({ status: 'ok', mode: opts.stores.mode }));
  return app;
}
