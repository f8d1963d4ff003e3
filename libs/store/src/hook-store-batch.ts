import { ENDED_STATUSES } from '@switchboard/contracts';
import {
  ACCUMULATE_DAILY_SPEND,
  type CostLogResult,
  type LearningResult,
  type TurnToolUse,
} from './hook-store';
import { sql, type SqlRunner } from './sql';

/** One ended turn of a group commit (docs/adr/0070): its run row's id, the turn, the job's tenant. */
export interface HookBatchTurn {
  id: string;
  turnId: string;
  tenantId: string;
}

/** The batch's turns as a relation `j(run_id, turn_id, tenant_id)`, each turn once. */
function jobsOf(turns: readonly HookBatchTurn[]) {
  const seen = new Set<string>();
  const unique = turns.filter((t) => !seen.has(t.turnId) && seen.add(t.turnId));
  return sql`SELECT * FROM unnest(${unique.map((t) => t.id)}::uuid[], ${unique.map((t) => t.turnId)}::uuid[],
    ${unique.map((t) => t.tenantId)}::uuid[]) AS j(run_id, turn_id, tenant_id)`;
}

/**
 * `recordCostLog` for many turns in ONE statement (docs/adr/0070): each turn of the job's tenant that
 * has ended gets its `cost-log` `hook_runs` row (`ON CONFLICT DO NOTHING`: a re-run writes nothing),
 * and only the turns whose row this statement inserted are added to `tenant_spend_daily`, summed per
 * (tenant, day) first and upserted in (tenant, day) order: the statement takes each shared row once,
 * and concurrent batches take them in the same order. Meant as the last statement but one of the
 * group's transaction (then learning's), so the shared rows stay locked for the commit only.
 */
export async function recordCostLogBatch(
  db: SqlRunner,
  turns: readonly HookBatchTurn[],
): Promise<Map<string, CostLogResult>> {
  if (turns.length === 0) return new Map();
  const rows = await db.rows<{
    turnId: string;
    found: boolean;
    line: Extract<CostLogResult, { kind: 'written' }>['line'] | null;
    byModel: Extract<CostLogResult, { kind: 'written' }>['byModel'];
  }>(sql`
    WITH j AS (${jobsOf(turns)}),
    t AS (
      SELECT j.run_id, tu.id, tu.session_id, tu.agent_id, tu.tenant_id, tu.status
      FROM j JOIN turns tu ON tu.id = j.turn_id AND tu.tenant_id = j.tenant_id
      WHERE tu.status = ANY(${[...ENDED_STATUSES]}::text[])
    ),
    le AS (
      -- The turns' own calls: a hook's (key 'hook:…', the archivist's) are booked and rolled up by it.
      SELECT l.* FROM t JOIN ledger_entries l ON l.turn_id = t.id AND l.turn_at = sb_uuid7_time(t.id)
      WHERE l.key NOT LIKE 'hook:%'
    ),
    e AS (
      SELECT turn_id, provider, model, count(*) AS calls, sum(input_tokens) AS input_tokens,
        sum(output_tokens) AS output_tokens, sum(cached_tokens) AS cached_tokens,
        sum(cache_write_tokens) AS cache_write_tokens, sum(cost_usd) AS cost_usd, min(created_at) AS first_at
      FROM le GROUP BY turn_id, provider, model
    ),
    line AS (
      SELECT t.run_id, t.id AS turn_id, t.tenant_id, jsonb_build_object(
        'turnId', t.id, 'sessionId', t.session_id, 'agentId', t.agent_id, 'tenantId', t.tenant_id,
        'status', t.status,
        'providerCalls', (SELECT coalesce(sum(calls), 0)::int FROM e WHERE e.turn_id = t.id),
        'inputTokens', (SELECT coalesce(sum(input_tokens), 0)::int FROM e WHERE e.turn_id = t.id),
        'outputTokens', (SELECT coalesce(sum(output_tokens), 0)::int FROM e WHERE e.turn_id = t.id),
        'cachedTokens', (SELECT coalesce(sum(cached_tokens), 0)::int FROM e WHERE e.turn_id = t.id),
        'costUsd', (SELECT round(coalesce(sum(cost_usd), 0), 8)::text FROM e WHERE e.turn_id = t.id),
        'models', (SELECT coalesce(jsonb_agg(model ORDER BY first_at, model), '[]'::jsonb)
                   FROM (SELECT model, min(first_at) AS first_at FROM e WHERE e.turn_id = t.id GROUP BY model) m)
      ) AS output
      FROM t
    ),
    ins AS (
      INSERT INTO hook_runs (id, tenant_id, turn_id, turn_at, hook, status, output, completed_at)
      SELECT run_id, tenant_id, turn_id, sb_uuid7_time(turn_id), 'cost-log', 'completed', output, now() FROM line
      ORDER BY turn_id
      ON CONFLICT (turn_id, hook, turn_at) DO NOTHING
      RETURNING turn_id, output
    ),
    -- From now on these turns' spend is read from the roll-up, not from the turn (the daily cap, ADR 0026).
    rolled AS (
      UPDATE turns SET spend_rolled_up_at = now() WHERE id IN (SELECT turn_id FROM ins)
    ),
    per_turn_day AS (
      SELECT le.turn_id, le.tenant_id, (le.created_at AT TIME ZONE 'UTC')::date AS day, sum(le.cost_usd) AS cost_usd,
        sum(le.input_tokens) AS input_tokens, sum(le.output_tokens) AS output_tokens,
        sum(le.cached_tokens) AS cached_tokens, sum(le.cache_write_tokens) AS cache_write_tokens,
        sum(le.cache_saved_usd) AS cache_saved_usd, count(*) AS calls, max(le.created_at) AS last_at
      FROM le WHERE le.turn_id IN (SELECT turn_id FROM ins)
      GROUP BY 1, 2, 3
    ),
    -- A turn counts once, on the day of its last call (as recordCostLog counts it).
    counted AS (
      SELECT *, CASE WHEN last_at = max(last_at) OVER (PARTITION BY turn_id) THEN 1 ELSE 0 END AS turn_count
      FROM per_turn_day
    ),
    spend AS (
      INSERT INTO tenant_spend_daily (tenant_id, day, cost_usd, input_tokens, output_tokens, cached_tokens,
        cache_write_tokens, cache_saved_usd, provider_calls, turns, updated_at)
      SELECT tenant_id, day, sum(cost_usd), sum(input_tokens), sum(output_tokens), sum(cached_tokens),
        sum(cache_write_tokens), sum(cache_saved_usd), sum(calls), sum(turn_count), now()
      FROM counted
      GROUP BY tenant_id, day
      -- One row per (tenant, day), in order: concurrent batches lock the shared rows in the same order.
      ORDER BY tenant_id, day
      ${ACCUMULATE_DAILY_SPEND}
    )
    SELECT j.turn_id AS "turnId", EXISTS (SELECT 1 FROM t WHERE t.id = j.turn_id) AS found,
      (SELECT output FROM ins WHERE ins.turn_id = j.turn_id) AS line,
      coalesce((SELECT json_agg(json_build_object(
        'provider', provider, 'model', model, 'inputTokens', input_tokens::int,
        'outputTokens', output_tokens::int, 'cachedTokens', cached_tokens::int,
        'cacheWriteTokens', cache_write_tokens::int, 'costUsd', cost_usd::text)) FROM e
        WHERE e.turn_id = j.turn_id AND EXISTS (SELECT 1 FROM ins WHERE ins.turn_id = j.turn_id)), '[]') AS "byModel"
    FROM j
  `);
  return new Map(
    rows.map((r): [string, CostLogResult] => [
      r.turnId,
      !r.found
        ? { kind: 'skipped' }
        : !r.line
          ? { kind: 'already_done' }
          : { kind: 'written', line: r.line, byModel: r.byModel },
    ]),
  );
}

/**
 * `recordLearning` for many turns in ONE statement (docs/adr/0070): each ended turn of the job's
 * tenant gets its `learning` `hook_runs` row with its per-tool roll-up, and only the turns whose row
 * this statement inserted are added to `agent_tool_stats`, summed per (agent, tool) first and upserted
 * in (agent, tool) order, so the statement takes each shared row once and concurrent batches take them
 * in the same order. The group's last statement: the shared rows stay locked for the commit only.
 */
export async function recordLearningBatch(
  db: SqlRunner,
  turns: readonly HookBatchTurn[],
): Promise<Map<string, LearningResult>> {
  if (turns.length === 0) return new Map();
  const rows = await db.rows<{
    turnId: string;
    found: boolean;
    tools: TurnToolUse[] | null;
    learning: boolean;
  }>(sql`
    WITH j AS (${jobsOf(turns)}),
    t AS (
      SELECT j.run_id, tu.id, tu.tenant_id, tu.agent_id
      FROM j JOIN turns tu ON tu.id = j.turn_id AND tu.tenant_id = j.tenant_id
      WHERE tu.status = ANY(${[...ENDED_STATUSES]}::text[])
    ),
    c AS (
      SELECT tc.turn_id, t.tenant_id, t.agent_id, tc.name AS tool, tc.status = 'failed' AS failed,
        coalesce(tc.error->>'kind', 'unknown') AS kind, coalesce(tc.duration_ms, 0) AS ms,
        coalesce(tc.completed_at, tc.started_at, now()) AS at
      FROM t JOIN tool_calls tc ON tc.turn_id = t.id AND tc.tenant_id = t.tenant_id
      WHERE tc.status IN ('completed', 'failed')
        -- A replay's call answered from a recorded result ran nothing (docs/adr/0054).
        AND tc.replayed_from_tool_call_id IS NULL
    ),
    kinds AS (
      SELECT turn_id, tool, jsonb_object_agg(kind, n) AS by_kind
      FROM (SELECT turn_id, tool, kind, count(*)::int AS n FROM c WHERE failed GROUP BY turn_id, tool, kind) k
      GROUP BY turn_id, tool
    ),
    per_tool AS (
      SELECT a.*, coalesce(k.by_kind, '{}'::jsonb) AS by_kind
      FROM (
        SELECT turn_id, tool, count(*)::int AS calls, (count(*) FILTER (WHERE failed))::int AS failures,
          sum(ms)::bigint AS total_ms, max(ms)::int AS max_ms
        FROM c GROUP BY turn_id, tool) a
      LEFT JOIN kinds k ON k.turn_id = a.turn_id AND k.tool = a.tool
    ),
    ins AS (
      INSERT INTO hook_runs (id, tenant_id, turn_id, turn_at, hook, status, output, completed_at)
      SELECT t.run_id, t.tenant_id, t.id, sb_uuid7_time(t.id), 'learning', 'completed', jsonb_build_object(
        'agentId', t.agent_id,
        'tools', (SELECT coalesce(jsonb_agg(jsonb_build_object('tool', tool, 'calls', calls,
            'failures', failures, 'failuresByKind', by_kind, 'totalLatencyMs', total_ms,
            'maxLatencyMs', max_ms) ORDER BY tool), '[]'::jsonb) FROM per_tool p WHERE p.turn_id = t.id)), now()
      FROM t
      ORDER BY t.id
      ON CONFLICT (turn_id, hook, turn_at) DO NOTHING
      RETURNING turn_id, output
    ),
    -- The calls of the turns this statement recorded, summed per (agent, tool) over the batch.
    nc AS (SELECT * FROM c WHERE turn_id IN (SELECT turn_id FROM ins)),
    agg_kinds AS (
      SELECT agent_id, tool, jsonb_object_agg(kind, n) AS by_kind
      FROM (SELECT agent_id, tool, kind, count(*)::int AS n FROM nc WHERE failed GROUP BY agent_id, tool, kind) k
      GROUP BY agent_id, tool
    ),
    agg AS (
      SELECT a.*, coalesce(k.by_kind, '{}'::jsonb) AS by_kind
      FROM (
        SELECT tenant_id, agent_id, tool, count(*)::int AS calls, (count(*) FILTER (WHERE failed))::int AS failures,
          sum(ms)::bigint AS total_ms, max(ms)::int AS max_ms, max(at) AS last_used_at,
          max(at) FILTER (WHERE failed) AS last_failed_at,
          (array_agg(kind ORDER BY at DESC) FILTER (WHERE failed))[1] AS last_failure_kind
        FROM nc GROUP BY tenant_id, agent_id, tool) a
      LEFT JOIN agg_kinds k ON k.agent_id = a.agent_id AND k.tool = a.tool
    ),
    stats AS (
      INSERT INTO agent_tool_stats (tenant_id, agent_id, tool, calls, failures, failures_by_kind,
        total_latency_ms, max_latency_ms, last_used_at, last_failed_at, last_failure_kind, updated_at)
      SELECT tenant_id, agent_id, tool, calls, failures, by_kind, total_ms, max_ms,
        last_used_at, last_failed_at, last_failure_kind, now()
      FROM agg
      -- One row per (agent, tool), in order: concurrent batches lock the shared rows in the same order.
      ORDER BY agent_id, tool
      ON CONFLICT (agent_id, tool) DO UPDATE SET
        calls = agent_tool_stats.calls + excluded.calls,
        failures = agent_tool_stats.failures + excluded.failures,
        failures_by_kind = (
          SELECT coalesce(jsonb_object_agg(key, total), '{}'::jsonb) FROM (
            SELECT key, sum(value::int) AS total FROM (
              SELECT * FROM jsonb_each_text(agent_tool_stats.failures_by_kind)
              UNION ALL SELECT * FROM jsonb_each_text(excluded.failures_by_kind)) kv
            GROUP BY key) merged),
        total_latency_ms = agent_tool_stats.total_latency_ms + excluded.total_latency_ms,
        max_latency_ms = greatest(agent_tool_stats.max_latency_ms, excluded.max_latency_ms),
        last_used_at = greatest(agent_tool_stats.last_used_at, excluded.last_used_at),
        last_failed_at = greatest(agent_tool_stats.last_failed_at, excluded.last_failed_at),
        last_failure_kind = CASE
          WHEN excluded.last_failed_at IS NOT NULL AND (agent_tool_stats.last_failed_at IS NULL
            OR excluded.last_failed_at >= agent_tool_stats.last_failed_at)
          THEN excluded.last_failure_kind ELSE agent_tool_stats.last_failure_kind END,
        updated_at = now()
    )
    SELECT j.turn_id AS "turnId", t.id IS NOT NULL AS found,
      (SELECT output->'tools' FROM ins WHERE ins.turn_id = j.turn_id) AS tools,
      -- Whether the agent has learning feedback on (docs/adr/0059): its feedback statement runs only then.
      coalesce((SELECT coalesce(a.memory->>'learning', 'false') = 'true' FROM agents a WHERE a.id = t.agent_id),
        false) AS learning
    FROM j LEFT JOIN t ON t.id = j.turn_id
  `);
  return new Map(
    rows.map((r): [string, LearningResult] => [
      r.turnId,
      !r.found
        ? { kind: 'skipped' }
        : !r.tools
          ? { kind: 'already_done', learning: r.learning }
          : { kind: 'written', tools: r.tools, learning: r.learning },
    ]),
  );
}

/**
 * The learning hook for one turn: `recordLearningBatch` with the turn alone, so one statement
 * serves a lone turn and a group (docs/adr/0070). It reads the turn (the job's tenant's, terminal), rolls its finished tool calls (`completed` or `failed`; a call a cancel cut
 * short never finished) up per tool, inserts the `hook_runs (turn_id, 'learning')` row
 * `ON CONFLICT DO NOTHING`, and only when that row is new adds the roll-up to the agent's
 * `agent_tool_stats` rows. A re-run, or runs racing for one turn, add nothing.
 */
export async function recordLearning(
  db: SqlRunner,
  job: { id: string; turnId: string; tenantId: string },
): Promise<LearningResult> {
  const results = await recordLearningBatch(db, [job]);
  return results.get(job.turnId) ?? { kind: 'skipped' };
}
