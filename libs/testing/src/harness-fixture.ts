import type { Queue } from 'bullmq';
import { z } from 'zod';
import { Admission, TurnSteering } from '@switchboard/admission';
import { QueueName } from '@switchboard/contracts';
import { poolOf, type Db } from '@switchboard/database';
import { noLivePublisher } from '@switchboard/live';
import { Metrics, type Logger } from '@switchboard/observability';
import { SqlDb } from '@switchboard/store';
import { defineTool, type ToolDefinition } from '@switchboard/tools';
import { startQueues, type AdmissionFixture, type AdmissionOptions } from './admission-fixture';

/** What every TurnRunner in a test is built over: spread into its options beside the engine and tools. */
export interface RunnerDeps {
  db: Db;
  postTurnQueue: Queue;
  /** Where the runner sends a wake-up job; `undefined` in the overrides builds a runner without one. */
  turnsQueue?: Queue;
  logger: Logger;
  metrics: Metrics;
  workerId: string;
  leaseMs: number;
}

/** The harness's surroundings over a test file's own database and queues. */
export interface HarnessFixture extends AdmissionFixture {
  postTurnQueue: Queue;
  /** Cancels and interjections over the same database and queues (no live channel). */
  control: TurnSteering;
  /** This file's db, queues and silent logger, fresh metrics, worker `test`, a 10 s lease; overrides win. */
  runnerDeps(overrides?: Partial<RunnerDeps>): RunnerDeps;
}

/**
 * The preamble of tests that run turns: `startQueues`, the `turns` and `post-turn` queues, a
 * TurnSteering over them and an Admission (given the control with `admitWithControl`: interrupts and
 * interjection nudges), and the runner's dependencies.
 */
export async function startHarness(
  options: { admitWithControl?: boolean; admission?: Omit<AdmissionOptions, 'control'> } = {},
): Promise<HarnessFixture> {
  const queues = await startQueues();
  const { env, connection, logger } = queues;
  const turnsQueue = queues.queue(QueueName.Turns);
  const postTurnQueue = queues.queue(QueueName.PostTurn);
  const control = new TurnSteering(new SqlDb(poolOf(env.db)), {
    redis: connection,
    prefix: env.queuePrefix,
    postTurnQueue,
    turnsQueue,
    live: noLivePublisher,
    logger,
  });
  const admission = new Admission(env.db, turnsQueue, logger, {
    ...options.admission,
    ...(options.admitWithControl ? { control } : {}),
  });
  return {
    ...queues,
    turnsQueue,
    postTurnQueue,
    control,
    admission,
    runnerDeps: (overrides = {}) => ({
      db: env.db,
      postTurnQueue,
      turnsQueue,
      logger,
      metrics: new Metrics('test'),
      workerId: 'test',
      leaseMs: 10_000,
      ...overrides,
    }),
  };
}

/** The specs' `word_count`: read-only, 2 s, answers `{ words }` (the built-in also counts characters). */
export const wordCountTool = defineTool({
  name: 'word_count',
  description: 'Counts words',
  schema: z.strictObject({ text: z.string() }),
  sideEffect: 'read_only',
  timeoutMs: 2_000,
  needsApproval: false,
  execute: async ({ text }) => ({ words: text.split(/\s+/).filter(Boolean).length }),
}) as ToolDefinition;
