// JobStore on Kysely: the same queries on SQLite and PostgreSQL, except where atomicity
// needs the database's own tool (jsonb `||` vs. a write-locked transaction on SQLite).
import { sql, type Selectable } from 'kysely';
import { migrate, type Connection, type JobsTable, type UploadsTable } from './db.ts';
import type { JobPatch, JobRecord, JobStatus, JobStore, NewJob, PipelineType, Progress, UploadRecord } from './types.ts';

const iso = (v: string | Date): string => (v instanceof Date ? v.toISOString() : v);
const isoOrNull = (v: string | Date | null): string | null => (v === null ? null : iso(v));
const json = <T>(v: unknown): T => (typeof v === 'string' ? (JSON.parse(v) as T) : (v as T));

function toJob(r: Selectable<JobsTable>): JobRecord {
  return {
    id: r.id,
    pipeline_type: r.pipeline_type as PipelineType,
    status: r.status as JobStatus,
    config_json: json<Record<string, unknown>>(r.config_json),
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
    created_at: iso(r.created_at),
  };
}

/** JSON columns travel as text on both drivers (pg would turn a JS array into a PostgreSQL array). */
function patchColumns(patch: JobPatch): Partial<Record<keyof JobsTable, unknown>> {
  const out: Partial<Record<keyof JobsTable, unknown>> = {};
  for (const [k, v] of Object.entries(patch) as [keyof JobPatch, unknown][]) {
    if (v === undefined) continue;
    out[k] = k === 'config_json' || k === 'progress' ? (v === null ? null : JSON.stringify(v)) : v;
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

  async createJob(job: NewJob): Promise<JobRecord> {
    const now = new Date().toISOString();
    const row = await this.db
      .insertInto('jobs')
      .values({
        id: job.id,
        pipeline_type: job.pipeline_type,
        status: 'pending',
        config_json: JSON.stringify(job.config_json),
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
  }

  async getJob(id: string): Promise<JobRecord | null> {
    const row = await this.db.selectFrom('jobs').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? toJob(row) : null;
  }

  async listJobs(q: { status?: JobStatus; limit: number; offset: number }): Promise<{ jobs: JobRecord[]; total: number }> {
    let base = this.db.selectFrom('jobs');
    if (q.status) base = base.where('status', '=', q.status);
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

  async mergeConfig(id: string, patch: Record<string, unknown>): Promise<JobRecord | null> {
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
    // under the file's write lock (BEGIN IMMEDIATE also keeps other processes out).
    return this.db.connection().execute(async (c) => {
      await sql`begin immediate`.execute(c);
      try {
        const cur = await c.selectFrom('jobs').select('config_json').where('id', '=', id).executeTakeFirst();
        let row: Selectable<JobsTable> | undefined;
        if (cur) {
          const merged = { ...json<Record<string, unknown>>(cur.config_json), ...patch };
          row = await c
            .updateTable('jobs')
            .set({ config_json: JSON.stringify(merged), updated_at: now })
            .where('id', '=', id)
            .returningAll()
            .executeTakeFirst();
        }
        await sql`commit`.execute(c);
        return row ? toJob(row) : null;
      } catch (err) {
        await sql`rollback`.execute(c);
        throw err;
      }
    });
  }

  async mergeConfigIf(
    id: string,
    when: { statuses: readonly JobStatus[]; key: string; values: ReadonlyArray<string | null> },
    patch: Record<string, unknown>,
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
    return this.db.connection().execute(async (c) => {
      await sql`begin immediate`.execute(c);
      try {
        const cur = await c.selectFrom('jobs').select(['config_json', 'status']).where('id', '=', id).executeTakeFirst();
        let row: Selectable<JobsTable> | undefined;
        if (cur && when.statuses.includes(cur.status as JobStatus)) {
          const config = json<Record<string, unknown>>(cur.config_json);
          const value = config[when.key];
          const matches = value === undefined || value === null ? allowNull : typeof value === 'string' && values.includes(value);
          if (matches) {
            row = await c
              .updateTable('jobs')
              .set({ config_json: JSON.stringify({ ...config, ...patch }), updated_at: now })
              .where('id', '=', id)
              .returningAll()
              .executeTakeFirst();
          }
        }
        await sql`commit`.execute(c);
        return row ? toJob(row) : null;
      } catch (err) {
        await sql`rollback`.execute(c);
        throw err;
      }
    });
  }

  async deleteJob(id: string): Promise<boolean> {
    const r = await this.db.deleteFrom('jobs').where('id', '=', id).executeTakeFirst();
    return Number(r.numDeletedRows) > 0;
  }

  async countActiveJobs(owner: string | null): Promise<number> {
    const createdBy =
      this.conn.dialect === 'postgres' ? sql<string | null>`config_json->>'created_by'` : sql<string | null>`json_extract(config_json, '$.created_by')`;
    const r = await this.db
      .selectFrom('jobs')
      .where('status', 'in', ['pending', 'running'])
      .where(owner === null ? sql<boolean>`${createdBy} is null` : sql<boolean>`${createdBy} = ${owner}`)
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirstOrThrow();
    return Number(r.n);
  }

  async countJobsUsingUpload(uploadId: string): Promise<number> {
    const q =
      this.conn.dialect === 'postgres'
        ? this.db.selectFrom('jobs').where(sql<boolean>`upload_ids @> ${JSON.stringify([uploadId])}::jsonb`)
        : this.db.selectFrom('jobs').where(sql<boolean>`exists (select 1 from json_each(jobs.upload_ids) where value = ${uploadId})`);
    const r = await q.select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow();
    return Number(r.n);
  }

  async createUpload(u: UploadRecord): Promise<UploadRecord> {
    const row = await this.db.insertInto('uploads').values(u).returningAll().executeTakeFirstOrThrow();
    return toUpload(row);
  }

  async getUpload(id: string): Promise<UploadRecord | null> {
    const row = await this.db.selectFrom('uploads').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? toUpload(row) : null;
  }

  async deleteUpload(id: string): Promise<boolean> {
    const r = await this.db.deleteFrom('uploads').where('id', '=', id).executeTakeFirst();
    return Number(r.numDeletedRows) > 0;
  }

  /** The connection is shared by the embedded queue/KV/events; Stores.close() destroys it. */
  async close(): Promise<void> {}
}
