import { AppError, isEnded, notFound, type ForkSessionRequest } from '@switchboard/contracts';
import type { LivePublisher } from '@switchboard/live';
import {
  forkSession,
  ofTenant,
  readLineage,
  rewindSession,
  sql,
  type ForkResult,
  type RewindResult,
  type SessionLineage,
  type SqlDb,
} from '@switchboard/store';

/** The gateway's fork, rewind and lineage of sessions (docs/adr/0053). */
export const SESSION_HISTORY = Symbol('SESSION_HISTORY');

/** The journal's end events of a turn: a fork point given by `eventSeq` must be one of them. */
const TURN_END_EVENTS = ['turn_completed', 'turn_failed', 'turn_cancelled'];

/**
 * Fork, rewind and lineage over the store's functions (libs/store/src/fork-store.ts): each write is
 * one transaction under the session row's lock that writes nothing on a refusal (the store throws the
 * 4xx), audited in that transaction, and its journal events go out on the live channel once committed.
 */
export class SessionHistory {
  constructor(
    private readonly db: SqlDb,
    private readonly live: LivePublisher,
  ) {}

  /**
   * Forks the session at `turnId`, or at the turn whose end event has the journal seq `eventSeq`
   * (404 when the session has no such event, 400 when it is not a turn's end).
   */
  async fork(
    tenantId: string,
    sessionId: string,
    body: ForkSessionRequest,
    actor: string,
  ): Promise<ForkResult> {
    const turnId = body.turnId ?? (await this.turnOfEndEvent(tenantId, sessionId, body.eventSeq!));
    const overrides = {
      ...(body.model !== undefined ? { model: body.model } : {}),
      ...(body.instructions !== undefined ? { instructions: body.instructions } : {}),
    };
    const result = await forkSession(this.db, {
      tenantId,
      sessionId,
      turnId,
      position: body.position ?? 'after',
      overrides,
      ...(body.title !== undefined ? { title: body.title } : {}),
      actor,
    });
    await this.live.publish(result.sessionId, result.events.fork);
    await this.live.publish(result.parentSessionId, result.events.parent);
    return result;
  }

  async rewind(tenantId: string, sessionId: string, turnId: string, actor: string): Promise<RewindResult> {
    const result = await rewindSession(this.db, { tenantId, sessionId, turnId, actor });
    await this.live.publish(sessionId, result.events);
    return result;
  }

  lineage(tenantId: string, sessionId: string): Promise<SessionLineage | undefined> {
    return readLineage(this.db, tenantId, sessionId);
  }

  /** The turn whose end event is `seq` in the tenant's session. */
  private async turnOfEndEvent(tenantId: string, sessionId: string, seq: number): Promise<string> {
    const row = await this.db.first<{
      found: boolean;
      type: string | null;
      turn_id: string | null;
      status: string | null;
    }>(sql`
      SELECT EXISTS (SELECT 1 FROM sessions WHERE id = ${sessionId}::uuid AND ${ofTenant('tenant_id', tenantId)}) AS found,
        e.type, e.turn_id, t.status
      FROM (SELECT 1) one
        LEFT JOIN events e ON e.session_id = ${sessionId}::uuid AND e.seq = ${seq}::int
          AND ${ofTenant('e.tenant_id', tenantId)}
        LEFT JOIN turns t ON t.id = e.turn_id`);
    if (!row?.found) throw notFound('session');
    if (!row.type)
      throw new AppError('not_found', `no event with seq ${seq} in this session`, { eventSeq: seq });
    if (!TURN_END_EVENTS.includes(row.type) || !row.turn_id || !row.status || !isEnded(row.status)) {
      throw new AppError(
        'bad_request',
        `eventSeq ${seq} is a ${row.type} event: a fork point must be a turn's end event (${TURN_END_EVENTS.join(', ')})`,
        { eventSeq: seq, type: row.type },
      );
    }
    return row.turn_id;
  }
}
