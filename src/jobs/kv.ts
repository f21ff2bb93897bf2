// KeyValueStore with expiry: a SQLite table (embedded) or Redis SET … EX (distributed).
import type { Redis } from 'ioredis';
import type { Connection } from './db.ts';
import type { KeyValueStore } from './types.ts';

function checkTtl(ttlSeconds: number): void {
  if (!Number.isInteger(ttlSeconds) || ttlSeconds <= 0) throw new RangeError(`ttlSeconds must be a positive integer, got ${ttlSeconds}`);
}

export class SqliteKeyValueStore implements KeyValueStore {
  private lastPurge = 0;

  constructor(private readonly conn: Connection) {}

  private get db() {
    return this.conn.db;
  }

  async set(key: string, value: string, ttlSeconds: number): Promise<void> {
    checkTtl(ttlSeconds);
    const now = Date.now();
    await this.db
      .insertInto('kv')
      .values({ key, value, expires_at: now + ttlSeconds * 1000 })
      .onConflict((oc) => oc.column('key').doUpdateSet((eb) => ({ value: eb.ref('excluded.value'), expires_at: eb.ref('excluded.expires_at') })))
      .execute();
    // Expired keys already read as absent; sweep them now and then so the table does not grow.
    if (now - this.lastPurge > 60_000) {
      this.lastPurge = now;
      await this.db.deleteFrom('kv').where('expires_at', '<=', now).execute();
    }
  }

  async get(key: string): Promise<string | null> {
    const row = await this.db.selectFrom('kv').select('value').where('key', '=', key).where('expires_at', '>', Date.now()).executeTakeFirst();
    return row?.value ?? null;
  }

  async ttl(key: string): Promise<number | null> {
    const now = Date.now();
    const row = await this.db.selectFrom('kv').select('expires_at').where('key', '=', key).where('expires_at', '>', now).executeTakeFirst();
    return row ? Math.ceil((Number(row.expires_at) - now) / 1000) : null;
  }

  async del(key: string): Promise<void> {
    await this.db.deleteFrom('kv').where('key', '=', key).execute();
  }

  async close(): Promise<void> {}
}

export class RedisKeyValueStore implements KeyValueStore {
  /** `redis` is shared with the event publisher; Stores.close() quits it. */
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  private k(key: string): string {
    return `${this.prefix}:${key}`;
  }

  async set(key: string, value: string, ttlSeconds: number): Promise<void> {
    checkTtl(ttlSeconds);
    await this.redis.set(this.k(key), value, 'EX', ttlSeconds);
  }

  get(key: string): Promise<string | null> {
    return this.redis.get(this.k(key));
  }

  async ttl(key: string): Promise<number | null> {
    const t = await this.redis.ttl(this.k(key));
    // -2: absent; -1 (no expiry) cannot happen, every set() has one.
    return t === -2 ? null : t === -1 ? Number.POSITIVE_INFINITY : t;
  }

  async del(key: string): Promise<void> {
    await this.redis.del(this.k(key));
  }

  async close(): Promise<void> {}
}
