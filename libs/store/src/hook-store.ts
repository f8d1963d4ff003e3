import { TERMINAL_TURN_STATUSES } from '@switchboard/contracts';
import { sql, type SqlRunner } from './sql';

/** The cost log line a `cost-log` hook run records (hook_runs.output). */
export interface CostLogLine {
  turnId: string;
  sessionId: string;
  agentId: string;
  tenantId: string;
  status: string;
  providerCalls: number;
  inputTokens: number;
  outputTokens: number;
  cachedTokens: number;
  /** Exact, 8 decimal places. */
  costUsd: string;
  /** In the order of their first ledger entry. */
  models: string[];
}

/** A turn's ledger summed per provider and model (for the token and cost metrics). */
export interface CostByModel {
  provider: string;
  model: string;
  inputTokens: number;
  outputTokens: number;
  cachedTokens: number;
  /** Exact decimal. */
  costUsd: string;
}

export type CostLogResult =
  | { kind: 'skipped' }
  | { kind: 'already_done' }
  | { kind: 'written'; line: CostLogLine; byModel: CostByModel[] };

interface CostLogRow {
  found: boolean;
  line: CostLogLine | null;
  byModel: CostByModel[];
}

/**
 * The cost-log hook's one statement (docs/adr/0010): reads the turn (it must be the job's tenant's
 * and terminal), sums its ledger in SQL (exact numeric, 8 places), and inserts the `hook_runs` row
 * `ON CONFLICT (turn_id, hook) DO NOTHING`, so a re-run, or runs racing for one turn, write one row
 * and exactly one of them is told `written`. One transaction, one round trip.
 */
export async function recordCostLog(
  db: SqlRunner,
  job: { id: string; turnId: string; tenantId: string },
): Promise<CostLogResult> {
  const row = await db.first<CostLogRow>(sql`
    WITH t AS (
      SELECT id, session_id, agent_id, tenant_id, status FROM turns
      WHERE id = ${job.turnId}::uuid AND tenant_id = ${job.tenantId}::uuid
        AND status = ANY(${[...TERMINAL_TURN_STATUSES]}::text[])
    ),
    e AS (
      SELECT provider, model, count(*) AS calls, sum(input_tokens) AS input_tokens,
        sum(output_tokens) AS output_tokens, sum(cached_tokens) AS cached_tokens,
        sum(cost_usd) AS cost_usd, min(created_at) AS first_at
      FROM ledger_entries WHERE turn_id = (SELECT id FROM t)
      GROUP BY provider, model
    ),
    line AS (
      SELECT t.id AS turn_id, t.tenant_id, jsonb_build_object(
        'turnId', t.id, 'sessionId', t.session_id, 'agentId', t.agent_id, 'tenantId', t.tenant_id,
        'status', t.status,
        'providerCalls', (SELECT coalesce(sum(calls), 0)::int FROM e),
        'inputTokens', (SELECT coalesce(sum(input_tokens), 0)::int FROM e),
        'outputTokens', (SELECT coalesce(sum(output_tokens), 0)::int FROM e),
        'cachedTokens', (SELECT coalesce(sum(cached_tokens), 0)::int FROM e),
        'costUsd', (SELECT round(coalesce(sum(cost_usd), 0), 8)::text FROM e),
        'models', (SELECT coalesce(jsonb_agg(model ORDER BY first_at, model), '[]'::jsonb)
                   FROM (SELECT model, min(first_at) AS first_at FROM e GROUP BY model) m)
      ) AS output
      FROM t
    ),
    ins AS (
      INSERT INTO hook_runs (id, tenant_id, turn_id, hook, status, output, completed_at)
      SELECT ${job.id}::uuid, tenant_id, turn_id, 'cost-log', 'completed', output, now() FROM line
      ON CONFLICT (turn_id, hook) DO NOTHING
      RETURNING output
    )
    SELECT EXISTS (SELECT 1 FROM t) AS found,
      (SELECT output FROM ins) AS line,
      coalesce((SELECT json_agg(json_build_object(
        'provider', provider, 'model', model, 'inputTokens', input_tokens::int,
        'outputTokens', output_tokens::int, 'cachedTokens', cached_tokens::int,
        'costUsd', cost_usd::text)) FROM e WHERE EXISTS (SELECT 1 FROM ins)), '[]') AS "byModel"
  `);
  if (!row?.found) return { kind: 'skipped' };
  if (!row.line) return { kind: 'already_done' };
  return { kind: 'written', line: row.line, byModel: row.byModel };
}
