import { withSpan } from '@switchboard/observability';
import { genAiAttributes } from '../model-round';
import type { ToolCallRequest } from '@switchboard/providers';
import { summarize } from '../side-calls/summarize';
import type { ToolOutcome, Wait } from '../types';
import { executeCall } from './execute';
import { actionBudgetGate, afterGate, passGates } from './gate';
import { prepareCall, type Cleared, type PreparedCall } from './prepared-call';
import { boundToolResult } from './result-bounds';
import { compactResult } from './tokenjuice';
import { completedEvent, outcomeUnknown, stoppedOutcome, type Failure } from './tool-outcomes';
import type { TurnRun } from './turn-run';

/** What running one call gives the round: its answer, a wait for a decision, or the call held for later. */
export type ToolRun = { content: string; ok: boolean; halt?: string } | { wait: Wait } | { held: true };

/**
 * One tool call: parsed once → the tool gates → executed → recorded. A call that waits or is held
 * leaves no trace yet: its start is journaled (and, for a side effect, committed) only when it runs
 * or is answered, so a resumed run never mistakes a gated call for one that started and was never
 * recorded (ADR 0004).
 *
 * `hold`: an earlier call of the round waits, so a side-effecting call that passes its gates is held
 * (left unanswered) to keep effects in the model's order (docs/adr/0013).
 */
export async function runToolCall(run: TurnRun, call: ToolCallRequest, hold: boolean): Promise<ToolRun> {
  const c = prepareCall(run, call);
  const started = Date.now();
  const answer = await withSpan(
    `execute_tool ${call.name}`,
    {
      attributes: {
        'gen_ai.operation.name': 'execute_tool',
        'gen_ai.tool.name': call.name,
        'gen_ai.tool.call.id': call.id,
        ...genAiAttributes(run.input),
      },
    },
    () => gateAndExecute(run, c, hold),
  );
  if ('wait' in answer || 'held' in answer) return answer;
  await c.announce();
  return record(run, c, answer, Date.now() - started);
}

/**
 * Records a `cancelled` result for each call of the last round that never ran, so every call of a
 * stopped round gets its one result.
 */
export async function answerUnrun(run: TurnRun): Promise<void> {
  const unrun = run.unansweredCalls();
  for (const call of unrun) {
    const { meta } = prepareCall(run, call);
    const result: Failure = {
      ...stoppedOutcome('the turn was stopped before this call ran'),
      tool_name: call.name,
    };
    const content = JSON.stringify(result);
    await run.cp.emit('tool_call_completed', completedEvent(call, result, 0));
    await run.cp.toolStarted(meta);
    await run.cp.recordToolResult(meta, result, 0, content);
    run.messages.push({ role: 'tool', toolCallId: call.id, name: call.name, content });
  }
  run.toolCalls += unrun.length;
}

/** The tool gates, then (unless held or of unknown outcome) the call itself. */
async function gateAndExecute(
  run: TurnRun,
  c: PreparedCall,
  hold: boolean,
): Promise<ToolOutcome | { wait: Wait } | { held: true }> {
  const verdict = await passGates(run, c);
  if (!('cleared' in verdict)) return verdict;
  const { tool } = verdict.cleared;
  if (hold && tool.sideEffect !== 'read_only') return { held: true };
  // An earlier run started this call and never recorded its outcome: the effect may have
  // happened. Only a read-only tool, or one that deduplicates by the idempotency key, runs again.
  const resumed = run.input.startedCalls?.includes(c.call.id) ?? false;
  if (resumed && tool.sideEffect !== 'read_only' && !tool.honoursIdempotencyKey) {
    return outcomeUnknown(c.call.name, c.meta.idempotencyKey);
  }
  // The hourly side-effect budget (docs/adr/0058): counted only for a call that really starts now.
  const overBudget = await actionBudgetGate(run, c.call, tool);
  if (overBudget) return overBudget;
  return startAndExecute(run, c, verdict.cleared, resumed);
}

/** The call really runs now: its start is journaled and, for a side effect, committed first. */
async function startAndExecute(
  run: TurnRun,
  c: PreparedCall,
  cleared: Cleared,
  resumed: boolean,
): Promise<ToolOutcome | { wait: Wait }> {
  await c.announce();
  await run.cp.toolStarted(c.meta);
  return executeCall(run, c, cleared, resumed);
}

/**
 * An answered call: the `after` gate, the replay record, seed 002's envelope naming the tool, the
 * no-progress breaker's verdict, `tool_call_completed`, TokenJuice's compaction and the summarizer
 * detour for a large success, the result budget, and the checkpoint.
 */
async function record(
  run: TurnRun,
  c: PreparedCall,
  result: ToolOutcome,
  durationMs: number,
): Promise<ToolRun> {
  const { call, tool, meta } = c;
  // A replay's call answered from the recorded result ran nothing: no `after` gate (docs/adr/0054).
  const replayed = meta.replayedFromToolCallId;
  if (tool && run.resources.gates.after && !replayed) await afterGate(run, call, tool, result);
  // An identical successful call later in this turn is answered from this result.
  if (result.ok && tool) run.replays.remember(tool, call, result);
  if (!result.ok) result.tool_name = call.name;
  const verdict = run.noProgress.record(call, result);
  if (verdict.action === 'nudge' && !result.ok) result.hint = verdict.hint;
  await run.cp.emit('tool_call_completed', {
    ...completedEvent(call, result, durationMs),
    ...(verdict.action === 'continue' ? {} : { noProgress: verdict.action }),
    ...(replayed ? { replayed: true, replayedFromToolCallId: replayed } : {}),
  });
  const rendered = JSON.stringify(result);
  // TokenJuice first (docs/adr/0033), then the summarizer on what is still large, then the budget.
  const raw = !result.ok || tool?.rawResult === true;
  const juiced = raw ? undefined : await compactResult(run, meta, result.result, rendered.length);
  const shown = juiced?.content ?? rendered;
  const summary = raw ? undefined : await summarize(run, meta, shown);
  // A summary of a compacted result keeps its first line: the marker and how to retrieve the original.
  const summarized =
    summary?.content !== undefined && juiced?.marker !== undefined
      ? `${juiced.content.slice(0, juiced.content.indexOf('\n'))}\n${summary.content}`
      : summary?.content;
  const content = boundToolResult(summarized ?? shown, run.resources.toolResultMaxBytes);
  await run.cp.recordToolResult(meta, result, durationMs, content, summary?.record);
  return { content, ok: result.ok, halt: verdict.action === 'halt' ? verdict.summary : undefined };
}
