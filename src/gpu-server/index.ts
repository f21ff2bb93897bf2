// Entry point of `lectern gpu-server`.
import type { Logger } from '../log.ts';
import { buildGpuServer } from './app.ts';
import type { GpuServerSettings } from './runtime.ts';

export { buildGpuServer, type GpuServer } from './app.ts';
export { chooseBackend, type GpuRuntime, type GpuServerOptions, type GpuServerSettings } from './runtime.ts';
export { MicroBatcher } from './batcher.ts';

/**
 * Listens first (so /health can say `loading`), then loads the backend in every worker.
 * A load failure (e.g. a missing model file) closes the server and rejects with its message.
 */
export async function startGpuServer(config: GpuServerSettings, log: Logger): Promise<{ url: string; close(): Promise<void> }> {
  const server = await buildGpuServer(config, log);
  const address = await server.app.listen({ host: config.host, port: config.port });
  try {
    await server.load();
  } catch (e) {
    await server.close();
    throw e;
  }
  const url = address.replace('[::1]', '127.0.0.1');
  log.info({ url }, 'GPU server listening');
  return { url, close: () => server.close(config.shutdownGraceMs) };
}
