import { Queue } from 'bullmq';
import type IORedis from 'ioredis';
import { Admission, type AdmitInput } from '@switchboard/admission';
import { QueueName } from '@switchboard/contracts';
import { createLogger, type Logger } from '@switchboard/observability';
import { createRedis } from '@switchboard/queue';
import { createTestEnv, type TestEnv } from './env';

export type AdmissionOptions = NonNullable<ConstructorParameters<typeof Admission>[3]>;

/** A test file's own database, a Redis connection and the queues opened on it under the file's prefix. */
export interface QueuesFixture {
  env: TestEnv;
  /** One Redis connection every queue of the fixture shares. */
  connection: IORedis;
  /** A silent logger. */
  logger: Logger;
  /** A queue under this file's prefix on the shared connection, closed with the fixture. */
  queue(name: string): Queue;
  /** Closes the queues, quits the connection (BullMQ leaves a handed-in one open) and drops the env. */
  close(): Promise<void>;
}

/** An isolated env (createTestEnv) and a Redis connection for its queues. */
export async function startQueues(): Promise<QueuesFixture> {
  const env = await createTestEnv();
  const connection = createRedis(env.redisUrl);
  const queues: Queue[] = [];
  return {
    env,
    connection,
    logger: createLogger({ service: 'test', level: 'silent' }),
    queue(name) {
      const q = new Queue(name, { connection, prefix: env.queuePrefix });
      queues.push(q);
      return q;
    },
    async close() {
      await Promise.all(queues.map((q) => q.close()));
      await connection.quit();
      await env.cleanup();
    },
  };
}

/** The queues fixture with the `turns` queue and an Admission writing into it. */
export interface AdmissionFixture extends QueuesFixture {
  turnsQueue: Queue;
  admission: Admission;
}

/** The preamble of tests that admit messages: `startQueues`, the `turns` queue, an Admission. */
export async function startAdmission(
  options: { admission?: AdmissionOptions } = {},
): Promise<AdmissionFixture> {
  const queues = await startQueues();
  const turnsQueue = queues.queue(QueueName.Turns);
  const admission = new Admission(queues.env.db, turnsQueue, queues.logger, options.admission);
  return { ...queues, turnsQueue, admission };
}

/** An operator's text prompt into a session, admitted over the control plane (what `POST …/messages` admits). */
export function operatorPrompt(
  s: { tenantId: string; sessionId: string },
  text: string,
  extra: Partial<AdmitInput> = {},
): AdmitInput {
  return {
    tenantId: s.tenantId,
    sessionId: s.sessionId,
    kind: 'operator_prompt',
    origin: { kind: 'operator' },
    body: { type: 'text', text },
    deliverySurface: 'http_public_enqueue',
    admissionContext: 'control_authenticated',
    ...extra,
  };
}
