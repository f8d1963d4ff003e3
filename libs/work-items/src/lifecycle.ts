import { z } from 'zod';
import { Sql, sql, sqlList, type SqlRunner } from '@switchboard/store';
import { defineTool, ToolError, type ToolDefinition } from '@switchboard/tools';

/**
 * The agent's lifecycle (seed 002 "Agent State", "Turn Terminal", "Wake / Sleep Lifecycle";
 * docs/adr/0031). The operator's posture is stored (`active | paused | stopped`, why, since); the
 * status shown is derived: stopped, paused, awake_running (a turn runs), awaiting_task (a turn is
 * waiting on a child: a sub-agent task), asleep (the agent chose to sleep and nothing was admitted
 * since), awake_idle. The words are the wire's; docs/ARCHITECTURE.md's glossary says what each means.
 */

export const AGENT_STATUSES = [
  'awake_idle',
  'awake_running',
  'awaiting_task',
  'asleep',
  'paused',
  'stopped',
] as const;
export type AgentStatus = (typeof AGENT_STATUSES)[number];

export type Posture = 'active' | 'paused' | 'stopped';

export interface LifecycleStatus {
  state: AgentStatus;
  why: string;
  since: Date;
  /** A timed sleep's end. */
  until: Date | null;
  /** What the operator can do: for a stopped agent, that resume is required. */
  hint: string | null;
  currentWorkItemId: string | null;
}

interface StatusRow {
  lifecycle: Posture;
  lifecycle_reason: string | null;
  lifecycle_at: Date | null;
  asleep: boolean;
  asleep_at: Date | null;
  sleep_reason: string | null;
  sleeping_until: Date | null;
  running_since: Date | null;
  waiting_on_child_since: Date | null;
  last_ended: Date | null;
  created_at: Date;
  current_work_item_id: string | null;
}

/**
 * Asleep: the agent slept and no turn of it was admitted since (any admission is a wake signal), and
 * a timed sleep has not ended. For an agent row aliased `a`.
 */
export const ASLEEP_TEXT = `(a.asleep_at IS NOT NULL
  AND (a.sleeping_until IS NULL OR a.sleeping_until > now())
  AND NOT EXISTS (SELECT 1 FROM turns st WHERE st.tenant_id = a.tenant_id AND st.agent_id = a.id
    AND st.created_at > a.asleep_at))`;
const ASLEEP = new Sql([ASLEEP_TEXT], []);

const STOPPED_HINT =
  'resume is required before new prompts (POST /v1/agents/:id/resume); a wake does not override stopped';

/** One agent's lifecycle (GET /v1/agents/:id and its lifecycle routes); undefined for no such agent of the tenant. */
export async function agentStatus(
  db: SqlRunner,
  tenantId: string,
  agentId: string,
): Promise<LifecycleStatus | undefined> {
  return (await agentStatuses(db, tenantId, [agentId])).get(agentId);
}

/**
 * The lifecycle of several agents of a tenant in one statement (the agents list): the turns are
 * read once per tenant and grouped by agent (running, waiting on a child, last ended), not once per
 * agent. Agents not found (another tenant's, none) are absent from the map.
 */
export async function agentStatuses(
  db: SqlRunner,
  tenantId: string,
  agentIds: readonly string[],
): Promise<Map<string, LifecycleStatus>> {
  if (agentIds.length === 0) return new Map();
  const ids = [...agentIds];
  const rows = await db.rows<StatusRow & { id: string }>(sql`
    SELECT a.id, a.lifecycle, a.lifecycle_reason, a.lifecycle_at, ${ASLEEP} AS asleep, a.asleep_at, a.sleep_reason,
      a.sleeping_until, a.created_at, a.current_work_item_id,
      live.running_since, live.waiting_on_child_since, ended.last_ended
    FROM agents a
    LEFT JOIN (
      SELECT t.agent_id,
        min(t.started_at) FILTER (WHERE t.status = 'running') AS running_since,
        min(t.created_at) FILTER (WHERE t.status = 'awaiting_subagent') AS waiting_on_child_since
      FROM turns t
      WHERE t.tenant_id = ${tenantId}::uuid AND t.status IN ${sqlList(['running', 'awaiting_subagent'])}
        AND t.agent_id = ANY(${ids}::uuid[])
      GROUP BY t.agent_id
    ) live ON live.agent_id = a.id
    LEFT JOIN (
      SELECT t.agent_id, max(t.completed_at) AS last_ended
      FROM turns t
      WHERE t.tenant_id = ${tenantId}::uuid AND t.agent_id = ANY(${ids}::uuid[])
      GROUP BY t.agent_id
    ) ended ON ended.agent_id = a.id
    WHERE a.id = ANY(${ids}::uuid[]) AND a.tenant_id = ${tenantId}::uuid`);
  return new Map(rows.map((row) => [row.id, deriveStatus(row)]));
}

/** The status shown, from the stored posture and what the agent's turns are doing. */
function deriveStatus(row: StatusRow): LifecycleStatus {
  const base = { until: null, hint: null, currentWorkItemId: row.current_work_item_id };
  const since = row.lifecycle_at ?? row.created_at;
  if (row.lifecycle === 'stopped') {
    return {
      ...base,
      state: 'stopped',
      why: row.lifecycle_reason ?? 'stopped by the operator',
      since,
      hint: STOPPED_HINT,
    };
  }
  if (row.lifecycle === 'paused') {
    return { ...base, state: 'paused', why: row.lifecycle_reason ?? 'paused by the operator', since };
  }
  if (row.running_since)
    return { ...base, state: 'awake_running', why: 'a turn is running', since: row.running_since };
  if (row.waiting_on_child_since) {
    return {
      ...base,
      state: 'awaiting_task',
      why: 'a turn waits for a sub-agent task',
      since: row.waiting_on_child_since,
    };
  }
  if (row.asleep && row.asleep_at) {
    return {
      ...base,
      state: 'asleep',
      why: row.sleep_reason ?? 'the agent chose to sleep',
      since: row.asleep_at,
      until: row.sleeping_until,
    };
  }
  const idleSince = [row.last_ended, row.created_at, row.lifecycle_at].filter((d): d is Date => !!d);
  return {
    ...base,
    state: 'awake_idle',
    why: 'ready; nothing is running',
    since: new Date(Math.max(...idleSince.map((d) => d.getTime()))),
  };
}

/**
 * The operator's pause, resume and stop: one statement each, scoped by tenant. Answers the posture
 * before and after (equal: nothing changed), or undefined for no such live agent.
 */
export async function setPosture(
  db: SqlRunner,
  tenantId: string,
  agentId: string,
  posture: Posture,
  reason: string | null,
): Promise<{ before: Posture; after: Posture } | undefined> {
  const row = await db.first<{ before: Posture; after: Posture }>(sql`
    WITH cur AS (
      SELECT id, lifecycle FROM agents
      WHERE id = ${agentId}::uuid AND tenant_id = ${tenantId}::uuid AND deleted_at IS NULL FOR UPDATE
    ),
    u AS (
      UPDATE agents a SET lifecycle = ${posture}, lifecycle_reason = ${reason}, lifecycle_at = now(),
        updated_at = now()
      FROM cur WHERE a.id = cur.id AND cur.lifecycle <> ${posture}
      RETURNING a.lifecycle
    )
    SELECT cur.lifecycle AS before, coalesce((SELECT lifecycle FROM u), cur.lifecycle) AS after FROM cur`);
  return row;
}

export const SLEEP_TOOL = 'sleep';

/** The longest timed sleep: 30 days. */
export const MAX_SLEEP_MS = 30 * 24 * 3_600_000;

/**
 * `sleep` (seed 002 "Sleep Rules"): the agent rests. Without `duration_ms` (or with 0) until the next
 * wake signal (a message, a webhook, a schedule fire, an operator's work item, a due recheck); with
 * it, a runtime system tick also wakes it when the time is up. Keep-working ticks wait while it sleeps.
 */
export function sleepTool(db: SqlRunner): ToolDefinition {
  return defineTool({
    name: SLEEP_TOOL,
    description:
      'Go to sleep: no runtime tick keeps you working until a wake signal arrives (a message, an ' +
      'event, an enqueued work item, a due recheck). Omit duration_ms to rest until then; give it to ' +
      'also be woken after that many milliseconds.',
    schema: z.strictObject({
      duration_ms: z
        .int()
        .min(0)
        .max(MAX_SLEEP_MS)
        .optional()
        .describe('Wake after this long (ms); omit to rest'),
      reason: z.string().trim().min(1).max(500).optional().describe('Why you are sleeping, for the operator'),
    }),
    sideEffect: 'local_write',
    timeoutMs: 5_000,
    needsApproval: false,
    honoursIdempotencyKey: true,
    async execute({ duration_ms, reason }, ctx) {
      if (!ctx.agentId)
        throw new ToolError('no_agent', 'sleep is for an agent and this call runs outside one');
      const ms = duration_ms && duration_ms > 0 ? duration_ms : null;
      const row = await db.first<{ asleep_at: Date; sleeping_until: Date | null }>(sql`
        UPDATE agents SET asleep_at = now(), sleep_reason = ${reason ?? 'the agent chose to sleep'},
          sleeping_until = CASE WHEN ${ms}::bigint IS NULL THEN NULL
            ELSE now() + make_interval(secs => ${ms}::bigint / 1000.0) END
        WHERE id = ${ctx.agentId}::uuid AND tenant_id = ${ctx.tenantId}::uuid
        RETURNING asleep_at, sleeping_until`);
      if (!row) throw new ToolError('no_agent', 'the agent no longer exists');
      return {
        asleep: true,
        since: row.asleep_at.toISOString(),
        until: row.sleeping_until?.toISOString() ?? null,
        wakes_on: ms ? 'its timer or the next wake signal' : 'the next wake signal',
      };
    },
  });
}
