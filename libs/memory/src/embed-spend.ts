import { createHash } from 'node:crypto';
import { parseTenantSettings } from '@switchboard/contracts';
import { embeddingCost, type PriceOverrides } from '@switchboard/providers';
import { bookBackgroundSpend, sql, type SqlRunner } from '@switchboard/store';
import type { MemoryScope } from './store';
import type { EmbedBatchSpend } from './vectors';

/**
 * The memory-embed job's spend in the cost ledger (issue 33, docs/adr/0050). Each batch's provider
 * call is booked before its vectors are written, under a key made of the agent, the embedder and the
 * batch's record ids, in the partition of the job run's id: a run retried after the call (its vectors
 * never written) re-embeds the same records and books nothing more; a retry after the write finds
 * nothing pending and makes no call.
 */
export function embedBatchKey(agentId: string, embedder: string, recordIds: readonly string[]): string {
  const digest = createHash('sha256').update(recordIds.join(',')).digest('base64url').slice(0, 32);
  return `embed:${agentId}:${embedder}:${digest}`;
}

/** The built-in `local/*` embedders run in process: no provider bills them, nothing is booked. */
export function isBuiltInEmbedder(embedder: string): boolean {
  return embedder.startsWith('local/');
}

/**
 * What `embedPending` tells of each batch, booked: priced by the tenant's `modelPrices` over the
 * deployment's `prices` (MODEL_PRICES) over the maintained table, as chat calls are (read once a run).
 */
export function bookEmbedSpend(
  db: SqlRunner,
  scope: MemoryScope,
  runId: string,
  prices: PriceOverrides = {},
): (batch: EmbedBatchSpend) => Promise<void> {
  let tenantPrices: PriceOverrides | undefined;
  return async (batch) => {
    if (isBuiltInEmbedder(batch.embedder)) return;
    tenantPrices ??= await readTenantPrices(db, scope.tenantId);
    const cost = embeddingCost(batch.embedder, batch.inputTokens, { ...prices, ...tenantPrices });
    const slash = batch.embedder.indexOf('/');
    await bookBackgroundSpend(db, {
      tenantId: scope.tenantId,
      agentId: scope.agentId,
      runId,
      key: embedBatchKey(scope.agentId, batch.embedder, batch.recordIds),
      kind: 'embedding',
      provider: batch.embedder.slice(0, slash),
      // As chat calls book theirs: `<provider>/<model>`.
      model: batch.embedder,
      inputTokens: batch.inputTokens,
      outputTokens: 0,
      costUsd: cost.usd,
      costSource: cost.source,
    });
  };
}

async function readTenantPrices(db: SqlRunner, tenantId: string): Promise<PriceOverrides> {
  const row = await db.first<{ settings: unknown }>(
    sql`SELECT settings FROM tenants WHERE id = ${tenantId}::uuid`,
  );
  return row ? parseTenantSettings(row.settings).modelPrices : {};
}
