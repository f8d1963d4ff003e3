import type { INestApplicationContext } from '@nestjs/common';
import type { Config } from '@switchboard/config';
import type { Logger, Metrics } from '@switchboard/observability';
import { LOGGER, METRICS } from './tokens';
import { NestPinoLogger } from './nest-logger';
import { WorkerFailures } from './worker';

/**
 * Runs a worker process: builds its Nest context, serves /metrics on HOST when asked,
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
    // On HOST, like the gateway's port: HOST=127.0.0.1 keeps /metrics off the other interfaces.
    if (config.METRICS_PORT > 0) await metrics.serve(config.METRICS_PORT, config.HOST);
    logger.info({ service }, 'worker started');
    let stopping = false;
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
