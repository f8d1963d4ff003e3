import {
  Inject,
  Injectable,
  Optional,
  type BeforeApplicationShutdown,
  type OnApplicationBootstrap,
} from '@nestjs/common';
import { Worker, type Job, type WorkerOptions } from 'bullmq';
import type { Config } from '@switchboard/config';
import type { QueueName } from '@switchboard/contracts';
import type { Logger } from '@switchboard/observability';
import { CONFIG, LOGGER, REDIS } from './tokens';
import type { RedisConnection } from '@switchboard/queue';

export type ConcurrencySetting = 'HARNESS_CONCURRENCY' | 'HOOKS_CONCURRENCY' | 'TRIAGE_CONCURRENCY';
export type StalledCountSetting = 'HOOKS_MAX_STALLED_COUNT';

export interface ProcessorSpec {
  queue: QueueName;
  /** A configuration setting, or a fixed number. */
  concurrency: ConcurrencySetting | number;
  /**
   * How often a job may stall (its worker died holding it) before BullMQ fails it: a configuration
   * setting, or a fixed number; unset, BullMQ's default (1: the second stall fails the job).
   */
  maxStalledCount?: StalledCountSetting | number;
}

const PROCESSOR_SPECS = new WeakMap<object, ProcessorSpec>();

/** Marks a `QueueWorker` subclass as the processor of one queue. */
export function QueueProcessor(
  queue: QueueName,
  concurrency: ProcessorSpec['concurrency'],
  options: Pick<ProcessorSpec, 'maxStalledCount'> = {},
): ClassDecorator {
  return (target) => {
    PROCESSOR_SPECS.set(target, { queue, concurrency, ...options });
  };
}

/** The queue a provider class processes, if it is a `@QueueProcessor`. */
export function processorSpec(target: unknown): ProcessorSpec | undefined {
  return typeof target === 'function' ? PROCESSOR_SPECS.get(target) : undefined;
}

/**
 * The BullMQ worker options for a processor, all given at construction: BullMQ's lock
 * manager derives its renewal period from `lockDuration` when the Worker is built, so
 * changing the options later leaves locks renewed on the 30 s default.
 */
export function workerOptions(
  config: Config,
  spec: ProcessorSpec,
  connection: RedisConnection,
): WorkerOptions {
  return {
    connection,
    prefix: config.QUEUE_PREFIX,
    concurrency: typeof spec.concurrency === 'number' ? spec.concurrency : config[spec.concurrency],
    lockDuration: config.QUEUE_LOCK_MS,
    stalledInterval: config.QUEUE_STALLED_INTERVAL_MS,
    ...(spec.maxStalledCount === undefined
      ? {}
      : {
          maxStalledCount:
            typeof spec.maxStalledCount === 'number' ? spec.maxStalledCount : config[spec.maxStalledCount],
        }),
    autorun: false,
  };
}

/**
 * Where a worker reports that it stopped for good (its Redis refused it, its loop died).
 * The process runner exits non-zero on the first report; in tests nobody listens.
 */
@Injectable()
export class WorkerFailures {
  private readonly listeners: ((err: Error, queue: string) => void)[] = [];
  private first?: { err: Error; queue: string };

  report(queue: string, err: Error): void {
    this.first ??= { err, queue };
    for (const listener of this.listeners) listener(err, queue);
  }

  /** Calls `listener` on every report, at once for one that came before. */
  onFailure(listener: (err: Error, queue: string) => void): void {
    this.listeners.push(listener);
    if (this.first) listener(this.first.err, this.first.queue);
  }
}

/**
 * The queue workers of this process, for its readiness (`/readyz` on METRICS_PORT): each one is
 * ready while its BullMQ worker runs (started, not closing, its loop alive).
 */
@Injectable()
export class QueueWorkers {
  private readonly workers = new Map<string, Worker>();

  add(queue: string, worker: Worker): void {
    this.workers.set(queue, worker);
  }

  /** Each queue's worker and whether it is running now. */
  states(): { queue: string; running: boolean }[] {
    return [...this.workers].map(([queue, w]) => ({ queue, running: w.isRunning() && !w.closing }));
  }
}

/**
 * A queue's processor: builds its BullMQ Worker from configuration when the application
 * boots, and closes it (waiting for jobs in flight) before connections are shut down.
 * Subclasses are decorated with `@QueueProcessor(queue, concurrency)`.
 */
export abstract class QueueWorker implements OnApplicationBootstrap, BeforeApplicationShutdown {
  @Inject(CONFIG) protected readonly config!: Config;
  @Inject(LOGGER) protected readonly logger!: Logger;
  @Inject(REDIS) private readonly connection!: RedisConnection;
  @Inject(WorkerFailures) private readonly failures!: WorkerFailures;
  @Optional() @Inject(QueueWorkers) private readonly registry?: QueueWorkers;
  private bullWorker?: Worker;

  abstract process(job: Job, token?: string): Promise<unknown>;

  /** Called after each failed attempt (retried or not). */
  protected onFailed?(job: Job | undefined, err: Error): Promise<void> | void;

  get worker(): Worker {
    if (!this.bullWorker) throw new Error(`${this.constructor.name} has not started`);
    return this.bullWorker;
  }

  onApplicationBootstrap(): void {
    const spec = processorSpec(this.constructor);
    if (!spec) throw new Error(`${this.constructor.name} is not decorated with @QueueProcessor`);
    const worker = new Worker(
      spec.queue,
      (job: Job, token?: string) => this.process(job, token),
      workerOptions(this.config, spec, this.connection),
    );
    this.bullWorker = worker;
    this.registry?.add(spec.queue, worker);
    worker.on('error', (err) => this.logger.error({ err, queue: spec.queue }, 'queue worker error'));
    const onFailed = this.onFailed?.bind(this);
    if (onFailed) {
      worker.on('failed', (job, err) => {
        void Promise.resolve(onFailed(job, err)).catch((e: unknown) =>
          this.logger.error({ err: e, queue: spec.queue }, 'failed-job handler threw'),
        );
      });
    }
    // run() settles only when the worker closes; a rejection means it never started or its loop died.
    worker.run().catch((err: unknown) => {
      const error = err instanceof Error ? err : new Error(String(err));
      this.logger.fatal({ err: error, queue: spec.queue }, 'queue worker stopped');
      this.failures.report(spec.queue, error);
    });
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.bullWorker?.close();
  }
}
