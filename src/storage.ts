// Where uploads and job outputs live: one interface, two implementations chosen once from
// the config (the local data dir by default, an S3-compatible bucket with
// LECTERN_STORAGE_URL=s3://BUCKET[/PREFIX]). Nothing above this module knows which.
//
// Objects are named by keys that are the same in both: `uploads/ID.EXT`,
// `outputs/JOB_ID/NAME`, `voice-samples/NAME`. Every key is checked here, so no id or
// file name from a request can reach outside its folder. Scratch space for workers and the
// chunk cache stay on local disk in every mode (`tmpDir`, `cacheDir`).
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { LecternError } from './core/errors.ts';

const ID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export function isId(id: string): boolean {
  return ID_RE.test(id);
}

/** Metadata of one stored object. */
export interface StoredObject {
  key: string;
  size: number;
  lastModified: Date;
  /** Quoted entity tag, as HTTP sends it. */
  etag: string;
}

/** Inclusive byte range, as HTTP's `Range: bytes=start-end`. */
export interface ByteRange {
  start: number;
  end: number;
}

/** How a client should be sent an object: its name and type travel with it, in every mode. */
export interface DownloadMeta {
  filename: string;
  contentType: string;
  /** Shown in place (audio/video) rather than saved. */
  inline: boolean;
}

/** A short-lived URL the client fetches the object from directly (S3 `redirect` mode). */
export interface DirectLink {
  url: string;
  expiresAt: Date;
}

export type StorageKind = 'local' | 's3';

export interface Storage {
  readonly kind: StorageKind;
  /** Names the store for logs and error messages: the data dir, or the bucket and its endpoint. */
  readonly where: string;
  /** Local scratch space (same filesystem as the local store's files); job work dirs live here. */
  readonly tmpDir: string;
  /** Local content-addressed caches (finished TTS chunks, voice previews); never shared. */
  readonly cacheDir: string;
  /** Whether clients are sent to the store itself (directLink answers a URL): S3 in redirect mode. */
  readonly directLinks: boolean;
  /** The origin of those links (known after init()), for the web app's Content-Security-Policy; null without links. */
  readonly linkOrigin: string | null;
  /** Creates local folders and checks that the store answers; throws StorageUnavailable naming it. */
  init(): Promise<void>;
  /** Stores a stream under `key`. On any error (or `signal` abort) nothing is left under `key`, and no part. */
  put(key: string, body: Readable, opts: { contentType: string; signal?: AbortSignal }): Promise<{ size: number }>;
  /** Stores a local file; `move`: the caller is done with it (the local store renames it into place). */
  putFile(key: string, file: string, opts: { contentType: string; move?: boolean }): Promise<void>;
  /** The object's metadata, or null when there is none. */
  stat(key: string): Promise<StoredObject | null>;
  /** The object's bytes (a range of them); StorageNotFound when there is none. */
  read(key: string, range?: ByteRange): Promise<Readable>;
  /**
   * A local file holding the object, for tools that need a path (ffmpeg, PDF readers): the
   * local store answers its own file, S3 downloads it into `dir`. Read it, never change it.
   */
  localCopy(key: string, dir: string): Promise<string>;
  /** Every object whose key starts with `prefix`, in no particular order. */
  list(prefix: string): AsyncIterable<StoredObject>;
  delete(key: string): Promise<void>;
  /** Deletes every object under `prefix` (which ends with `/`); returns how many. */
  deletePrefix(prefix: string): Promise<number>;
  /** Drops unfinished uploads (S3 multipart uploads, local partial files) started before `olderThan`. */
  abortStaleUploads(olderThan: Date): Promise<number>;
  /**
   * Where the client should fetch the object itself, or null when the API sends the bytes
   * (the local store, or S3 with LECTERN_STORAGE_DOWNLOAD=proxy).
   */
  directLink(key: string, meta: DownloadMeta): Promise<DirectLink | null>;
  close(): Promise<void>;
}

/** The store cannot be reached, the bucket is missing or the credentials are refused (503). */
export class StorageUnavailable extends LecternError {
  constructor(message: string, options?: ErrorOptions) {
    super('STORAGE_UNAVAILABLE', message, options);
    this.name = 'StorageUnavailable';
  }
}

/** No object under the key. */
export class StorageNotFound extends Error {
  override name = 'StorageNotFound';
  constructor(readonly key: string) {
    super(`no stored object ${key}`);
  }
}

/** Refuses keys that are empty, absolute, or walk out of their folder. */
export function checkKey(key: string): string {
  const parts = key.split('/');
  // eslint-disable-next-line no-control-regex
  if (!key || key.startsWith('/') || key.includes('\\') || /[\u0000-\u001f\u007f]/.test(key) || parts.some((p) => p === '' || p === '.' || p === '..')) {
    throw new Error(`invalid storage key ${JSON.stringify(key)}`);
  }
  return key;
}

export const UPLOADS_PREFIX = 'uploads/';
export const OUTPUTS_PREFIX = 'outputs/';
export const VOICE_SAMPLES_PREFIX = 'voice-samples/';

export function uploadKey(id: string, ext: string): string {
  if (!isId(id)) throw new Error(`invalid upload id ${id}`);
  if (!/^[a-z0-9]{1,8}$/.test(ext)) throw new Error(`invalid upload extension ${ext}`);
  return `${UPLOADS_PREFIX}${id}.${ext}`;
}

/** The prefix under which all of one job's objects live (its outputs and its EPUB export). */
export function jobPrefix(jobId: string): string {
  if (!isId(jobId)) throw new Error(`invalid job id ${jobId}`);
  return `${OUTPUTS_PREFIX}${jobId}/`;
}

/** One of a job's files, by its name relative to the job (e.g. `narration.mp3`, `pages/p1.png`). */
export function outputKey(jobId: string, name: string): string {
  return checkKey(`${jobPrefix(jobId)}${name}`);
}

/** The job or upload id an object belongs to, or null for anything else (voice samples, foreign keys). */
export function ownerOfKey(key: string): { job: string } | { upload: string } | null {
  if (key.startsWith(OUTPUTS_PREFIX)) {
    const id = key.slice(OUTPUTS_PREFIX.length).split('/')[0]!;
    return isId(id) ? { job: id } : null;
  }
  if (key.startsWith(UPLOADS_PREFIX)) {
    const m = /^([0-9a-f-]{36})\.[a-z0-9]+$/.exec(key.slice(UPLOADS_PREFIX.length));
    return m && isId(m[1]!) ? { upload: m[1]! } : null;
  }
  return null;
}

/**
 * `use` on a local file holding a stored object (the local store's own file, or a copy in a
 * scratch folder of tmpDir where the store is a bucket), the folder removed after.
 */
export async function withLocalCopy<T>(storage: Storage, key: string, label: string, use: (file: string) => Promise<T>): Promise<T> {
  const dir = path.join(storage.tmpDir, scratchName(label));
  await fs.promises.mkdir(dir, { recursive: true });
  try {
    return await use(await storage.localCopy(key, dir));
  } finally {
    await fs.promises.rm(dir, { recursive: true, force: true });
  }
}

/**
 * A name for a scratch entry in tmpDir that records which process owns it (`@host_pid@`), so
 * a process starting on a data dir that others use too (embedded `serve` + `lectern worker`,
 * or a shared disk) removes only what dead processes left there.
 */
export function scratchName(prefix: string, suffix = ''): string {
  return `${prefix}@${os.hostname()}_${process.pid}@${randomUUID().slice(0, 8)}${suffix}`;
}

/** Whether a tmpDir entry was left by a process that is gone (unmarked entries count as left). */
export function isOrphanedScratch(name: string): boolean {
  const m = /@(.+)_(\d+)@/.exec(name);
  if (!m) return true;
  if (m[1] !== os.hostname()) return false; // another machine's: it cleans its own
  try {
    process.kill(Number(m[2]), 0);
    return false;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

/** Writes via a temporary file and rename, so a crash never leaves a half-written output. */
export async function writeFileAtomic(file: string, data: Buffer | string): Promise<void> {
  const tmp = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
  await fs.promises.writeFile(tmp, data);
  await fs.promises.rename(tmp, file);
}

/** Where uploads and outputs live: the data dir, or an S3-compatible bucket (LECTERN_STORAGE_URL). */
export interface StorageConfig {
  /** null → the local data dir. */
  s3: {
    bucket: string;
    prefix: string;
    /** AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL; set → path-style addressing. */
    endpoint: string | null;
    region: string | null;
    /** From AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY(/AWS_SESSION_TOKEN); null → the SDK's chain (profiles, instance roles). */
    credentials: { accessKeyId: string; secretAccessKey: string; sessionToken?: string } | null;
  } | null;
  /** LECTERN_STORAGE_DOWNLOAD: `redirect` to a presigned URL (default) or `proxy` through the API. */
  download: 'redirect' | 'proxy';
  /** LECTERN_STORAGE_LINK_EXPIRES_S: lifetime of presigned download URLs (default 300). */
  linkExpiresSeconds: number;
  /** LECTERN_STORAGE_SWEEP_INTERVAL_S: how often `serve` removes orphaned objects (default 3600; 0 → start-up only). */
  sweepIntervalSeconds: number;
}
