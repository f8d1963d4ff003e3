import type { INestApplicationContext } from '@nestjs/common';
import type { Config } from '@switchboard/config';
import { pingDatabase, type Db } from '@switchboard/database';
import type { Logger, Metrics } from '@switchboard/observability';
import { readiness, serveWorkerOps, type ReadinessCheck } from './ops-server';
import { DB, LOGGER, METRICS, REDIS } from './tokens';
import { NestPinoLogger } from './nest-logger';
import { QueueWorkers, WorkerFailures } from './worker';
import type { RedisConnection } from '@switchboard/queue';

/**
 * A worker is ready when it can do its work: Postgres and Redis answer and each of its queue
 * workers runs. Each queue is its own check (`queue:<name>`), so /readyz says which one stopped.
 */
export function workerReadinessChecks(app: INestApplicationContext): ReadinessCheck[] {
  const db = app.get<Db>(DB);
  const redis = app.get<RedisConnection>(REDIS);
  const workers = app.get(QueueWorkers);
  const queues = workers.states().map(({ queue }) => queue);
  return [
    { name: 'postgres', check: () => pingDatabase(db) },
    { name: 'redis', check: () => redis.ping() },
    ...queues.map((queue) => ({
      name: `queue:${queue}`,
      check: async () => {
        const state = workers.states().find((s) => s.queue === queue);
        if (!state?.running) throw new Error('worker not running');
      },
    })),
  ];
}

/**
 * Runs a worker process: builds its Nest context, serves /metrics, /healthz and /readyz on
 * METRICS_PORT (on HOST) when asked,
 * and on SIGTERM/SIGINT drains in-flight jobs within the grace period. Past the
 * grace period it exits; unfinished turns resume on another worker.
 */
export function runWorkerProcess(
  service: string,
  create: (config: Config) => Promise<INestApplicationContext>,
  loadConfig: () => Config,
): void {
  (async () => {
    const config = loadConfig();
    const app = await create(config);
    const logger = app.get<Logger>(LOGGER);
    app.useLogger(new NestPinoLogger(logger));
    // A worker that stopped for good leaves a process that looks alive but does nothing: exit instead.
    app.get(WorkerFailures).onFailure((err, queue) => {
      logger.fatal({ err, queue }, 'a queue worker stopped; exiting');
      process.exit(1);
    });
    await app.init();
    const metrics = app.get<Metrics>(METRICS);
    metrics.monitorEventLoop();
    let stopping = false;
    // On HOST, like the gateway's port: HOST=127.0.0.1 keeps the port off the other interfaces.
    if (config.METRICS_PORT > 0) {
      const checks = workerReadinessChecks(app);
      await serveWorkerOps(config.METRICS_PORT, config.HOST, {
        metrics,
        ready: () => readiness(checks, { stopping }),
      });
    }
    logger.info({ service, metricsPort: config.METRICS_PORT || undefined }, 'worker started');
    const stop = (signal: string) => {
      if (stopping) return;
      stopping = true;
      logger.info({ signal, graceMs: config.SHUTDOWN_GRACE_MS }, 'draining');
      setTimeout(() => {
        logger.warn('grace period over; exiting with work in flight (it resumes elsewhere)');
        process.exit(1);
      }, config.SHUTDOWN_GRACE_MS).unref();
      app.close().then(
        () => process.exit(0),
        (err: unknown) => {
          logger.error({ err }, 'shutdown failed');
          process.exit(1);
        },
      );
    };
    process.on('SIGTERM', () => stop('SIGTERM'));
    process.on('SIGINT', () => stop('SIGINT'));
  })().catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  });
}
