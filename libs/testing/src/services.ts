import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Client } from 'pg';
import IORedis from 'ioredis';

export const ROOT = path.resolve(__dirname, '../../..');
export const DEFAULT_DATABASE_URL = 'postgresql://postgres@127.0.0.1:5432/postgres';
export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

/** The admin database URL tests create their databases from. */
export const adminDatabaseUrl = () =>
  process.env.SB_TEST_ADMIN_DATABASE_URL ??
  withDatabase(process.env.DATABASE_URL ?? DEFAULT_DATABASE_URL, 'postgres');
export const testRedisUrl = () => process.env.SB_TEST_REDIS_URL ?? process.env.REDIS_URL ?? DEFAULT_REDIS_URL;

export function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

/** Template database name: changes whenever a migration changes. */
export function templateName(): string {
  const dir = path.join(ROOT, 'prisma', 'migrations');
  const hash = createHash('sha256');
  for (const name of readdirSync(dir).sort()) {
    if (name.endsWith('.toml')) continue;
    hash.update(name);
    hash.update(readFileSync(path.join(dir, name, 'migration.sql')));
  }
  return `sb_template_${hash.digest('hex').slice(0, 12)}`;
}

export async function postgresAnswers(url: string): Promise<boolean> {
  const client = new Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

export async function redisAnswers(url: string): Promise<boolean> {
  const redis = new IORedis(url, {
    lazyConnect: true,
    connectTimeout: 2000,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  try {
    await redis.connect();
    return (await redis.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    redis.disconnect();
  }
}
