import type { ToolCallRequest } from '@switchboard/providers';
import type { ToolDefinition } from '@switchboard/tools';
import type { ApprovalPolicy, ToolOutcome, TurnInput } from './types';

export interface GateContext {
  tenantId: string;
  sessionId: string;
  turnId: string;
  /** The agent the turn runs as, when it has one. */
  agentId?: string;
  call: ToolCallRequest;
  tool: ToolDefinition;
  /** The turn's approval inputs (agent and tenant lists, untrusted input); absent: none. */
  approval?: TurnInput['approval'];
}

/**
 * The tool gates of seed 001 4g that policy fills in, in the order the
 * engine applies them (run/gate.ts, run/tool-call.ts): duplicate/replay →
 * blocked → before → argument validation → approval → bounded execution →
 * after → replay record. Every gate is optional.
 */
export interface ToolGates {
  /** A reason to refuse the tool outright (tenant or agent policy), or null. */
  blocked?(ctx: GateContext): string | null | Promise<string | null>;
  /** Runs before validation; a returned reason refuses the call. */
  before?(ctx: GateContext, args: unknown): string | null | void | Promise<string | null | void>;
  /**
   * Whether the call needs a human decision, and why (`defaultApprovalPolicy` when absent). The
   * engine never awaits the decision: a call that needs one and has none makes the turn wait
   * (docs/adr/0013).
   */
  approval?(ctx: GateContext, args: unknown): ApprovalPolicy | null | Promise<ApprovalPolicy | null>;
  /** Best effort after execution: a failure here is ignored, the result stands. */
  after?(ctx: GateContext, outcome: ToolOutcome): void | Promise<void>;
  /**
   * The hourly side-effect budget (seed 000 `max_actions_per_hour`, docs/adr/0058): asked for each
   * side-effecting call that passed every other gate, just before it starts. It counts the call
   * (once per call, however often a resumed run asks) against the agent's and the tenant's rolling
   * window, or refuses it when either is full. Absent: no budget.
   */
  actionBudget?(ctx: GateContext, limits: ActionLimits): Promise<ActionBudgetVerdict>;
}

/** The turn's hourly side-effect budgets (docs/adr/0058): the agent's and the tenant's; null: unlimited. */
export interface ActionLimits {
  agent: number | null;
  tenant: number | null;
}

/** What the action budget says of a call: counted, or refused with the window that is full. */
export type ActionBudgetVerdict =
  | { allowed: true }
  | {
      allowed: false;
      /** Whose budget is spent: the agent's or the tenant's. */
      scope: 'agent' | 'tenant';
      limit: number;
      windowMs: number;
      /** Until the oldest counted call leaves the window and a slot frees. */
      retryAfterMs: number;
    };

/**
 * The default approval policy (SPEC §2, §8): the tool declares it needs approval; the agent or the
 * tenant lists the tool; or the call has a side effect and the turn was triggered by content that
 * cannot authorise one (`external_evidence`, `integration_signal`). Tool output is not counted as
 * the turn's trigger: every tool-using turn would otherwise need a human for its next write.
 */
export function defaultApprovalPolicy(ctx: GateContext): ApprovalPolicy | null {
  const { tool, approval } = ctx;
  if (tool.needsApproval) return 'tool';
  if (approval?.agent.includes(tool.name)) return 'agent';
  if (approval?.tenant.includes(tool.name)) return 'tenant';
  if (approval?.untrustedInput && tool.sideEffect !== 'read_only') return 'untrusted_input';
  return null;
}

/** Authority classes of content that may inform the model but never authorise a side effect alone. */
export const UNTRUSTED_AUTHORITY = ['external_evidence', 'integration_signal'] as const;
