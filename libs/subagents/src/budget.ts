/**
 * A child's share of its parent's budget (docs/adr/0025): what its parent may still spend. The child's
 * turn gets `maxUsd = min(its own agent's maxUsd, parent maxUsd - (parent spent + children spent))`,
 * carried on the child's input message (`metadata.subagent.maxUsd`), where the runner reads it
 * (`parentBudgetCap`, libs/turns) without a query of its own.
 */

/** What the spawning turn may spend and has spent (its own cost and its descendants'). */
export interface ParentBudget {
  /** The parent turn's own cap: its agent's maxUsd, lowered by its own parent's share; null: none. */
  maxUsd: number | null;
  spentUsd: number;
}

/** Less than this left is nothing left: a child could not pay for one model call. */
const NOTHING_LEFT_USD = 1e-6;

/**
 * The child's cap, `undefined` when neither the child's agent nor the parent has one, or `exhausted`
 * when the parent has nothing left to give (the spawn is refused).
 */
export function childMaxUsd(
  childAgentMaxUsd: number | undefined,
  parent: ParentBudget,
): { maxUsd: number | undefined } | 'exhausted' {
  if (parent.maxUsd === null) return { maxUsd: childAgentMaxUsd };
  const left = parent.maxUsd - parent.spentUsd;
  if (left < NOTHING_LEFT_USD) return 'exhausted';
  // Costs are decimals of 8 places: rounding to them undoes binary float error (1 - 0.3 - 0.2).
  const share = Math.round(left * 1e8) / 1e8;
  return { maxUsd: childAgentMaxUsd === undefined ? share : Math.min(childAgentMaxUsd, share) };
}

/** The maxUsd an agent's stored `budgets` name, if any. */
export function agentMaxUsd(budgets: unknown): number | undefined {
  const v = (budgets as { maxUsd?: unknown } | null)?.maxUsd;
  return typeof v === 'number' && v > 0 ? v : undefined;
}
