// A real S3 server for tests: s3rver in a child process on 127.0.0.1 (see s3rver-main.mjs),
// with a bucket made for the test, and the environment that points Lectern and the AWS SDK at it.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';

export interface TestS3 {
  endpoint: string;
  bucket: string;
  /** s3rver's own folder: objects, and unfinished multipart uploads in <bucket>/._S3rver_uploads. */
  dir: string;
  /** LECTERN_STORAGE_URL and the AWS_* variables for this server. */
  env(prefix?: string): Record<string, string>;
  /** Object keys of the multipart uploads s3rver holds (started, neither completed nor aborted). */
  pendingUploads(): string[];
  stop(): Promise<void>;
}

/** s3rver's built-in account (it accepts these keys). */
export const S3RVER_CREDENTIALS = { AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER' };

export async function startS3(bucket = 'lectern-test'): Promise<TestS3> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lectern-s3rver-'));
  const child: ChildProcess = spawn(process.execPath, [path.join(import.meta.dirname, 's3rver-main.mjs'), dir, bucket], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    const rl = readline.createInterface({ input: child.stdout! });
    rl.once('line', (line) => resolve((JSON.parse(line) as { port: number }).port));
    child.once('exit', (code) => reject(new Error(`s3rver exited with ${code} before listening`)));
  });
  const endpoint = `http://127.0.0.1:${port}`;
  return {
    endpoint,
    bucket,
    dir,
    env: (prefix = '') => ({
      LECTERN_STORAGE_URL: `s3://${bucket}${prefix ? `/${prefix}` : ''}`,
      AWS_ENDPOINT_URL_S3: endpoint,
      AWS_REGION: 'us-east-1',
      ...S3RVER_CREDENTIALS,
    }),
    pendingUploads() {
      const d = path.join(dir, bucket, '._S3rver_uploads');
      // s3rver makes an upload's folder before its key file and removes it on abort: a folder
      // without its key is an upload starting or going away at this instant, and callers poll
      const key = (id: string) => {
        try {
          return [fs.readFileSync(path.join(d, id, 'key'), 'utf8')];
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
          throw e;
        }
      };
      return (fs.existsSync(d) ? fs.readdirSync(d) : []).flatMap(key);
    },
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await exited;
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
