import type { ToolCallRequest } from '@switchboard/providers';
import type { ToolDefinition } from '@switchboard/tools';
import type { ToolOutcome } from './types';

export interface GateContext {
  tenantId: string;
  sessionId: string;
  turnId: string;
  call: ToolCallRequest;
  tool: ToolDefinition;
}

/**
 * The per-call gates of seed 001 4g that policy fills in, in the order the
 * engine applies them: duplicate/replay → blocked → pre-hook → argument
 * validation → approval → bounded execution → post-hook → replay record.
 * Every gate is optional.
 */
export interface ToolGates {
  /** A reason to refuse the tool outright (tenant or agent policy), or null. */
  blocked?(ctx: GateContext): string | null | Promise<string | null>;
  /** Runs before validation; a returned reason refuses the call. */
  before?(ctx: GateContext, args: unknown): string | null | void | Promise<string | null | void>;
  /** For tools that need approval: the human decision (the runs issue fills this). */
  approve?(ctx: GateContext, args: unknown): Promise<'approved' | 'rejected'>;
  /** Best effort after execution: a failure here is ignored, the result stands. */
  after?(ctx: GateContext, outcome: ToolOutcome): void | Promise<void>;
}
