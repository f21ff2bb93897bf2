// `lectern serve` and `lectern worker`: stores, storage, the GPU client, the HTTP app and the
// worker, put together for one mode or the other, and taken down in order.
import fs from 'node:fs';
import type { ServiceConfig } from './config.ts';
import { buildServiceApp } from './api/app.ts';
import { createGpuClient, type GpuClient } from './gpu-client/index.ts';
import { createStores } from './jobs/index.ts';
import { startWorker, type RunningWorker, type WorkerSettings } from './jobs/job-runner.ts';
import type { Stores } from './jobs/types.ts';
import type { Logger } from './log.ts';
import { checkFfmpeg } from './media/ffmpeg.ts';
import { isOrphanedScratch, type Storage } from './storage.ts';
import { createStorage } from './storage/index.ts';
import { startStorageSweeper } from './jobs/storage-sweep.ts';

export interface RunningService {
  url: string;
  stores: Stores;
  storage: Storage;
  close(): Promise<void>;
}

interface Prepared {
  stores: Stores;
  storage: Storage;
  /** See gpuClientFor. */
  gpu: GpuClient | null;
}

async function prepare(config: ServiceConfig, log: Logger): Promise<Prepared> {
  await checkFfmpeg();
  // An unreachable store, a missing bucket or refused credentials stop start-up here, naming the bucket and endpoint.
  const storage = createStorage(config);
  await storage.init();
  // Scratch folders and half-written local uploads of processes that died are never referenced by a record: drop them
  // (those of processes still running on the same data dir stay).
  for (const f of await fs.promises.readdir(storage.tmpDir)) {
    if (isOrphanedScratch(f)) await fs.promises.rm(`${storage.tmpDir}/${f}`, { recursive: true, force: true }).catch(() => undefined);
  }
  let stores: Stores;
  try {
    stores = await createStores(config, log);
  } catch (err) {
    await storage.close();
    throw err;
  }
  return { stores, storage, gpu: gpuClientFor(config, log) };
}

/**
 * Local speech or GPU servers, decided once per process: with LECTERN_GPU_SERVER_URL set, the
 * one GPU client that the worker's speech, its lip-sync clips and the API's voice library
 * share (one round of health checks, one view of which server is up and how busy); null →
 * local engines. The process closes it last, after the worker and the HTTP app.
 */
function gpuClientFor(config: ServiceConfig, log: Logger): GpuClient | null {
  if (config.gpuServerUrls.length === 0) return null;
  return createGpuClient({ urls: config.gpuServerUrls, token: config.gpuServerToken ?? undefined, healthIntervalMs: config.gpuHealthIntervalMs, log });
}

/** The fields of the config a worker runs with. */
function workerSettings(config: ServiceConfig): WorkerSettings {
  return { workerConcurrency: config.workerConcurrency, modelsDir: config.modelsDir, tts: config.tts, lipsync: config.lipsync };
}

export async function startService(config: ServiceConfig, log: Logger): Promise<RunningService> {
  const { stores, storage, gpu } = await prepare(config, log);
  const app = await buildServiceApp({
    stores,
    storage,
    log,
    maxUploadBytes: config.maxUploadBytes,
    webDir: config.webDir,
    security: config.security,
    speech: { modelsDir: config.modelsDir, gpu, ttsBackend: config.tts.backend },
  });
  let worker: RunningWorker | null = null;
  if (config.embeddedWorker) worker = await startWorker({ config: workerSettings(config), gpu, stores, storage, log });
  // Objects a crash left without their job or upload, and stale unfinished uploads.
  const sweeper = startStorageSweeper(storage, stores.jobs, log, config.storage.sweepIntervalSeconds * 1000);
  await app.listen({ host: config.host, port: config.port });
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : config.port;
  const url = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
  log.info({ url, mode: stores.mode, data_dir: config.dataDir, storage: storage.where, worker: Boolean(worker) }, 'lectern serving');
  return {
    url,
    stores,
    storage,
    async close() {
      // New connections are refused at once; requests in flight get a bounded grace period
      // (LECTERN_SHUTDOWN_GRACE_MS): a client that stopped reading a download, or an open
      // event stream, must not keep the process from shutting down.
      const t0 = Date.now();
      const force = setTimeout(() => {
        log.warn({ grace_ms: config.shutdownGraceMs }, 'shutdown: cutting the connections still open after the grace period');
        app.server.closeAllConnections();
      }, config.shutdownGraceMs);
      await app.close();
      clearTimeout(force);
      log.info({ ms: Date.now() - t0 }, 'shutdown: HTTP closed; handing running tasks back to the queue');
      await worker?.close();
      gpu?.close();
      await sweeper.stop();
      await stores.close();
      await storage.close();
    },
  };
}

export async function startStandaloneWorker(config: ServiceConfig, log: Logger): Promise<{ close(): Promise<void> }> {
  const { stores, storage, gpu } = await prepare(config, log);
  const worker = await startWorker({ config: workerSettings(config), gpu, stores, storage, log });
  return {
    async close() {
      await worker.close();
      gpu?.close();
      await stores.close();
      await storage.close();
    },
  };
}
