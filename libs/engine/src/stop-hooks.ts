import type { StopHook } from './types';

/** The port is declared with the engine's other ports (types.ts, a leaf): here are the built-in hooks. */
export type { LoopState, StopHook } from './types';

export const iterationCapHook: StopHook = {
  name: 'iteration_cap',
  check: (s) => (s.iterations >= s.budget.maxIterations ? 'max_iterations' : null),
};

export const toolCallCapHook: StopHook = {
  name: 'tool_call_cap',
  check: (s) => (s.toolCalls >= s.budget.maxToolCalls ? 'max_tool_calls' : null),
};

export const budgetHook: StopHook = {
  name: 'budget',
  check: (s) => (s.budget.maxUsd !== undefined && s.spentUsd >= s.budget.maxUsd ? 'max_usd' : null),
};

export const deadlineHook: StopHook = {
  name: 'deadline',
  check: (s) => (s.budget.deadlineMs !== undefined && s.elapsedMs >= s.budget.deadlineMs ? 'deadline' : null),
};

/** The hooks every turn runs, before any the caller adds. */
export const BUILTIN_STOP_HOOKS: readonly StopHook[] = [
  iterationCapHook,
  toolCallCapHook,
  budgetHook,
  deadlineHook,
];

/**
 * A per-tenant kill switch: `isKilled` is asked between rounds. The operator's pause (docs/adr/0030)
 * stops the turn from outside it, so its vote cancels the turn, reason `tenant_paused` (docs/adr/0055).
 */
export function killSwitchHook(isKilled: (tenantId: string) => Promise<boolean>): StopHook {
  return {
    name: 'kill_switch',
    check: async (s) => ((await isKilled(s.tenantId)) ? 'kill_switch' : null),
    cancels: 'tenant_paused',
  };
}

/**
 * The tenant's daily spend cap (docs/adr/0026): `capUsd` is what this run's `spentUsd` may reach
 * (the cap less the tenant's other spend today, as the latest checkpoint read it), undefined without
 * a cap. Checked where `max_usd` is, so a turn with nothing left stops before its first model call.
 */
export function tenantSpendHook(capUsd: () => number | undefined): StopHook {
  return {
    name: 'tenant_budget',
    check: (s) => {
      const cap = capUsd();
      return cap !== undefined && s.spentUsd >= cap ? 'tenant_budget_exhausted' : null;
    },
  };
}
