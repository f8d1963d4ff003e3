import { Inject } from '@nestjs/common';
import type { Job } from 'bullmq';
import { Jobs, QueueName } from '@switchboard/contracts';
import type { Metrics } from '@switchboard/observability';
import { METRICS, QueueProcessor, QueueWorker } from '@switchboard/platform';
import { consume } from '@switchboard/queue';
import { triageDelivery, type TriageDeps } from '@switchboard/triage';

export const TRIAGE_DEPS = Symbol('TRIAGE_DEPS');

/**
 * Triages trigger deliveries (docs/adr/0018): rules, cache, the `burst` model with a fallback, the
 * safe default; then drops, notifies, or admits a reactor or orchestrator turn.
 */
@QueueProcessor(QueueName.Triage, 'TRIAGE_CONCURRENCY')
export class TriageProcessor extends QueueWorker {
  constructor(
    @Inject(TRIAGE_DEPS) private readonly deps: TriageDeps,
    @Inject(METRICS) private readonly metrics: Metrics,
  ) {
    super();
  }

  async process(job: Job): Promise<string> {
    return consume(
      Jobs.triage,
      job,
      async (data) => {
        const result = await triageDelivery({ ...this.deps, logger: this.logger }, data);
        return result?.decision.action ?? 'skipped';
      },
      this.metrics,
    );
  }
}
