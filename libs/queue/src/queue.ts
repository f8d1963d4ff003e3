import { UnrecoverableError, type Job, type JobsOptions, type Queue } from 'bullmq';
import type { z } from 'zod';
import type { JobDefinition } from '@switchboard/contracts';
import { currentTraceCarrier, SpanKind, withSpan, type Metrics } from '@switchboard/observability';

/** The job options a definition declares, plus per-call extras such as priority. */
export function jobOptions<S extends z.ZodType>(
  def: JobDefinition<S>,
  data: z.infer<S>,
  extra: Pick<JobsOptions, 'priority' | 'delay' | 'backoff' | 'deduplication' | 'removeOnComplete'> = {},
): JobsOptions {
  return {
    jobId: def.jobId(data),
    attempts: def.attempts,
    backoff: def.backoff,
    // `true`: BullMQ deletes the job at completion instead of adding it to the completed set.
    removeOnComplete: def.keepCompletedSeconds > 0 ? { age: def.keepCompletedSeconds } : true,
    removeOnFail: { age: def.keepFailedSeconds },
    ...extra,
  };
}

/**
 * Publishes a job inside a producer span and stamps the span's trace context
 * into the payload, so the consumer continues the same trace.
 */
export async function publish<S extends z.ZodType>(
  queue: Queue,
  def: JobDefinition<S>,
  data: Omit<z.infer<S>, 'trace'>,
  extra: Pick<JobsOptions, 'priority' | 'delay' | 'backoff' | 'deduplication' | 'removeOnComplete'> = {},
): Promise<Job> {
  return withSpan(
    `${def.queue} publish`,
    {
      kind: SpanKind.PRODUCER,
      attributes: { 'messaging.system': 'bullmq', 'messaging.destination.name': def.queue },
    },
    async (span) => {
      const payload = def.schema.parse({ ...data, trace: currentTraceCarrier() });
      const opts = jobOptions(def, payload, extra);
      span.setAttribute('messaging.message.id', String(opts.jobId));
      return queue.add(def.queue, payload, opts);
    },
  );
}

/**
 * Validates a picked-up job against its schema (invalid → unrecoverable, never
 * retried) and runs the handler in a consumer span that continues the producer's trace.
 */
export async function consume<S extends z.ZodType, T>(
  def: JobDefinition<S>,
  job: Job,
  handler: (data: z.infer<S>) => Promise<T>,
  metrics?: Metrics,
): Promise<T> {
  const parsed = def.schema.safeParse(job.data);
  if (!parsed.success) {
    throw new UnrecoverableError(`invalid ${def.queue} job ${job.id}: ${parsed.error.message}`);
  }
  const data = parsed.data as z.infer<S> & { trace?: { traceparent?: string; tracestate?: string } };
  if (metrics && job.attemptsMade === 0 && job.processedOn) {
    metrics.queueWait.observe({ queue: def.queue }, Math.max(0, job.processedOn - job.timestamp) / 1000);
  }
  return withSpan(
    `${def.queue} process`,
    {
      kind: SpanKind.CONSUMER,
      parent: data.trace ?? {},
      attributes: {
        'messaging.system': 'bullmq',
        'messaging.destination.name': def.queue,
        'messaging.message.id': String(job.id),
        'messaging.bullmq.attempt': job.attemptsMade + 1,
      },
    },
    () => handler(data),
  );
}

/**
 * Rejects when `promise` has not settled within `ms` (the promise itself goes on). An enqueue after a
 * Postgres commit uses it: a Redis that is down must not hold the caller, the commit already stands and
 * the reconciler enqueues later.
 */
export function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`enqueue timed out after ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

/**
 * Closes a queue so that nothing it started can surface later as an unhandled rejection.
 *
 * BullMQ (taskforcesh/bullmq#3546): a queue on a shared connection that never became ready keeps a
 * pending start-up; `close()` drops its connection's listeners, and when the shared client ends
 * afterwards that start-up fails and is re-emitted as `error` on a listener-less emitter, which
 * throws inside a promise chain: an unhandled rejection (`connect ECONNREFUSED`) from a process
 * shutting down while Redis is unreachable. A no-op listener after the close absorbs it. Call this
 * before disconnecting the shared client.
 */
export async function closeQueue(queue: Queue): Promise<void> {
  await queue.close().catch(() => undefined);
  (queue as unknown as { connection: { on(event: 'error', fn: () => void): void } }).connection.on(
    'error',
    () => undefined,
  );
}
