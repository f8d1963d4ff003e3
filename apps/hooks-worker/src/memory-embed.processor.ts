import { Inject } from '@nestjs/common';
import { getQueueToken } from '@nestjs/bullmq';
import type { Job, Queue } from 'bullmq';
import { Jobs, QueueName } from '@switchboard/contracts';
import { bookEmbedSpend, embedPending, enqueueMemoryEmbed, type EmbedRunResult } from '@switchboard/memory';
import type { Metrics } from '@switchboard/observability';
import { EMBEDDERS, METRICS, QueueProcessor, QueueWorker } from '@switchboard/platform';
import type { EmbedderRegistry } from '@switchboard/providers';
import { consume } from '@switchboard/queue';
import type { SqlDb } from '@switchboard/store';
import { HOOKS_SQL } from './tokens';

/** Records embedded per provider call, and batches per job run (docs/adr/0050). */
export const EMBED_BATCH = 64;
export const EMBED_BATCHES_PER_RUN = 8;
/** The pause between two runs of one agent's backlog: the re-embedding's rate limit. */
export const EMBED_PAUSE_MS = 1_000;

/**
 * The `memory-embed` queue's worker (docs/adr/0050): one run embeds up to EMBED_BATCHES_PER_RUN
 * batches of the agent's records lacking a vector of its embedder; a backlog left over is the next
 * job, published EMBED_PAUSE_MS later, so re-embedding a large memory proceeds at a bounded rate and
 * one agent's backlog never holds the worker. What is left is read from Postgres each run: resumable
 * after any crash, and a retry re-embeds nothing. Each batch's provider call is booked in the cost
 * ledger (no turn; keyed by its records, in the run's partition: a retry books it once, issue 33).
 */
@QueueProcessor(QueueName.MemoryEmbed, 1)
export class MemoryEmbedProcessor extends QueueWorker {
  constructor(
    @Inject(HOOKS_SQL) private readonly sql: SqlDb,
    @Inject(EMBEDDERS) private readonly embedders: EmbedderRegistry,
    @Inject(getQueueToken(QueueName.MemoryEmbed)) private readonly queue: Queue,
    @Inject(METRICS) private readonly metrics: Metrics,
  ) {
    super();
  }

  async process(job: Job): Promise<EmbedRunResult> {
    return consume(
      Jobs.memoryEmbed,
      job,
      async (data) => {
        const scope = { tenantId: data.tenantId, agentId: data.agentId };
        const result = await embedPending(this.sql, this.embedders, scope, {
          batchSize: EMBED_BATCH,
          maxBatches: EMBED_BATCHES_PER_RUN,
          spent: bookEmbedSpend(this.sql, scope, data.run, this.config.MODEL_PRICES),
        });
        if (!result.done) await enqueueMemoryEmbed(this.queue, scope, EMBED_PAUSE_MS);
        return result;
      },
      this.metrics,
    );
  }
}
