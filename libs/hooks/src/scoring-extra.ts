import type { Scorer } from '@switchboard/contracts';
import type { HookContext } from './context';

/**
 * Scorers a turn gets beyond its version's own (docs/adr/0062): the scoring hook scores
 * `[...versionScorers, ...(await extraScorersFor(ctx, turn))]`. None yet; the datasets of issue 35
 * (docs/adr/0063) return an experiment item's checks here.
 */
export function extraScorersFor(
  _ctx: HookContext,
  _turn: { id: string; tenantId: string; sessionId: string | null },
): Promise<Scorer[]> {
  return Promise.resolve([]);
}
