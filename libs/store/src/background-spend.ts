import { newId } from '@switchboard/contracts';
import { ACCUMULATE_DAILY_SPEND } from './hook-store';
import { sql, type SqlRunner } from './sql';

/** One provider call made outside any turn (the memory-embed job's batch, docs/adr/0050). */
export interface BackgroundSpend {
  tenantId: string;
  agentId: string;
  /**
   * The id (a UUIDv7) of the job run that made the call: its creation time is the entry's partition
   * key, so a retried run computes the same (key, turn_at) and books once (ADR 0044).
   */
  runId: string;
  /** Deterministic per call: a retry of the same call books nothing more. */
  key: string;
  kind: 'chat' | 'embedding';
  provider: string;
  model: string;
  inputTokens: number;
  outputTokens: number;
  costUsd: number;
  costSource: string;
}

/**
 * Books a call outside any turn in the ledger (no session, no turn) and, only when this statement
 * inserted it, adds it to the tenant's daily roll-up (`tenant_spend_daily`, no turn counted): the
 * cost-log hook never sees such an entry, so this is its one way into the daily figures, and a
 * retry with the same key adds nothing twice. One statement. True when the entry was new.
 */
export async function bookBackgroundSpend(db: SqlRunner, s: BackgroundSpend): Promise<boolean> {
  const usd = s.costUsd.toFixed(8);
  const row = await db.first<{ booked: boolean }>(sql`
    WITH ins AS (
      INSERT INTO ledger_entries (id, tenant_id, agent_id, session_id, turn_id, turn_at, key, provider, model,
        input_tokens, output_tokens, cached_tokens, cache_write_tokens, cost_usd, cache_saved_usd, cost_source, kind)
      VALUES (${newId()}::uuid, ${s.tenantId}::uuid, ${s.agentId}::uuid, NULL, NULL,
        sb_uuid7_time(${s.runId}::uuid), ${s.key}, ${s.provider}, ${s.model}, ${s.inputTokens}::int,
        ${s.outputTokens}::int, 0, 0, ${usd}::numeric, 0, ${s.costSource}, ${s.kind})
      ON CONFLICT (key, turn_at) DO NOTHING
      RETURNING tenant_id, created_at, cost_usd, input_tokens, output_tokens
    ),
    daily AS (
      INSERT INTO tenant_spend_daily (tenant_id, day, cost_usd, input_tokens, output_tokens, cached_tokens,
        cache_write_tokens, cache_saved_usd, provider_calls, turns, updated_at)
      SELECT tenant_id, (created_at AT TIME ZONE 'UTC')::date, cost_usd, input_tokens, output_tokens, 0, 0, 0,
        1, 0, now()
      FROM ins
      ${ACCUMULATE_DAILY_SPEND}
    )
    SELECT EXISTS (SELECT 1 FROM ins) AS booked`);
  return row?.booked ?? false;
}
