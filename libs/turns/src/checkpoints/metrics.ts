import type { ProviderAttempt, SideCallRecord, ToolCallMeta, ToolOutcome } from '@switchboard/engine';
import type { Logger, Metrics } from '@switchboard/observability';

/**
 * What a checkpoint's commit makes observable: metrics and log lines, recorded only once the
 * checkpoint is durable.
 */
export class CheckpointMetrics {
  constructor(
    private readonly metrics: Metrics,
    private readonly logger: Logger,
    private readonly turnId: string,
  ) {}

  /** Provider attempts into the latency histogram (`ok` or the failure kind); failed ones logged. */
  attempts(attempts: ProviderAttempt[]): void {
    for (const a of attempts) {
      const provider = a.provider ?? a.model.split('/')[0];
      if (a.outcome !== 'succeeded') {
        const next = a.advancedToFallback
          ? 'falling back'
          : a.outcome === 'retrying'
            ? 'retrying'
            : 'giving up';
        this.logger.warn(
          {
            turnId: this.turnId,
            model: a.model,
            attempt: a.attempt,
            failureKind: a.failureKind,
            backoffMs: a.backoffMs,
          },
          `provider attempt failed; ${next}`,
        );
      }
      this.metrics.providerCalls.observe(
        {
          provider,
          model: a.model,
          outcome: a.outcome === 'succeeded' ? 'ok' : (a.failureKind ?? 'unknown'),
        },
        a.durationMs / 1000,
      );
    }
  }

  /** A call booked at zero for want of a price (ADR 0007). */
  unpriced(provider: string, model: string, costSource: string): void {
    if (costSource === 'unpriced') this.metrics.unpricedCalls.inc({ provider, model });
  }

  sideCall(call: SideCallRecord): void {
    if (call.usage && call.provider && call.model) {
      this.unpriced(call.provider, call.model, call.costSource ?? 'rate_table');
    }
    this.metrics.sideCalls.inc({ purpose: call.purpose, outcome: call.ok ? 'ok' : 'failed' });
  }

  toolResult(meta: ToolCallMeta, outcome: ToolOutcome, durationMs: number): void {
    this.metrics.toolCalls.inc({ tool: meta.call.name, outcome: outcome.ok ? 'ok' : outcome.kind });
    if (!outcome.ok && outcome.kind === 'timeout') {
      this.logger.warn(
        { turnId: this.turnId, tool: meta.call.name, callId: meta.call.id, durationMs },
        'tool call timed out',
      );
    }
  }
}
