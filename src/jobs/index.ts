// Chooses the stores once: embedded (SQLite file in the data dir) when no database URL is
// set, distributed (PostgreSQL + Redis/BullMQ) when both URLs are. Nothing else knows which.
import path from 'node:path';
import { Redis } from 'ioredis';
import type { Logger } from '../log.ts';
import { openPostgres, openSqlite, type Connection } from './db.ts';
import { RedisEventBus, SqliteEventBus } from './events.ts';
import { KyselyJobStore } from './job-store.ts';
import { RedisKeyValueStore, SqliteKeyValueStore } from './kv.ts';
import { BullTaskQueue } from './queue-bullmq.ts';
import { SqliteTaskQueue } from './queue-sqlite.ts';
import type { EventBus, JobStore, KeyValueStore, Stores, TaskQueue } from './types.ts';

export type * from './types.ts';

export const SQLITE_FILE_NAME = 'lectern.db';

/** What the stores are opened with (the service config's fields of the same names). */
export interface StoreSettings {
  dataDir: string;
  databaseUrl: string | null;
  redisUrl: string | null;
  namespace: string;
  leaseMs: number;
  heartbeatMs: number;
}

export async function createStores(config: StoreSettings, log?: Logger): Promise<Stores> {
  if (config.databaseUrl && config.redisUrl) return createDistributed(config, config.databaseUrl, config.redisUrl, log);
  if (config.databaseUrl || config.redisUrl) {
    throw new Error('the distributed mode needs both LECTERN_DATABASE_URL and LECTERN_REDIS_URL (or neither, for the embedded default)');
  }
  return createEmbedded(config, log);
}

async function createEmbedded(config: StoreSettings, log?: Logger): Promise<Stores> {
  const conn = openSqlite(path.join(config.dataDir, SQLITE_FILE_NAME));
  const jobs = new KyselyJobStore(conn);
  try {
    await jobs.migrate();
  } catch (err) {
    await conn.close();
    throw err;
  }
  const queue = new SqliteTaskQueue(conn, { leaseMs: config.leaseMs, heartbeatMs: config.heartbeatMs, log });
  return assemble('embedded', conn, jobs, queue, new SqliteKeyValueStore(conn), new SqliteEventBus(conn, { log }), async () => undefined);
}

async function createDistributed(config: StoreSettings, databaseUrl: string, redisUrl: string, log?: Logger): Promise<Stores> {
  const conn = openPostgres(databaseUrl, config.namespace);
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 3 });
  redis.on('error', (err) => log?.warn({ err }, 'redis connection error'));
  const jobs = new KyselyJobStore(conn);
  try {
    await jobs.migrate();
    await redis.ping();
  } catch (err) {
    redis.disconnect();
    await conn.close();
    throw err;
  }
  const queue = new BullTaskQueue({ redisUrl, prefix: config.namespace, leaseMs: config.leaseMs, log });
  return assemble(
    'distributed',
    conn,
    jobs,
    queue,
    new RedisKeyValueStore(redis, config.namespace),
    new RedisEventBus(redis, config.namespace, log),
    async () => {
      await redis.quit().catch(() => redis.disconnect());
    },
  );
}

function assemble(
  mode: Stores['mode'],
  conn: Connection,
  jobs: JobStore,
  queue: TaskQueue,
  kv: KeyValueStore,
  events: EventBus,
  closeShared: () => Promise<void>,
): Stores {
  let closing: Promise<void> | null = null;
  return {
    mode,
    jobs,
    queue,
    kv,
    events,
    close() {
      // The queue first: its running tasks go back while the database is still open.
      closing ??= (async () => {
        await queue.close();
        await events.close();
        await kv.close();
        await jobs.close();
        await closeShared();
        await conn.close();
      })();
      return closing;
    },
  };
}
