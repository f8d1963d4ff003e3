import type { TranscriptEntry } from '@switchboard/store';

/**
 * A child turn's share of its parent's budget (docs/adr/0025): the spawn wrote it on the child's input
 * message as `metadata.subagent.maxUsd` (what the parent had left, or less), and the turn's maxUsd is
 * lowered to it. Read from the turn's own transcript, already loaded: no query of its own.
 */
export function parentBudgetCap<B extends { maxUsd?: number }>(
  budget: B,
  own: readonly TranscriptEntry[],
): B {
  let cap = budget.maxUsd;
  for (const m of own) {
    const share = (m.metadata as { subagent?: { maxUsd?: unknown } } | null)?.subagent?.maxUsd;
    if (typeof share === 'number' && share >= 0) cap = cap === undefined ? share : Math.min(cap, share);
  }
  return cap === budget.maxUsd ? budget : { ...budget, maxUsd: cap };
}
