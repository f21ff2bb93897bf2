// JobService on its own, without HTTP: the embedded stores (a real SQLite file, the SQLite
// queue, KV and events), the local data-dir storage and uploads made by the real
// UploadService from fixture files. Create, get, list, stop, delete, output and files; the
// active-job limit; ownership; and every refusal by its error code and status.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadServiceConfig } from '../src/config.ts';
import { INTERNAL, tokenCaller, UNAUTHENTICATED, type Caller } from '../src/core/caller.ts';
import { LecternError } from '../src/core/errors.ts';
import { createStores } from '../src/jobs/index.ts';
import { cancelKey, CANCEL_FLAG_TTL_SECONDS, JobService, type Requester } from '../src/jobs/job-service.ts';
import type { JobCreateRequest } from '../src/jobs/job-config.ts';
import type { JobEvent, Stores, UploadRecord } from '../src/jobs/types.ts';
import { UploadService } from '../src/jobs/upload-service.ts';
import { createLogger } from '../src/log.ts';
import { outputKey } from '../src/storage.ts';
import { createStorage } from '../src/storage/index.ts';
import { makeEpub3, makePdf } from './helpers/make-documents.ts';
import type { Storage } from '../src/storage.ts';

const FIX = path.join(import.meta.dirname, 'fixtures');
const log = createLogger('silent', 'job-service-test');
const alice = tokenCaller('alice', false);
const bob = tokenCaller('bob', false);
const root = tokenCaller('root', true);
const as = (caller: Caller): Requester => ({ caller, requestId: 'req-1' });

let tmp: string;
let stores: Stores;
let storage: Storage;
let uploads: UploadService;

beforeAll(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'lectern-job-service-'));
  const config = loadServiceConfig({}, { LECTERN_DATA_DIR: tmp, LECTERN_LOG_LEVEL: 'silent' });
  stores = await createStores(config, log);
  storage = createStorage(config);
  await storage.init();
  uploads = new UploadService(stores.jobs, storage, log, 50 * 1024 * 1024);
});

afterAll(async () => {
  await stores?.close();
  await storage?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

const upload = (name: string, bytes: Buffer | string, owner: string | null): Promise<UploadRecord> => uploads.create(Readable.from([Buffer.from(bytes)]), name, owner);
const markdown = (owner: string | null) => upload('My Notes.md', '# Notes\n\nHello there. This is a short document.\n', owner);
const service = (opts: ConstructorParameters<typeof JobService>[3] = {}) => new JobService(stores, storage, log, opts);
const audioJob = (docId: string, extra: Partial<JobCreateRequest> = {}): JobCreateRequest => ({ pipeline_type: 'audio', uploaded_file_id: docId, ...extra });

/** The LecternError a promise rejects with (fails the test otherwise). */
async function refusal(p: Promise<unknown>): Promise<LecternError> {
  const e = await p.then(
    () => {
      throw new Error('expected a refusal, the call succeeded');
    },
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(LecternError);
  return e as LecternError;
}

describe('create', () => {
  it('stores a pending job with its defaults made explicit, owned by the caller, and queues it', async () => {
    const doc = await markdown('alice');
    const job = await service().create(audioJob(doc.id), as(alice));
    expect(job.status).toBe('pending');
    expect(job.owner).toBe('alice');
    expect(job.worker_task_id).toBeTruthy();
    expect(job.config_json).toMatchObject({
      pipeline_type: 'audio',
      uploaded_file_id: doc.id,
      language: 'en-US',
      voice_id: null,
      options: { format: 'mp3', speed: 1 },
      document: { original_name: 'My Notes.md' },
      created_by: 'alice',
      request_id: 'req-1',
    });
    // The same record comes back from the store, and the queue holds its task.
    expect((await service().get(job.id, alice)).config_json).toEqual(job.config_json);
    expect(await stores.queue.remove(job.worker_task_id!)).toBe(true);
  });

  it('answers with the record as created even where a worker claims the task before its id is stored', async () => {
    const doc = await markdown('alice');
    // A worker that wins the race: it takes the job to running inside enqueue, before the
    // service stores the task id (what a fast distributed worker does now and then).
    const fastWorker: Stores = {
      ...stores,
      close: () => stores.close(),
      queue: Object.assign(Object.create(stores.queue) as Stores['queue'], {
        enqueue: async (jobId: string) => {
          const task = await stores.queue.enqueue(jobId);
          expect(await stores.jobs.transition(jobId, ['pending'], { status: 'running', started_at: new Date().toISOString() })).not.toBeNull();
          return task;
        },
      }),
    };
    const job = await new JobService(fastWorker, storage, log).create(audioJob(doc.id), as(alice));
    expect(job.status).toBe('pending');
    expect(job.worker_task_id).toBeTruthy();
    const now = await service().get(job.id, alice);
    expect([now.status, now.worker_task_id]).toEqual(['running', job.worker_task_id]);
    expect(await stores.queue.remove(job.worker_task_id!)).toBe(true);
    await stores.jobs.updateJob(job.id, { status: 'failed', error: 'test over', finished_at: new Date().toISOString() });
  });

  it.each([
    ['an upload id that does not exist', () => audioJob('00000000-0000-4000-8000-000000000000'), 'NOT_FOUND', 404, /uploaded_file_id: upload 00000000-0000-4000-8000-000000000000 not found/],
    ['an id that is not an id', () => audioJob('../etc/passwd'), 'NOT_FOUND', 404, /uploaded_file_id: upload \.\.\/etc\/passwd not found/],
  ])('refuses %s', async (_what, req, code, status, message) => {
    const e = await refusal(service().create(req(), as(alice)));
    expect([e.code, e.statusCode]).toEqual([code, status]);
    expect(e.message).toMatch(message);
  });

  it('refuses another token’s upload with the same 404 as a missing one', async () => {
    const doc = await markdown('bob');
    const e = await refusal(service().create(audioJob(doc.id), as(alice)));
    expect([e.code, e.statusCode, e.message]).toEqual(['NOT_FOUND', 404, `uploaded_file_id: upload ${doc.id} not found`]);
  });

  it('refuses an audio file as the document (INVALID, 422)', async () => {
    const wav = await upload('jfk.wav', fs.readFileSync(path.join(FIX, 'speech', 'jfk.wav')), 'alice');
    const e = await refusal(service().create(audioJob(wav.id), as(alice)));
    expect([e.code, e.statusCode]).toEqual(['INVALID', 422]);
    expect(e.message).toMatch(`uploaded_file_id ${wav.id} is audio, not a document`);
  });

  it('refuses a reference clip without cloning (INVALID), and a lip-sync job without a presenter video', async () => {
    const doc = await markdown('alice');
    const wav = await upload('jfk.wav', fs.readFileSync(path.join(FIX, 'speech', 'jfk.wav')), 'alice');
    const clone = await refusal(service({}).create(audioJob(doc.id, { ref_audio_file_id: wav.id, ref_text: 'And so my fellow Americans' }), as(alice)));
    expect([clone.code, clone.statusCode]).toEqual(['INVALID', 422]);
    expect(clone.message).toMatch(/needs a GPU server with a cloning backend/);
    const lipsync = await refusal(service().create({ pipeline_type: 'lipsync', uploaded_file_id: doc.id }, as(alice)));
    expect([lipsync.code, lipsync.statusCode]).toEqual(['INVALID', 422]);
    expect(lipsync.message).toMatch(/a lip-sync job needs a presenter video/);
  });

  it('refuses an output format the pipeline does not make (INVALID)', async () => {
    const doc = await markdown('alice');
    const e = await refusal(service().create(audioJob(doc.id, { options: { format: 'reader' } }), as(alice)));
    expect([e.code, e.statusCode]).toEqual(['INVALID', 422]);
    expect(e.message).toMatch(/reader/);
  });
});

describe("a job's language", () => {
  const epub = (language: string) =>
    makeEpub3({ title: 'Le livre', author: 'A. Auteur', language, chapters: [{ title: 'Un', paragraphs: ['Il était une fois un petit livre écrit en français.'] }] });
  const pdf = (language?: string) => makePdf({ pages: [[{ text: 'Ein kurzer Satz auf Deutsch.', x: 72, y: 700, size: 12 }]], ...(language ? { language } : {}) });
  const created = async (name: string, bytes: Buffer | string, extra: Partial<JobCreateRequest> = {}) => {
    const doc = await upload(name, bytes, 'alice');
    const job = await service().create(audioJob(doc.id, extra), as(alice));
    await stores.queue.remove(job.worker_task_id!);
    return job.config_json.language;
  };

  it('is the one the document declares when the request names none (EPUB dc:language, PDF /Lang), written as a BCP-47 tag', async () => {
    expect(await created('livre.epub', epub('fr'))).toBe('fr');
    expect(await created('livre-ca.epub', epub('fr_CA'))).toBe('fr-CA');
    expect(await created('satz.pdf', pdf('de-DE'))).toBe('de-DE');
  });

  it('is read once, at upload: the upload record says it (null for a document that declares none, and for audio)', async () => {
    expect((await upload('livre.epub', epub('fr_CA'), 'alice')).language).toBe('fr-CA');
    expect((await upload('satz.pdf', pdf('de-DE'), 'alice')).language).toBe('de-DE');
    expect((await upload('satz.pdf', pdf(), 'alice')).language).toBeNull();
    expect((await upload('notes.md', '# Notes\n\nHello.\n', 'alice')).language).toBeNull();
    expect((await upload('jfk.wav', fs.readFileSync(path.join(FIX, 'speech/jfk.wav')), 'alice')).language).toBeNull();
  });

  it('is read from the document at creation for an upload stored before uploads recorded it (schema 4)', async () => {
    const doc = await upload('livre.epub', epub('fr'), 'alice');
    await stores.jobs.createUpload({ ...doc, id: '4b1d0c4e-0000-4000-8000-000000000001', language: null, path: doc.path }); // the same bytes, as an older row
    const job = await service().create(audioJob('4b1d0c4e-0000-4000-8000-000000000001'), as(alice));
    await stores.queue.remove(job.worker_task_id!);
    expect(job.config_json.language).toBe('fr');
  });

  it("is the request's when it names one, and en-US when neither does or the declaration is not a language tag", async () => {
    expect(await created('livre.epub', epub('fr'), { language: 'it' })).toBe('it');
    expect(await created('satz.pdf', pdf())).toBe('en-US');
    expect(await created('livre.epub', epub('French (Canada)'))).toBe('en-US');
    expect(await created('notes.md', '# Notes\n\nHello.\n')).toBe('en-US');
  });

  it("refuses a readalong job whose document declares a language no aligner covers, saying where the language came from", async () => {
    const doc = await upload('book.epub', epub('qaa'), 'alice');
    const wav = await upload('jfk.wav', fs.readFileSync(path.join(FIX, 'speech/jfk.wav')), 'alice');
    const e = await refusal(service().create({ pipeline_type: 'readalong', uploaded_file_id: doc.id, audio_file_ids: [wav.id] }, as(alice)));
    expect([e.code, e.statusCode]).toEqual(['INVALID', 422]);
    expect(e.message).toMatch(/language "qaa" \(the document declares it; pass language to override\)/);
  });
});

describe('the active-job limit', () => {
  it('counts pending and running jobs per owner; concurrent creations cannot overshoot', async () => {
    const limited = service({ maxActiveJobsPerOwner: 2 });
    const carol = tokenCaller('carol', false);
    const dave = tokenCaller('dave', false);
    const doc = await markdown('carol');
    const results = await Promise.allSettled(Array.from({ length: 5 }, () => limited.create(audioJob(doc.id), as(carol))));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(2);
    const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected').map((r) => r.reason as LecternError);
    expect(refused).toHaveLength(3);
    for (const e of refused) {
      expect([e.code, e.statusCode]).toEqual(['ACTIVE_JOB_LIMIT', 429]);
      expect(e.message).toMatch(/too many active jobs: 2 pending or running for token "carol", the limit is 2/);
    }
    // Another owner has a limit of their own.
    expect((await limited.create(audioJob((await markdown('dave')).id), as(dave))).status).toBe('pending');
    // A finished job frees its place.
    const first = (results[0] as PromiseFulfilledResult<{ id: string }>).value;
    await stores.jobs.updateJob(first.id, { status: 'completed', finished_at: new Date().toISOString() });
    expect((await limited.create(audioJob(doc.id), as(carol))).status).toBe('pending');
  });

  it('0 means no limit', async () => {
    const doc = await markdown('erin');
    const erin = tokenCaller('erin', false);
    const jobs = await Promise.all(Array.from({ length: 4 }, () => service({ maxActiveJobsPerOwner: 0 }).create(audioJob(doc.id), as(erin))));
    expect(new Set(jobs.map((j) => j.id)).size).toBe(4);
  });
});

describe('get and list: ownership', () => {
  it('an owner sees their jobs; another token gets the same 404 as for a missing id; an admin sees all', async () => {
    const s = service();
    const mine = await s.create(audioJob((await markdown('frank')).id), as(tokenCaller('frank', false)));
    const theirs = await s.create(audioJob((await markdown('grace')).id), as(tokenCaller('grace', false)));
    const frank = tokenCaller('frank', false);
    expect((await s.get(mine.id, frank)).id).toBe(mine.id);
    const notYours = await refusal(s.get(theirs.id, frank));
    const missing = await refusal(s.get('00000000-0000-4000-8000-000000000001', frank));
    expect([notYours.code, notYours.statusCode, missing.code, missing.statusCode]).toEqual(['NOT_FOUND', 404, 'NOT_FOUND', 404]);
    expect(notYours.message).toBe(`job ${theirs.id} not found`);
    expect((await refusal(s.get('not-an-id', frank))).code).toBe('NOT_FOUND');
    expect((await s.get(theirs.id, root)).owner).toBe('grace');
    expect((await s.get(theirs.id, UNAUTHENTICATED)).owner).toBe('grace');

    const own = await s.list({ limit: 100, offset: 0 }, frank);
    expect(own.jobs.map((j) => j.id)).toEqual([mine.id]);
    expect(own.total).toBe(1);
    const all = await s.list({ limit: 100, offset: 0 }, root);
    expect(all.jobs.map((j) => j.id)).toEqual(expect.arrayContaining([mine.id, theirs.id]));
    expect(all.total).toBeGreaterThan(own.total);
    const completedOnly = await s.list({ limit: 100, offset: 0, status: 'completed' }, frank);
    expect(completedOnly.jobs).toEqual([]);
  });
});

describe('stop', () => {
  it('sets a lip-sync job’s cancel flag for a day; refuses other pipelines and finished jobs (CONFLICT, 409)', async () => {
    const s = service();
    const doc = await markdown('alice');
    const video = await upload('presenter.mp4', fs.readFileSync(path.join(FIX, 'video', 'presenter.mp4')), 'alice');
    const lipsync = await s.create({ pipeline_type: 'lipsync', uploaded_file_id: doc.id, ref_video_file_id: video.id, options: { format: 'reader' } }, as(alice));
    await s.stop(lipsync.id, alice);
    expect(await stores.kv.get(cancelKey(lipsync.id))).toBe('1');
    const ttl = (await stores.kv.ttl(cancelKey(lipsync.id)))!;
    expect(ttl).toBeGreaterThan(CANCEL_FLAG_TTL_SECONDS - 60);
    expect(ttl).toBeLessThanOrEqual(CANCEL_FLAG_TTL_SECONDS);

    const audio = await s.create(audioJob(doc.id), as(alice));
    const notLipsync = await refusal(s.stop(audio.id, alice));
    expect([notLipsync.code, notLipsync.statusCode]).toEqual(['CONFLICT', 409]);
    expect(notLipsync.message).toMatch(/only lip-sync and read-along jobs can be stopped early/);
    expect(await stores.kv.get(cancelKey(audio.id))).toBeNull();

    await stores.jobs.updateJob(lipsync.id, { status: 'completed', finished_at: new Date().toISOString() });
    const done = await refusal(s.stop(lipsync.id, alice));
    expect([done.code, done.message]).toEqual(['CONFLICT', `job ${lipsync.id} is completed, not running`]);
    expect((await refusal(s.stop(lipsync.id, bob))).code).toBe('NOT_FOUND');
  });
});

describe('delete', () => {
  it('a pending job: cancel flag set, its task taken off the queue, the row and its files gone, a last event sent', async () => {
    const s = service();
    const job = await s.create(audioJob((await markdown('alice')).id), as(alice));
    const key = outputKey(job.id, 'narration.mp3');
    await storage.put(key, Readable.from([Buffer.from('ID3 not really audio')]), { contentType: 'audio/mpeg' });
    const events: JobEvent[] = [];
    const unsubscribe = await stores.events.subscribe(job.id, (e) => events.push(e));
    try {
      // Another token cannot delete it: 404, and nothing changes.
      expect((await refusal(s.delete(job.id, bob))).code).toBe('NOT_FOUND');
      expect(await storage.stat(key)).not.toBeNull();

      await s.delete(job.id, alice);
      expect(await stores.kv.get(cancelKey(job.id))).toBe('1');
      expect(await stores.queue.remove(job.worker_task_id!)).toBe(false); // already removed
      expect(await stores.jobs.getJob(job.id, INTERNAL)).toBeNull();
      expect(await storage.stat(key)).toBeNull();
      await expect.poll(() => events).toContainEqual({ type: 'status', status: 'failed', error: 'job deleted' });
      expect((await refusal(s.delete(job.id, alice))).code).toBe('NOT_FOUND');
    } finally {
      await unsubscribe();
    }
  });
});

describe('output and files', () => {
  it('409 while a job has no output; then the output named after the document, and only listed files', async () => {
    const s = service();
    const job = await s.create(audioJob((await markdown('alice')).id), as(alice));
    const early = await refusal(s.output(job.id, alice));
    expect([early.code, early.statusCode, early.message]).toEqual(['CONFLICT', 409, `job ${job.id} is pending and has no output yet`]);

    await stores.jobs.mergeConfig(job.id, { result: { output: 'narration.mp3', files: ['narration.mp3', 'timeline.json'], duration_seconds: 1 } });
    await stores.jobs.updateJob(job.id, { status: 'completed', finished_at: new Date().toISOString() });
    const missing = await refusal(s.output(job.id, alice));
    expect([missing.code, missing.message]).toEqual(['CONFLICT', `job ${job.id}'s output file is missing`]);

    await storage.put(outputKey(job.id, 'narration.mp3'), Readable.from([Buffer.from('mp3')]), { contentType: 'audio/mpeg' });
    await storage.put(outputKey(job.id, 'timeline.json'), Readable.from([Buffer.from('[]')]), { contentType: 'application/json' });
    const out = await s.output(job.id, alice);
    expect(out).toEqual({ key: outputKey(job.id, 'narration.mp3'), meta: { filename: 'My Notes.mp3', contentType: 'audio/mpeg', inline: false } });
    expect((await refusal(s.output(job.id, bob))).code).toBe('NOT_FOUND');

    expect((await s.file(job.id, 'timeline.json', alice)).meta).toMatchObject({ filename: 'timeline.json', contentType: 'application/json' });
    for (const name of ['words.json', '../other/narration.mp3', 'narration.mp3/../../x']) {
      const e = await refusal(s.file(job.id, name, alice));
      expect([e.code, e.statusCode]).toEqual(['NOT_FOUND', 404]);
    }
  });

  it('EPUB export is refused for a job that is not a finished lip-sync reader (CONFLICT)', async () => {
    const s = service();
    const job = await s.create(audioJob((await markdown('alice')).id), as(alice));
    const e = await refusal(s.exportEpub(job.id, alice));
    expect([e.code, e.statusCode]).toEqual(['CONFLICT', 409]);
    expect((await s.exportStatus(job.id, alice)).export_status ?? null).toBeNull();
    expect((await refusal(s.exportFile(job.id, alice))).code).toBe('CONFLICT');
  });
});
