import type { Queue } from 'bullmq';
import type { LivePublisher } from '@switchboard/live';
import type { Logger } from '@switchboard/observability';
import type { AnswerOutcome, ClientToolStore } from '@switchboard/store';
import { enqueueResume } from './requeue';

type Answered = Extract<AnswerOutcome, { kind: 'answered' }>;

/**
 * Answering a turn's client tool calls and resuming it (docs/adr/0047), shared by every protocol
 * (through AgentTurns) and the maintenance sweep (expiry), as Approvals is for decisions: the answer
 * commits first; then its events go out live and, when nothing of the turn is pending any more, one
 * turn job resumes it on whichever worker takes it. A lost enqueue is found by the reconciler (the
 * turn is `queued`); a replayed answer changes nothing and enqueues nothing, so the turn resumes once.
 */
export class ClientTools {
  constructor(
    readonly store: ClientToolStore,
    private readonly turnsQueue: Queue,
    private readonly logger: Logger,
    private readonly live?: LivePublisher,
    private readonly enqueueTimeoutMs = 2000,
  ) {}

  async answer(a: {
    tenantId: string;
    turnId?: string;
    sessionId?: string;
    results: { callId: string; output: string }[];
    answeredBy: string;
  }): Promise<AnswerOutcome> {
    const outcome = await this.store.answer(a);
    if (outcome.kind === 'answered') await this.resume(outcome);
    return outcome;
  }

  /** Expires pending client calls past their time: each turn then ends `client_tool_timeout`. */
  async expireDue(limit = 100): Promise<number> {
    let expired = 0;
    for (const turnId of await this.store.due(limit)) {
      const outcome = await this.store.expire(turnId);
      if (!outcome) continue;
      expired++;
      await this.resume(outcome);
    }
    if (expired > 0) this.logger.info({ expired }, 'client tool waits expired');
    return expired;
  }

  private async resume(outcome: Answered): Promise<void> {
    await this.live?.publish(outcome.sessionId, outcome.events);
    if (!outcome.resumed) return;
    // The job id `<turnId>.<wait id>` (docs/adr/0013): never the id of the turn's first job, which may
    // still wait or run; a wait row is settled once, so this resume is enqueued once.
    await enqueueResume(
      this.turnsQueue,
      { ...outcome, resume: outcome.resumeId },
      { timeoutMs: this.enqueueTimeoutMs, logger: this.logger, after: 'client tool results' },
    );
  }
}
