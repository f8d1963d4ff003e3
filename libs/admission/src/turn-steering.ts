import type { Queue } from 'bullmq';
import { trace } from '@opentelemetry/api';
import {
  cancelCause,
  Jobs,
  newId,
  stoppedParentCause,
  type CancelCause,
  type CancelReason,
  type TurnStatus,
} from '@switchboard/contracts';
import { sendControl, type LivePublisher } from '@switchboard/live';
import type { Logger, Metrics } from '@switchboard/observability';
import { publish, type RedisConnection } from '@switchboard/queue';
import { ControlStore, TurnStore, type SqlDb } from '@switchboard/store';

export interface CancelResult {
  /** The turn's status after the request: `running` while its worker stops it, else terminal. */
  status: TurnStatus;
  /** The request changed something (false: the turn had already ended). */
  changed: boolean;
}

/**
 * Steering a turn from the gateway (docs/adr/0014): cancel (POST /v1/turns/:id/cancel, and
 * `multitask: interrupt`) and the nudge that tells the worker holding a session that an interjection
 * waits. The request is durable in Postgres before any message is sent; the control channel only
 * makes it fast. (The worker's side of a cancel is the running turn's `TurnAbort`, libs/turns.)
 */
export class TurnSteering {
  private readonly store: ControlStore;
  private readonly turns: TurnStore;

  constructor(
    db: SqlDb,
    private readonly o: {
      redis: RedisConnection;
      prefix: string;
      postTurnQueue: Queue;
      turnsQueue: Queue;
      live: LivePublisher;
      logger: Logger;
      /** Counts the turns ended here by reason (`switchboard_turns_cancelled_total`, docs/adr/0055). */
      metrics?: Pick<Metrics, 'turnsCancelled'>;
    },
  ) {
    this.store = new ControlStore(db);
    this.turns = new TurnStore(db);
  }

  /**
   * Cancels a turn of this tenant; undefined when there is none. A queued turn (or one awaiting
   * approval) ends here at once; a running one is stopped by its worker at the next safe point (the
   * worker is told over the control channel; its heartbeat finds the request when the message is
   * lost, and a claim after its worker died ends it without running it). A turn that already ended
   * is left as it is. `cause` says why (docs/adr/0055); `auditActor` writes an audit entry with the
   * change (the operator's cancel).
   */
  async cancel(
    tenantId: string,
    turnId: string,
    cause: CancelCause,
    o: { auditActor?: string } = {},
  ): Promise<CancelResult | undefined> {
    const result = await this.cancelOne(tenantId, turnId, cause, o.auditActor);
    // Its sub-agents' child turns are cancelled with it, recursively (docs/adr/0025), after its own
    // cancel is recorded, so a parent still running cannot see a child's cancelled handback and spawn
    // again. Also for a repeated cancel of a cancelled turn: a cascade cut short is finished by a retry.
    // They carry the parent's reason (docs/adr/0055); the note names the parent.
    if (result && (result.changed || result.status === 'cancelled')) {
      await this.cancelChildren(
        tenantId,
        turnId,
        cancelCause(cause.reason, `parent turn ${turnId} was cancelled`),
      );
    }
    return result;
  }

  /**
   * Cancels the child turns of a turn's sub-agent tasks that have not ended (and theirs), with
   * `cause`: the cancel cascade above, and a parent that ended at its deadline or budget
   * (docs/adr/0055). Returns how many it asked to stop.
   */
  async cancelChildren(tenantId: string, turnId: string, cause: CancelCause): Promise<number> {
    const children = await this.store.activeChildTurns(tenantId, turnId);
    for (const child of children) await this.cancel(tenantId, child, cause);
    return children.length;
  }

  /**
   * POST /v1/agents/:id/stop (docs/adr/0055): the agent's running and waiting turns are cancelled,
   * reason `agent_stopped` (its queued turns stay held until a resume). Returns how many.
   */
  async cancelAgentTurns(tenantId: string, agentId: string, note?: string | null): Promise<number> {
    const turns = await this.store.agentActiveTurns(tenantId, agentId);
    for (const id of turns) await this.cancel(tenantId, id, cancelCause('agent_stopped', note));
    return turns.length;
  }

  private async cancelOne(
    tenantId: string,
    turnId: string,
    cause: CancelCause,
    auditActor?: string,
  ): Promise<CancelResult | undefined> {
    const r = await this.store.requestCancel({ tenantId, turnId, cause, eventId: newId(), auditActor });
    switch (r.kind) {
      case 'not_found':
        return undefined;
      case 'ended':
        return { status: r.status as TurnStatus, changed: false };
      case 'requested':
        if (r.leaseOwner) {
          await sendControl(this.o.redis, this.o, r.leaseOwner, {
            v: 1,
            type: 'cancel',
            turnId,
            sessionId: r.sessionId,
          });
        } else {
          // Its worker's lease lapsed (the worker died): the next claim of the session ends it. Make
          // sure one comes even when the turn's own job already completed.
          await this.wake(r.sessionId);
        }
        return { status: 'running', changed: true };
      case 'cancelled':
        this.counted(r.reason);
        await this.o.live.publish(r.sessionId, r.events);
        // As the runner does for every terminal turn: the same job id, so a repeat is a no-op.
        await publish(this.o.postTurnQueue, Jobs.postTurn, { turnId, tenantId: r.tenantId });
        // The turn's own job, when it fires, finds it ended and only drains the session; a session whose
        // jobs already completed gets a fresh one for its next turn.
        await this.wake(r.sessionId);
        return { status: 'cancelled', changed: true };
    }
  }

  /**
   * The maintenance sweep's half of the cascade (docs/adr/0025): child turns still open under a
   * cancelled parent (a gateway died between the parent's cancel and its children's) are cancelled
   * now. Returns how many.
   */
  async cancelOrphans(): Promise<number> {
    const orphans = await this.store.orphanedChildTurns();
    for (const o of orphans) {
      const cause =
        o.parentStatus === 'cancelled'
          ? cancelCause(o.parentCancelReason ?? 'api_cancel', `parent turn ${o.parentTurnId} was cancelled`)
          : stoppedParentCause(o.parentTurnId, o.parentStopReason);
      if (cause) await this.cancel(o.tenantId, o.turnId, cause);
    }
    return orphans.length;
  }

  /**
   * `multitask: interrupt`: cancels the session's active turns (running, or awaiting approval) other
   * than the one just admitted, which then runs after them.
   */
  async interrupt(tenantId: string, sessionId: string, admittedTurnId: string): Promise<void> {
    for (const id of await this.store.activeTurns(sessionId, tenantId, admittedTurnId)) {
      await this.cancel(tenantId, id, cancelCause('superseded', `interrupted by turn ${admittedTurnId}`));
    }
  }

  /** Tells the worker holding the session that an interjection waits; false when none holds it. */
  async notifyInterjection(sessionId: string): Promise<boolean> {
    const owner = await this.store.leaseOwner(sessionId);
    if (!owner) return false;
    return sendControl(this.o.redis, this.o, owner, { v: 1, type: 'interject', sessionId });
  }

  /** A turn ended here, by why: the metric, and the request's span (docs/adr/0055). */
  private counted(reason: CancelReason): void {
    this.o.metrics?.turnsCancelled.inc({ reason });
    trace.getActiveSpan()?.setAttribute('switchboard.turn.cancel_reason', reason);
  }

  /** A fresh job for the session's next unfinished turn when its own job is no longer alive. */
  private async wake(sessionId: string): Promise<void> {
    try {
      const next = await this.turns.nextUnfinished(sessionId);
      if (!next) return;
      const old = await this.o.turnsQueue.getJob(next.id);
      if (old) {
        const state = await old.getState();
        if (state !== 'completed' && state !== 'failed') return;
        await old.remove().catch(() => undefined);
      }
      await publish(this.o.turnsQueue, Jobs.turn, { turnId: next.id, sessionId, tenantId: next.tenantId });
    } catch (err) {
      // The reconciler re-enqueues unfinished turns whose jobs are gone.
      this.o.logger.warn({ err, sessionId }, 'could not wake the session after a cancel');
    }
  }
}
