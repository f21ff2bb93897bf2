// A job's work space on the worker that runs it: inputs fetched from the store into a local
// scratch folder, outputs made there and then put into the store, the folder removed when the
// task ends. The same code runs with the local data dir (inputs read in place, outputs renamed
// into place) and with an S3 bucket (workers on other machines, no shared disk).
import fs from 'node:fs';
import path from 'node:path';
import { oneLine } from '../core/errors.ts';
import { isId, outputKey, scratchName, StorageNotFound, type Storage } from '../storage.ts';
import { contentTypeFor } from './file-types.ts';

/** A stored input the job needs is not in the store. */
export class MissingInput extends Error {
  override name = 'MissingInput';
}

export class JobScratch {
  private constructor(
    private readonly storage: Storage,
    private readonly jobId: string,
    readonly dir: string,
  ) {}

  static async create(storage: Storage, jobId: string, purpose: string): Promise<JobScratch> {
    if (!isId(jobId)) throw new Error(`invalid job id ${jobId}`);
    const dir = path.join(storage.tmpDir, scratchName(`${purpose}-${jobId}`));
    await fs.promises.mkdir(path.join(dir, 'in'), { recursive: true });
    await fs.promises.mkdir(path.join(dir, 'out'), { recursive: true });
    return new JobScratch(storage, jobId, dir);
  }

  /** Where the pipeline writes its files (names relative to it are the job's file names). */
  get outDir(): string {
    return path.join(this.dir, 'out');
  }

  /** A local file holding a stored object (an upload, or one of the job's own files); `what` names it in errors. */
  async input(key: string, what: string): Promise<string> {
    try {
      return await this.storage.localCopy(key, path.join(this.dir, 'in'));
    } catch (err) {
      if (err instanceof StorageNotFound) throw new MissingInput(`the job's ${what} is missing from the store`);
      throw err;
    }
  }

  /** Puts each of `files` (relative to outDir) into the store; a failure says where and why. */
  async storeOutputs(files: string[]): Promise<void> {
    for (const f of files) {
      try {
        await this.storage.putFile(outputKey(this.jobId, f), path.join(this.outDir, f), { contentType: contentTypeFor(f), move: true });
      } catch (err) {
        throw new Error(`could not store the job's output ${f} in ${this.storage.where}: ${oneLine(err)}`);
      }
    }
  }

  async remove(): Promise<void> {
    await fs.promises.rm(this.dir, { recursive: true, force: true });
  }
}
