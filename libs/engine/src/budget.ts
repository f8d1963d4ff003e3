import { isPriced } from '@switchboard/providers';
import type { TurnInput } from './types';

/**
 * A `maxUsd` budget is only as good as the prices behind it (ADR 0007). The models of the turn's
 * list (primary and fallbacks) that have no known price, when the turn has such a budget: any of
 * them could answer a round, and its spend would be booked at zero.
 */
export function unpricedModels(input: TurnInput): string[] {
  if (input.budget.maxUsd === undefined) return [];
  return [...new Set([input.model, ...input.fallbackModels])].filter((ref) => !isPriced(ref, input.prices));
}

/**
 * Whether a side call (summarizer, reflection, compaction summary) on `ref` keeps the budget
 * enforceable: there is no budget, or the model has a price. Side calls are optional work, so an
 * unpriced one is skipped (truncation, no reflection, the plain compaction note) rather than run.
 */
export function canBudget(input: TurnInput, ref: string): boolean {
  return input.budget.maxUsd === undefined || isPriced(ref, input.prices);
}
