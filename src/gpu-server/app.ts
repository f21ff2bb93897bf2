// The GPU inference server (spec §C): one runtime (pool, batcher, metrics, lip-sync table,
// backend state; see runtime.ts) and the route plugins that share it, on the same HTTP app
// as the job API. A new group of routes is one more plugin registered below with `{ runtime }`.
import type { FastifyInstance } from 'fastify';
import { createHttpApp } from '../http/server.ts';
import type { Logger } from '../log.ts';
import { installSecurity } from '../security/http.ts';
import { healthRoutes } from './routes/health.ts';
import { lipsyncRoutes } from './routes/lipsync.ts';
import { openaiRoutes } from './routes/openai.ts';
import { speechRoutes } from './routes/speech.ts';
import { createGpuRuntime, type GpuRuntime, type GpuServerSettings } from './runtime.ts';

export interface GpuServer {
  app: FastifyInstance;
  runtime: GpuRuntime;
  /** Loads the backend in every worker and the lip-sync provider; /health says `loading` until it resolves. */
  load(): Promise<void>;
  /**
   * Stops taking work. With `graceMs` > 0 (SIGTERM), lip-sync jobs and requests in flight
   * get that long to finish before the rest is cancelled; 0 cancels at once. The log says
   * which lip-sync jobs finished and which were cancelled.
   */
  close(graceMs?: number): Promise<void>;
}

export async function buildGpuServer(config: GpuServerSettings, log: Logger): Promise<GpuServer> {
  const runtime = createGpuRuntime(config, log);
  const app = await createHttpApp({
    log,
    title: 'Lectern GPU server',
    description: 'Speech synthesis, alignment, transcription and lip-sync jobs for Lectern workers. Every route but /health needs `Authorization: Bearer <token>` when the server has tokens configured. Errors are JSON {"detail": "..."} (OpenAI\'s {"error": {...}} under /v1); 503 answers carry Retry-After. /v1 speaks OpenAI\'s audio API (speech with word timings, transcriptions, models, voices).',
    // Fastify's own per-request lines are off: one line per answer below carries the request id instead.
    requestLogging: false,
  });
  await installSecurity(app, { security: config.security, isProtected: (p) => p !== '/health' });

  let closing = false;
  app.addHook('onSend', async (req, reply) => {
    // An answer finished after close() began must not leave its connection open for the
    // keep-alive timeout (72 s): app.close() waits for every connection.
    if (closing) reply.header('Connection', 'close');
    // Busy, loading or shutting down: the client should come back (or go to another server).
    if (reply.statusCode === 503 && !reply.hasHeader('retry-after')) reply.header('Retry-After', '1');
    // A refused upload's remaining bytes are not read: end the connection rather than drain it.
    if (reply.statusCode === 413 && /^multipart\//i.test(req.headers['content-type'] ?? '')) reply.header('Connection', 'close');
  });
  app.addHook('onResponse', async (req, reply) => {
    const route = req.routeOptions.url ?? 'unmatched';
    // req.log carries reqId (the caller's x-request-id: the job's request for worker calls) and the token name.
    if (route !== '/health' && route !== '/metrics') {
      req.log.info({ method: req.method, url: req.url.split('?')[0], status: reply.statusCode, ms: Math.round(reply.elapsedTime) }, 'request completed');
    }
    runtime.metrics.requests.inc({ route, method: req.method, status: String(reply.statusCode) });
    runtime.metrics.latency.observe({ route }, reply.elapsedTime);
  });

  await app.register(healthRoutes, { runtime });
  await app.register(speechRoutes, { runtime });
  await app.register(lipsyncRoutes, { runtime });
  await app.register(openaiRoutes, { runtime, prefix: '/v1' });

  return {
    app,
    runtime,
    load: () => runtime.load(),
    async close(graceMs = 0) {
      closing = true;
      runtime.startDraining();
      const t0 = Date.now();
      const { finished, cancelled } = await runtime.lipsync.table.drain(graceMs);
      if (finished.length > 0) log.info({ lipsync_jobs: finished }, 'shutdown: lip-sync jobs finished before exit');
      if (cancelled.length > 0) log.warn({ lipsync_ids: cancelled }, 'shutdown: lip-sync jobs cancelled (grace period over)');
      if (graceMs > 0) {
        // Requests in flight keep the batcher and the pool until they finish or the grace ends.
        const force = setTimeout(() => {
          runtime.stopBatching();
          app.server.closeAllConnections();
        }, Math.max(0, graceMs - (Date.now() - t0)));
        await app.close();
        clearTimeout(force);
      } else {
        runtime.stopBatching();
        await app.close();
      }
      await runtime.close();
    },
  };
}
