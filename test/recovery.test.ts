// A worker killed with SIGKILL mid-job: the job must not stay `running` forever. The next
// worker (a restarted `serve` in the embedded mode, another `lectern worker` in the
// distributed mode) runs it again, and resumes from the chunks already cached.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadServiceConfig } from '../src/config.ts';
import { createLogger } from '../src/log.ts';
import { startStandaloneWorker } from '../src/service.ts';
import { json, testEnv, upload, waitFor, type TestEnv } from './helpers/service.ts';

const ROOT = path.resolve(import.meta.dirname, '..');

/** Long enough that the kill lands mid-synthesis: one distinct sentence per paragraph. */
function longDocument(n: number): string {
  const words = ['amber', 'river', 'quiet', 'lantern', 'harbour', 'meadow', 'copper', 'whistle', 'orchard', 'ledger'];
  return Array.from({ length: n }, (_, i) => `Sentence number ${i + 1} talks about the ${words[i % 10]} and the ${words[(i * 7) % 10]} near the ${words[(i * 3) % 10]} for a while.`).join('\n\n');
}

function spawnLectern(args: string[], env: Record<string, string>): { child: ChildProcess; url: Promise<string> } {
  const child = spawn(process.execPath, [path.join(ROOT, 'bin/lectern.js'), ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
  const url = new Promise<string>((resolve, reject) => {
    let err = '';
    child.stderr!.on('data', (b: Buffer) => {
      err += b.toString();
      const m = /serving on (http:\/\/\S+)/.exec(err);
      if (m) resolve(m[1]!);
    });
    child.on('exit', (code) => reject(new Error(`lectern ${args[0]} exited (${code}): ${err.slice(-500)}`)));
  });
  url.catch(() => undefined); // a worker never serves; a killed child is expected
  return { child, url };
}

const children: ChildProcess[] = [];
const envs: TestEnv[] = [];
afterEach(async () => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
  for (const t of envs.splice(0)) await t.cleanup();
});

async function startJob(url: string): Promise<string> {
  const doc = await upload(url, 'long.txt', longDocument(150));
  const job = await json(url, 'POST', '/api/jobs', { pipeline_type: 'audio', uploaded_file_id: doc.body.id });
  expect(job.status).toBe(201);
  return job.body.id;
}

async function killMidSynthesis(url: string, id: string, child: ChildProcess): Promise<number> {
  const current = await waitMidSynthesis(url, id);
  child.kill('SIGKILL');
  await new Promise((r) => child.once('exit', r));
  return current;
}

async function waitMidSynthesis(url: string, id: string): Promise<number> {
  const mid = await waitFor(
    async () => {
      const j = (await json(url, 'GET', `/api/jobs/${id}`)).body;
      return j.status === 'running' && j.progress?.phase === 'synthesize' && j.progress.current >= 10 ? j : null;
    },
    60_000,
    'the job to be mid-synthesis',
  );
  return mid.progress.current;
}

/** SIGTERM, then the exit code and how long the orderly shutdown took. */
async function terminate(child: ChildProcess): Promise<{ code: number | null; ms: number }> {
  const t0 = Date.now();
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  child.kill('SIGTERM');
  return { code: await exited, ms: Date.now() - t0 };
}

/** The output directory holds each output file once: no second copy, no temporary left behind. */
function expectSingleOutput(dataDir: string, id: string, result: { files: string[] }) {
  const dir = path.join(dataDir, 'outputs', id);
  expect(fs.readdirSync(dir).sort()).toEqual([...result.files].sort());
}

describe('kill and recover', () => {
  // Generous timeouts: two full narrations of 150 sentences on a shared 2-core machine.
  it('embedded: serve killed mid-job → the restarted serve finishes it from the cache', { timeout: 240_000 }, async () => {
    const t = testEnv('embedded', 'recover_emb');
    envs.push(t);
    const first = spawnLectern(['serve'], t.env);
    children.push(first.child);
    const url1 = await first.url;
    const id = await startJob(url1);
    const doneBefore = await killMidSynthesis(url1, id, first.child);

    const svc = await t.start();
    try {
      const job = await waitFor(async () => {
        const j = (await json(svc.url, 'GET', `/api/jobs/${id}`)).body;
        return j.status === 'completed' || j.status === 'failed' ? j : null;
      }, 180_000, 'the recovered job');
      expect(job.status).toBe('completed');
      expect(job.attempts).toBe(2);
      expect(job.config_json.result.chunks).toBe(150);
      expect(doneBefore).toBeGreaterThanOrEqual(10);
      const cached = fs.readdirSync(path.join(t.dataDir, 'cache', 'tts')).filter((f) => f.endsWith('.json')).length;
      expect(cached).toBe(150); // one entry per chunk: the first attempt's chunks were reused, not redone
      const dl = await fetch(`${svc.url}/api/jobs/${id}/download`);
      expect(dl.status).toBe(200);
      await dl.arrayBuffer();
    } finally {
      await svc.close();
    }
  });

  it('distributed: a `lectern worker` killed mid-job → another worker finishes it (BullMQ stalled recovery)', { timeout: 240_000 }, async () => {
    const t = testEnv('distributed', 'recover_dist');
    envs.push(t);
    const api = await t.start({ LECTERN_NO_EMBEDDED_WORKER: '1' });
    try {
      const worker = spawnLectern(['worker'], t.env);
      children.push(worker.child);
      const id = await startJob(api.url);
      await killMidSynthesis(api.url, id, worker.child);
      expect((await json(api.url, 'GET', `/api/jobs/${id}`)).body.status).toBe('running');

      const w2 = await startStandaloneWorker(loadServiceConfig({}, t.env), createLogger('warn', 'test-worker'));
      try {
        const job = await waitFor(async () => {
          const j = (await json(api.url, 'GET', `/api/jobs/${id}`)).body;
          return j.status === 'completed' || j.status === 'failed' ? j : null;
        }, 180_000, 'the recovered job');
        expect(job.status).toBe('completed');
        expect(job.attempts).toBe(2);
        const dl = await fetch(`${api.url}/api/jobs/${id}/download`);
      expect(dl.status).toBe(200);
      await dl.arrayBuffer();
      } finally {
        await w2.close();
      }
    } finally {
      await api.close();
    }
  });
});

describe('SIGTERM and restart', () => {
  it('embedded: serve gets SIGTERM mid-job → exits cleanly, hands the task back; the restarted serve finishes it once', { timeout: 240_000 }, async () => {
    const t = testEnv('embedded', 'term_emb');
    envs.push(t);
    const first = spawnLectern(['serve'], t.env);
    children.push(first.child);
    const url1 = await first.url;
    const id = await startJob(url1);
    const doneBefore = await waitMidSynthesis(url1, id);
    const { code, ms } = await terminate(first.child);
    expect(code).toBe(0);
    expect(ms).toBeLessThan(20_000);

    const svc = await t.start();
    try {
      const job = await waitFor(async () => {
        const j = (await json(svc.url, 'GET', `/api/jobs/${id}`)).body;
        return j.status === 'completed' || j.status === 'failed' ? j : null;
      }, 180_000, 'the restarted job');
      expect(job.status).toBe('completed');
      expect(job.attempts).toBe(2); // one run before the SIGTERM, one after: never two at once
      expect(job.config_json.result.chunks).toBe(150);
      expect(doneBefore).toBeGreaterThanOrEqual(10);
      const cached = fs.readdirSync(path.join(t.dataDir, 'cache', 'tts')).filter((f) => f.endsWith('.json')).length;
      expect(cached).toBe(150);
      expectSingleOutput(t.dataDir, id, job.config_json.result);
      const dl = await fetch(`${svc.url}/api/jobs/${id}/download`);
      expect(dl.status).toBe(200);
      await dl.arrayBuffer();
    } finally {
      await svc.close();
    }
  });

  it('distributed: a `lectern worker` gets SIGTERM mid-job → exits cleanly, the task goes back at once; the next worker finishes it once', { timeout: 240_000 }, async () => {
    const t = testEnv('distributed', 'term_dist');
    envs.push(t);
    // A long lease: only the explicit hand-back on SIGTERM (not stalled-job recovery) can requeue the task in time.
    const api = await t.start({ LECTERN_NO_EMBEDDED_WORKER: '1' });
    try {
      const worker = spawnLectern(['worker'], { ...t.env, LECTERN_LEASE_MS: '120000' });
      children.push(worker.child);
      const id = await startJob(api.url);
      await waitMidSynthesis(api.url, id);
      const { code, ms } = await terminate(worker.child);
      expect(code).toBe(0);
      expect(ms).toBeLessThan(20_000);

      const w2 = await startStandaloneWorker(loadServiceConfig({}, { ...t.env, LECTERN_LEASE_MS: '120000' }), createLogger('warn', 'test-worker'));
      try {
        const job = await waitFor(async () => {
          const j = (await json(api.url, 'GET', `/api/jobs/${id}`)).body;
          return j.status === 'completed' || j.status === 'failed' ? j : null;
        }, 120_000, 'the job on the next worker');
        expect(job.status).toBe('completed');
        expect(job.attempts).toBe(2);
        expectSingleOutput(t.dataDir, id, job.config_json.result);
        const dl = await fetch(`${api.url}/api/jobs/${id}/download`);
        expect(dl.status).toBe(200);
        await dl.arrayBuffer();
      } finally {
        await w2.close();
      }
    } finally {
      await api.close();
    }
  });
});
