import { execFileSync } from 'node:child_process';
import { Client } from 'pg';
import {
  adminDatabaseUrl,
  postgresAnswers,
  redisAnswers,
  ROOT,
  templateName,
  testRedisUrl,
  withDatabase,
} from './services';

/**
 * Once per test run: find Postgres and Redis (the running services at
 * DATABASE_URL/REDIS_URL or the local defaults; testcontainers where a
 * container runtime exists), and build the migrated template database every
 * test file clones its own database from.
 */
export default async function globalSetup(): Promise<void> {
  if (!(await postgresAnswers(adminDatabaseUrl())) || !(await redisAnswers(testRedisUrl()))) {
    await startContainers();
  }
  await ensureTemplate();
}

async function startContainers(): Promise<void> {
  let containers;
  try {
    const [{ PostgreSqlContainer }, { RedisContainer }] = await Promise.all([
      import('@testcontainers/postgresql'),
      import('@testcontainers/redis'),
    ]);
    const [pg, redis] = await Promise.all([
      new PostgreSqlContainer('postgres:16-alpine').withUsername('postgres').withPassword('postgres').start(),
      new RedisContainer('redis:7-alpine').start(),
    ]);
    containers = [pg, redis];
    process.env.SB_TEST_ADMIN_DATABASE_URL = withDatabase(pg.getConnectionUri(), 'postgres');
    process.env.SB_TEST_REDIS_URL = redis.getConnectionUrl();
  } catch (err) {
    throw new Error(
      'Tests need Postgres and Redis: none answered at DATABASE_URL/REDIS_URL (or 127.0.0.1 defaults) and ' +
        `testcontainers could not start them: ${(err as Error).message}`,
    );
  }
  (globalThis as { __SB_CONTAINERS__?: unknown }).__SB_CONTAINERS__ = containers;
}

async function ensureTemplate(): Promise<void> {
  const name = templateName();
  const admin = new Client({ connectionString: adminDatabaseUrl() });
  await admin.connect();
  try {
    const exists = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (exists.rowCount) return;
    // Build under a temporary name and rename, so a concurrent run never clones a half-migrated template.
    const building = `${name}_build_${process.pid}`;
    await admin.query(`DROP DATABASE IF EXISTS "${building}" WITH (FORCE)`);
    await admin.query(`CREATE DATABASE "${building}"`);
    execFileSync(process.execPath, [require.resolve('prisma/build/index.js'), 'migrate', 'deploy'], {
      cwd: ROOT,
      env: {
        ...process.env,
        DATABASE_URL: withDatabase(adminDatabaseUrl(), building),
        PRISMA_QUERY_ENGINE_LIBRARY: process.env.PRISMA_QUERY_ENGINE_LIBRARY ?? '/dev/null',
        CHECKPOINT_DISABLE: '1',
      },
      stdio: 'pipe',
    });
    try {
      await admin.query(`ALTER DATABASE "${building}" RENAME TO "${name}"`);
      await admin.query(`ALTER DATABASE "${name}" WITH IS_TEMPLATE true`);
    } catch (err) {
      // Another run won the race: its template is as good as ours.
      await admin.query(`DROP DATABASE IF EXISTS "${building}" WITH (FORCE)`);
      const again = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
      if (!again.rowCount) throw err;
    }
  } finally {
    await admin.end();
  }
}
