import type { Span } from '@opentelemetry/api';
import { bodyText, MessageBody, newId, type PostTurnJob } from '@switchboard/contracts';
import { withSpan } from '@switchboard/observability';
import { ENDED, json, ofTenant, sql, type SqlRunner } from '@switchboard/store';

/**
 * The `TurnContext` snapshot (seed 000 "Post-turn hooks") the archivist and the episodic index read:
 * the turn's input, its final (or, for a cancelled turn, partial) assistant text and its tool calls
 * with their outcomes, each bounded so one huge tool result or message cannot blow up a hook's
 * model call or memory record. Read from Postgres in one statement, scoped to the job's tenant.
 */
export interface TurnSnapshot {
  turnId: string;
  tenantId: string;
  sessionId: string;
  agentId: string;
  status: string;
  /** The tenant's settings (model routes and prices for the archivist's call). */
  settings: unknown;
  /** Whether this hook already has its `hook_runs` row for the turn (a re-run does nothing). */
  done: boolean;
  /** That row's status when there is one: `deferred` waits for its session's distillation (docs/adr/0032). */
  runStatus: string | null;
  /** The turn's seq in its session. */
  seq: number;
  /** The agent's own archivist settings (docs/adr/0032). */
  agentArchivist: unknown;
  /** The agent's model (`agents.model`): the archivist's fallback when the tenant routes no `summarization`. */
  agentModel: string | null;
  /** The turn's input, then any message delivered into the turn while it ran. */
  input: { text: string; kind: string; authorityClass: string; truncated: boolean };
  /** The final text of a completed turn; what the committed rounds said for a cancelled one. */
  assistant: { text: string; partial: boolean; truncated: boolean };
  toolCalls: SnapshotToolCall[];
  /** Tool calls the turn made beyond the ones in `toolCalls`. */
  omittedToolCalls: number;
  /** Transcript positions (within the turn) of the input and assistant entries the snapshot holds. */
  messageSeqs: number[];
}

export interface SnapshotToolCall {
  name: string;
  arguments: string;
  /** pending | running | completed | failed (a cancel leaves a call pending or failed `cancelled`). */
  status: string;
  /** The result or the error, as JSON text, bounded. */
  outcome: string;
}

/** Bounds of one snapshot, in characters (and calls). */
export const SNAPSHOT_BOUNDS = {
  input: 4000,
  assistant: 6000,
  toolCalls: 20,
  toolArguments: 300,
  toolOutcome: 600,
} as const;

interface SnapshotRow {
  turnId: string;
  tenantId: string;
  sessionId: string;
  agentId: string;
  status: string;
  finalText: string | null;
  settings: unknown;
  /** Every hook's `hook_runs` status for the turn, by hook. */
  runs: Record<string, string>;
  seq: number;
  agentArchivist: unknown;
  agentModel: string | null;
  messages: { position: number; role: string; kind: string; authorityClass: string; body: unknown }[];
  toolCalls: { name: string; arguments: string; status: string; outcome: string | null }[];
  toolCallCount: number;
}

/** `text` cut to `max` characters (at a code point), and whether it was cut. */
export function bounded(text: string, max: number): { text: string; truncated: boolean } {
  if (text.length <= max) return { text, truncated: false };
  // Never half of a surrogate pair.
  const cut = /[\uD800-\uDBFF]$/.test(text.slice(0, max)) ? text.slice(0, max - 1) : text.slice(0, max);
  return { text: `${cut}…`, truncated: true };
}

function textOf(body: unknown): string {
  const parsed = MessageBody.safeParse(body);
  return parsed.success ? bodyText(parsed.data) : '';
}

/**
 * The snapshot rows of `turnIds` (the tenant's ended turns among them; oldest first), in one
 * statement. Tool results are cut in SQL so a large one is never read.
 */
async function snapshotRows(db: SqlRunner, tenantId: string, turnIds: string[]): Promise<SnapshotRow[]> {
  return db.rows<SnapshotRow>(sql`
    WITH t AS (
      SELECT id, tenant_id, session_id, agent_id, seq, status, final_text FROM turns
      WHERE id = ANY(${turnIds}::uuid[]) AND ${ofTenant('tenant_id', tenantId)}
        AND status IN ${ENDED}
    )
    SELECT t.id AS "turnId", t.tenant_id AS "tenantId", t.session_id AS "sessionId",
      t.agent_id AS "agentId", t.status, t.final_text AS "finalText", t.seq,
      (SELECT settings FROM tenants WHERE id = t.tenant_id) AS settings,
      (SELECT archivist FROM agents WHERE id = t.agent_id) AS "agentArchivist",
      (SELECT model FROM agents WHERE id = t.agent_id) AS "agentModel",
      (SELECT coalesce(json_object_agg(h.hook, h.status), '{}') FROM hook_runs h
        WHERE h.turn_id = t.id AND h.turn_at = sb_uuid7_time(t.id)) AS runs,
      (SELECT coalesce(json_agg(json_build_object('position', m.position, 'role', m.role, 'kind', m.kind,
          'authorityClass', m.authority_class, 'body', m.body) ORDER BY m.position), '[]')
        FROM messages m
        WHERE m.session_id = t.session_id AND m.turn_seq = t.seq AND m.tenant_id = t.tenant_id
          AND m.role IN ('user', 'assistant')) AS messages,
      (SELECT coalesce(json_agg(json_build_object('name', c.name,
          'arguments', left(c.arguments::text, ${SNAPSHOT_BOUNDS.toolArguments + 1}),
          'status', c.status,
          'outcome', left(coalesce(c.error, c.result)::text, ${SNAPSHOT_BOUNDS.toolOutcome + 1}))
          ORDER BY c.started_at NULLS LAST, c.call_id), '[]')
        FROM (SELECT * FROM tool_calls WHERE turn_id = t.id AND tenant_id = t.tenant_id
              ORDER BY started_at NULLS LAST, call_id LIMIT ${SNAPSHOT_BOUNDS.toolCalls}) c) AS "toolCalls",
      (SELECT count(*)::int FROM tool_calls WHERE turn_id = t.id AND tenant_id = t.tenant_id) AS "toolCallCount"
    FROM t
    ORDER BY t.session_id, t.seq
  `);
}

/**
 * The snapshot of the job's turn for `hook`, or null when the turn is not the tenant's or has not
 * ended (nothing to do, nothing recorded). With `ctx.snapshots` (one post-turn job's hooks), the turn
 * is read once for every hook of the job: the row carries every hook's run status, and each hook's
 * `done` / `runStatus` is its own (no hook changes another's row).
 */
export async function loadTurnSnapshot(
  db: SqlRunner,
  job: { turnId: string; tenantId: string },
  hook: string,
  snapshots?: SnapshotCache,
): Promise<TurnSnapshot | null> {
  const read = () => snapshotRows(db, job.tenantId, [job.turnId]).then((rows) => rows[0] ?? null);
  const row = await (snapshots ? snapshots.get(job, read) : read());
  return row ? toSnapshot(row, hook) : null;
}

/** The snapshots of several turns of one tenant for `hook` (an archivist session run), oldest first, in one read. */
export async function loadTurnSnapshots(
  db: SqlRunner,
  tenantId: string,
  turnIds: string[],
  hook: string,
): Promise<TurnSnapshot[]> {
  if (turnIds.length === 0) return [];
  return (await snapshotRows(db, tenantId, turnIds)).map((row) => toSnapshot(row, hook));
}

/** One post-turn job's turn rows, read at most once per (tenant, turn) however many hooks ask. */
export class SnapshotCache {
  private readonly rows = new Map<string, Promise<SnapshotRow | null>>();

  /**
   * Reads the rows of every turn of a group at once (docs/adr/0077): one statement per tenant of the
   * group instead of one per turn. A turn the read does not return (not the tenant's, not ended) is
   * kept as null, as its own read would have found it.
   */
  async prime(db: SqlRunner, jobs: readonly { turnId: string; tenantId: string }[]): Promise<void> {
    const byTenant = new Map<string, string[]>();
    for (const j of jobs) byTenant.set(j.tenantId, [...(byTenant.get(j.tenantId) ?? []), j.turnId]);
    for (const [tenantId, turnIds] of byTenant) {
      const found = new Map((await snapshotRows(db, tenantId, turnIds)).map((r) => [r.turnId, r]));
      for (const turnId of turnIds) {
        this.rows.set(`${tenantId}/${turnId}`, Promise.resolve(found.get(turnId) ?? null));
      }
    }
  }

  get(
    job: { turnId: string; tenantId: string },
    read: () => Promise<SnapshotRow | null>,
  ): Promise<SnapshotRow | null> {
    const key = `${job.tenantId}/${job.turnId}`;
    let row = this.rows.get(key);
    if (!row) {
      row = read();
      // A failed read is not kept: the hook that retries reads again.
      row.catch(() => this.rows.delete(key));
      this.rows.set(key, row);
    }
    return row;
  }
}

function toSnapshot(row: SnapshotRow, hook: string): TurnSnapshot {
  const [first, ...rest] = row.messages;
  const inputEntry = first && first.position === 0 && first.role === 'user' ? first : undefined;
  const assistantEntries = rest.filter((m) => m.role === 'assistant' && textOf(m.body).trim().length > 0);
  // Messages delivered into the running turn (interjections, docs/adr/0014) are input too; the
  // runtime's own notes to the model (reflection) are not.
  const interjections = rest.filter(
    (m) =>
      m.role === 'user' && m.authorityClass !== 'runtime_instruction' && textOf(m.body).trim().length > 0,
  );
  const input = bounded(
    [
      inputEntry ? textOf(inputEntry.body).trim() : '',
      ...interjections.map((m) => `(added during the turn) ${textOf(m.body).trim()}`),
    ]
      .filter((t) => t.length > 0)
      .join('\n\n'),
    SNAPSHOT_BOUNDS.input,
  );
  // A completed turn's final text is its answer; otherwise what its committed rounds said.
  const finalText = row.finalText?.trim() ?? '';
  const assistantText =
    finalText.length > 0
      ? finalText
      : assistantEntries
          .map((m) => textOf(m.body).trim())
          .join('\n\n')
          .trim();
  const assistant = bounded(assistantText, SNAPSHOT_BOUNDS.assistant);
  return {
    turnId: row.turnId,
    tenantId: row.tenantId,
    sessionId: row.sessionId,
    agentId: row.agentId,
    status: row.status,
    settings: row.settings,
    done: Object.hasOwn(row.runs, hook),
    runStatus: row.runs[hook] ?? null,
    seq: row.seq,
    agentArchivist: row.agentArchivist,
    agentModel: row.agentModel,
    input: {
      text: input.text,
      truncated: input.truncated,
      kind: inputEntry?.kind ?? '',
      authorityClass: inputEntry?.authorityClass ?? '',
    },
    assistant: { text: assistant.text, truncated: assistant.truncated, partial: finalText.length === 0 },
    toolCalls: row.toolCalls.map((c) => ({
      name: c.name,
      arguments: bounded(c.arguments, SNAPSHOT_BOUNDS.toolArguments).text,
      status: c.status,
      outcome: bounded(c.outcome ?? '', SNAPSHOT_BOUNDS.toolOutcome).text,
    })),
    omittedToolCalls: Math.max(0, row.toolCallCount - row.toolCalls.length),
    messageSeqs: [
      ...(inputEntry ? [inputEntry] : []),
      ...interjections,
      ...(finalText.length > 0 ? assistantEntries.slice(-1) : assistantEntries),
    ]
      .map((m) => m.position)
      .sort((a, b) => a - b),
  };
}

/**
 * Inserts the hook's `hook_runs` row inside the caller's transaction, `ON CONFLICT DO NOTHING`: true
 * when this run inserted it (its effects may follow in the same transaction), false when a run already
 * recorded the turn (the caller writes nothing). A concurrent run waits on the unique index until the
 * first commits or rolls back, so exactly one of them gets true. `failed` records a run that can
 * never succeed (so it is not retried either).
 */
export async function claimHookRun(
  tx: SqlRunner,
  run: {
    tenantId: string;
    turnId: string;
    hook: string;
    output: Record<string, unknown>;
    status?: 'completed' | 'failed' | 'deferred';
  },
): Promise<boolean> {
  const inserted = await tx.execute(sql`
    INSERT INTO hook_runs (id, tenant_id, turn_id, turn_at, hook, status, output, completed_at)
    VALUES (${newId()}::uuid, ${run.tenantId}::uuid, ${run.turnId}::uuid, sb_uuid7_time(${run.turnId}::uuid), ${run.hook},
      ${run.status ?? 'completed'}, ${json(run.output)}::jsonb, now())
    ON CONFLICT (turn_id, hook, turn_at) DO NOTHING
  `);
  return inserted === 1;
}

/** A hook's own span (`hook <name>`) inside its job's, carrying the turn, the tenant and, after the run, its outcome. */
export function hookSpan<T extends { outcome: string }>(
  hook: string,
  job: PostTurnJob,
  run: (span: Span) => Promise<T>,
): Promise<T> {
  return withSpan(
    `hook ${hook}`,
    {
      attributes: {
        'switchboard.hook': hook,
        'switchboard.turn.id': job.turnId,
        'switchboard.tenant.id': job.tenantId,
      },
    },
    async (span) => {
      const result = await run(span);
      span.setAttribute('switchboard.hook.outcome', result.outcome);
      return result;
    },
  );
}
