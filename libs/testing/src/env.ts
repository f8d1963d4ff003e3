import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { Client } from 'pg';
import IORedis from 'ioredis';
import { loadConfig, type Config } from '@switchboard/config';
import { createPrisma, type Db } from '@switchboard/database';
import { registerLog, releaseTestLogs, useTestLogs } from './logs';
import { adminDatabaseUrl, templateName, testRedisUrl, withDatabase } from './services';

export interface TestEnv {
  /** This test file's own database, cloned from the migrated template. */
  databaseUrl: string;
  redisUrl: string;
  /** This test file's own BullMQ key prefix. */
  queuePrefix: string;
  db: Db;
  /**
   * Configuration for apps started in this test's process; their logs go to a file of the test's
   * log directory (LOG_FILE), whose tail is printed when a test fails (`logs.ts`).
   */
  config(overrides?: Record<string, string>): Config;
  /** Environment variables for app processes spawned by this test file. */
  processEnv(overrides?: Record<string, string>): NodeJS.ProcessEnv;
  cleanup(): Promise<void>;
}

/**
 * An isolated environment for one test file: its own Postgres database (a
 * clone of the migrated template) and its own Redis key prefix. Nothing is
 * shared with other files, so files run in parallel and in any order.
 */
export async function createTestEnv(): Promise<TestEnv> {
  const id = randomBytes(6).toString('hex');
  const dbName = `sb_test_${id}`;
  const admin = new Client({ connectionString: adminDatabaseUrl() });
  await admin.connect();
  try {
    for (let attempt = 0; ; attempt++) {
      try {
        await admin.query(`CREATE DATABASE "${dbName}" TEMPLATE "${templateName()}"`);
        break;
      } catch (err) {
        // Concurrent clones of one template can collide briefly; anything else is real.
        if (attempt >= 10 || !/being accessed by other users/.test((err as Error).message)) throw err;
        await new Promise((r) => setTimeout(r, 100 + attempt * 100));
      }
    }
  } finally {
    await admin.end();
  }
  const databaseUrl = withDatabase(adminDatabaseUrl(), dbName);
  const redisUrl = testRedisUrl();
  const queuePrefix = `sbt_${id}`;
  const db = createPrisma(databaseUrl, { poolSize: 5 });
  const logFile = path.join(useTestLogs(), 'in-process.log');
  registerLog({ label: 'apps in the test process', file: logFile });
  const baseEnv = {
    DATABASE_URL: databaseUrl,
    REDIS_URL: redisUrl,
    QUEUE_PREFIX: queuePrefix,
    ADMIN_TOKEN: 'test-admin-token-0123456789',
    LOG_LEVEL: 'warn',
    OTEL_SDK_DISABLED: 'true',
    NODE_ENV: 'test',
    SESSION_LEASE_MS: '3000',
    QUEUE_LOCK_MS: '3000',
    QUEUE_STALLED_INTERVAL_MS: '1000',
    RECONCILE_INTERVAL_MS: '0',
    LEASE_SWEEP_MS: '1000',
    // Off in tests: bursts of requests are what many tests send (test/e2e/rate-limits sets its own).
    RATE_LIMIT_ADMISSION_PER_MIN: '0',
    RATE_LIMIT_READS_PER_MIN: '0',
    RATE_LIMIT_WRITES_PER_MIN: '0',
    RATE_LIMIT_WEBHOOKS_PER_MIN: '0',
    SHUTDOWN_GRACE_MS: '5000',
    // Each ended turn's post-turn job alone (`<turnId>.hooks`), as many tests look it up by its turn;
    // the group commit (docs/adr/0070) is tested where it is asked for.
    HOOKS_BATCH_WINDOW_MS: '0',
  };
  return {
    databaseUrl,
    redisUrl,
    queuePrefix,
    db,
    config: (overrides = {}) => loadConfig({ ...baseEnv, LOG_FILE: logFile, ...overrides }),
    processEnv: (overrides = {}) => ({
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      ...baseEnv,
      ...overrides,
    }),
    async cleanup() {
      await db.$disconnect().catch(() => undefined);
      const redis = new IORedis(redisUrl);
      try {
        let cursor = '0';
        do {
          const [next, keys] = await redis.scan(cursor, 'MATCH', `${queuePrefix}:*`, 'COUNT', 1000);
          cursor = next;
          if (keys.length > 0) await redis.del(...keys);
        } while (cursor !== '0');
      } finally {
        redis.disconnect();
      }
      const drop = new Client({ connectionString: adminDatabaseUrl() });
      await drop.connect();
      try {
        await drop.query(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`);
      } finally {
        await drop.end();
      }
      releaseTestLogs();
    },
  };
}
