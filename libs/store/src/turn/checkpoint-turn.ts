import { join, json, sql, type Sql } from '../sql';
import { plainClosureSet } from './plain-closure';
import type { WaitingStatus } from './statuses';

/** The checkpoint's turn update `t` (docs/adr/0010): counters, usage, attempts, and the turn's end or wait. */

export type CostStatus = 'priced' | 'provider_reported' | 'unpriced';

/** Usage of a checkpoint's provider calls, summed, with their combined cost status. */
export interface TurnUsage {
  inputTokens: number;
  outputTokens: number;
  cachedTokens: number;
  cacheWriteTokens: number;
  costUsd: string;
  /** What the prompt cache saved (docs/adr/0032), decimal, either sign. */
  cacheSavedUsd: string;
  costStatus: CostStatus;
}

/** How the turn ended, with its decision record: written by its last checkpoint. */
export interface TurnEnd {
  status: string;
  stopReason: string;
  finalText: string;
  iterations: number;
  toolCalls: number;
  failure: unknown;
  costStatus: string | null;
  decision: {
    strategy: string;
    model: string;
    iterations: number;
    toolCalls: number;
    stopReason: string;
    /** Memory records recalled into the turn's context (docs/adr/0060); absent: none. */
    recalledRecords?: number;
  };
  /**
   * A cancelled turn's reason and note (docs/adr/0055), kept where a cancel request already wrote
   * them (the first stands).
   */
  cancel?: { reason: string; note: string | null };
}

/** What a checkpoint changes on the turn row (one UPDATE). */
export interface TurnChanges {
  usage?: TurnUsage;
  iterations?: number;
  attempts?: unknown[];
  model?: string;
  toolCallsAdded?: number;
  /** The turn waits (docs/adr/0013, 0024): it has not ended. */
  waiting?: WaitingStatus;
  end?: TurnEnd;
}

function usageSet(usage: TurnUsage): Sql {
  return sql`input_tokens = turns.input_tokens + ${usage.inputTokens}::int,
    output_tokens = turns.output_tokens + ${usage.outputTokens}::int,
    cached_tokens = turns.cached_tokens + ${usage.cachedTokens}::int,
    cache_write_tokens = turns.cache_write_tokens + ${usage.cacheWriteTokens}::int,
    cost_usd = turns.cost_usd + ${usage.costUsd}::numeric,
    cache_saved_usd = turns.cache_saved_usd + ${usage.cacheSavedUsd}::numeric`;
}

/** The turn's cost status with this checkpoint's: unpriced wins, then priced. */
function combinedCostStatus(usage: TurnUsage | undefined): Sql {
  return usage
    ? sql`CASE
      WHEN turns.cost_status = 'unpriced' OR ${usage.costStatus}::text = 'unpriced' THEN 'unpriced'
      WHEN turns.cost_status = 'priced' OR ${usage.costStatus}::text = 'priced' THEN 'priced'
      ELSE 'provider_reported' END`
    : sql`turns.cost_status`;
}

/**
 * The turn's end: status, counts, failure, cost status, the decision record (its tools read from
 * `tool_calls`) and, when it can only be plain, the closure decision (docs/adr/0031).
 */
function endSet(turnId: string, changes: TurnChanges, end: TurnEnd): Sql {
  const d = end.decision;
  return sql`status = ${end.status}, stop_reason = ${end.stopReason}, final_text = ${end.finalText},
    iterations = ${end.iterations}::int, tool_call_count = ${end.toolCalls}::int,
    failure = ${json(end.failure)}::jsonb, completed_at = now(),
    cost_status = coalesce(${end.costStatus}::text, ${combinedCostStatus(changes.usage)}),
    decision = jsonb_build_object(
      'strategy', ${d.strategy}::text,
      'model', coalesce(${changes.model ?? null}::text, turns.model, ${d.model}::text),
      'tools', (SELECT coalesce(jsonb_agg(DISTINCT name), '[]'::jsonb) FROM tool_calls
                WHERE turn_id = ${turnId}::uuid),
      'iterations', ${d.iterations}::int,
      'toolCalls', ${d.toolCalls}::int,
      'stopReason', ${d.stopReason}::text)${
        d.recalledRecords ? sql` || jsonb_build_object('recalledRecords', ${d.recalledRecords}::int)` : sql``
      },
    ${plainClosureSet(end.status)}${end.cancel ? cancelSet(end.cancel) : sql``}`;
}

/** A cancelled turn's reason and note, unless a cancel request wrote them first. */
const cancelSet = (c: { reason: string; note: string | null }) =>
  sql`, cancel_reason = coalesce(turns.cancel_reason, ${c.reason}::text),
    cancel_note = CASE WHEN turns.cancel_reason IS NULL THEN ${c.note}::text ELSE turns.cancel_note END`;

function turnSets(turnId: string, changes: TurnChanges | undefined): Sql[] {
  const usage = changes?.usage;
  const sets: Sql[] = [];
  if (usage) sets.push(usageSet(usage));
  if (changes?.end) {
    sets.push(endSet(turnId, changes, changes.end));
  } else {
    if (usage) sets.push(sql`cost_status = ${combinedCostStatus(usage)}`);
    if (changes?.iterations !== undefined) sets.push(sql`iterations = ${changes.iterations}::int`);
    if (changes?.toolCallsAdded)
      sets.push(sql`tool_call_count = turns.tool_call_count + ${changes.toolCallsAdded}::int`);
  }
  if (changes?.attempts && changes.attempts.length > 0)
    sets.push(sql`attempts = turns.attempts || ${json(changes.attempts)}::jsonb`);
  if (changes?.model !== undefined) sets.push(sql`model = ${changes.model}`);
  if (changes?.waiting) sets.push(sql`status = ${changes.waiting}::text`);
  return sets;
}

/**
 * `t`: the fenced turn update, returning the turn's cost after it (at the turn's end, every column:
 * the turn as the end publishes it, docs/adr/0071); or, with nothing to change and an
 * event that carries the cost, the turn's cost read.
 */
export function turnCte(turnId: string, changes: TurnChanges | undefined, costOut: boolean): Sql | undefined {
  const sets = turnSets(turnId, changes);
  if (sets.length > 0) {
    return sql`t AS (
      UPDATE turns SET ${join(sets)}
      WHERE turns.id = ${turnId}::uuid AND EXISTS (SELECT 1 FROM s)
      RETURNING ${changes?.end ? sql`turns.*` : sql`turns.cost_usd, turns.closure`})`;
  }
  if (costOut) return sql`t AS (SELECT cost_usd FROM turns WHERE id = ${turnId}::uuid)`;
  return undefined;
}
