import { newId } from '@switchboard/contracts';
import { sealText } from '@switchboard/database';
import { json, ofTenant, sql, type SqlRunner } from './sql';
import { ENDED } from './turn/statuses';
import type { ScoreRead } from './turn-reads';

/** The trace id of `turns.trace_context`'s traceparent, in SQL; null when it has none (docs/adr/0062). */
const TRACE_ID_SQL = sql`CASE WHEN split_part(t.trace_context->>'traceparent', '-', 2) ~ '^[0-9a-f]{32}$'
  AND split_part(t.trace_context->>'traceparent', '-', 2) <> repeat('0', 32)
  THEN split_part(t.trace_context->>'traceparent', '-', 2) END`;

/** Feedback on a turn (POST /v1/turns/:id/feedback) as its row holds it. */
export interface FeedbackWrite {
  tenantId: string;
  turnId: string;
  score: number | null;
  passed: boolean | null;
  label: string | null;
  value: number | null;
  comment: string | null;
  rating: 'up' | 'down' | null;
  givenBy: string;
}

export type FeedbackResult =
  | { outcome: 'written'; score: ScoreRead & { id: string; turnId: string; comment: string | null } }
  | { outcome: 'not_found' }
  | { outcome: 'not_ended'; status: string };

/**
 * Writes one feedback row on the tenant's ended turn (docs/adr/0062), in one statement: the turn's
 * agent, version, session and trace are copied onto it. `not_found` for a turn that is not the
 * tenant's, `not_ended` for one still running (nothing written either way).
 */
export async function writeFeedback(db: SqlRunner, f: FeedbackWrite): Promise<FeedbackResult> {
  // The comment a person wrote is content: sealed for an encrypting tenant (docs/adr/0067).
  const comment = await sealText(f.tenantId, f.comment);
  const row = await db.first<{
    found: boolean;
    status: string | null;
    written: (ScoreRead & { id: string; turnId: string; comment: string | null }) | null;
  }>(sql`
    WITH t AS (
      SELECT id, tenant_id, agent_id, agent_version, session_id, status, trace_context FROM turns
      WHERE id = ${f.turnId}::uuid AND ${ofTenant('tenant_id', f.tenantId)}
    ),
    ins AS (
      INSERT INTO turn_scores (id, tenant_id, agent_id, agent_version, turn_id, session_id, trace_id, source,
        scorer, kind, status, score, passed, label, value, given_by, details)
      SELECT ${newId()}::uuid, t.tenant_id, t.agent_id, t.agent_version, t.id, t.session_id, ${TRACE_ID_SQL},
        'feedback', 'feedback', 'feedback', 'scored', ${f.score}::float8, ${f.passed}::boolean, ${f.label},
        ${f.value}::float8, ${f.givenBy},
        ${json({ ...(comment !== null ? { comment } : {}), ...(f.rating ? { rating: f.rating } : {}) })}::jsonb
      FROM t WHERE t.status IN ${ENDED}
      RETURNING *
    )
    SELECT EXISTS (SELECT 1 FROM t) AS found, (SELECT status FROM t) AS status,
      (SELECT json_build_object('id', i.id, 'turnId', i.turn_id, 'scorer', i.scorer, 'kind', i.kind,
         'source', i.source, 'status', i.status, 'score', i.score, 'passed', i.passed, 'reason', i.reason,
         'label', i.label, 'value', i.value, 'givenBy', i.given_by, 'traceId', i.trace_id,
         'comment', i.details->>'comment',
         'createdAt', to_char(i.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
       FROM ins i) AS written`);
  if (!row?.found) return { outcome: 'not_found' };
  if (!row.written) return { outcome: 'not_ended', status: row.status ?? 'unknown' };
  return { outcome: 'written', score: row.written };
}

/** One aggregate of GET /v1/agents/:id/scores. */
export interface ScoreAggregate {
  version: number | null;
  day: string;
  scorer: string;
  source: 'scorer' | 'feedback';
  count: number;
  meanScore: number | null;
  passRate: number | null;
}

/**
 * The agent's scores per version, UTC day, scorer and source over `[from, to)` (docs/adr/0062): a row
 * counts when it is `scored` with a score; the mean of those scores, and the share passed among
 * those whose `passed` is set. Groups with no counted row are left out.
 */
export async function agentScoreAggregates(
  db: SqlRunner,
  q: { tenantId: string; agentId: string; from: Date; to: Date; scorer?: string },
): Promise<ScoreAggregate[]> {
  return db.rows<ScoreAggregate>(sql`
    SELECT s.agent_version AS version, to_char((s.created_at AT TIME ZONE 'UTC')::date, 'YYYY-MM-DD') AS day,
      s.scorer, s.source, count(*)::int AS count, avg(s.score)::float8 AS "meanScore",
      (count(*) FILTER (WHERE s.passed))::float8 / nullif(count(*) FILTER (WHERE s.passed IS NOT NULL), 0)
        AS "passRate"
    FROM turn_scores s
    WHERE ${ofTenant('s.tenant_id', q.tenantId)} AND s.agent_id = ${q.agentId}::uuid
      AND s.created_at >= ${q.from} AND s.created_at < ${q.to}
      AND s.status = 'scored' AND s.score IS NOT NULL
      ${q.scorer !== undefined ? sql`AND s.scorer = ${q.scorer}` : sql``}
    GROUP BY 1, 2, 3, 4
    ORDER BY 1 NULLS FIRST, 2, 3, 4`);
}
