// One Kysely schema for both databases: connection set-up and an idempotent migrator.
// PostgreSQL keeps everything in the namespace schema (search_path on every pooled
// connection); SQLite is one WAL file shared by `serve` and any `lectern worker` processes.
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { Kysely, PostgresDialect, SqliteDialect, sql, type Generated, type SchemaModule } from 'kysely';

export type Dialect = 'sqlite' | 'postgres';

/** Column shapes as the drivers return them: PostgreSQL gives parsed jsonb, Dates and int8 strings; SQLite gives text. */
export interface JobsTable {
  id: string;
  pipeline_type: string;
  status: string;
  config_json: unknown;
  /** Migration 3: the creating token's name (null: no authentication, or from before). */
  owner: string | null;
  worker_task_id: string | null;
  progress: unknown;
  error: string | null;
  upload_ids: unknown;
  attempts: number;
  created_at: string | Date;
  updated_at: string | Date;
  started_at: string | Date | null;
  finished_at: string | Date | null;
}

export interface UploadsTable {
  id: string;
  original_name: string;
  size_bytes: number | string;
  content_type: string;
  kind: string;
  path: string;
  sha256: string;
  /** Migration 3: the uploading token's name (null: no authentication, or from before). */
  owner: string | null;
  /** Migration 4: the language a document declares (null: none, not a document, or from before). */
  language: string | null;
  created_at: string | Date;
}

/** Embedded only: the durable queue. lease_until is epoch milliseconds. */
export interface QueueTasksTable {
  id: Generated<number>;
  job_id: string;
  /** TaskKind: 'pipeline' or 'export-epub' (migration 2). */
  kind: Generated<'pipeline' | 'export-epub'>;
  state: 'queued' | 'leased' | 'done' | 'failed';
  owner: string | null;
  lease_until: number | null;
  attempts: number;
  created_at: string;
  updated_at: string;
}

/** Embedded only: key-value with expiry (epoch milliseconds). */
export interface KvTable {
  key: string;
  value: string;
  expires_at: number;
}

/** Embedded only: events for subscribers in other processes sharing the file. */
export interface EventsTable {
  id: Generated<number>;
  job_id: string;
  origin: string;
  payload: string;
  created_at: number;
}

export interface DB {
  jobs: JobsTable;
  uploads: UploadsTable;
  queue_tasks: QueueTasksTable;
  kv: KvTable;
  events: EventsTable;
  lectern_migrations: { version: number; applied_at: string };
}

export interface Connection {
  dialect: Dialect;
  db: Kysely<DB>;
  /** SQLite file path (absolute) or the PostgreSQL schema. */
  location: string;
  close(): Promise<void>;
}

/** Milliseconds a SQLite statement waits for another process's write lock before failing. */
const SQLITE_BUSY_TIMEOUT_MS = 10_000;

/**
 * One better-sqlite3 connection per file per process, shared by every Stores opened on it.
 * Two connections in one process would deadlock: a transaction awaiting between statements
 * holds the write lock while the other connection's busy-wait blocks the whole event loop.
 */
const sqliteOpen = new Map<string, { conn: Connection; refs: number }>();

export function openSqlite(file: string): Connection {
  const location = path.resolve(file);
  const cached = sqliteOpen.get(location);
  if (cached) {
    cached.refs++;
    return cached.conn;
  }
  fs.mkdirSync(path.dirname(location), { recursive: true });
  const database = new Database(location, { timeout: SQLITE_BUSY_TIMEOUT_MS });
  database.pragma('journal_mode = WAL');
  // WAL + NORMAL is durable against process crashes (the case that matters here), not power loss mid-commit.
  database.pragma('synchronous = NORMAL');
  const db = new Kysely<DB>({ dialect: new SqliteDialect({ database }) });
  const conn: Connection = {
    dialect: 'sqlite',
    db,
    location,
    async close() {
      const entry = sqliteOpen.get(location);
      if (!entry || --entry.refs > 0) return;
      sqliteOpen.delete(location);
      await db.destroy();
    },
  };
  sqliteOpen.set(location, { conn, refs: 1 });
  return conn;
}

export function openPostgres(url: string, schema: string, poolSize = 10): Connection {
  // The schema name is validated by the config ([a-z][a-z0-9_]*), so it is safe in the options string.
  const pool = new pg.Pool({ connectionString: url, max: poolSize, options: `-c search_path=${schema}` });
  // An idle client that loses its server would otherwise crash the process with an unhandled 'error'.
  pool.on('error', () => undefined);
  const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
  return { dialect: 'postgres', db, location: schema, close: () => db.destroy() };
}

interface Migration {
  version: number;
  up(schema: SchemaModule, db: Kysely<DB>, conn: Connection): Promise<void>;
}

const MIGRATIONS: Migration[] = [
  {
    version: 1,
    async up(s, db, { dialect, location }) {
      const json = dialect === 'postgres' ? 'jsonb' : 'text';
      const ts = dialect === 'postgres' ? sql`timestamptz(3)` : sql`text`;
      await s
        .createTable('jobs')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('pipeline_type', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('config_json', json, (c) => c.notNull())
        .addColumn('worker_task_id', 'text')
        .addColumn('progress', json)
        .addColumn('error', 'text')
        .addColumn('upload_ids', json, (c) => c.notNull())
        .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', ts, (c) => c.notNull())
        .addColumn('updated_at', ts, (c) => c.notNull())
        .addColumn('started_at', ts)
        .addColumn('finished_at', ts)
        .execute();
      // listJobs orders by (created_at desc, id desc), with or without a status filter.
      await s.createIndex('jobs_created_idx').on('jobs').columns(['created_at', 'id']).execute();
      await s.createIndex('jobs_status_created_idx').on('jobs').columns(['status', 'created_at', 'id']).execute();
      if (dialect === 'postgres') {
        // countJobsUsingUpload: upload_ids @> '["id"]'
        await sql`create index jobs_upload_ids_idx on ${sql.id(location, 'jobs')} using gin (upload_ids jsonb_path_ops)`.execute(db);
      }
      await s
        .createTable('uploads')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('original_name', 'text', (c) => c.notNull())
        .addColumn('size_bytes', 'bigint', (c) => c.notNull())
        .addColumn('content_type', 'text', (c) => c.notNull())
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('path', 'text', (c) => c.notNull())
        .addColumn('sha256', 'text', (c) => c.notNull())
        .addColumn('created_at', ts, (c) => c.notNull())
        .execute();
      if (dialect === 'sqlite') {
        await s
          .createTable('queue_tasks')
          .addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement())
          .addColumn('job_id', 'text', (c) => c.notNull())
          .addColumn('state', 'text', (c) => c.notNull())
          .addColumn('owner', 'text')
          .addColumn('lease_until', 'integer')
          .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
          .addColumn('created_at', 'text', (c) => c.notNull())
          .addColumn('updated_at', 'text', (c) => c.notNull())
          .execute();
        await s.createIndex('queue_tasks_state_idx').on('queue_tasks').columns(['state', 'id']).execute();
        await s
          .createTable('kv')
          .addColumn('key', 'text', (c) => c.primaryKey())
          .addColumn('value', 'text', (c) => c.notNull())
          .addColumn('expires_at', 'integer', (c) => c.notNull())
          .execute();
        await s
          .createTable('events')
          .addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement())
          .addColumn('job_id', 'text', (c) => c.notNull())
          .addColumn('origin', 'text', (c) => c.notNull())
          .addColumn('payload', 'text', (c) => c.notNull())
          .addColumn('created_at', 'integer', (c) => c.notNull())
          .execute();
        await s.createIndex('events_job_idx').on('events').columns(['job_id', 'id']).execute();
      }
    },
  },
  {
    // Task kinds: the on-demand EPUB export runs on the same durable queue as pipeline jobs.
    version: 2,
    async up(s, _db, { dialect }) {
      if (dialect === 'sqlite') await s.alterTable('queue_tasks').addColumn('kind', 'text', (c) => c.notNull().defaultTo('pipeline')).execute();
    },
  },
  {
    // Ownership: each job and upload belongs to the token that made it. Jobs have recorded
    // their creator since tokens came (config_json.created_by), so they keep that owner;
    // uploads never recorded one, so theirs stay null: visible to admins only.
    version: 3,
    async up(s, db, { dialect }) {
      await s.alterTable('jobs').addColumn('owner', 'text').execute();
      await s.alterTable('uploads').addColumn('owner', 'text').execute();
      const createdBy = dialect === 'postgres' ? sql<string | null>`config_json->>'created_by'` : sql<string | null>`json_extract(config_json, '$.created_by')`;
      await db.updateTable('jobs').set({ owner: createdBy }).execute();
      // A token's list: WHERE owner = ? [AND status = ?] ORDER BY created_at DESC, id DESC.
      await s.createIndex('jobs_owner_created_idx').on('jobs').columns(['owner', 'created_at', 'id']).execute();
      await s.createIndex('jobs_owner_status_created_idx').on('jobs').columns(['owner', 'status', 'created_at', 'id']).execute();
    },
  },
  {
    // The language a document declares, read once at upload: the web app preselects it and a
    // job that names none uses it. Older rows stay null and are read when a job names them.
    version: 4,
    async up(s) {
      await s.alterTable('uploads').addColumn('language', 'text').execute();
    },
  },
];

/** The newest schema version. */
export const SCHEMA_VERSION = MIGRATIONS.at(-1)!.version;

/**
 * Applies the migrations not yet recorded (up to `upTo`: tests start from an older schema).
 * Several processes may start at once: PostgreSQL serialises them with an advisory lock,
 * SQLite with BEGIN IMMEDIATE (the file's write lock).
 */
export async function migrate(conn: Connection, upTo = SCHEMA_VERSION): Promise<void> {
  const run = async (db: Kysely<DB>, schema: SchemaModule) => {
    await schema
      .createTable('lectern_migrations')
      .ifNotExists()
      .addColumn('version', 'integer', (c) => c.primaryKey())
      .addColumn('applied_at', 'text', (c) => c.notNull())
      .execute();
    const done = new Set((await db.selectFrom('lectern_migrations').select('version').execute()).map((r) => Number(r.version)));
    for (const m of MIGRATIONS) {
      if (done.has(m.version) || m.version > upTo) continue;
      await m.up(schema, db, conn);
      await db.insertInto('lectern_migrations').values({ version: m.version, applied_at: new Date().toISOString() }).execute();
    }
  };
  if (conn.dialect === 'postgres') {
    const schemaName = conn.location;
    await conn.db.transaction().execute(async (trx) => {
      await sql`select pg_advisory_xact_lock(hashtext(${`lectern-migrate:${schemaName}`}))`.execute(trx);
      await sql`create schema if not exists ${sql.id(schemaName)}`.execute(trx);
      // Qualify explicitly: the pooled connection's search_path may predate the schema.
      await run(trx.withSchema(schemaName), trx.schema.withSchema(schemaName));
    });
  } else {
    await conn.db.connection().execute(async (c) => {
      await sql`begin immediate`.execute(c);
      try {
        await run(c, c.schema);
        await sql`commit`.execute(c);
      } catch (err) {
        await sql`rollback`.execute(c);
        throw err;
      }
    });
  }
}
