// Starts a real GPU server on an ephemeral port with the "onnx-test" backend in a temp models dir.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadGpuServerConfig } from '../../src/config.ts';
import { createLogger, type Logger } from '../../src/log.ts';
import { buildGpuServer, type GpuServer, type GpuServerSettings } from '../../src/gpu-server/index.ts';
import { tinySquareModel } from './gpu-tiny-onnx.ts';
import { TINY_MODEL_FILE } from './gpu-onnx-test-backend.ts';

export const TEST_BACKEND_URL = new URL('./gpu-onnx-test-backend.ts', import.meta.url).href;

export interface RunningGpuServer {
  url: string;
  server: GpuServer;
  tmp: string;
  close(): Promise<void>;
  metric(name: string, labels?: Record<string, string>): Promise<number>;
}

export function tempModelsDir(withModel = true): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'lectern-gpu-test-'));
  if (withModel) writeFileSync(path.join(dir, TINY_MODEL_FILE), tinySquareModel());
  return dir;
}

export async function startTestGpuServer(over: Partial<GpuServerSettings> = {}, opts: { load?: boolean; log?: Logger } = {}): Promise<RunningGpuServer> {
  const tmp = tempModelsDir();
  const config: GpuServerSettings = {
    ...loadGpuServerConfig({}, {}),
    host: '127.0.0.1',
    port: 0,
    backend: 'onnx-test',
    workers: 1,
    modelsDir: tmp,
    dataDir: path.join(tmp, 'data'),
    extraBackends: { 'onnx-test': TEST_BACKEND_URL },
    lipsyncCommand: null,
    ...over,
  };
  const server = await buildGpuServer(config, opts.log ?? createLogger('silent', 'gpu-test'));
  const url = await server.app.listen({ host: '127.0.0.1', port: 0 });
  if (opts.load !== false) await server.load();
  return {
    url,
    server,
    tmp,
    async close() {
      await server.close();
      rmSync(tmp, { recursive: true, force: true });
    },
    async metric(name, labels = {}) {
      const text = await (await fetch(`${url}/metrics`)).text();
      let sum = 0;
      for (const line of text.split('\n')) {
        if (!line.startsWith(name)) continue;
        const m = /^([a-zA-Z_:][\w:]*)(\{([^}]*)\})?\s+(\S+)$/.exec(line);
        if (!m || m[1] !== name) continue;
        const lbl = Object.fromEntries([...(m[3] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
        if (Object.entries(labels).every(([k, v]) => lbl[k] === v)) sum += Number(m[4]);
      }
      return sum;
    },
  };
}
