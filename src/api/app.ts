// The service's HTTP app: the shared plumbing (createHttpApp: errors, OpenAPI), security
// hooks for every route, then one Fastify plugin per route group. Plugins are encapsulated:
// multipart exists only inside the uploads plugin, each group's schemas and hooks stay its own.
import type { FastifyInstance } from 'fastify';
import type { ServiceSecurity } from '../security/tokens.ts';
import { JobService } from '../jobs/job-service.ts';
import { UploadService } from '../jobs/upload-service.ts';
import type { Stores } from '../jobs/types.ts';
import type { Logger } from '../log.ts';
import type { Storage } from '../storage.ts';
import { callerOf, installSecurity } from '../security/http.ts';
import { createHttpApp } from '../http/server.ts';
import { jobRoutes } from './jobs.ts';
import { MeResponse, OWNERSHIP } from './schemas.ts';
import { uploadRoutes } from './uploads.ts';
import { voiceRoutes, type VoiceRoutesOptions } from './voices.ts';
import type { VoiceLibrary } from '../voices/library.ts';
import { webAppRoutes } from './web-app.ts';

export interface ServiceAppOptions {
  stores: Stores;
  storage: Storage;
  log: Logger;
  maxUploadBytes: number;
  security: ServiceSecurity;
  /** What the voice library speaks with: ServiceConfig.modelsDir and tts.backend, and the process's GPU client (or null). */
  speech: Pick<VoiceRoutesOptions, 'modelsDir' | 'gpu' | 'ttsBackend'>;
  /** The built web app served at `/` (default: web/dist of this checkout). */
  webDir?: string;
}

export async function buildServiceApp(opts: ServiceAppOptions): Promise<FastifyInstance> {
  const app = await createHttpApp({
    log: opts.log,
    title: 'Lectern',
    description:
      `Job API, uploads and events of Lectern. Every /api/* route needs \`Authorization: Bearer <token>\` when the server has tokens configured. ${OWNERSHIP} Errors are JSON {"detail": "..."}: 400 malformed, 401 missing or wrong token, 404 unknown id, 409 wrong state, 413 too large, 415 unsupported type, 422 invalid field, 429 rate or job limit, 503 not ready.`,
    bodyLimit: opts.security.maxBodyBytes,
  });
  await installSecurity(app, {
    security: opts.security,
    isProtected: (p) => p === '/api' || p.startsWith('/api/'),
    admins: opts.security.admins,
    rateLimitPerMinute: opts.security.rateLimitPerMinute,
    corsOrigins: opts.security.corsOrigins,
  });
  const service = new JobService(opts.stores, opts.storage, opts.log, {
    maxActiveJobsPerOwner: opts.security.maxActiveJobsPerToken,
    cloningRefusal: () => (library ? library.cloningRefusal() : Promise.resolve('the voice library is not ready')),
  });
  const uploads = new UploadService(opts.stores.jobs, opts.storage, opts.log, opts.maxUploadBytes);
  await app.register(uploadRoutes, { uploads, storage: opts.storage, maxUploadBytes: opts.maxUploadBytes });
  await app.register(jobRoutes, { service, stores: opts.stores, storage: opts.storage });
  // The voice library knows what the GPU servers declare; job creation asks it whether cloning can run.
  let library: VoiceLibrary | null = null;
  await app.register(async (scope) => {
    library = await voiceRoutes(scope, { jobs: opts.stores.jobs, storage: opts.storage, log: opts.log, ...opts.speech });
  });
  await app.register(webAppRoutes, { dir: opts.webDir, mediaOrigins: opts.storage.linkOrigin ? [opts.storage.linkOrigin] : [] });
  await app.register(healthRoute, { mode: opts.stores.mode });
  await app.register(meRoute, { security: opts.security });
  return app;
}

/** GET /api/me: the calling token and whether it is an admin, so the web app knows what to offer. */
async function meRoute(app: FastifyInstance, { security }: { security: ServiceSecurity }): Promise<void> {
  app.addSchema(MeResponse);
  app.get(
    '/api/me',
    { schema: { summary: 'Who the calling token is', description: OWNERSHIP, response: { 200: { $ref: 'Me#' } } } },
    async (req) => {
      const caller = callerOf(req);
      const authentication = security.tokens.length > 0;
      const admin = authentication && caller.sees === 'all';
      return { name: caller.name, admin, authentication, owners: admin ? security.tokens.map((t) => t.name) : null };
    },
  );
}

async function healthRoute(app: FastifyInstance, { mode }: { mode: Stores['mode'] }): Promise<void> {
  app.get('/health', { schema: { summary: 'Liveness and mode', hide: false } }, async () => ({ status: 'ok', mode }));
}
