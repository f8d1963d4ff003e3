import { ENDED_STATUSES } from '@switchboard/contracts';
import { contentCipher, sealText } from '@switchboard/database';
import { join, ofTenant, sql, type SqlRunner } from './sql';
import { ENDED } from './turn/statuses';

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
  /** Written to the provider's prompt cache (docs/adr/0032). */
  cacheWriteTokens: number;
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
 * The tail of every `INSERT INTO tenant_spend_daily`: a day's row adds up what each writer brings (the
 * cost-log hook a turn's own calls, a hook its own calls), so the roll-up is one sum whoever writes first.
 */
export const ACCUMULATE_DAILY_SPEND = sql`ON CONFLICT (tenant_id, day) DO UPDATE SET
  cost_usd = tenant_spend_daily.cost_usd + excluded.cost_usd,
  input_tokens = tenant_spend_daily.input_tokens + excluded.input_tokens,
  output_tokens = tenant_spend_daily.output_tokens + excluded.output_tokens,
  cached_tokens = tenant_spend_daily.cached_tokens + excluded.cached_tokens,
  cache_write_tokens = tenant_spend_daily.cache_write_tokens + excluded.cache_write_tokens,
  cache_saved_usd = tenant_spend_daily.cache_saved_usd + excluded.cache_saved_usd,
  provider_calls = tenant_spend_daily.provider_calls + excluded.provider_calls,
  turns = tenant_spend_daily.turns + excluded.turns,
  updated_at = now()`;

/**
 * The cost-log hook's one statement (docs/adr/0010): reads the turn (it must be the job's tenant's
 * and terminal), sums its ledger in SQL (exact numeric, 8 places), and inserts the `hook_runs` row
 * `ON CONFLICT (turn_id, hook, turn_at) DO NOTHING` (turn_at is a function of turn_id, ADR 0044), so a re-run, or runs racing for one turn, write one row
 * and exactly one of them is told `written`. Only that run adds the turn's ledger, per UTC day of its
 * entries, to `tenant_spend_daily` (the tenant's spend roll-up): the roll-up counts each turn exactly
 * once however often the hook runs. One transaction, one round trip.
 */
export async function recordCostLog(
  db: SqlRunner,
  job: { id: string; turnId: string; tenantId: string },
): Promise<CostLogResult> {
  const row = await db.first<CostLogRow>(sql`
    WITH t AS (
      SELECT id, session_id, agent_id, tenant_id, status FROM turns
      WHERE id = ${job.turnId}::uuid AND ${ofTenant('tenant_id', job.tenantId)}
        AND status = ANY(${[...ENDED_STATUSES]}::text[])
    ),
    e AS (
      SELECT provider, model, count(*) AS calls, sum(input_tokens) AS input_tokens,
        sum(output_tokens) AS output_tokens, sum(cached_tokens) AS cached_tokens,
        sum(cache_write_tokens) AS cache_write_tokens, sum(cost_usd) AS cost_usd, min(created_at) AS first_at
      -- The turn's own calls: a hook's (key 'hook:…', the archivist's) are booked and rolled up by it.
      FROM ledger_entries WHERE turn_id = (SELECT id FROM t) AND turn_at = sb_uuid7_time(${job.turnId}::uuid)
        AND key NOT LIKE 'hook:%'
        -- The partition key (ADR 0044): the turn's one partition is read, not every partition's index.
        AND turn_at = sb_uuid7_time(${job.turnId}::uuid)
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
      INSERT INTO hook_runs (id, tenant_id, turn_id, turn_at, hook, status, output, completed_at)
      SELECT ${job.id}::uuid, tenant_id, turn_id, sb_uuid7_time(turn_id), 'cost-log', 'completed', output, now() FROM line
      ON CONFLICT (turn_id, hook, turn_at) DO NOTHING
      RETURNING turn_id, output
    ),
    -- From now on the turn's spend is read from the roll-up, not from the turn (the daily cap, ADR 0026).
    rolled AS (
      UPDATE turns SET spend_rolled_up_at = now() WHERE id = (SELECT turn_id FROM ins)
    ),
    per_day AS (
      SELECT (created_at AT TIME ZONE 'UTC')::date AS day, sum(cost_usd) AS cost_usd,
        sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens,
        sum(cached_tokens) AS cached_tokens, sum(cache_write_tokens) AS cache_write_tokens,
        sum(cache_saved_usd) AS cache_saved_usd, count(*) AS calls, max(created_at) AS last_at
      FROM ledger_entries WHERE turn_id = (SELECT id FROM t) AND turn_at = sb_uuid7_time(${job.turnId}::uuid)
        AND key NOT LIKE 'hook:%'
        -- The partition key (ADR 0044): the turn's one partition is read, not every partition's index.
        AND turn_at = sb_uuid7_time(${job.turnId}::uuid)
      GROUP BY 1
    ),
    spend AS (
      INSERT INTO tenant_spend_daily (tenant_id, day, cost_usd, input_tokens, output_tokens, cached_tokens,
        cache_write_tokens, cache_saved_usd, provider_calls, turns, updated_at)
      SELECT t.tenant_id, d.day, d.cost_usd, d.input_tokens, d.output_tokens, d.cached_tokens,
        d.cache_write_tokens, d.cache_saved_usd, d.calls,
        CASE WHEN d.last_at = (SELECT max(last_at) FROM per_day) THEN 1 ELSE 0 END, now()
      FROM t, per_day d
      -- Only the run that inserted the hook_runs row adds the turn; days in order, so two turns
      -- spanning the same midnight lock the same rows in the same order.
      WHERE EXISTS (SELECT 1 FROM ins)
      ORDER BY d.day
      ${ACCUMULATE_DAILY_SPEND}
    )
    SELECT EXISTS (SELECT 1 FROM t) AS found,
      (SELECT output FROM ins) AS line,
      coalesce((SELECT json_agg(json_build_object(
        'provider', provider, 'model', model, 'inputTokens', input_tokens::int,
        'outputTokens', output_tokens::int, 'cachedTokens', cached_tokens::int,
        'cacheWriteTokens', cache_write_tokens::int, 'costUsd', cost_usd::text)) FROM e WHERE EXISTS (SELECT 1 FROM ins)), '[]') AS "byModel"
  `);
  if (!row?.found) return { kind: 'skipped' };
  if (!row.line) return { kind: 'already_done' };
  return { kind: 'written', line: row.line, byModel: row.byModel };
}

/** One tool's calls in one turn, as the `learning` hook run recorded them (hook_runs.output.tools). */
export interface TurnToolUse {
  tool: string;
  calls: number;
  failures: number;
  /** Failure count per tool error kind (the tool error envelope's `kind`). */
  failuresByKind: Record<string, number>;
  totalLatencyMs: number;
  maxLatencyMs: number;
}

export type LearningResult =
  | { kind: 'skipped' }
  | { kind: 'already_done'; learning: boolean }
  | { kind: 'written'; tools: TurnToolUse[]; learning: boolean };

/** An agent's tool statistics as GET /v1/agents/:id shows them. */
export interface AgentToolStatus {
  tool: string;
  calls: number;
  failures: number;
  failuresByKind: Record<string, number>;
  /** failures / calls, rounded to 4 places; 0 with no calls. */
  failureRate: number;
  avgLatencyMs: number;
  maxLatencyMs: number;
  lastUsedAt: string | null;
  lastFailedAt: string | null;
  lastFailureKind: string | null;
}

/** The agent's `agent_tool_stats` rows, by tool name (the tenant's rows only). */
export async function agentToolStatus(
  db: SqlRunner,
  q: { tenantId: string; agentId: string },
): Promise<AgentToolStatus[]> {
  return db.rows<AgentToolStatus>(sql`
    SELECT tool, calls, failures, failures_by_kind AS "failuresByKind",
      CASE WHEN calls = 0 THEN 0 ELSE round(failures::numeric / calls, 4)::float8 END AS "failureRate",
      CASE WHEN calls = 0 THEN 0 ELSE round(total_latency_ms::numeric / calls)::int END AS "avgLatencyMs",
      max_latency_ms AS "maxLatencyMs",
      to_char(last_used_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS "lastUsedAt",
      to_char(last_failed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS "lastFailedAt",
      last_failure_kind AS "lastFailureKind"
    FROM agent_tool_stats
    WHERE tenant_id = ${q.tenantId}::uuid AND agent_id = ${q.agentId}::uuid
    ORDER BY tool`);
}

/** One UTC day of a tenant's spend roll-up; USD as an exact decimal string. */
export interface DailySpend {
  day: string;
  costUsd: string;
  inputTokens: number;
  outputTokens: number;
  cachedTokens: number;
  /** Written to the provider's prompt cache (docs/adr/0032). */
  cacheWriteTokens: number;
  /** What the prompt cache saved, USD as an exact decimal string; may be negative. */
  cacheSavedUsd: string;
  providerCalls: number;
  turns: number;
}

/**
 * The tenant's `tenant_spend_daily` rows over `from`..`to` (UTC days, inclusive) and their totals,
 * from one statement (one snapshot): a primary-key range read, however large the ledger grows.
 */
export async function tenantDailySpend(
  db: SqlRunner,
  q: { tenantId: string; from: string; to: string },
): Promise<{ days: DailySpend[]; totals: Omit<DailySpend, 'day'> }> {
  const row = await db.first<{ days: DailySpend[]; totals: Omit<DailySpend, 'day'> }>(sql`
    WITH d AS (
      SELECT day, cost_usd, input_tokens, output_tokens, cached_tokens, cache_write_tokens,
        cache_saved_usd, provider_calls, turns
      FROM tenant_spend_daily
      WHERE tenant_id = ${q.tenantId}::uuid AND day BETWEEN ${q.from}::date AND ${q.to}::date
    )
    SELECT
      coalesce((SELECT json_agg(json_build_object('day', to_char(day, 'YYYY-MM-DD'),
        'costUsd', trim_scale(cost_usd)::text, 'inputTokens', input_tokens, 'outputTokens', output_tokens,
        'cachedTokens', cached_tokens, 'cacheWriteTokens', cache_write_tokens,
        'cacheSavedUsd', trim_scale(cache_saved_usd)::text, 'providerCalls', provider_calls,
        'turns', turns) ORDER BY day)
        FROM d), '[]') AS days,
      (SELECT json_build_object('costUsd', trim_scale(coalesce(sum(cost_usd), 0))::text,
        'inputTokens', coalesce(sum(input_tokens), 0), 'outputTokens', coalesce(sum(output_tokens), 0),
        'cachedTokens', coalesce(sum(cached_tokens), 0),
        'cacheWriteTokens', coalesce(sum(cache_write_tokens), 0),
        'cacheSavedUsd', trim_scale(coalesce(sum(cache_saved_usd), 0))::text,
        'providerCalls', coalesce(sum(provider_calls), 0),
        'turns', coalesce(sum(turns), 0)) FROM d) AS totals`);
  return row!;
}

/** A post-turn hook an ended turn has no `hook_runs` row for (what the hooks reconcile re-publishes). */
export interface MissingHookRun {
  turnId: string;
  tenantId: string;
  hook: string;
  /** The turn's admission trace, which a re-published job continues. */
  traceContext: Record<string, string>;
}

/**
 * The hooks reconcile's one statement (docs/adr/0027): takes up to `limit` ended turns not reconciled
 * yet (`hooks_settled_at` null: the column keeps its name) that ended at least `graceMs` ago (oldest
 * first, from the partial index turns_hooks_unsettled_idx), answers the (turn, hook) pairs among
 * `hooks` that have no `hook_runs` row, and marks reconciled (`hooks_settled_at`) the turns that have
 * a row for every hook, so a later sweep never reads them again. A turn the chat-completions facade
 * imported (`stop_reason = 'imported'`: a caller's history, not a run) has no hooks and is marked
 * reconciled as it is found.
 */
export async function missingHookRuns(
  db: SqlRunner,
  q: { hooks: readonly string[]; graceMs: number; limit: number },
): Promise<{ missing: MissingHookRun[]; reconciled: number }> {
  const row = await db.first<{ missing: MissingHookRun[]; reconciled: number }>(sql`
    WITH c AS (
      -- The predicate is the partial index's, word for word, so the planner uses it.
      SELECT id, tenant_id, trace_context, stop_reason FROM turns
      WHERE hooks_settled_at IS NULL AND status IN ${ENDED}
        AND completed_at <= now() - make_interval(secs => ${q.graceMs / 1000}::float8)
      ORDER BY completed_at
      LIMIT ${q.limit}::int
    ),
    m AS (
      SELECT c.id AS turn_id, c.tenant_id, h.hook, c.trace_context
      FROM c CROSS JOIN unnest(${[...q.hooks]}::text[]) AS h(hook)
      WHERE c.stop_reason IS DISTINCT FROM 'imported'
        AND NOT EXISTS (SELECT 1 FROM hook_runs r WHERE r.turn_id = c.id AND r.hook = h.hook)
    ),
    s AS (
      UPDATE turns t SET hooks_settled_at = now() FROM c
      WHERE t.id = c.id AND NOT EXISTS (SELECT 1 FROM m WHERE m.turn_id = c.id)
      RETURNING t.id
    )
    SELECT (SELECT count(*)::int FROM s) AS reconciled,
      coalesce((SELECT json_agg(json_build_object('turnId', turn_id, 'tenantId', tenant_id, 'hook', hook,
        'traceContext', trace_context) ORDER BY turn_id, hook) FROM m), '[]') AS missing`);
  return row!;
}

/**
 * A hook that failed for good (its last attempt, or an error no retry mends) recorded `failed`, so the
 * hooks reconcile does not run it again on every sweep; `ON CONFLICT DO NOTHING` keeps a row the hook
 * wrote itself (a run that committed, or the archivist's own `failed` record). A job whose turn is not
 * the tenant's records nothing.
 */
export async function recordHookFailure(
  db: SqlRunner,
  run: { id: string; turnId: string; tenantId: string; hook: string; attempts: number; error: string },
): Promise<boolean> {
  const inserted = await db.execute(sql`
    INSERT INTO hook_runs (id, tenant_id, turn_id, turn_at, hook, status, output, attempts, completed_at)
    SELECT ${run.id}::uuid, tenant_id, id, sb_uuid7_time(id), ${run.hook}, 'failed',
      jsonb_build_object('error', ${run.error.slice(0, 1000)}::text), ${run.attempts}, now()
    FROM turns WHERE id = ${run.turnId}::uuid AND ${ofTenant('tenant_id', run.tenantId)}
    ON CONFLICT (turn_id, hook, turn_at) DO NOTHING`);
  return inserted === 1;
}

/** Reflections an agent keeps at most (docs/adr/0059): the hook deletes older ones. */
export const KEPT_REFLECTIONS = 20;
/** Preferences a user profile consolidates at most, newest first. */
export const PROFILE_PREFERENCES = 12;

export interface LearningFeedbackResult {
  /** Whether the agent has learning on (else nothing is read or written). */
  enabled: boolean;
  /** Reflections of the turn newly kept. */
  reflections: number;
  /** Whether the profile record changed (created, or its text or sources differ). */
  profileChanged: boolean;
}

/**
 * The learning hook's feedback half (docs/adr/0059), for an agent with `memory.learning` on, one
 * statement: the ended turn's reflection notes (transcript entries the reflection step wrote, metadata
 * `reflection`) are kept in `agent_reflections` (unique per turn and index, so a re-run keeps nothing
 * twice), the agent's reflections beyond the newest KEPT_REFLECTIONS are deleted, and the user profile
 * record is rebuilt from the agent's `preference` memory records (deduplicated by text, newest first);
 * the profile row, its version and `updated_at` move only when its text or sources change.
 */
export async function recordLearningFeedback(
  db: SqlRunner,
  job: { turnId: string; tenantId: string },
  ids: string[],
): Promise<LearningFeedbackResult> {
  // With a content cipher the texts may be sealed (docs/adr/0067): read, opened, in TypeScript.
  if (contentCipher()) return learningFeedbackOpened(db, job, ids);
  const row = await db.first<{ enabled: boolean; reflections: number; profileChanged: boolean }>(sql`
    WITH t AS (
      SELECT t.id, t.tenant_id, t.agent_id, t.session_id, t.seq FROM turns t
      JOIN agents a ON a.id = t.agent_id AND a.tenant_id = t.tenant_id
      WHERE t.id = ${job.turnId}::uuid AND ${ofTenant('t.tenant_id', job.tenantId)}
        AND t.status = ANY(${[...ENDED_STATUSES]}::text[]) AND t.rewound_at IS NULL
        AND coalesce(a.memory->>'learning', 'false') = 'true'
    ),
    notes AS (
      SELECT (m.metadata->>'reflection')::int AS idx,
        left(btrim(coalesce(substring(m.body->>'text' from '^<reflection>\n(.*)\n</reflection>'),
          m.body->>'text')), 2000) AS text
      FROM messages m, t
      WHERE m.session_id = t.session_id AND m.turn_seq = t.seq AND m.tenant_id = t.tenant_id
        AND m.metadata ? 'reflection' AND m.body->>'text' IS NOT NULL
    ),
    kept AS (
      INSERT INTO agent_reflections (id, tenant_id, agent_id, session_id, turn_id, reflection_index, text)
      SELECT (${ids}::uuid[])[n.idx + 1], t.tenant_id, t.agent_id, t.session_id, t.id, n.idx, n.text
      FROM t, notes n WHERE n.idx >= 0 AND n.idx < ${ids.length} AND n.text <> ''
      ORDER BY n.idx
      ON CONFLICT (turn_id, reflection_index) DO NOTHING
      RETURNING id
    ),
    pruned AS (
      DELETE FROM agent_reflections r USING t
      WHERE r.agent_id = t.agent_id AND r.tenant_id = t.tenant_id AND r.id IN (
        SELECT id FROM agent_reflections o WHERE o.agent_id = t.agent_id
        ORDER BY o.created_at DESC, o.id DESC OFFSET ${KEPT_REFLECTIONS})
    ),
    prefs AS (
      SELECT DISTINCT ON (lower(btrim(p.content))) p.id, btrim(regexp_replace(p.content, '[[:space:]]+', ' ', 'g')) AS line,
        p.created_at
      FROM memory_records p, t
      WHERE p.tenant_id = t.tenant_id AND p.agent_id = t.agent_id AND p.tags @> ARRAY['preference']::text[]
      ORDER BY lower(btrim(p.content)), p.created_at DESC
    ),
    newest AS (
      SELECT * FROM prefs ORDER BY created_at DESC, id DESC LIMIT ${PROFILE_PREFERENCES}
    ),
    profile AS (
      SELECT left(string_agg('- ' || left(line, 300), E'\n' ORDER BY created_at DESC, id DESC), 2000) AS content,
        array_agg(id::text ORDER BY created_at DESC, id DESC) AS refs
      FROM newest
    ),
    upsert AS (
      INSERT INTO agent_user_profiles (agent_id, tenant_id, content, source_refs)
      SELECT t.agent_id, t.tenant_id, p.content, p.refs FROM t, profile p WHERE p.content IS NOT NULL
      ON CONFLICT (agent_id) DO UPDATE SET content = excluded.content, source_refs = excluded.source_refs,
        version = agent_user_profiles.version + 1, updated_at = now()
      WHERE agent_user_profiles.tenant_id = excluded.tenant_id
        AND (agent_user_profiles.content, agent_user_profiles.source_refs)
          IS DISTINCT FROM (excluded.content, excluded.source_refs)
      RETURNING 1
    )
    SELECT EXISTS (SELECT 1 FROM t) AS enabled, (SELECT count(*)::int FROM kept) AS reflections,
      EXISTS (SELECT 1 FROM upsert) AS "profileChanged"
  `);
  return row ?? { enabled: false, reflections: 0, profileChanged: false };
}

/** Postgres' `btrim(x)`: spaces only. */
const trimSpaces = (s: string) => s.replace(/^ +| +$/g, '');
/** Postgres' `left(x, n)`: code points. */
const leftChars = (s: string, n: number) => {
  const chars = Array.from(s);
  return chars.length > n ? chars.slice(0, n).join('') : s;
};
const REFLECTION = /^<reflection>\n([\s\S]*)\n<\/reflection>/;

/**
 * `recordLearningFeedback` for a process with a content cipher (docs/adr/0067): the same rows, but the
 * reflection notes and the preference records are read (SqlDb opens what is sealed) and reduced here,
 * not in SQL, and the reflections and the profile are written sealed for the tenant. The profile moves
 * only when its plaintext or its sources change (a sealed text differs at every write).
 */
async function learningFeedbackOpened(
  db: SqlRunner,
  job: { turnId: string; tenantId: string },
  ids: string[],
): Promise<LearningFeedbackResult> {
  const t = await db.first<{
    id: string;
    tenant_id: string;
    agent_id: string;
    session_id: string;
    seq: number;
  }>(sql`
    SELECT t.id, t.tenant_id::text, t.agent_id::text, t.session_id::text, t.seq FROM turns t
    JOIN agents a ON a.id = t.agent_id AND a.tenant_id = t.tenant_id
    WHERE t.id = ${job.turnId}::uuid AND ${ofTenant('t.tenant_id', job.tenantId)}
      AND t.status = ANY(${[...ENDED_STATUSES]}::text[]) AND t.rewound_at IS NULL
      AND coalesce(a.memory->>'learning', 'false') = 'true'`);
  if (!t) return { enabled: false, reflections: 0, profileChanged: false };
  const messages = await db.rows<{ idx: number; body: { text?: unknown } | null }>(sql`
    SELECT (m.metadata->>'reflection')::int AS idx, m.body FROM messages m
    WHERE m.session_id = ${t.session_id}::uuid AND m.turn_seq = ${t.seq} AND m.tenant_id = ${t.tenant_id}::uuid
      AND m.metadata ? 'reflection'`);
  const notes = messages.flatMap((m) => {
    const text = m.body?.text;
    if (typeof text !== 'string' || m.idx < 0 || m.idx >= ids.length) return [];
    const note = leftChars(trimSpaces(REFLECTION.exec(text)?.[1] ?? text), 2000);
    return note === '' ? [] : [{ idx: m.idx, text: note }];
  });
  notes.sort((a, b) => a.idx - b.idx);
  let reflections = 0;
  if (notes.length > 0) {
    const values = await Promise.all(
      notes.map(
        async (
          n,
        ) => sql`(${ids[n.idx]}::uuid, ${t.tenant_id}::uuid, ${t.agent_id}::uuid, ${t.session_id}::uuid,
          ${t.id}::uuid, ${n.idx}::int, ${await sealText(t.tenant_id, n.text)})`,
      ),
    );
    reflections = await db.execute(sql`
      INSERT INTO agent_reflections (id, tenant_id, agent_id, session_id, turn_id, reflection_index, text)
      VALUES ${join(values)}
      ON CONFLICT (turn_id, reflection_index) DO NOTHING`);
  }
  await db.execute(sql`
    DELETE FROM agent_reflections r
    WHERE r.agent_id = ${t.agent_id}::uuid AND r.tenant_id = ${t.tenant_id}::uuid AND r.id IN (
      SELECT id FROM agent_reflections o WHERE o.agent_id = ${t.agent_id}::uuid
      ORDER BY o.created_at DESC, o.id DESC OFFSET ${KEPT_REFLECTIONS})`);

  // The profile: the newest record per text (case and surrounding spaces aside), newest first.
  const prefs = await db.rows<{ id: string; content: string; created_at: Date }>(sql`
    SELECT p.id::text, p.content, p.created_at FROM memory_records p
    WHERE p.tenant_id = ${t.tenant_id}::uuid AND p.agent_id = ${t.agent_id}::uuid
      AND p.tags @> ARRAY['preference']::text[]
    ORDER BY p.created_at DESC, p.id DESC`);
  const seen = new Set<string>();
  const newest = prefs
    .filter((p) => {
      const key = trimSpaces(p.content).toLowerCase();
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    })
    .slice(0, PROFILE_PREFERENCES);
  if (newest.length === 0) return { enabled: true, reflections, profileChanged: false };
  const content = leftChars(
    newest.map((p) => `- ${leftChars(trimSpaces(p.content.replace(/\s+/g, ' ')), 300)}`).join('\n'),
    2000,
  );
  const refs = newest.map((p) => p.id);
  const current = await db.first<{ content: string; source_refs: string[] }>(sql`
    SELECT content, source_refs FROM agent_user_profiles
    WHERE agent_id = ${t.agent_id}::uuid AND tenant_id = ${t.tenant_id}::uuid`);
  if (current && current.content === content && JSON.stringify(current.source_refs) === JSON.stringify(refs))
    return { enabled: true, reflections, profileChanged: false };
  const changed = await db.execute(sql`
    INSERT INTO agent_user_profiles (agent_id, tenant_id, content, source_refs)
    VALUES (${t.agent_id}::uuid, ${t.tenant_id}::uuid, ${await sealText(t.tenant_id, content)}, ${refs}::text[])
    ON CONFLICT (agent_id) DO UPDATE SET content = excluded.content, source_refs = excluded.source_refs,
      version = agent_user_profiles.version + 1, updated_at = now()
    WHERE agent_user_profiles.tenant_id = excluded.tenant_id`);
  return { enabled: true, reflections, profileChanged: changed > 0 };
}

/** What an agent's learning feeds back (docs/adr/0059), as GET /v1/agents/:id shows it. */
export interface AgentLearningStatus {
  reflections: { text: string; turnId: string; sessionId: string; createdAt: string }[];
  userProfile: { content: string; version: number; updatedAt: string } | null;
}

/** The agent's newest kept reflections and its user profile record (the tenant's rows only). */
export async function agentLearningStatus(
  db: SqlRunner,
  q: { tenantId: string; agentId: string; limit: number },
): Promise<AgentLearningStatus> {
  const row = await db.first<AgentLearningStatus>(sql`
    SELECT
      coalesce((SELECT json_agg(json_build_object('text', r.text, 'turnId', r.turn_id, 'sessionId', r.session_id,
          'createdAt', to_char(r.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
          ORDER BY r.created_at DESC, r.id DESC)
        FROM (SELECT * FROM agent_reflections
          WHERE tenant_id = ${q.tenantId}::uuid AND agent_id = ${q.agentId}::uuid
          ORDER BY created_at DESC, id DESC LIMIT ${q.limit}) r), '[]'::json) AS reflections,
      (SELECT json_build_object('content', p.content, 'version', p.version,
          'updatedAt', to_char(p.updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
        FROM agent_user_profiles p WHERE p.tenant_id = ${q.tenantId}::uuid AND p.agent_id = ${q.agentId}::uuid)
        AS "userProfile"`);
  return row ?? { reflections: [], userProfile: null };
}
