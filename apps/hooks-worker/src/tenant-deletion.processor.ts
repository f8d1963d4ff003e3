import { Inject } from '@nestjs/common';
import { getQueueToken } from '@nestjs/bullmq';
import type { Job, Queue } from 'bullmq';
import { Cluster } from 'ioredis';
import { Jobs, newId, QueueName } from '@switchboard/contracts';
import { poolOf, type Db } from '@switchboard/database';
import type { Logger, Metrics } from '@switchboard/observability';
import { DB, METRICS, QueueProcessor, QueueWorker, REDIS } from '@switchboard/platform';
import { consume, publish, type RedisConnection } from '@switchboard/queue';
import {
  advanceDeletion,
  completeDeletion,
  deleteTenantBatch,
  destroyTenantKeys,
  failDeletion,
  findTenantDeletion,
  OPERATOR_ACTOR,
  pauseForDeletion,
  tenantKeyIds,
  tenantTables,
  type TenantDeletionRow,
} from '@switchboard/store';
import type pg from 'pg';

/** Rows one statement deletes at most, and statements one run makes (docs/adr/0068). */
export const DELETE_BATCH_ROWS = 500;
export const DELETE_BATCHES_PER_RUN = 40;

/** Every queue of the process, by name: the deletion removes the tenant's jobs from each. */
export const DELETION_QUEUES = Symbol('DELETION_QUEUES');
export const deletionQueuesProvider = {
  provide: DELETION_QUEUES,
  inject: Object.values(QueueName).map((name) => getQueueToken(name)),
  useFactory: (...queues: Queue[]): Queue[] => queues,
};

/** The next run of a deletion, as a job on `tenant-deletion`. */
export async function enqueueTenantDeletion(queue: Queue, deletionId: string, delayMs = 0): Promise<void> {
  await publish(
    queue,
    Jobs.tenantDeletion,
    { deletionId, run: newId() },
    delayMs > 0 ? { delay: delayMs } : {},
  );
}

interface DeletionDeps {
  pool: pg.Pool;
  redis: RedisConnection;
  prefix: string;
  queues: Queue[];
  logger: Logger;
}

/** Job states whose jobs can be removed (an active job is its worker's; it ends on its own). */
const REMOVABLE = [
  'waiting',
  'delayed',
  'prioritized',
  'paused',
  'waiting-children',
  'completed',
  'failed',
] as const;

/**
 * The tenant's Redis keys (rate-limit counters, action budgets, live channels of its sessions, key
 * caches…): every key under the deployment's prefix that names the tenant or one of its sessions, API
 * keys or triggers, outside the queues' own keys (their jobs are removed through BullMQ). SCAN, never
 * KEYS; on a cluster, each master. The number deleted.
 */
async function deleteRedisKeys(deps: DeletionDeps, tenantId: string): Promise<number> {
  const ids = new Set<string>([tenantId]);
  for await (const page of tenantKeyIds(deps.pool, tenantId)) for (const id of page) ids.add(id);
  const queuePrefixes = Object.values(QueueName).map((q) => `${deps.prefix}:${q}:`);
  const nodes = deps.redis instanceof Cluster ? deps.redis.nodes('master') : [deps.redis];
  const idPattern = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;
  let deleted = 0;
  for (const node of nodes) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', `${deps.prefix}:*`, 'COUNT', 1000);
      cursor = next;
      const mine = keys.filter(
        (k) =>
          !queuePrefixes.some((q) => k.startsWith(q)) && (k.match(idPattern) ?? []).some((id) => ids.has(id)),
      );
      for (const k of mine) deleted += await deps.redis.unlink(k);
    } while (cursor !== '0');
  }
  return deleted;
}

/** The tenant's jobs not running now, removed from every queue (their payloads name the tenant). */
async function removeJobs(deps: DeletionDeps, tenantId: string): Promise<number> {
  let removed = 0;
  for (const queue of deps.queues) {
    for (const state of REMOVABLE) {
      const mine: Job[] = [];
      for (let start = 0; ; start += 500) {
        const jobs = await queue.getJobs([state], start, start + 499, true);
        mine.push(...jobs.filter((j) => j && (j.data as { tenantId?: unknown })?.tenantId === tenantId));
        if (jobs.length < 500) break;
      }
      for (const job of mine) {
        try {
          await job.remove();
          removed++;
        } catch (err) {
          // Taken by a worker meanwhile: it finds its tenant gone.
          deps.logger.debug({ err, jobId: job.id, queue: queue.name }, 'job of a deleted tenant not removed');
        }
      }
    }
  }
  return removed;
}

/**
 * One run of a deletion (docs/adr/0068), resuming at its stage: data keys first, then admission
 * paused, Redis keys and queued jobs, then every row, children first, at most `maxBatches`
 * statements of `batchRows` rows; `done` once the receipt is written. Idempotent: each step reads
 * what is left from Postgres, and each batch commits with its count.
 */
export async function runTenantDeletion(
  deps: DeletionDeps,
  deletionId: string,
  budget: { maxBatches: number; batchRows: number } = {
    maxBatches: DELETE_BATCHES_PER_RUN,
    batchRows: DELETE_BATCH_ROWS,
  },
): Promise<{ done: boolean; deletion: TenantDeletionRow | null }> {
  let d = await findTenantDeletion(deps.pool, deletionId);
  if (!d || d.status === 'completed') return { done: true, deletion: d };
  if (d.stage === 'keys') {
    await destroyTenantKeys(deps.pool, d);
    d = (await findTenantDeletion(deps.pool, deletionId))!;
  }
  if (d.stage === 'pause') {
    await pauseForDeletion(deps.pool, d);
    d = (await findTenantDeletion(deps.pool, deletionId))!;
  }
  if (d.stage === 'redis') {
    const redisKeys = await deleteRedisKeys(deps, d.tenantId);
    const jobs = await removeJobs(deps, d.tenantId);
    await advanceDeletion(deps.pool, d.id, 'rows', { redisKeys, jobs });
    d = (await findTenantDeletion(deps.pool, deletionId))!;
  }
  if (d.status !== 'running') await advanceDeletion(deps.pool, d.id, d.stage);
  // Children before the tables they reference: a parent's cascade never has rows left to take.
  const tables = (await tenantTables(deps.pool)).reverse();
  let batches = 0;
  for (const table of tables) {
    for (;;) {
      if (batches >= budget.maxBatches) return { done: false, deletion: d };
      batches++;
      const n = await deleteTenantBatch(deps.pool, d, table, budget.batchRows);
      if (n < budget.batchRows) break;
    }
  }
  const done = await completeDeletion(deps.pool, d.id, OPERATOR_ACTOR);
  deps.logger.info({ deletionId: d.id, tenantId: d.tenantId, counts: done.counts }, 'tenant deleted');
  return { done: true, deletion: done };
}

/**
 * The `tenant-deletion` queue's worker, in the hooks worker (docs/adr/0068): background work off the
 * turn path, beside the memory re-embedding it is shaped like. One run is a bounded number of
 * batches; what is left is the next job, so one large tenant never holds the worker and the other
 * tenants' statements are never queued behind a long transaction.
 */
@QueueProcessor(QueueName.TenantDeletion, 1)
export class TenantDeletionProcessor extends QueueWorker {
  constructor(
    @Inject(DB) private readonly db: Db,
    @Inject(REDIS) private readonly redis: RedisConnection,
    @Inject(DELETION_QUEUES) private readonly queues: Queue[],
    @Inject(getQueueToken(QueueName.TenantDeletion)) private readonly queue: Queue,
    @Inject(METRICS) private readonly metrics: Metrics,
  ) {
    super();
  }

  async process(job: Job): Promise<boolean> {
    return consume(
      Jobs.tenantDeletion,
      job,
      async (data) => {
        const deps = {
          pool: poolOf(this.db),
          redis: this.redis,
          prefix: this.config.QUEUE_PREFIX,
          queues: this.queues,
          logger: this.logger,
        };
        try {
          const { done } = await runTenantDeletion(deps, data.deletionId);
          if (!done) await enqueueTenantDeletion(this.queue, data.deletionId);
          return done;
        } catch (err) {
          // The last attempt's error is kept on the deletion; asking again retries it.
          if (job.attemptsMade + 1 >= (job.opts.attempts ?? 1)) {
            await failDeletion(deps.pool, data.deletionId, (err as Error).message);
          }
          throw err;
        }
      },
      this.metrics,
    );
  }
}
