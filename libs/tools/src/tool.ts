import { z } from 'zod';
import type { ToolSpec } from '@switchboard/providers';
import { emitSchema, type SchemaMode } from './schema';

export type SideEffect = 'read_only' | 'local_write' | 'network' | 'destructive';

export interface ToolContext {
  tenantId: string;
  /** The agent the turn runs as (absent only where a caller runs a tool outside a turn's agent). */
  agentId?: string;
  sessionId: string;
  turnId: string;
  callId: string;
  /** turn id + tool call id: side-effecting tools pass it on so a retried turn never repeats an effect. */
  idempotencyKey: string;
  /**
   * The call's own signal: aborted when the call's `timeoutMs` passes (reason: a `TimeoutError`)
   * or when the turn stops (cancel, deadline, lost lease). A tool passes it to whatever it awaits.
   */
  signal: AbortSignal;
  /**
   * An earlier run of this turn started this call and stopped before its result was recorded
   * (only tools that honour the idempotency key are run again then; see `honoursIdempotencyKey`).
   */
  resumed: boolean;
  /**
   * The write gate (seed 001 stage 5): closed once the call's result is settled
   * (it timed out, the turn was cancelled, or the turn ended). A tool checks it
   * right before committing an effect; a late effect must not happen.
   */
  writeGate: { isOpen(): boolean };
  /**
   * The assistant text of the round that made this call (seed 002: `complete_work_item` takes its
   * completion report from it); empty when the round had none.
   */
  roundText?: string;
  /**
   * The tool called a billing embedder for the turn (memory_search's query, issue 33): the turn books
   * it with the call (built-in embedders bill 0 tokens and are not told).
   */
  spend?: (spend: { embedder: string; inputTokens: number }) => void;
}

export interface ToolDefinition<S extends z.ZodType = z.ZodType> {
  name: string;
  description: string;
  schema: S;
  sideEffect: SideEffect;
  /** Resources the call touches; calls with disjoint keys may run in parallel. */
  resourceKeys?: (args: z.infer<S>) => string[];
  timeoutMs: number;
  needsApproval: boolean;
  /**
   * The tool deduplicates its external effect by `ctx.idempotencyKey` (for example it sends it as
   * an `Idempotency-Key` header). A side-effecting call that an earlier run started but never
   * recorded is run again, with the same key, only when this is true; otherwise the model gets an
   * `outcome_unknown` result (docs/adr/0004-at-least-once-without-duplicates.md).
   */
  honoursIdempotencyKey?: boolean;
  /**
   * The arguments' JSON Schema as the tool brings it (an MCP tool, docs/adr/0023): sent to providers
   * as is, never strict; `schema` then only validates (it cannot be derived back from zod).
   */
  parameters?: Record<string, unknown>;
  /**
   * The result enters history as the tool returns it: no TokenJuice compaction and no summarizer
   * detour (`tokenjuice_retrieve`, whose answer is an original already; docs/adr/0033). The result
   * budget still applies.
   */
  rawResult?: boolean;
  execute(args: z.infer<S>, ctx: ToolContext): Promise<unknown>;
}

export function defineTool<S extends z.ZodType>(def: ToolDefinition<S>): ToolDefinition<S> {
  return def;
}

/** JSON Schema of a tool's arguments, derived from its zod schema, emitted for providers in `mode`. */
export function toolSpec(tool: ToolDefinition, mode: SchemaMode = 'relaxed'): ToolSpec {
  if (tool.parameters) {
    return { name: tool.name, description: tool.description, parameters: tool.parameters, strict: false };
  }
  const { $schema: _ignored, ...source } = z.toJSONSchema(tool.schema, {
    target: 'draft-7',
    io: 'input',
  }) as Record<string, unknown>;
  return {
    name: tool.name,
    description: tool.description,
    parameters: emitSchema(source, mode),
    strict: mode === 'strict',
  };
}

/**
 * Thrown by a tool whose call must wait for a sub-agent task (docs/adr/0024): the engine ends the
 * round with a `{kind: 'task'}` wait instead of a result, the turn waits (the runner persists the wait) and frees the
 * worker, and the task's end resumes it; the call then runs again (it honours the idempotency key)
 * and answers from the ended task.
 */
export class ToolWait extends Error {
  constructor(readonly taskId: string) {
    super(`waiting for task ${taskId}`);
    this.name = 'ToolWait';
  }
}

/**
 * A tool failure the tool understands (seed 002 "Tool Error Envelope"): a stable
 * kind, a concise message, optional structured details safe to show the model,
 * a recovery hint and whether retrying the same action can help. Anything else
 * a tool throws becomes a plain `execution_failed`.
 */
export class ToolError extends Error {
  readonly kind: string;
  readonly details?: unknown;
  readonly recoveryHint?: string;
  readonly retryable: boolean;

  constructor(
    kind: string,
    message: string,
    options: { details?: unknown; recoveryHint?: string; retryable?: boolean } = {},
  ) {
    super(message);
    this.name = 'ToolError';
    this.kind = kind;
    this.details = options.details;
    this.recoveryHint = options.recoveryHint;
    this.retryable = options.retryable ?? false;
  }
}
