import { newId } from '@switchboard/contracts';
import type { ToolCallRequest } from '@switchboard/providers';
import type { ToolDefinition } from '@switchboard/tools';
import { defaultApprovalPolicy, type GateContext } from '../gates';
import { clientToolGate } from './client-tools';
import type { ApprovalPolicy, ToolOutcome, Wait } from '../types';
import type { Cleared, PreparedCall } from './prepared-call';
import {
  actionBudgetExceeded,
  actionBudgetUnavailable,
  blockedTool,
  invalidArguments,
  invalidJson,
  refusedBeforeRun,
  refusedByDecision,
  unknownTool,
  type Failure,
} from './tool-outcomes';
import type { TurnRun } from './turn-run';

/** What the tool gates make of a call: cleared to run, answered without running, or a wait for a decision. */
export type GateVerdict = { cleared: Cleared } | { wait: Wait } | ToolOutcome;

/**
 * The tool gates before a call runs (seed 001 4g), in order: a tool the turn has and arguments that
 * are JSON → a client's tool answered by the client (docs/adr/0047) → a replay turn's recorded result
 * (docs/adr/0054) → duplicate/replay → blocked tool → the `before` gate → argument validation →
 * approval (docs/adr/0013). The first gate that answers the call decides it. The hourly side-effect
 * budget (`actionBudgetGate`) comes after these, when the call is about to start (tool-call.ts).
 */
export async function passGates(run: TurnRun, c: PreparedCall): Promise<GateVerdict> {
  const { call, tool, args } = c;
  if (!tool) return unknownTool(call.name, run.input.tools);
  if (!args.ok) return invalidJson(args.error);
  // The client's tool (docs/adr/0047): its answer, its expiry or a wait; the client runs it, not us.
  if (run.isClientTool(tool)) return clientToolGate(run, c);
  const recorded = recordedAnswer(run, c);
  if (recorded) return recorded;
  const replay = run.replays.find(tool, call);
  if (replay) return replay;
  const ctx = gateContext(run, call, tool);
  const refused = await refusal(run, ctx, args.value);
  if (refused) return refused;
  const parsed = tool.schema.safeParse(args.value);
  if (!parsed.success) return invalidArguments(parsed.error.issues);
  const approval = await approvalGate(run, ctx, parsed.data);
  return approval ?? { cleared: { tool, args: parsed.data } };
}

/** The `after` tool gate: best effort, a failing gate never changes the result. */
export async function afterGate(
  run: TurnRun,
  call: ToolCallRequest,
  tool: ToolDefinition,
  result: ToolOutcome,
): Promise<void> {
  const { gates } = run.resources;
  if (!gates.after) return;
  const { tenantId, sessionId, turnId } = run.input;
  try {
    await gates.after({ tenantId, sessionId, turnId, call, tool }, result);
  } catch {
    // Best effort: a failing after gate never changes the result.
  }
}

/**
 * The hourly side-effect budget (docs/adr/0058), the last gate: a side-effecting call that is about
 * to start is counted against the agent's and the tenant's rolling window, or refused (journaled as
 * `action_budget_exceeded`) when either is full. A read-only call is never asked about. When the
 * budget cannot be read, a call with a budget set is refused (`action_budget_unavailable`, retryable);
 * without one it runs.
 */
export async function actionBudgetGate(
  run: TurnRun,
  call: ToolCallRequest,
  tool: ToolDefinition,
): Promise<Failure | undefined> {
  const { gates } = run.resources;
  if (!gates.actionBudget || tool.sideEffect === 'read_only') return undefined;
  const limits = run.input.actionLimits ?? { agent: null, tenant: null };
  let verdict;
  try {
    verdict = await gates.actionBudget(gateContext(run, call, tool), limits);
  } catch (err) {
    if (limits.agent === null && limits.tenant === null) return undefined;
    return actionBudgetUnavailable(err instanceof Error ? err.message : String(err));
  }
  if (verdict.allowed) return undefined;
  const { scope, limit, windowMs, retryAfterMs } = verdict;
  await run.cp.emit('action_budget_exceeded', {
    callId: call.id,
    name: call.name,
    scope,
    limit,
    windowMs,
    retryAfterMs,
  });
  return actionBudgetExceeded(scope, limit, windowMs, retryAfterMs);
}

/**
 * A replay turn's side-effecting call that matched a recorded call of the original (docs/adr/0054):
 * answered with its recorded result, not executed; the checkpoint of the answer names the original.
 */
function recordedAnswer(run: TurnRun, c: PreparedCall): ToolOutcome | undefined {
  const recorded = run.recorded?.answerFor(c.call.id);
  if (!recorded) return undefined;
  c.meta.replayedFromToolCallId = recorded.id;
  return { ok: true, result: recorded.result ?? null };
}

/**
 * A replay turn's side-effecting call that matched no recorded call (docs/adr/0054) waits for a
 * person whatever the policy says: a replay never makes an effect nobody approved.
 */
function replayPolicy(run: TurnRun, tool: ToolDefinition): ApprovalPolicy | null {
  return run.input.replay && tool.sideEffect !== 'read_only' ? 'replay_unrecorded_side_effect' : null;
}

function gateContext(run: TurnRun, call: ToolCallRequest, tool: ToolDefinition): GateContext {
  const { tenantId, sessionId, turnId, agentId, approval } = run.input;
  return { tenantId, sessionId, turnId, ...(agentId ? { agentId } : {}), call, tool, approval };
}

/** The blocked-tool gate (the tenant's list, then policy), then the `before` gate. */
async function refusal(run: TurnRun, ctx: GateContext, args: unknown): Promise<Failure | undefined> {
  const { gates } = run.resources;
  const blocked = run.input.blockedTools?.includes(ctx.call.name)
    ? `the tool "${ctx.call.name}" is blocked for this tenant`
    : await gates.blocked?.(ctx);
  if (blocked) return blockedTool(blocked);
  const refused = await gates.before?.(ctx, args);
  if (refused) return refusedBeforeRun(refused);
  return undefined;
}

/**
 * Approval (docs/adr/0013): a call the policy gates is acted on by its stored decision; without one
 * it waits. Undefined: the call may run.
 */
async function approvalGate(
  run: TurnRun,
  ctx: GateContext,
  args: unknown,
): Promise<{ wait: Wait } | Failure | undefined> {
  const policy =
    replayPolicy(run, ctx.tool) ?? (await (run.resources.gates.approval ?? defaultApprovalPolicy)(ctx, args));
  if (!policy) return undefined;
  const { call, tool } = ctx;
  const decision = run.input.decisions?.find((d) => d.callId === call.id);
  if (!decision) {
    return {
      wait: {
        kind: 'approval',
        approvalId: newId(),
        callId: call.id,
        tool: call.name,
        arguments: args,
        sideEffect: tool.sideEffect,
        policy,
      },
    };
  }
  return decision.status === 'approved' ? undefined : refusedByDecision(decision);
}
