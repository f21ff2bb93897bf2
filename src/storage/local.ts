// The local data dir as a store (the embedded default): keys are paths under the data dir.
// Writes go to a `.part` file in tmp/ and are renamed into place, so a reader never sees
// half an object and a crash leaves only a `.part` file that abortStaleUploads() removes.
import { once } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { checkKey, scratchName, StorageNotFound, type ByteRange, type DirectLink, type Storage, type StoredObject } from '../storage.ts';

const PART_SUFFIX = '.part';

export class LocalStorage implements Storage {
  readonly kind = 'local' as const;
  readonly directLinks = false;
  readonly linkOrigin = null;
  readonly where: string;
  readonly tmpDir: string;
  readonly cacheDir: string;

  constructor(readonly dataDir: string) {
    this.where = `data dir ${dataDir}`;
    this.tmpDir = path.join(dataDir, 'tmp');
    this.cacheDir = path.join(dataDir, 'cache');
  }

  async init(): Promise<void> {
    for (const d of ['uploads', 'outputs', 'cache', 'tmp']) await fs.promises.mkdir(path.join(this.dataDir, d), { recursive: true });
  }

  /** The file behind a key (which need not exist). */
  filePath(key: string): string {
    const abs = path.resolve(this.dataDir, checkKey(key));
    if (!abs.startsWith(this.dataDir + path.sep)) throw new Error(`storage key escapes the data dir: ${key}`);
    return abs;
  }

  private partPath(key: string): string {
    return path.join(this.tmpDir, scratchName(path.basename(key), PART_SUFFIX));
  }

  async put(key: string, body: Readable, opts: { contentType: string; signal?: AbortSignal }): Promise<{ size: number }> {
    const file = this.filePath(key);
    const part = this.partPath(key);
    let size = 0;
    const count = new Transform({
      transform(chunk: Buffer, _enc, cb) {
        size += chunk.length;
        cb(null, chunk);
      },
    });
    let out: fs.WriteStream | undefined;
    try {
      await fs.promises.mkdir(this.tmpDir, { recursive: true });
      out = fs.createWriteStream(part, { flags: 'wx' });
      await pipeline(body, count, out, { signal: opts.signal });
      const fh = await fs.promises.open(part, 'r');
      await fh.sync(); // on disk before the caller says it has it
      await fh.close();
      await fs.promises.mkdir(path.dirname(file), { recursive: true });
      await fs.promises.rename(part, file);
      return { size };
    } catch (err) {
      // an abort can reject before the stream has opened its file (fs work queues behind
      // other work): let it open and close first, or the file appears after the rm
      if (out && !out.closed) await once(out, 'close').catch(() => undefined);
      await fs.promises.rm(part, { force: true });
      throw err;
    }
  }

  async putFile(key: string, file: string, opts: { contentType: string; move?: boolean }): Promise<void> {
    const dest = this.filePath(key);
    await fs.promises.mkdir(path.dirname(dest), { recursive: true });
    if (opts.move) {
      try {
        await fs.promises.rename(file, dest);
        return;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EXDEV') throw e;
      }
    }
    const part = this.partPath(key);
    try {
      await fs.promises.copyFile(file, part);
      await fs.promises.rename(part, dest);
    } catch (err) {
      await fs.promises.rm(part, { force: true });
      throw err;
    }
    if (opts.move) await fs.promises.rm(file, { force: true });
  }

  async stat(key: string): Promise<StoredObject | null> {
    const st = await fs.promises.stat(this.filePath(key)).catch(() => null);
    if (!st?.isFile()) return null;
    return { key, size: st.size, lastModified: st.mtime, etag: `"${st.size.toString(16)}-${Math.floor(st.mtimeMs).toString(16)}"` };
  }

  async read(key: string, range?: ByteRange): Promise<Readable> {
    const file = this.filePath(key);
    // Opened first, so a missing file is an error here rather than on the stream.
    const fh = await fs.promises.open(file, 'r').catch((e: NodeJS.ErrnoException) => {
      throw e.code === 'ENOENT' || e.code === 'EISDIR' ? new StorageNotFound(key) : e;
    });
    return fh.createReadStream(range ? { start: range.start, end: range.end } : {});
  }

  async localCopy(key: string): Promise<string> {
    const file = this.filePath(key);
    if (!(await this.stat(key))) throw new StorageNotFound(key);
    return file;
  }

  async *list(prefix: string): AsyncIterable<StoredObject> {
    // The folder that holds the prefix; keys are then filtered by the full prefix.
    const cut = prefix.lastIndexOf('/');
    const base = cut >= 0 ? prefix.slice(0, cut) : '';
    const root = base ? this.filePath(base) : this.dataDir;
    const walk = async function* (this: LocalStorage, dir: string, rel: string): AsyncIterable<StoredObject> {
      const entries = await fs.promises.readdir(dir, { withFileTypes: true }).catch(() => []);
      for (const e of entries) {
        const key = rel ? `${rel}/${e.name}` : e.name;
        if (e.isDirectory()) {
          if (key.startsWith(prefix) || prefix.startsWith(`${key}/`)) yield* walk.call(this, path.join(dir, e.name), key);
        } else if (e.isFile() && key.startsWith(prefix)) {
          const st = await this.stat(key);
          if (st) yield st;
        }
      }
    };
    yield* walk.call(this, root, base);
  }

  async delete(key: string): Promise<void> {
    await fs.promises.rm(this.filePath(key), { force: true });
  }

  async deletePrefix(prefix: string): Promise<number> {
    if (!prefix.endsWith('/')) throw new Error(`a prefix to delete ends with "/": ${prefix}`);
    let n = 0;
    for await (const _ of this.list(prefix)) n++;
    await fs.promises.rm(this.filePath(prefix.slice(0, -1)), { recursive: true, force: true });
    return n;
  }

  async abortStaleUploads(olderThan: Date): Promise<number> {
    let n = 0;
    for (const name of await fs.promises.readdir(this.tmpDir).catch(() => [] as string[])) {
      if (!name.endsWith(PART_SUFFIX)) continue;
      const file = path.join(this.tmpDir, name);
      const st = await fs.promises.stat(file).catch(() => null);
      if (st && st.mtime < olderThan) {
        await fs.promises.rm(file, { force: true });
        n++;
      }
    }
    return n;
  }

  async directLink(): Promise<DirectLink | null> {
    return null;
  }

  async close(): Promise<void> {}
}
