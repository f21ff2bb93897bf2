// JobStore on Kysely: the same queries on SQLite and PostgreSQL, except where atomicity
// needs the database's own tool (jsonb `||` vs. a write-locked transaction on SQLite).
// Rows become typed records here (toJob: config_json through parseJobConfig), and only here.
// Ownership is a condition of each query (onlyOwn), never a filter after reading.
import { sql, type Kysely, type Selectable } from 'kysely';
import { ownerFilter, type Caller } from '../core/caller.ts';
import { migrate, type Connection, type DB, type JobsTable, type UploadsTable } from './db.ts';
import { parseJobConfig } from './job-config.ts';
import type {
  JobConfig,
  JobConfigPatch,
  JobListQuery,
  JobPatch,
  JobRecord,
  JobStatus,
  JobStore,
  NewJob,
  PipelineType,
  Progress,
  UploadDeletion,
  UploadRecord,
} from './types.ts';

const iso = (v: string | Date): string => (v instanceof Date ? v.toISOString() : v);
const isoOrNull = (v: string | Date | null): string | null => (v === null ? null : iso(v));
const json = <T>(v: unknown): T => (typeof v === 'string' ? (JSON.parse(v) as T) : (v as T));

function toJob(r: Selectable<JobsTable>): JobRecord {
  return {
    id: r.id,
    pipeline_type: r.pipeline_type as PipelineType,
    status: r.status as JobStatus,
    config_json: parseJobConfig(json<unknown>(r.config_json)),
    owner: r.owner,
    worker_task_id: r.worker_task_id,
    progress: r.progress === null ? null : json<Progress | null>(r.progress),
    error: r.error,
    upload_ids: json<string[]>(r.upload_ids),
    attempts: Number(r.attempts),
    created_at: iso(r.created_at),
    updated_at: iso(r.updated_at),
    started_at: isoOrNull(r.started_at),
    finished_at: isoOrNull(r.finished_at),
  };
}

function toUpload(r: Selectable<UploadsTable>): UploadRecord {
  return {
    id: r.id,
    original_name: r.original_name,
    size_bytes: Number(r.size_bytes),
    content_type: r.content_type,
    kind: r.kind as UploadRecord['kind'],
    path: r.path,
    sha256: r.sha256,
    owner: r.owner,
    language: r.language,
    created_at: iso(r.created_at),
  };
}

/**
 * The caller's rows only: `WHERE owner = name` unless the caller sees all. The same query
 * whether the row is missing or someone else's, so the two answers cannot differ.
 */
function onlyOwn(caller: Caller) {
  const owner = ownerFilter(caller);
  return <QB extends { where(column: 'owner', op: '=', value: string): QB }>(qb: QB): QB => (owner === null ? qb : qb.where('owner', '=', owner));
}

/** JSON columns travel as text on both drivers (pg would turn a JS array into a PostgreSQL array). */
function patchColumns(patch: JobPatch): Partial<Record<keyof JobsTable, unknown>> {
  const out: Partial<Record<keyof JobsTable, unknown>> = {};
  for (const [k, v] of Object.entries(patch) as [keyof JobPatch, unknown][]) {
    if (v === undefined) continue;
    out[k] = k === 'progress' ? (v === null ? null : JSON.stringify(v)) : v;
  }
  out.updated_at = new Date().toISOString();
  return out;
}

export class KyselyJobStore implements JobStore {
  constructor(private readonly conn: Connection) {}

  private get db() {
    return this.conn.db;
  }

  migrate(): Promise<void> {
    return migrate(this.conn);
  }

  /**
   * Runs `fn` in a write transaction: BEGIN IMMEDIATE on SQLite (the file's write lock, which
   * also keeps other processes out); on PostgreSQL an ordinary transaction whose queries take
   * the row locks they need (FOR SHARE / FOR UPDATE).
   */
  private write<T>(fn: (db: Kysely<DB>) => Promise<T>): Promise<T> {
    if (this.conn.dialect === 'postgres') return this.db.transaction().execute(fn);
    return this.db.connection().execute(async (c) => {
      await sql`begin immediate`.execute(c);
      try {
        const result = await fn(c);
        await sql`commit`.execute(c);
        return result;
      } catch (err) {
        await sql`rollback`.execute(c);
        throw err;
      }
    });
  }

  async createJob(job: NewJob, caller: Caller): Promise<JobRecord | null> {
    const uploadIds = [...new Set(job.upload_ids)];
    const pg = this.conn.dialect === 'postgres';
    return this.write(async (db) => {
      if (uploadIds.length > 0) {
        // FOR SHARE: a deleteUpload of one of them waits for this insert, then sees the job.
        const usable = await db
          .selectFrom('uploads')
          .select('id')
          .where('id', 'in', uploadIds)
          .$call(onlyOwn(caller))
          .$if(pg, (q) => q.forShare())
          .execute();
        if (usable.length !== uploadIds.length) return null;
      }
      const now = new Date().toISOString();
      const row = await db
        .insertInto('jobs')
        .values({
          id: job.id,
          pipeline_type: job.pipeline_type,
          status: 'pending',
          config_json: JSON.stringify(job.config_json),
          owner: job.owner,
          worker_task_id: null,
          progress: null,
          error: null,
          upload_ids: JSON.stringify(job.upload_ids),
          attempts: 0,
          created_at: now,
          updated_at: now,
          started_at: null,
          finished_at: null,
        })
        .returningAll()
        .executeTakeFirstOrThrow();
      return toJob(row);
    });
  }

  async getJob(id: string, caller: Caller): Promise<JobRecord | null> {
    const row = await this.db.selectFrom('jobs').selectAll().where('id', '=', id).$call(onlyOwn(caller)).executeTakeFirst();
    return row ? toJob(row) : null;
  }

  async listJobs(q: JobListQuery, caller: Caller): Promise<{ jobs: JobRecord[]; total: number }> {
    const base = this.db
      .selectFrom('jobs')
      .$call(onlyOwn(caller))
      .$if(q.owner !== undefined, (b) => b.where('owner', '=', q.owner!))
      .$if(q.status !== undefined, (b) => b.where('status', '=', q.status!));
    const [rows, count] = await Promise.all([
      base.selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').limit(q.limit).offset(q.offset).execute(),
      base.select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow(),
    ]);
    return { jobs: rows.map(toJob), total: Number(count.n) };
  }

  async updateJob(id: string, patch: JobPatch): Promise<JobRecord | null> {
    const row = await this.db.updateTable('jobs').set(patchColumns(patch) as never).where('id', '=', id).returningAll().executeTakeFirst();
    return row ? toJob(row) : null;
  }

  async transition(id: string, from: readonly JobStatus[], patch: JobPatch & { status: JobStatus }): Promise<JobRecord | null> {
    if (from.length === 0) return null;
    // One UPDATE … WHERE status IN (…): of two racing transitions exactly one matches.
    const row = await this.db
      .updateTable('jobs')
      .set(patchColumns(patch) as never)
      .where('id', '=', id)
      .where('status', 'in', [...from])
      .returningAll()
      .executeTakeFirst();
    return row ? toJob(row) : null;
  }

  async mergeConfig(id: string, patch: JobConfigPatch): Promise<JobRecord | null> {
    const now = new Date().toISOString();
    if (this.conn.dialect === 'postgres') {
      const row = await this.db
        .updateTable('jobs')
        .set({ config_json: sql`config_json || ${JSON.stringify(patch)}::jsonb`, updated_at: now })
        .where('id', '=', id)
        .returningAll()
        .executeTakeFirst();
      return row ? toJob(row) : null;
    }
    // SQLite: json_patch would merge nested objects and drop null values, so read-merge-write
    // under the file's write lock.
    return this.write(async (c) => {
      const cur = await c.selectFrom('jobs').select('config_json').where('id', '=', id).executeTakeFirst();
      if (!cur) return null;
      const merged = { ...json<Record<string, unknown>>(cur.config_json), ...patch };
      const row = await c
        .updateTable('jobs')
        .set({ config_json: JSON.stringify(merged), updated_at: now })
        .where('id', '=', id)
        .returningAll()
        .executeTakeFirst();
      return row ? toJob(row) : null;
    });
  }

  async mergeConfigIf(
    id: string,
    when: { statuses: readonly JobStatus[]; key: keyof JobConfig; values: ReadonlyArray<string | null> },
    patch: JobConfigPatch,
  ): Promise<JobRecord | null> {
    if (when.statuses.length === 0 || when.values.length === 0) return null;
    const now = new Date().toISOString();
    const values = when.values.filter((v): v is string => v !== null);
    const allowNull = when.values.includes(null);
    if (this.conn.dialect === 'postgres') {
      // One UPDATE … WHERE on the jsonb key: PostgreSQL re-checks the row after a concurrent update.
      const current = sql`config_json->>${when.key}`;
      const tests = [...(allowNull ? [sql`${current} is null`] : []), ...(values.length ? [sql`${current} in (${sql.join(values)})`] : [])];
      const row = await this.db
        .updateTable('jobs')
        .set({ config_json: sql`config_json || ${JSON.stringify(patch)}::jsonb`, updated_at: now })
        .where('id', '=', id)
        .where('status', 'in', [...when.statuses])
        .where(sql<boolean>`(${sql.join(tests, sql` or `)})`)
        .returningAll()
        .executeTakeFirst();
      return row ? toJob(row) : null;
    }
    // SQLite: check and write under the file's write lock, like mergeConfig.
    return this.write(async (c) => {
      const cur = await c.selectFrom('jobs').select(['config_json', 'status']).where('id', '=', id).executeTakeFirst();
      if (!cur || !when.statuses.includes(cur.status as JobStatus)) return null;
      const config = json<Record<string, unknown>>(cur.config_json);
      const value = config[when.key];
      const matches = value === undefined || value === null ? allowNull : typeof value === 'string' && values.includes(value);
      if (!matches) return null;
      const row = await c
        .updateTable('jobs')
        .set({ config_json: JSON.stringify({ ...config, ...patch }), updated_at: now })
        .where('id', '=', id)
        .returningAll()
        .executeTakeFirst();
      return row ? toJob(row) : null;
    });
  }

  async deleteJob(id: string, caller: Caller): Promise<boolean> {
    const r = await this.db.deleteFrom('jobs').where('id', '=', id).$call(onlyOwn(caller)).executeTakeFirst();
    return Number(r.numDeletedRows) > 0;
  }

  async countActiveJobs(owner: string | null): Promise<number> {
    const r = await this.db
      .selectFrom('jobs')
      .where('status', 'in', ['pending', 'running'])
      .where('owner', owner === null ? 'is' : '=', owner)
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirstOrThrow();
    return Number(r.n);
  }

  countJobsUsingUpload(uploadId: string): Promise<number> {
    return this.jobsUsingUpload(this.db, uploadId);
  }

  private async jobsUsingUpload(db: Kysely<DB>, uploadId: string): Promise<number> {
    const q =
      this.conn.dialect === 'postgres'
        ? db.selectFrom('jobs').where(sql<boolean>`upload_ids @> ${JSON.stringify([uploadId])}::jsonb`)
        : db.selectFrom('jobs').where(sql<boolean>`exists (select 1 from json_each(jobs.upload_ids) where value = ${uploadId})`);
    const r = await q.select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow();
    return Number(r.n);
  }

  async createUpload(u: UploadRecord): Promise<UploadRecord> {
    const row = await this.db.insertInto('uploads').values(u).returningAll().executeTakeFirstOrThrow();
    return toUpload(row);
  }

  async getUpload(id: string, caller: Caller): Promise<UploadRecord | null> {
    const row = await this.db.selectFrom('uploads').selectAll().where('id', '=', id).$call(onlyOwn(caller)).executeTakeFirst();
    return row ? toUpload(row) : null;
  }

  async deleteUpload(id: string, caller: Caller): Promise<UploadDeletion> {
    const pg = this.conn.dialect === 'postgres';
    return this.write(async (db) => {
      // FOR UPDATE: a createJob naming this upload either committed before (and is counted
      // below, read after the lock) or waits and then finds the upload gone.
      const row = await db.selectFrom('uploads').selectAll().where('id', '=', id).$call(onlyOwn(caller)).$if(pg, (q) => q.forUpdate()).executeTakeFirst();
      if (!row) return { outcome: 'missing' };
      const jobs = await this.jobsUsingUpload(db, id);
      if (jobs > 0) return { outcome: 'in-use', jobs };
      await db.deleteFrom('uploads').where('id', '=', id).execute();
      return { outcome: 'deleted', upload: toUpload(row) };
    });
  }

  /** The connection is shared by the embedded queue/KV/events; Stores.close() destroys it. */
  async close(): Promise<void> {}
}
