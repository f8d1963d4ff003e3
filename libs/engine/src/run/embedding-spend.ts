import { embeddingCost } from '@switchboard/providers';
import type { EmbeddingSpend } from '../context';
import type { EmbeddingRecord } from '../types';
import type { TurnRun } from './turn-run';

/**
 * An embedder call the turn made (issue 33: recall's query, tool selection, a memory_search call's query): priced as chat calls are (the tenant's and deployment's
 * prices over the maintained table), counted in the run's spend and booked with the turn.
 */
export async function bookEmbedding(
  run: TurnRun,
  purpose: EmbeddingRecord['purpose'],
  e: EmbeddingSpend,
  callId?: string,
): Promise<void> {
  const cost = embeddingCost(e.embedder, e.inputTokens, run.input.prices);
  run.spentUsd += cost.usd;
  await run.cp.recordEmbedding?.({
    purpose,
    ...(callId ? { callId } : {}),
    embedder: e.embedder,
    inputTokens: e.inputTokens,
    costUsd: cost.usd,
    costSource: cost.source,
  });
}
