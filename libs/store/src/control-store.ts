import { isEnded, STOP_REASON_CANCELS, type CancelCause, type CancelReason } from '@switchboard/contracts';
import { sealText } from '@switchboard/database';
import { auditInsert } from './audit-log';
import { json, ofTenant, sql, sqlList, type SqlDb } from './sql';
import { ACTIVE, ENDED } from './turn/statuses';
import type { CommittedEvent } from './turn-store';
import { answerUnrunCalls } from './unrun-answers';

/**
 * The gateway's side of steering a turn (docs/adr/0014): a cancel request recorded durably on the
 * turn, and a turn that no worker holds (queued, awaiting approval) ended at once.
 */

export type CancelOutcome =
  /** No such turn in this tenant. */
  | { kind: 'not_found' }
  /** The turn had already ended: nothing changed. */
  | { kind: 'ended'; status: string; sessionId: string }
  /**
   * The turn is running: the request is recorded, and the worker holding the session (`leaseOwner`,
   * null when its lease lapsed: the next claim ends it) is to be told.
   */
  | { kind: 'requested'; sessionId: string; leaseOwner: string | null }
  /** No worker held it (queued, awaiting approval): ended here, with its journaled events. */
  | {
      kind: 'cancelled';
      sessionId: string;
      tenantId: string;
      priority: string;
      events: CommittedEvent[];
      /** The reason that stands on the turn (an earlier request's, when there was one). */
      reason: CancelReason;
    };

/** A child turn still open under a parent that ended in a way that ends its children. */
export interface OrphanedChildTurn {
  tenantId: string;
  turnId: string;
  parentTurnId: string;
  parentStatus: string;
  parentStopReason: string | null;
  parentCancelReason: CancelReason | null;
}

/** The stop reasons whose turn's children are cancelled with it (`STOP_REASON_CANCELS`). */
const CASCADING_STOP_REASONS = sqlList(Object.keys(STOP_REASON_CANCELS));

/** The cancel's reason and note on the turn row: the first request's stand. */
const cancelSet = (reason: CancelReason, note: string | null) =>
  sql`cancel_reason = coalesce(cancel_reason, ${reason}::text),
            cancel_note = CASE WHEN cancel_reason IS NULL THEN ${note}::text ELSE cancel_note END`;

export class ControlStore {
  constructor(readonly db: SqlDb) {}

  /**
   * Records a cancel request and ends the turn when no worker holds it, in one transaction that
   * locks the session row first: a claim, a finalisation and an interjection's delivery all update
   * that row before they touch the turn, so the status read after the lock is the one that stands.
   */
  async requestCancel(a: {
    tenantId: string;
    turnId: string;
    /** Why (docs/adr/0055); the first request's reason and note stand, a repeat changes neither. */
    cause: CancelCause;
    eventId: string;
    /** Who asked, for the audit log (the operator's cancel): written with the change, only when it changes something. */
    auditActor?: string;
  }): Promise<CancelOutcome> {
    const reason = a.cause.reason;
    // A note a person typed is content: sealed for an encrypting tenant (docs/adr/0067) on the turn, in
    // the `turn_cancelled` event (copied from the turn) and in the audit entry.
    const note = await sealText(a.tenantId, a.cause.note ?? null);
    return this.db.transaction(async (tx) => {
      const found = await tx.first<{ session_id: string }>(sql`
        SELECT session_id FROM turns WHERE id = ${a.turnId}::uuid AND ${ofTenant('tenant_id', a.tenantId)}`);
      if (!found) return { kind: 'not_found' };
      const sessionId = found.session_id;
      const session = await tx.first<{ lease_owner: string | null; held: boolean }>(sql`
        SELECT lease_owner, (lease_token IS NOT NULL AND lease_expires_at > now()) AS held
        FROM sessions WHERE id = ${sessionId}::uuid FOR UPDATE`);
      // A new statement after the lock: its snapshot sees whatever committed before the lock was granted.
      const turn = await tx.first<{ status: string; priority: string }>(sql`
        SELECT status, priority FROM turns WHERE id = ${a.turnId}::uuid`);
      if (!turn) return { kind: 'not_found' };
      if (isEnded(turn.status)) {
        return { kind: 'ended', status: turn.status, sessionId };
      }
      if (a.auditActor) {
        await tx.execute(
          auditInsert({
            tenantId: a.tenantId,
            actor: a.auditActor,
            action: 'turn.cancelled',
            targetType: 'turn',
            targetId: a.turnId,
            details: { reason, ...(note ? { note } : {}), status: turn.status },
          }),
        );
      }
      if (turn.status === 'running') {
        await tx.execute(sql`
          UPDATE turns SET cancel_requested_at = coalesce(cancel_requested_at, now()),
            ${cancelSet(reason, note)}
          WHERE id = ${a.turnId}::uuid`);
        return {
          kind: 'requested',
          sessionId,
          leaseOwner: session?.held ? session.lease_owner : null,
        };
      }
      // queued or awaiting_approval: no worker holds it, so it ends here, as the runner would end it:
      // first every call of its rounds left without a result (a gated, held or waiting call) is
      // answered cancelled, so a later turn's history keeps the round and what already ran in it.
      const answered = await answerUnrunCalls(tx, { tenantId: a.tenantId, sessionId, turnId: a.turnId });
      // The reason and note that stand (an earlier request's, when there was one) go into the event.
      const data = { stopReason: 'cancelled' };
      const ended = await tx.rows<CommittedEvent>(sql`
        WITH t AS (
          UPDATE turns SET status = 'cancelled', stop_reason = 'cancelled', completed_at = now(),
            final_text = coalesce(final_text, ''), cancel_requested_at = coalesce(cancel_requested_at, now()),
            ${cancelSet(reason, note)},
            decision = jsonb_build_object('strategy', 'cancelled', 'model', model, 'tools', (SELECT coalesce(jsonb_agg(DISTINCT name), '[]'::jsonb)
                FROM tool_calls WHERE turn_id = ${a.turnId}::uuid),
              'iterations', iterations, 'toolCalls', tool_call_count, 'stopReason', 'cancelled')
          WHERE id = ${a.turnId}::uuid
          RETURNING input_tokens, output_tokens, cost_usd, iterations, tool_call_count, cancel_reason, cancel_note
        ),
        s AS (
          -- The turn's usage so far (a turn that waited for approval had spent some) joins the session's.
          UPDATE sessions SET last_event_seq = sessions.last_event_seq + 1,
            input_tokens = sessions.input_tokens + t.input_tokens,
            output_tokens = sessions.output_tokens + t.output_tokens,
            cost_usd = sessions.cost_usd + t.cost_usd, updated_at = now()
          FROM t WHERE sessions.id = ${sessionId}::uuid
          RETURNING sessions.last_event_seq AS seq
        )
        INSERT INTO events (id, tenant_id, session_id, turn_id, seq, type, data)
        SELECT ${a.eventId}::uuid, ${a.tenantId}::uuid, ${sessionId}::uuid, ${a.turnId}::uuid, s.seq, 'turn_cancelled',
          ${json(data)}::jsonb || jsonb_build_object('iterations', t.iterations, 'toolCalls', t.tool_call_count,
            'costUsd', t.cost_usd::text, 'reason', t.cancel_reason)
            || CASE WHEN t.cancel_note IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('note', t.cancel_note) END
        FROM s, t
        RETURNING id, seq, type, turn_id AS "turnId", data, created_at AS "createdAt"`);
      const events = [...answered, ...ended];
      // Its pending approvals end with it (docs/adr/0013): no longer listed as pending, a decision is a 409.
      await tx.execute(sql`
        UPDATE approvals SET status = 'cancelled', decided_by = 'system', decided_at = now(),
          reason = 'the turn was cancelled'
        WHERE turn_id = ${a.turnId}::uuid AND status = 'pending'`);
      // A sub-agent's child turn ended here ends its task (docs/adr/0024); the parent hears of it from
      // the tasks sweep (the runner never saw this turn end).
      await tx.execute(sql`
        UPDATE tasks SET status = 'cancelled', completed_at = now(), updated_at = now(),
          handback = jsonb_build_object('status', 'incomplete', 'reason', 'cancelled'), output = ''
        WHERE child_turn_id = ${a.turnId}::uuid AND status IN ('pending', 'running')`);
      const stood = ended[0]?.data as { reason?: CancelReason } | undefined;
      return {
        kind: 'cancelled',
        sessionId,
        tenantId: a.tenantId,
        priority: turn.priority,
        events,
        reason: stood?.reason ?? reason,
      };
    });
  }

  /** The session's turns a worker holds or that wait on a human: what `multitask: interrupt` cancels. */
  async activeTurns(sessionId: string, tenantId: string, except: string): Promise<string[]> {
    const rows = await this.db.rows<{ id: string }>(sql`
      SELECT id FROM turns
      WHERE session_id = ${sessionId}::uuid AND tenant_id = ${tenantId}::uuid AND id <> ${except}::uuid
        AND status IN ${ACTIVE}
      ORDER BY seq`);
    return rows.map((r) => r.id);
  }

  /**
   * The agent's turns a worker holds or that wait (running, awaiting approval, a sub-agent or the
   * client's tools): what POST /v1/agents/:id/stop cancels (docs/adr/0055). Queued turns are held
   * by the stop, not cancelled.
   */
  async agentActiveTurns(tenantId: string, agentId: string): Promise<string[]> {
    const rows = await this.db.rows<{ id: string }>(sql`
      SELECT id FROM turns
      WHERE agent_id = ${agentId}::uuid AND tenant_id = ${tenantId}::uuid AND status IN ${ACTIVE}
      ORDER BY created_at, id`);
    return rows.map((r) => r.id);
  }

  /**
   * The child turns of a turn's sub-agent tasks that have not ended (docs/adr/0025): what cancelling
   * the turn cancels too. Their own children are found when each of them is cancelled.
   */
  async activeChildTurns(tenantId: string, turnId: string): Promise<string[]> {
    const rows = await this.db.rows<{ id: string }>(sql`
      SELECT t.id FROM tasks k JOIN turns t ON t.id = k.child_turn_id
      WHERE k.parent_turn_id = ${turnId}::uuid AND k.tenant_id = ${tenantId}::uuid
        AND t.status NOT IN ${ENDED}
      ORDER BY k.created_at, k.id`);
    return rows.map((r) => r.id);
  }

  /**
   * Child turns still open under a cancelled parent: the cascade a gateway that died after the
   * parent's cancel never finished (docs/adr/0025), for the maintenance sweep. Open tasks only, so
   * the scan stays small.
   */
  async orphanedChildTurns(limit = 100): Promise<OrphanedChildTurn[]> {
    return this.db.rows(sql`
      SELECT t.tenant_id AS "tenantId", t.id AS "turnId", p.id AS "parentTurnId",
        p.status AS "parentStatus", p.stop_reason AS "parentStopReason",
        p.cancel_reason AS "parentCancelReason"
      FROM tasks k
        JOIN turns p ON p.id = k.parent_turn_id
        JOIN turns t ON t.id = k.child_turn_id
      WHERE k.status IN ('pending', 'running')
        -- A parent cancelled, or ended at its deadline or budget (docs/adr/0055): its children go too.
        AND (p.status = 'cancelled'
          OR (p.status = 'completed' AND p.stop_reason IN ${CASCADING_STOP_REASONS}))
        AND t.status NOT IN ${ENDED}
        -- A cancel already requested ends the turn at its worker's next safe point or next claim.
        AND t.cancel_requested_at IS NULL
      ORDER BY k.created_at, k.id
      LIMIT ${limit}`);
  }

  /** The worker holding the session's lease, if it is live (an interjection's control message goes there). */
  async leaseOwner(sessionId: string): Promise<string | null> {
    const row = await this.db.first<{ lease_owner: string | null }>(sql`
      SELECT lease_owner FROM sessions
      WHERE id = ${sessionId}::uuid AND lease_token IS NOT NULL AND lease_expires_at > now()`);
    return row?.lease_owner ?? null;
  }
}
