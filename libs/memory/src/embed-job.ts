import type { Queue } from 'bullmq';
import { Jobs, memoryEmbedDedup, newId } from '@switchboard/contracts';
import { publish } from '@switchboard/queue';
import { ofTenant, sql, type SqlRunner } from '@switchboard/store';
import type { MemoryScope } from './store';

/**
 * Asks the hooks worker to embed the agent's records lacking a vector of its embedder (docs/adr/0050):
 * after records are written, and after the agent's embedder changed. One pending job per agent
 * (BullMQ deduplication): a burst of writes is one run, and a publish while a run is active starts
 * one more after it, so a record written during a run is never left out.
 */
export async function enqueueMemoryEmbed(queue: Queue, scope: MemoryScope, delayMs = 0): Promise<void> {
  await publish(
    queue,
    Jobs.memoryEmbed,
    { tenantId: scope.tenantId, agentId: scope.agentId, run: newId() },
    { deduplication: memoryEmbedDedup(scope.agentId), ...(delayMs > 0 ? { delay: delayMs } : {}) },
  );
}

/**
 * After a turn's post-turn hooks (which may have written records): the agent's embedding job, when
 * its agent has an embedder. One read (the turn's partition, its agent's row).
 */
export async function embedAfterTurn(
  db: SqlRunner,
  queue: Queue,
  turn: { tenantId: string; turnId: string },
): Promise<boolean> {
  const row = await db.first<{ agentId: string }>(sql`
    SELECT t.agent_id AS "agentId" FROM turns t JOIN agents a ON a.id = t.agent_id
    WHERE t.id = ${turn.turnId}::uuid AND ${ofTenant('t.tenant_id', turn.tenantId)}
      AND a.embedder IS NOT NULL`);
  if (!row) return false;
  await enqueueMemoryEmbed(queue, { tenantId: turn.tenantId, agentId: row.agentId });
  return true;
}

/**
 * `embedAfterTurn` for a group of ended turns (docs/adr/0070): one read for all of them, then one
 * embedding job per agent with an embedder.
 */
export async function embedAfterTurns(
  db: SqlRunner,
  turns: readonly { tenantId: string; turnId: string }[],
): Promise<{ tenantId: string; agentId: string }[]> {
  if (turns.length === 0) return [];
  return db.rows<{ tenantId: string; agentId: string }>(sql`
    SELECT DISTINCT t.tenant_id AS "tenantId", t.agent_id AS "agentId"
    FROM unnest(${turns.map((t) => t.turnId)}::uuid[], ${turns.map((t) => t.tenantId)}::uuid[]) AS j(turn_id, tenant_id)
    JOIN turns t ON t.id = j.turn_id AND t.tenant_id = j.tenant_id
    JOIN agents a ON a.id = t.agent_id
    WHERE a.embedder IS NOT NULL`);
}
