// Where files live in the data dir, and the only place that turns ids into paths:
// every id is validated first and every path is checked to stay inside its root.
import fs from 'node:fs';
import path from 'node:path';

const ID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export function isId(id: string): boolean {
  return ID_RE.test(id);
}

export class Storage {
  readonly uploadsDir: string;
  readonly outputsDir: string;
  readonly cacheDir: string;
  readonly tmpDir: string;

  constructor(readonly dataDir: string) {
    this.uploadsDir = path.join(dataDir, 'uploads');
    this.outputsDir = path.join(dataDir, 'outputs');
    this.cacheDir = path.join(dataDir, 'cache');
    this.tmpDir = path.join(dataDir, 'tmp');
  }

  async init(): Promise<void> {
    for (const d of [this.uploadsDir, this.outputsDir, this.cacheDir, this.tmpDir]) await fs.promises.mkdir(d, { recursive: true });
  }

  /** Relative path (as stored on an upload record) → absolute, refusing anything outside the data dir. */
  resolve(relative: string): string {
    const abs = path.resolve(this.dataDir, relative);
    if (abs !== this.dataDir && !abs.startsWith(this.dataDir + path.sep)) throw new Error(`path escapes the data dir: ${relative}`);
    return abs;
  }

  relative(abs: string): string {
    return path.relative(this.dataDir, abs);
  }

  uploadPath(id: string, ext: string): string {
    if (!isId(id)) throw new Error(`invalid upload id ${id}`);
    return path.join(this.uploadsDir, `${id}.${ext}`);
  }

  outputDir(jobId: string): string {
    if (!isId(jobId)) throw new Error(`invalid job id ${jobId}`);
    return path.join(this.outputsDir, jobId);
  }

  async removeOutputDir(jobId: string): Promise<void> {
    await fs.promises.rm(this.outputDir(jobId), { recursive: true, force: true });
  }

  /** A fresh temporary path in the data dir (same filesystem, so rename() into place is atomic). */
  tmpPath(suffix = ''): string {
    return path.join(this.tmpDir, `${process.pid}-${Date.now()}-${Math.random().toString(36).slice(2)}${suffix}`);
  }
}

/** Writes via a temporary file and rename, so a crash never leaves a half-written output. */
export async function writeFileAtomic(file: string, data: Buffer | string): Promise<void> {
  const tmp = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
  await fs.promises.writeFile(tmp, data);
  await fs.promises.rename(tmp, file);
}
