import type { Queue } from 'bullmq';
import { newId } from '@switchboard/contracts';
import type { LivePublisher } from '@switchboard/live';
import type { Logger } from '@switchboard/observability';
import type { ApprovalStore, ApprovalVerdict, DecideOutcome } from '@switchboard/store';
import { enqueueResume } from './requeue';

/**
 * Deciding an approval and resuming its turn (docs/adr/0013), shared by the approvals API (a person)
 * and the maintenance queue (expiry). The decision commits first; then its event goes out on the
 * live channel and, when it was the turn's last pending approval, a turn job resumes the turn on
 * whichever worker takes it. A lost enqueue is found by the reconciler (the turn is `queued`).
 */
export class Approvals {
  constructor(
    private readonly store: ApprovalStore,
    private readonly turnsQueue: Queue,
    private readonly logger: Logger,
    private readonly live?: LivePublisher,
    private readonly enqueueTimeoutMs = 2000,
  ) {}

  async decide(a: {
    approvalId: string;
    tenantId: string | null;
    verdict: ApprovalVerdict;
    reason: string | null;
    decidedBy: string;
    /** Who decided, for the audit log (`api_key:<id>`); none for an expiry. */
    actor?: string;
  }): Promise<DecideOutcome> {
    const outcome = await this.store.decide({ ...a, eventId: newId() });
    if (outcome.kind !== 'decided') return outcome;
    const { approval } = outcome;
    await this.live?.publish(approval.sessionId, outcome.events);
    if (outcome.resumed) {
      await enqueueResume(
        this.turnsQueue,
        {
          turnId: approval.turnId,
          sessionId: approval.sessionId,
          tenantId: approval.tenantId,
          resume: approval.id,
          traceContext: outcome.traceContext,
        },
        { timeoutMs: this.enqueueTimeoutMs, logger: this.logger, after: 'an approval decision' },
      );
    }
    return outcome;
  }

  /** Expires pending approvals past their time: each call gets ApprovalExpired and its turn resumes. */
  async expireDue(limit = 100): Promise<number> {
    let expired = 0;
    for (const approvalId of await this.store.due(limit)) {
      const r = await this.decide({
        approvalId,
        tenantId: null,
        verdict: 'expired',
        reason: null,
        decidedBy: 'system',
      });
      if (r.kind === 'decided') expired++;
    }
    if (expired > 0) this.logger.info({ expired }, 'approvals expired');
    return expired;
  }
}
