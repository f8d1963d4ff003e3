import type { TranscriptEntry } from '@switchboard/store';

/**
 * A `spawn_reactor` triage decision (docs/adr/0018) runs a light turn: its webhook message carries
 * `metadata.triage.maxIterations`, which can only lower the agent's round budget.
 */
export function reactorCap<B extends { maxIterations: number }>(
  budget: B,
  own: readonly TranscriptEntry[],
): B {
  let cap = budget.maxIterations;
  for (const m of own) {
    if (m.kind !== 'webhook_event') continue;
    const triage = (m.metadata as { triage?: { maxIterations?: unknown } } | null)?.triage;
    if (typeof triage?.maxIterations === 'number' && triage.maxIterations >= 1) {
      cap = Math.min(cap, Math.floor(triage.maxIterations));
    }
  }
  return cap === budget.maxIterations ? budget : { ...budget, maxIterations: cap };
}
