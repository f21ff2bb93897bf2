// Starts the real service (HTTP on an ephemeral port) in either mode for a test, and
// cleans up after it: a temp data dir, and for the distributed mode a namespace of its
// own in PostgreSQL and Redis.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import pg from 'pg';
import { loadServiceConfig, type ServiceConfig } from '../../src/config.ts';
import { createLogger } from '../../src/log.ts';
import { startService, type RunningService } from '../../src/service.ts';

export const PG_URL = 'postgres://postgres@127.0.0.1:5432/test';
export const REDIS_URL = 'redis://127.0.0.1:6379';
export type Mode = 'embedded' | 'distributed';
export const MODES: Mode[] = ['embedded', 'distributed'];

export interface TestEnv {
  mode: Mode;
  dataDir: string;
  namespace: string;
  env: Record<string, string>;
  config(extra?: Record<string, string>): ServiceConfig;
  start(extra?: Record<string, string>): Promise<RunningService>;
  cleanup(): Promise<void>;
}

export function testEnv(mode: Mode, label: string): TestEnv {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `lectern-${label}-`));
  const namespace = `t_${label.replace(/[^a-z0-9]/g, '_')}_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
  const env: Record<string, string> = {
    LECTERN_DATA_DIR: dataDir,
    LECTERN_PORT: '0',
    LECTERN_NAMESPACE: namespace,
    LECTERN_LEASE_MS: '1500',
    LECTERN_HEARTBEAT_MS: '300',
    LECTERN_LOG_LEVEL: 'warn',
    // Tests of jobs, stores and outputs narrate with eSpeak NG (fast, its own word timings);
    // the tests of the default voice start with LECTERN_TTS_BACKEND: '' (unset → auto).
    LECTERN_TTS_BACKEND: 'espeak',
    ...(mode === 'distributed' ? { LECTERN_DATABASE_URL: PG_URL, LECTERN_REDIS_URL: REDIS_URL } : {}),
  };
  const config = (extra: Record<string, string> = {}) => loadServiceConfig({}, { ...env, ...extra });
  return {
    mode,
    dataDir,
    namespace,
    env,
    config,
    start: (extra = {}) => startService(config(extra), createLogger('warn', 'test')),
    async cleanup() {
      fs.rmSync(dataDir, { recursive: true, force: true });
      if (mode !== 'distributed') return;
      const client = new pg.Client({ connectionString: PG_URL });
      await client.connect();
      await client.query(`DROP SCHEMA IF EXISTS "${namespace}" CASCADE`);
      await client.end();
      const redis = new Redis(REDIS_URL);
      let cursor = '0';
      do {
        const [next, keys] = await redis.scan(cursor, 'MATCH', `${namespace}*`, 'COUNT', 500);
        cursor = next;
        if (keys.length) await redis.del(...keys);
      } while (cursor !== '0');
      await redis.quit();
    },
  };
}

export async function upload(url: string, name: string, data: Buffer | string, type = 'application/octet-stream') {
  const form = new FormData();
  form.append('file', new Blob([typeof data === 'string' ? Buffer.from(data) : data], { type }), name);
  const res = await fetch(`${url}/api/uploads`, { method: 'POST', body: form });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

export async function json(url: string, method: string, p: string, body?: unknown) {
  const res = await fetch(`${url}${p}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: any = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = text;
  }
  return { status: res.status, body: parsed, headers: res.headers };
}

/** Reads a Server-Sent Events stream until it closes (or `timeoutMs`). */
export async function readEvents(url: string, timeoutMs = 60_000): Promise<Array<{ event: string; data: any }>> {
  const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
  if (res.status !== 200) throw new Error(`events: HTTP ${res.status}`);
  const text = await res.text();
  return text
    .split('\n\n')
    .filter((b) => b.includes('event:'))
    .map((block) => {
      const event = /^event: (.*)$/m.exec(block)![1]!;
      const data = JSON.parse(/^data: (.*)$/m.exec(block)![1]!);
      return { event, data };
    });
}

export async function waitFor<T>(fn: () => Promise<T | null | undefined | false>, timeoutMs = 60_000, what = 'condition'): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The job once it is completed or failed (polled through GET /api/jobs/{id}). */
export function jobFinished(url: string, id: string, timeoutMs = 180_000): Promise<Record<string, any>> {
  return waitFor(
    async () => {
      const j = (await json(url, 'GET', `/api/jobs/${id}`)).body;
      return j.status === 'completed' || j.status === 'failed' ? j : null;
    },
    timeoutMs,
    `job ${id} to finish`,
  );
}
