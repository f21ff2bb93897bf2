// Prometheus metrics of one GPU server instance (own registry, so several servers in one
// process — tests — never share counters).
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export interface GpuMetrics {
  registry: Registry;
  requests: Counter<'route' | 'method' | 'status'>;
  latency: Histogram<'route'>;
  batchSize: Histogram<'backend'>;
  queueWait: Histogram<'stage'>;
  modelTime: Histogram<'model'>;
  cache: Counter<'model' | 'result'>;
  lipsyncJobs: Gauge<'state'>;
}

export function createMetrics(opts: {
  maxBatch: number;
  poolSize: () => number;
  poolUtilization: () => number;
  poolQueue: () => number;
  batcherQueue: () => number;
  lipsyncStates: () => Record<string, number>;
}): GpuMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'lectern_gpu_' });
  const sizes = [...new Set([1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 24, 32, 48, 64, 128, 256, opts.maxBatch])].sort((a, b) => a - b);
  const ms = [1, 2, 5, 10, 20, 30, 50, 75, 100, 200, 500, 1000, 2000, 5000, 10000, 30000];
  const metrics: GpuMetrics = {
    registry,
    requests: new Counter({ name: 'lectern_gpu_requests_total', help: 'HTTP requests by route and status', labelNames: ['route', 'method', 'status'], registers: [registry] }),
    latency: new Histogram({ name: 'lectern_gpu_request_duration_ms', help: 'HTTP request latency (ms) by route', labelNames: ['route'], buckets: ms, registers: [registry] }),
    batchSize: new Histogram({ name: 'lectern_gpu_batch_size', help: 'Requests per /synthesize model call', labelNames: ['backend'], buckets: sizes, registers: [registry] }),
    queueWait: new Histogram({
      name: 'lectern_gpu_queue_wait_ms',
      help: 'Time a request waited: stage=batcher (coalescing window) or stage=pool (for a free worker)',
      labelNames: ['stage'],
      buckets: ms,
      registers: [registry],
    }),
    modelTime: new Histogram({ name: 'lectern_gpu_model_time_ms', help: 'Time inside one engine call (ms)', labelNames: ['model'], buckets: ms, registers: [registry] }),
    cache: new Counter({ name: 'lectern_gpu_model_cache_total', help: 'Model cache lookups in the workers (result=hit|miss)', labelNames: ['model', 'result'], registers: [registry] }),
    lipsyncJobs: new Gauge({
      name: 'lectern_gpu_lipsync_jobs',
      help: 'Lip-sync jobs in the table by state',
      labelNames: ['state'],
      registers: [registry],
      collect() {
        for (const [state, n] of Object.entries(opts.lipsyncStates())) this.set({ state }, n);
      },
    }),
  };
  new Gauge({ name: 'lectern_gpu_pool_workers', help: 'Worker threads in the pool', registers: [registry], collect() { this.set(opts.poolSize()); } });
  new Gauge({ name: 'lectern_gpu_pool_utilization', help: 'Fraction of pool capacity in use since start (piscina)', registers: [registry], collect() { this.set(opts.poolUtilization()); } });
  new Gauge({ name: 'lectern_gpu_pool_queue', help: 'Tasks waiting for a free worker', registers: [registry], collect() { this.set(opts.poolQueue()); } });
  new Gauge({ name: 'lectern_gpu_batcher_queue', help: 'Requests waiting in the micro-batcher', registers: [registry], collect() { this.set(opts.batcherQueue()); } });
  return metrics;
}
