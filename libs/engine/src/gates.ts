import type { ToolCallRequest } from '@switchboard/providers';
import type { ToolDefinition } from '@switchboard/tools';
import type { ApprovalPolicy, ToolOutcome, TurnInput } from './types';

export interface GateContext {
  tenantId: string;
  sessionId: string;
  turnId: string;
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
}

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
