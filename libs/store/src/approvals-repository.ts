import { poolOf, type Db } from '@switchboard/database';
import { pageOf, type Page } from './sessions-repository';
import { sql, SqlDb, type Sql } from './sql';

/**
 * The envelope of the turn's input message (turns.input_message_id): who or what asked for the turn
 * whose tool call waits (an operator prompt, a webhook event, a timer tick...), and the authority
 * class admission derived for it.
 */
export interface ApprovalProvenanceRead {
  messageId: string;
  kind: string;
  origin: unknown;
  trust: string;
  authorityClass: string;
}

/** An approval as a client reads it: the row, the agent of its turn and its provenance. */
export interface ApprovalRead {
  id: string;
  tenantId: string;
  sessionId: string;
  turnId: string;
  callId: string;
  toolName: string;
  arguments: unknown;
  sideEffect: string;
  policy: string;
  status: string;
  reason: string | null;
  decidedBy: string | null;
  decidedAt: Date | null;
  expiresAt: Date;
  createdAt: Date;
  agentId: string;
  /** Null only when the agent row is gone. */
  agentName: string | null;
  /** Null when the input message is no longer kept (the transcript's retention detached its partition). */
  provenance: ApprovalProvenanceRead | null;
}

interface Row extends Omit<ApprovalRead, 'provenance'> {
  messageId: string | null;
  kind: string | null;
  origin: unknown;
  trust: string | null;
  authorityClass: string | null;
}

const toRead = ({ messageId, kind, origin, trust, authorityClass, ...r }: Row): ApprovalRead => ({
  ...r,
  provenance:
    messageId && kind && trust && authorityClass ? { messageId, kind, origin, trust, authorityClass } : null,
});

/**
 * What a client reads of approvals (the decision itself is `ApprovalStore`'s statement). Newest
 * first; `pending` lists only approvals whose turn still waits for them. Each read is one statement:
 * the approval joined to its turn, the turn's agent and the turn's input message, so the inbox shows
 * who or what asked without a read per row.
 */
export class ApprovalsRepository {
  private readonly sql: SqlDb;

  constructor(db: Db) {
    this.sql = new SqlDb(poolOf(db), { component: 'approvals' });
  }

  private select(where: Sql, limit: number): Promise<Row[]> {
    // The message is joined by its id (the partitioned table's key leads with it) and the tenant, so
    // another tenant's row can never surface through a turn.
    return this.sql.rows<Row>(sql`
      SELECT ap.id, ap.tenant_id AS "tenantId", ap.session_id AS "sessionId", ap.turn_id AS "turnId",
        ap.call_id AS "callId", ap.tool_name AS "toolName", ap.arguments, ap.side_effect AS "sideEffect",
        ap.policy, ap.status, ap.reason, ap.decided_by AS "decidedBy", ap.decided_at AS "decidedAt",
        ap.expires_at AS "expiresAt", ap.created_at AS "createdAt",
        t.agent_id AS "agentId", ag.name AS "agentName",
        m.id AS "messageId", m.kind, m.origin, m.trust, m.authority_class AS "authorityClass"
      FROM approvals ap
      JOIN turns t ON t.id = ap.turn_id AND t.tenant_id = ap.tenant_id
      LEFT JOIN agents ag ON ag.id = t.agent_id AND ag.tenant_id = ap.tenant_id
      LEFT JOIN messages m ON m.id = t.input_message_id AND m.tenant_id = ap.tenant_id
      WHERE ${where}
      ORDER BY ap.id DESC
      LIMIT ${limit}::int`);
  }

  async page(
    tenantId: string,
    filter: { status?: string; beforeId?: string; agentIds?: string[] },
    limit: number,
  ): Promise<Page<ApprovalRead>> {
    // A key limited to agents (docs/adr/0066) lists only their approvals.
    const agents =
      filter.agentIds === undefined ? sql`true` : sql`t.agent_id = ANY(${filter.agentIds}::uuid[])`;
    const status = filter.status === undefined ? sql`true` : sql`ap.status = ${filter.status}`;
    const waiting = filter.status === 'pending' ? sql`t.status = 'awaiting_approval'` : sql`true`;
    const before = filter.beforeId === undefined ? sql`true` : sql`ap.id < ${filter.beforeId}::uuid`;
    const rows = await this.select(
      // Client tool waits share the table (docs/adr/0047) but are no person's to decide: not listed.
      sql`ap.tenant_id = ${tenantId}::uuid AND ap.kind = 'approval' AND ${status} AND ${waiting} AND ${before} AND ${agents}`,
      limit + 1,
    );
    return pageOf(rows.map(toRead), limit);
  }

  async find(tenantId: string, id: string): Promise<ApprovalRead | null> {
    const [row] = await this.select(
      sql`ap.id = ${id}::uuid AND ap.tenant_id = ${tenantId}::uuid AND ap.kind = 'approval'`,
      1,
    );
    return row ? toRead(row) : null;
  }
}
