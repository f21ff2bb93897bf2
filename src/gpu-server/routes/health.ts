// GET /health (open: load balancers and the job service's GPU client poll it) and GET /metrics.
import type { FastifyInstance } from 'fastify';
import type { GpuRuntime } from '../runtime.ts';

export async function healthRoutes(app: FastifyInstance, { runtime }: { runtime: GpuRuntime }): Promise<void> {
  app.get(
    '/health',
    { schema: { summary: 'Backend, device and capabilities (spec §C), then pool, batcher, cache and lip-sync figures; 503 until the backend is loaded' } },
    async (_req, reply) => {
      const body = runtime.health();
      return reply.status(body.status === 'ok' ? 200 : 503).send(body);
    },
  );

  app.get('/metrics', { schema: { summary: 'Prometheus metrics (text exposition format)' } }, async (_req, reply) => {
    const text = await runtime.metrics.registry.metrics();
    return reply.type(runtime.metrics.registry.contentType).send(text);
  });
}
