// Chooses the store once, from the config: the local data dir unless LECTERN_STORAGE_URL
// names a bucket. Nothing else knows which.
import path from 'node:path';
import type { Storage, StorageConfig } from '../storage.ts';
import { LocalStorage } from './local.ts';
import { S3Storage } from './s3.ts';

export function createStorage(config: { dataDir: string; storage: StorageConfig }): Storage {
  const s = config.storage;
  if (!s.s3) return new LocalStorage(config.dataDir);
  return new S3Storage({
    ...s.s3,
    download: s.download,
    linkExpiresSeconds: s.linkExpiresSeconds,
    tmpDir: path.join(config.dataDir, 'tmp'),
    cacheDir: path.join(config.dataDir, 'cache'),
  });
}
