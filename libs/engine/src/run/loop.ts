import {
  assemble,
  assembledSources,
  loadContext,
  NO_CONTEXT,
  systemMessage,
  type EmbeddingSpend,
} from '../context';
import { toolSpec } from '@switchboard/tools';
import { unpricedModels } from '../budget';
import { withCitations } from '../decision';
import { modelRound } from '../model-round';
import { BUILTIN_STOP_HOOKS, iterationCapHook } from '../stop-hooks';
import { decideStructured, structuredFailure } from '../structured-output';
import type { LoopState, TurnOutcome } from '../types';
import { guardContext } from './context-guard';
import { bookEmbedding } from './embedding-spend';
import { answerUnrun } from './tool-call';
import { runToolRound } from './tool-round';
import type { TurnRun } from './turn-run';
import { workReminder } from './work-reminder';

/**
 * One run of a turn, the tool-call loop of SPEC §5: memory and the context pack first, a budget that
 * cannot be enforced refused, then step after step until one gives the run's outcome.
 */
export async function runTurn(run: TurnRun): Promise<TurnOutcome> {
  await loadTurnContext(run);
  const refused = await refuseUnpricedBudget(run);
  if (refused) return refused;
  for (;;) {
    const outcome = await step(run);
    if (outcome) return outcome;
  }
}

/**
 * One step: a stop, the final answer, the last round's tool calls, or (after the stop hooks and the
 * context guard) the next round. Undefined: the loop goes on.
 */
async function step(run: TurnRun): Promise<TurnOutcome | undefined> {
  if (run.signal.aborted) {
    // Every call of the last round gets its one result, even the ones the stop kept from running.
    await answerUnrun(run);
    return run.cancelled();
  }
  const last = run.messages[run.messages.length - 1];
  if (last?.role === 'assistant' && last.toolCalls.length === 0) return finalAnswer(run, last.content);
  const pending = run.unansweredCalls();
  if (pending.length > 0) return runToolRound(run, pending);
  return (await stopHookVote(run)) ?? (await nextRound(run));
}

/**
 * The final answer ends the run, unless the turn asked for structured output (docs/adr/0048) and the
 * answer does not match: then one repair round (after the stop hooks, as any round), or the turn
 * fails `structured_output_invalid`. A budget that leaves no round for the repair fails it too: the
 * answer the client asked for was not produced.
 */
async function finalAnswer(run: TurnRun, text: string): Promise<TurnOutcome | undefined> {
  const format = run.input.responseFormat;
  if (!format) {
    // Seed 001 stage 6.1: citations appended to a plain-text answer only (a structured one stays valid).
    const finalText = run.input.citations
      ? withCitations(text, run.context.recalled ?? [], run.messages)
      : text;
    return run.outcome({ status: 'completed', stopReason: 'final_answer', finalText });
  }
  const decision = decideStructured(format, run.messages, run.input.model);
  if (decision.kind === 'accept') {
    return run.outcome({ status: 'completed', stopReason: 'final_answer', finalText: decision.finalText });
  }
  const fail = (failure: TurnOutcome['failure'] & object) =>
    run.outcome({ status: 'failed', stopReason: failure.kind, finalText: '', failure });
  if (decision.kind === 'fail') return fail(decision.failure);
  run.messages.push(decision.prompt);
  const stopped = await stopHookVote(run);
  if (!stopped) return nextRound(run);
  if (stopped.status !== 'completed') return stopped;
  const why = `${decision.problem}; the turn stopped (${stopped.stopReason}) before a repair round`;
  return fail(structuredFailure(format, why, run.input.model));
}

/** Stage 1 (seed 001): memory and the context pack, concurrently, before the first round. */
async function loadTurnContext(run: TurnRun): Promise<void> {
  const { input } = run;
  const first = run.messages[0];
  const text = first?.role === 'user' ? first.content : '';
  // A turn stopped before it began (a cancel found at its claim) loads nothing.
  const sources = run.signal.aborted ? NO_CONTEXT : run.resources.context;
  run.context = await loadContext(sources, {
    tenantId: input.tenantId,
    agentId: input.agentId,
    sessionId: input.sessionId,
    turnId: input.turnId,
    input: text,
    ...(input.agentHasMemory === undefined ? {} : { hasMemory: input.agentHasMemory }),
    ...(input.claimedMemory ? { claimedMemory: input.claimedMemory } : {}),
    ...(input.agentHasWorkItems === undefined ? {} : { hasWorkItems: input.agentHasWorkItems }),
  });
  // The agent's learning feedback came with the claim (docs/adr/0059); a stopped turn frames nothing.
  if (input.learning && !run.signal.aborted) run.context = { ...run.context, learning: input.learning };
  if (run.context.failed.length > 0)
    await run.cp.emit('context_unavailable', { sources: run.context.failed });
  for (const w of run.context.warnings) await run.cp.emit('context_degraded', w);
  // Recall provenance (docs/adr/0060): which records the model is shown, journaled with the run.
  if (run.context.recalled?.length)
    await run.cp.emit('memory_recalled', { records: run.context.recalled.map((r) => ({ ...r })) });
  for (const e of run.context.embeddings ?? []) await bookEmbedding(run, 'recall', e);
  run.toolSpecs = [
    ...run.tools.specsFor(input.tools, input.toolSchemaMode ?? 'relaxed'),
    // The client's tools (docs/adr/0047), offered beside the agent's as the client declared them.
    ...[...run.clientTools.values()].map((t) => toolSpec(t)),
  ];
  await chooseTools(run, text);
}

/**
 * Semantic tool selection (docs/adr/0049), once per run: the turn's input is fixed, so every round
 * offers the same choice (plus the tools called since). An embedder that fails or is slow never
 * fails the turn: every tool is offered and a `context_degraded` warning says why (as for recall).
 */
async function chooseTools(run: TurnRun, input: string): Promise<void> {
  const settings = run.input.toolSelection;
  if (!settings || run.signal.aborted || run.toolSpecs.length <= settings.maxPerTurn) return;
  const { toolSelector, toolSelectionTimeoutMs } = run.resources;
  const signal = AbortSignal.any([run.signal, AbortSignal.timeout(toolSelectionTimeoutMs)]);
  const spent: EmbeddingSpend[] = [];
  try {
    run.chosenTools = await toolSelector.choose(run.toolSpecs, input, settings, signal, (s) => spent.push(s));
    for (const e of spent) await bookEmbedding(run, 'tool_selection', e);
  } catch (err) {
    if (run.signal.aborted) return;
    const why = err instanceof Error ? err.message : String(err);
    await run.cp.emit('context_degraded', {
      source: 'tool_selection',
      message: `the embedder ${settings.embedder} failed (${why}): every tool offered`,
    });
  }
}

/** A `maxUsd` budget needs a price for every model the turn may call: refused before the first call (ADR 0007). */
async function refuseUnpricedBudget(run: TurnRun): Promise<TurnOutcome | undefined> {
  const { input } = run;
  const unpriced = unpricedModels(input);
  if (unpriced.length === 0) return undefined;
  const brief =
    `The agent has a maxUsd budget of ${input.budget.maxUsd} but ${unpriced.join(', ')} ` +
    `${unpriced.length === 1 ? 'has' : 'have'} no known price, so the budget could not be enforced. ` +
    'Set a price (tenant settings modelPrices or the deployment MODEL_PRICES), pick a priced model, or remove maxUsd.';
  await run.cp.emit('stop_hook_fired', {
    hook: 'budget',
    reason: 'budget_unenforceable',
    iteration: run.rounds,
    unpricedModels: unpriced,
  });
  return run.outcome({
    status: 'failed',
    stopReason: 'budget_unenforceable',
    finalText: '',
    costStatus: 'unpriced',
    failure: {
      kind: 'budget_unenforceable',
      category: 'runtime',
      message: `no price for ${unpriced.join(', ')}`,
      brief,
      model: unpriced[0],
    },
  });
}

/** Stop hooks, between rounds (seed 000): the first vote ends the run with its reason. */
async function stopHookVote(run: TurnRun): Promise<TurnOutcome | undefined> {
  const { input } = run;
  const state: LoopState = {
    turnId: input.turnId,
    tenantId: input.tenantId,
    iterations: run.rounds,
    toolCalls: run.toolCalls,
    spentUsd: run.spentUsd,
    elapsedMs: run.elapsedMs(),
    budget: input.budget,
  };
  for (const hook of [...BUILTIN_STOP_HOOKS, ...(input.stopHooks ?? [])]) {
    const reason = await hook.check(state);
    if (reason) {
      await run.cp.emit('stop_hook_fired', { hook: hook.name, reason, iteration: run.rounds });
      // A stop from outside the turn cancels it, with its reason (docs/adr/0055).
      if (hook.cancels) return { ...run.cancelled(), cancelReason: hook.cancels };
      const finalText =
        hook === iterationCapHook && summarizesAtCap(run) ? await summaryAtCap(run) : undefined;
      return run.outcome({ status: 'completed', stopReason: reason, finalText: finalText ?? run.lastText() });
    }
  }
  return undefined;
}

/**
 * The next model round, after the context guard. The safe point before the provider call
 * (docs/adr/0014): a cancel stops the turn here, and an operator's interjection joins it here, so the
 * model sees it in this call.
 */
async function nextRound(run: TurnRun): Promise<TurnOutcome | undefined> {
  await guardContext(run);
  if (run.signal.aborted) return undefined;
  run.messages.push(...((await run.cp.interjections?.()) ?? []));
  const { input } = run;
  const system = systemMessage(input.systemPrompt, input.sessionId, input.runtimeMetadata);
  const messages = assemble(system, run.history, run.messages, run.context);
  // The stale work-item reminder goes to the provider only: not into run.messages, so it is neither
  // journaled nor in the transcript (seed 002, docs/adr/0031).
  const reminder = await workReminder(run);
  if (reminder) messages.push({ role: 'user', content: reminder });
  const sources = assembledSources(run.history, run.messages, run.context, reminder ? ['work_items'] : []);
  const round = await modelRound(run, messages, sources);
  if ('failure' in round) {
    if (run.signal.aborted) return run.cancelled();
    return run.outcome({
      status: 'failed',
      stopReason: round.failure.kind,
      finalText: '',
      failure: round.failure,
    });
  }
  run.messages.push({ role: 'assistant', content: round.response.text, toolCalls: round.response.toolCalls });
  run.spentUsd += round.costUsd;
  run.replays.newRound();
  run.rounds++;
  return undefined;
}

/** What the summarising call at the model-call cap asks (docs/adr/0058); sent to the provider only. */
export const SUMMARY_AT_CAP_PROMPT =
  'You have reached the limit of model calls for this turn, so you cannot call any more tools. ' +
  'Answer now from what you have: summarise what you did and found, give the best answer you can, ' +
  'and say plainly what is left undone and what the next step would be.';

/**
 * Whether the turn ends at the model-call cap with a summary (the agent's `budgets.onMaxIterations`):
 * not for a turn that must answer in a structured format (docs/adr/0048), nor one already stopped.
 */
function summarizesAtCap(run: TurnRun): boolean {
  return run.input.budget.onMaxIterations === 'summarize' && !run.input.responseFormat && !run.signal.aborted;
}

/**
 * Seed 000's summarise checkpoint strategy (docs/adr/0058): one more model call, after the cap, that
 * may not call a tool, asked to summarise the work so far; its text is the turn's answer and joins
 * the transcript. The instruction goes to the provider only (like the work reminder), never into
 * the transcript. A failed call leaves the turn ending as without the setting (undefined).
 */
async function summaryAtCap(run: TurnRun): Promise<string | undefined> {
  const { input } = run;
  // The same system message as every round (the runtime metadata included): only the closing
  // instruction differs, so the call sees the turn as the model did and keeps the cached prefix.
  const system = systemMessage(input.systemPrompt, input.sessionId, input.runtimeMetadata);
  const messages = assemble(system, run.history, run.messages, run.context);
  messages.push({ role: 'user', content: SUMMARY_AT_CAP_PROMPT });
  const sources = assembledSources(run.history, run.messages, run.context, []);
  const round = await modelRound(run, messages, sources, { noToolCalls: true });
  if ('failure' in round) return undefined;
  const text = round.response.text;
  run.messages.push({ role: 'assistant', content: text, toolCalls: [] });
  run.spentUsd += round.costUsd;
  run.replays.newRound();
  run.rounds++;
  return text;
}
