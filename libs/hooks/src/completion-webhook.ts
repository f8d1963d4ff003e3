import { newId, parseTenantSettings, type PostTurnJob, type TaskTurn } from '@switchboard/contracts';
import { a2aPushBody, type A2aPushVersion } from '@switchboard/protocols';
import { ENDED, ofTenant, sql, type SqlRunner } from '@switchboard/store';
import { claimHookRun } from './archivist-snapshot';
import { OutsideSharedTransaction, type HookContext } from './context';

export const COMPLETION_WEBHOOK_HOOK = 'completion-webhook';

/** The longest `finalText` a completion webhook carries; the whole text is at GET /v1/turns/:id. */
export const COMPLETION_FINAL_TEXT_MAX = 4000;

/** The Standard Webhooks `webhook-id` (and outbound job id) of a turn's completion webhook. */
export const completionWebhookId = (turnId: string): string => `msg_turn_${turnId}`;

/**
 * The `webhook-id` of a task's A2A push notification to one of its configs (docs/adr/0037): the
 * config's row id, so a config set again under the same A2A id after a delivery gets a new one.
 */
export const a2aPushWebhookId = (configRowId: string): string => `msg_a2a_${configRowId}`;

/** An A2A push config of the turn, as the hook reads it. */
interface PushConfigRef {
  id: string;
  configId: string;
  version: A2aPushVersion;
}

const EVENTS: Record<string, string> = {
  completed: 'turn.completed',
  failed: 'turn.failed',
  cancelled: 'turn.cancelled',
};

interface CompletionRow {
  done: boolean;
  /** The turn, when it is the job's tenant's and has ended. */
  id: string | null;
  sessionId: string;
  agentId: string;
  status: string;
  stopReason: string | null;
  finalText: string | null;
  inputTokens: number;
  outputTokens: number;
  cachedTokens: number;
  /** numeric(18, 8) as text: always 8 decimal places. */
  costUsd: string;
  completedAt: Date | null;
  createdAt: Date | null;
  startedAt: Date | null;
  failure: TaskTurn['failure'];
  /** Why a cancelled turn was cancelled (docs/adr/0055). */
  cancelReason: TaskTurn['cancelReason'];
  cancelNote: string | null;
  /** The turn's A2A push notification configs (docs/adr/0037). */
  pushes: PushConfigRef[];
  /** The tenant's settings when they name a notify URL (null when they name none). */
  settings: unknown;
  /** This statement recorded the run as skipped (`no_endpoint`). */
  skipped: boolean;
}

/**
 * The completion-webhook hook of a group's turns in ONE statement (docs/adr/0077), in the group's
 * transaction: a turn whose tenant names no notify URL and that has no A2A push config (most turns)
 * gets its `skipped` (`no_endpoint`) row here, `ON CONFLICT DO NOTHING`, exactly as
 * `runCompletionWebhook` records it alone. Returns each settled turn's outcome: `already_done` (a run
 * recorded it first), `skipped` (recorded now, or not the tenant's ended turn: nothing recorded). A
 * turn it leaves out (an endpoint or a push to send) runs `runCompletionWebhook` as before.
 */
export async function skipCompletionWebhooks(
  tx: SqlRunner,
  jobs: readonly { turnId: string; tenantId: string }[],
): Promise<Map<string, 'already_done' | 'skipped'>> {
  if (jobs.length === 0) return new Map();
  const rows = await tx.rows<{
    turnId: string;
    done: boolean;
    ended: boolean;
    quiet: boolean;
    skipped: boolean;
  }>(sql`
    WITH j AS (
      SELECT * FROM unnest(${jobs.map(() => newId())}::uuid[], ${jobs.map((j) => j.turnId)}::uuid[],
        ${jobs.map((j) => j.tenantId)}::uuid[]) AS j(run_id, turn_id, tenant_id)
    ),
    done AS (
      SELECT h.turn_id FROM j JOIN hook_runs h ON h.turn_id = j.turn_id AND h.hook = ${COMPLETION_WEBHOOK_HOOK}
        AND h.turn_at = sb_uuid7_time(j.turn_id)
    ),
    t AS (
      SELECT j.run_id, tu.id, tu.tenant_id, tu.status FROM j
      JOIN turns tu ON tu.id = j.turn_id AND tu.tenant_id = j.tenant_id AND tu.status IN ${ENDED}
    ),
    -- No URL (settings name none as a string) and no A2A push config: nothing to send.
    quiet AS (
      SELECT t.* FROM t
      WHERE NOT EXISTS (SELECT 1 FROM done WHERE done.turn_id = t.id)
        AND NOT EXISTS (SELECT 1 FROM tenants tn WHERE tn.id = t.tenant_id
          AND jsonb_typeof(tn.settings -> 'notifyUrl') = 'string')
        AND NOT EXISTS (SELECT 1 FROM a2a_push_configs pc WHERE pc.turn_id = t.id AND pc.tenant_id = t.tenant_id)
    ),
    ins AS (
      INSERT INTO hook_runs (id, tenant_id, turn_id, turn_at, hook, status, output, completed_at)
      SELECT run_id, tenant_id, id, sb_uuid7_time(id), ${COMPLETION_WEBHOOK_HOOK}, 'completed',
        jsonb_build_object('skipped', 'no_endpoint', 'turnStatus', status), now()
      FROM quiet ORDER BY id
      ON CONFLICT (turn_id, hook, turn_at) DO NOTHING
      RETURNING turn_id
    )
    SELECT j.turn_id AS "turnId",
      EXISTS (SELECT 1 FROM done WHERE done.turn_id = j.turn_id) AS done,
      EXISTS (SELECT 1 FROM t WHERE t.id = j.turn_id) AS ended,
      EXISTS (SELECT 1 FROM quiet WHERE quiet.id = j.turn_id) AS quiet,
      EXISTS (SELECT 1 FROM ins WHERE ins.turn_id = j.turn_id) AS skipped
    FROM j`);
  const out = new Map<string, 'already_done' | 'skipped'>();
  for (const r of rows) {
    if (r.done) out.set(r.turnId, 'already_done');
    // Not the tenant's turn, or not ended: nothing to do and nothing recorded.
    else if (!r.ended) out.set(r.turnId, 'skipped');
    // No endpoint: recorded now, unless a concurrent run recorded the hook first.
    else if (r.quiet) out.set(r.turnId, r.skipped ? 'skipped' : 'already_done');
  }
  return out;
}

/**
 * The completion-webhook hook (docs/adr/0018, addendum): when the tenant has a notify endpoint,
 * publishes one `turn.completed | turn.failed | turn.cancelled` notification on `outbound-webhooks`,
 * whose worker signs, sends, retries and logs it. The webhook id is derived from the turn id, so a
 * retried hook or a hooks worker killed after publishing adds the same job (a no-op) and every
 * attempt carries the same `webhook-id`. No endpoint: skipped, nothing queued. Either way the run is
 * recorded in `hook_runs` (docs/adr/0027), after the publish (the effect is in Redis, so the record
 * cannot share its transaction: a worker killed between the two publishes again, under the same id,
 * and the receiver deduplicates by `webhook-id`); a run that finds the row does nothing.
 *
 * One statement reads the run's row, the turn and the tenant's notify URL, and when the tenant names
 * no URL (most tenants) records the skip in the same statement: a turn of a tenant without an
 * endpoint costs one round trip and no Prisma read (issue 22).
 */
export async function runCompletionWebhook(
  ctx: HookContext,
  job: PostTurnJob,
): Promise<'written' | 'already_done' | 'skipped'> {
  const row = await ctx.sql.first<CompletionRow>(sql`
    WITH done AS (
      SELECT 1 FROM hook_runs WHERE turn_id = ${job.turnId}::uuid AND hook = ${COMPLETION_WEBHOOK_HOOK}
        AND turn_at = sb_uuid7_time(${job.turnId}::uuid)
    ),
    t AS (
      SELECT id, tenant_id, session_id, agent_id, status, stop_reason, final_text, input_tokens,
        output_tokens, cached_tokens, cost_usd, completed_at, created_at, started_at, failure,
        cancel_reason, cancel_note FROM turns
      WHERE id = ${job.turnId}::uuid AND ${ofTenant('tenant_id', job.tenantId)}
        AND status IN ${ENDED}
    ),
    -- The settings only matter when they name a URL (a string); otherwise there is no endpoint.
    tn AS (
      SELECT settings FROM tenants
      WHERE id = ${job.tenantId}::uuid AND jsonb_typeof(settings -> 'notifyUrl') = 'string'
    ),
    -- The A2A clients that asked for this task's updates (rare: most turns have none).
    pc AS (
      SELECT id, config_id, protocol_version FROM a2a_push_configs
      WHERE turn_id = ${job.turnId}::uuid AND ${ofTenant('tenant_id', job.tenantId)}
    ),
    ins AS (
      INSERT INTO hook_runs (id, tenant_id, turn_id, turn_at, hook, status, output, completed_at)
      SELECT ${newId()}::uuid, t.tenant_id, t.id, sb_uuid7_time(t.id), ${COMPLETION_WEBHOOK_HOOK}, 'completed',
        jsonb_build_object('skipped', 'no_endpoint', 'turnStatus', t.status), now()
      FROM t WHERE NOT EXISTS (SELECT 1 FROM done) AND NOT EXISTS (SELECT 1 FROM tn)
        AND NOT EXISTS (SELECT 1 FROM pc)
      ON CONFLICT (turn_id, hook, turn_at) DO NOTHING
      RETURNING 1
    )
    SELECT EXISTS (SELECT 1 FROM done) AS done, t.id, t.session_id AS "sessionId", t.agent_id AS "agentId",
      t.status, t.stop_reason AS "stopReason", t.final_text AS "finalText", t.input_tokens AS "inputTokens",
      t.output_tokens AS "outputTokens", t.cached_tokens AS "cachedTokens", t.cost_usd::text AS "costUsd",
      t.completed_at AS "completedAt", t.created_at AS "createdAt", t.started_at AS "startedAt", t.failure,
      t.cancel_reason AS "cancelReason", t.cancel_note AS "cancelNote",
      COALESCE((SELECT json_agg(json_build_object('id', pc.id, 'configId', pc.config_id,
        'version', pc.protocol_version) ORDER BY pc.id) FROM pc), '[]'::json) AS pushes,
      (SELECT settings FROM tn) AS settings,
      EXISTS (SELECT 1 FROM ins) AS skipped
    FROM (SELECT 1) one LEFT JOIN t ON true`);
  if (!row || row.done) return 'already_done';
  const turn = row.id ? { ...row, id: row.id } : undefined;
  const event = turn && EVENTS[turn.status];
  // Not the tenant's turn, or not ended: nothing to do and nothing recorded.
  if (!turn || !event) return 'skipped';
  // No URL and no A2A push: the statement recorded the skip, unless a concurrent run recorded the hook first.
  if (row.settings === null && row.pushes.length === 0) return row.skipped ? 'skipped' : 'already_done';
  const record = (output: Record<string, unknown>) =>
    claimHookRun(ctx.sql, {
      tenantId: job.tenantId,
      turnId: job.turnId,
      hook: COMPLETION_WEBHOOK_HOOK,
      output: { ...output, turnStatus: turn.status },
    });
  // A URL without a valid endpoint (no secret, or not a URL the API accepts): no endpoint.
  const endpoint = row.settings !== null && parseTenantSettings(row.settings).notifyUrl !== undefined;
  if (!endpoint && row.pushes.length === 0) {
    return (await record({ skipped: 'no_endpoint' })) ? 'skipped' : 'already_done';
  }
  // The publish (a Redis round trip) is not held inside the turn's shared hook transaction.
  if (ctx.shared) throw new OutsideSharedTransaction(COMPLETION_WEBHOOK_HOOK);
  if (!ctx.notify) throw new Error('the completion-webhook hook has no outbound-webhooks publisher');
  // A2A push notifications (docs/adr/0037): the task in each config's wire version, through the same
  // outbound worker (signed, SSRF-guarded, retried, logged); the endpoint is read at every attempt.
  for (const push of row.pushes) {
    const body = a2aPushBody(
      {
        id: turn.id,
        sessionId: turn.sessionId,
        agentId: turn.agentId,
        status: turn.status as TaskTurn['status'],
        finalText: turn.finalText,
        failure: turn.failure,
        stopReason: turn.stopReason,
        createdAt: (turn.createdAt ?? new Date()).toISOString(),
        startedAt: turn.startedAt?.toISOString() ?? null,
        completedAt: turn.completedAt?.toISOString() ?? null,
        cancelReason: turn.cancelReason ?? null,
        cancelNote: turn.cancelNote,
      },
      push.version,
    );
    await ctx.notify({
      tenantId: job.tenantId,
      webhookId: a2aPushWebhookId(push.id),
      event: `a2a.task.${turn.status}`,
      payload: body,
      a2aPush: { turnId: turn.id, configId: push.configId },
    });
  }
  if (!endpoint) {
    const pushes = row.pushes.map((p) => a2aPushWebhookId(p.id));
    return (await record({ skipped: 'no_endpoint', a2aPushes: pushes })) ? 'written' : 'already_done';
  }
  const webhookId = completionWebhookId(turn.id);
  await ctx.notify({
    tenantId: job.tenantId,
    webhookId,
    event,
    payload: {
      type: event,
      turnId: turn.id,
      sessionId: turn.sessionId,
      agentId: turn.agentId,
      status: turn.status,
      stopReason: turn.stopReason,
      finalText: turn.finalText === null ? null : turn.finalText.slice(0, COMPLETION_FINAL_TEXT_MAX),
      finalTextTruncated: (turn.finalText?.length ?? 0) > COMPLETION_FINAL_TEXT_MAX,
      usage: {
        inputTokens: turn.inputTokens,
        outputTokens: turn.outputTokens,
        cachedTokens: turn.cachedTokens,
      },
      costUsd: turn.costUsd,
      completedAt: turn.completedAt?.toISOString() ?? null,
      // turn.cancelled says why (docs/adr/0055).
      ...(turn.status === 'cancelled'
        ? { cancelReason: turn.cancelReason ?? null, cancelNote: turn.cancelNote }
        : {}),
    },
  });
  const pushes = row.pushes.length > 0 ? { a2aPushes: row.pushes.map((p) => a2aPushWebhookId(p.id)) } : {};
  return (await record({ webhookId, event, ...pushes })) ? 'written' : 'already_done';
}
