import { createHash } from 'node:crypto';
import { newId } from '@switchboard/contracts';
import { withSpan } from '@switchboard/observability';
import type { ChatMessage, ProviderRegistry, ToolCallRequest } from '@switchboard/providers';
import type { EventData } from '@switchboard/contracts';
import { ToolError, ToolWait, type ToolRegistry } from '@switchboard/tools';
import {
  assemble,
  compactHistory,
  estimateTokens,
  loadContext,
  NO_CONTEXT,
  withSummary,
  type ContextSources,
} from './context';
import { classifyToolFailure } from './failures';
import { defaultApprovalPolicy, type ToolGates } from './gates';
import { ModelRound } from './model-round';
import { fingerprint, NoProgressTracker } from './no-progress';
import {
  compactionMessages,
  isReflectionNote,
  reflectionMessages,
  reflectionNote,
  sideCall,
  SUMMARIZER_FAILURE_LIMIT,
  summarizerMessages,
} from './side-calls';
import { BUILTIN_STOP_HOOKS } from './stop-hooks';
import { canBudget, unpricedModels } from './budget';
import type {
  ApprovalDecision,
  SummaryRecord,
  ToolCallMeta,
  ToolOutcome,
  TurnCheckpoints,
  TurnInput,
  TurnOutcome,
  Wait,
} from './types';
import { planWaves } from './waves';

export interface EngineOptions {
  providers: ProviderRegistry;
  tools: ToolRegistry;
  /** Retries on the same model for retryable failures (seed 002: 2). */
  maxRetries?: number;
  /** Upper bound for a single backoff, whatever retry-after says. */
  maxBackoffMs?: number;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Policy gates around each tool call (seed 001 4g). */
  gates?: ToolGates;
  /** Memory recall and the context pack (seed 001 stage 1). */
  context?: ContextSources;
  /** Largest tool result the model sees, in UTF-8 bytes; beyond it the result is cut with a marker. */
  toolResultMaxBytes?: number;
  /** Results larger than this go through the summarizer first (when the turn has one); default: the budget. */
  summarizeAboveBytes?: number;
  /** Results larger than this are too big to pay a model call for: truncation only. */
  summarizeMaxBytes?: number;
  /** With reflections in the budget, reflect after a failing tool round and every this many rounds. */
  reflectEvery?: number;
}

/** What one run of a turn accumulates besides its transcript. */
interface RunState {
  spentUsd: number;
  summarizerFailures: number;
}

const defaultSleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
  });

/**
 * The agent turn: the tool-call loop of SPEC §5. Plain TypeScript, no I/O of its
 * own: providers, tools and persistence come in through its ports.
 */
export class TurnEngine {
  private readonly modelRound: ModelRound;
  private readonly toolResultMaxBytes: number;
  private readonly summarizeAboveBytes: number;
  private readonly summarizeMaxBytes: number;
  private readonly reflectEvery: number;

  /** Each MCP turn's view of the tools (its input is the key: it lives as long as the run). */
  private readonly turnTools = new WeakMap<TurnInput, ToolRegistry>();

  constructor(private readonly options: EngineOptions) {
    this.modelRound = new ModelRound({
      providers: options.providers,
      maxRetries: options.maxRetries ?? 2,
      maxBackoffMs: options.maxBackoffMs ?? 30_000,
      sleep: options.sleep ?? defaultSleep,
    });
    this.toolResultMaxBytes = options.toolResultMaxBytes ?? 16 * 1024;
    this.summarizeAboveBytes = options.summarizeAboveBytes ?? this.toolResultMaxBytes;
    this.summarizeMaxBytes = options.summarizeMaxBytes ?? 512 * 1024;
    this.reflectEvery = options.reflectEvery ?? 3;
  }

  /**
   * Runs the turn. The wall-clock deadline also bounds what is in flight: at the
   * deadline a hung model call or tool is cut off, and the turn ends as the
   * deadline stop hook would have ended it, not as cancelled.
   */
  async run(input: TurnInput, cp: TurnCheckpoints, signal: AbortSignal): Promise<TurnOutcome> {
    const deadlineMs = input.budget.deadlineMs;
    if (deadlineMs === undefined) return this.loop(input, cp, signal);
    const startedAt = input.startedAt ?? Date.now();
    const bounded = new AbortController();
    const forward = () => bounded.abort(signal.reason);
    if (signal.aborted) forward();
    signal.addEventListener('abort', forward, { once: true });
    const timer = setTimeout(
      () => bounded.abort('deadline'),
      Math.max(0, startedAt + deadlineMs - Date.now()),
    );
    try {
      const outcome = await this.loop({ ...input, startedAt }, cp, bounded.signal);
      if (outcome.status === 'cancelled' && bounded.signal.reason === 'deadline' && !signal.aborted) {
        await cp.emit('stop_hook_fired', {
          hook: 'deadline',
          reason: 'deadline',
          iteration: outcome.iterations,
        });
        return { ...outcome, status: 'completed', stopReason: 'deadline' };
      }
      return outcome;
    } finally {
      clearTimeout(timer);
      signal.removeEventListener('abort', forward);
    }
  }

  private async loop(input: TurnInput, cp: TurnCheckpoints, signal: AbortSignal): Promise<TurnOutcome> {
    const turn = [...input.turnMessages];
    let iterations = turn.filter((m) => m.role === 'assistant').length;
    let toolCalls = turn.filter((m) => m.role === 'tool').length;
    const state: RunState = {
      spentUsd: input.spentUsd ?? 0,
      summarizerFailures: input.summarizer?.consecutiveFailures ?? 0,
    };
    let reflections = turn.filter((m, i) => i > 0 && isReflectionNote(m)).length;
    const startedAt = input.startedAt ?? Date.now();
    const tracker = replayFailures(turn);
    let history = input.history;
    let compacted = false;
    // Duplicate/replay gate: an identical read-only call is answered from its result within one
    // round; an identical side-effecting call is never executed twice in a turn.
    const replays: Replays = { round: new Map(), turn: new Map() };
    // Stage 1: memory and the context pack, concurrently, before the loop.
    const first = turn[0];
    // A turn stopped before it began (a cancel found at its claim) loads nothing.
    const context = await loadContext(signal.aborted ? NO_CONTEXT : (this.options.context ?? NO_CONTEXT), {
      tenantId: input.tenantId,
      agentId: input.agentId,
      sessionId: input.sessionId,
      turnId: input.turnId,
      input: first?.role === 'user' ? first.content : '',
    });
    if (context.failed.length > 0) await cp.emit('context_unavailable', { sources: context.failed });
    const toolSpecs = this.toolsOf(input).specsFor(input.tools, input.toolSchemaMode ?? 'relaxed');
    const outcome = (o: Omit<TurnOutcome, 'iterations' | 'toolCalls'>): TurnOutcome => ({
      ...o,
      iterations,
      toolCalls,
    });
    // A `maxUsd` budget needs a price for every model the turn may call: refuse before the first call.
    const unpriced = unpricedModels(input);
    if (unpriced.length > 0) {
      const brief =
        `The agent has a maxUsd budget of ${input.budget.maxUsd} but ${unpriced.join(', ')} ` +
        `${unpriced.length === 1 ? 'has' : 'have'} no known price, so the budget could not be enforced. ` +
        'Set a price (tenant settings modelPrices or the deployment MODEL_PRICES), pick a priced model, or remove maxUsd.';
      await cp.emit('stop_hook_fired', {
        hook: 'budget',
        reason: 'budget_unenforceable',
        iteration: iterations,
        unpricedModels: unpriced,
      });
      return outcome({
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

    for (;;) {
      if (signal.aborted) {
        // Every call of the last round gets its one result, even the ones the stop kept from running.
        toolCalls += await this.answerUnrun(input, turn, cp);
        return outcome({ status: 'cancelled', stopReason: 'cancelled', finalText: lastText(turn) });
      }
      const last = turn[turn.length - 1];

      if (last?.role === 'assistant' && last.toolCalls.length === 0) {
        return outcome({ status: 'completed', stopReason: 'final_answer', finalText: last.content });
      }

      const pending = unansweredCalls(turn);
      if (pending.length > 0) {
        let roundFailed = false;
        // Calls of this round that wait for a decision (docs/adr/0013): each gets its own wait.
        const waits: Wait[] = [];
        for (const wave of planWaves(pending, this.toolsOf(input), input.tools)) {
          if (signal.aborted) break;
          // After a wait, later side-effecting calls are held (unanswered) so effects keep the model's order.
          const hold = waits.length > 0;
          // Every call of a wave settles and is answered before a failure of one propagates.
          const settled = await Promise.allSettled(
            wave.map((call) => this.runTool(input, call, cp, signal, tracker, replays, state, hold)),
          );
          settled.forEach((r, i) => {
            if (r.status !== 'fulfilled') return;
            if ('wait' in r.value) {
              waits.push(r.value.wait);
              return;
            }
            if ('held' in r.value) return;
            const call = wave[i];
            turn.push({
              role: 'tool',
              toolCallId: call.id,
              name: call.name,
              content: r.value.content,
            });
            toolCalls++;
            if (!r.value.ok) roundFailed = true;
          });
          const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
          if (failed) throw failed.reason;
          const halt = settled.find((r) => r.status === 'fulfilled' && 'halt' in r.value && r.value.halt);
          if (halt?.status === 'fulfilled' && 'halt' in halt.value && halt.value.halt) {
            const summary = halt.value.halt;
            return outcome({
              status: 'failed',
              stopReason: 'no_progress',
              finalText: lastText(turn),
              failure: { kind: 'no_progress', category: 'runtime', message: summary, brief: summary },
            });
          }
        }
        // A pause is an outcome, not an await: the runner persists the waits and frees the worker.
        if (waits.length > 0 && !signal.aborted) {
          return outcome({
            status: 'waiting',
            stopReason: waits.some((w) => w.kind === 'approval') ? 'awaiting_approval' : 'awaiting_subagent',
            finalText: lastText(turn),
            waits,
          });
        }
        // Reflection (seed 001 4h): off unless the budget grants reflections.
        if (
          reflections < input.budget.maxReflections &&
          (roundFailed || iterations % this.reflectEvery === 0) &&
          !signal.aborted
        ) {
          const note = await this.reflect(input, turn, reflections, state, startedAt, cp, signal);
          reflections++;
          if (note) turn.push({ role: 'user', content: note });
        }
        await cp.emit('iteration_completed', { iteration: iterations, costUsd: state.spentUsd });
        continue;
      }

      // Stop hooks, between iterations: the first vote ends the loop with its reason.
      const progress = {
        turnId: input.turnId,
        tenantId: input.tenantId,
        iterations,
        toolCalls,
        spentUsd: state.spentUsd,
        elapsedMs: Date.now() - startedAt,
        budget: input.budget,
      };
      for (const hook of [...BUILTIN_STOP_HOOKS, ...(input.stopHooks ?? [])]) {
        const reason = await hook.check(progress);
        if (reason) {
          await cp.emit('stop_hook_fired', { hook: hook.name, reason, iteration: iterations });
          return outcome({ status: 'completed', stopReason: reason, finalText: lastText(turn) });
        }
      }

      // Context guard: near the model's window, compact the middle of the history (once per run).
      const window = input.contextWindowTokens ?? 128_000;
      if (!compacted && estimateTokens([...history, ...turn]) > window * 0.8) {
        let c = compactHistory(history, Math.floor(window * 0.5));
        if (c) {
          // The omitted middle is written down by the summarizer's model when it can be; else a note.
          let summary: string | null = null;
          let call;
          if (
            input.summarizer &&
            state.summarizerFailures < SUMMARIZER_FAILURE_LIMIT &&
            canBudget(input, input.summarizer.model)
          ) {
            const maxChars = Math.floor(window * 4 * 0.4);
            const r = await sideCall(
              this.options.providers,
              'compact',
              input.summarizer.model,
              compactionMessages(c.dropped, maxChars),
              signal,
              input.prices,
            );
            state.spentUsd += r.record.costUsd;
            call = r.record;
            if (r.record.ok) {
              c = withSummary(c, r.text);
              summary = r.text;
            }
          }
          // The event commits with the compaction record: later turns start from this cut.
          await cp.emit('context_compacted', {
            droppedMessages: c.droppedMessages,
            beforeTokens: c.beforeTokens,
            afterTokens: c.afterTokens,
            summarized: summary !== null,
          });
          await cp.recordCompaction(
            { headEnd: c.noteIndex, tailStart: c.tailStart, droppedMessages: c.droppedMessages, summary },
            call,
          );
          history = c.history;
        }
        compacted = true;
      }
      // The safe point before a provider call (docs/adr/0014): a cancel stops the turn here, and an
      // operator's interjection joins it here, so the model sees it in this call.
      if (signal.aborted) continue;
      const interjected = (await cp.interjections?.()) ?? [];
      turn.push(...interjected);
      const messages = assemble(input.systemPrompt, history, turn, context);
      const round = await this.modelRound.call(input, iterations, messages, toolSpecs, cp, signal);
      if ('failure' in round) {
        if (signal.aborted)
          return outcome({ status: 'cancelled', stopReason: 'cancelled', finalText: lastText(turn) });
        return outcome({
          status: 'failed',
          stopReason: round.failure.kind,
          finalText: '',
          failure: round.failure,
        });
      }
      turn.push({ role: 'assistant', content: round.response.text, toolCalls: round.response.toolCalls });
      state.spentUsd += round.costUsd;
      replays.round.clear();
      iterations++;
    }
  }

  /**
   * The tools this turn can call: the process-wide registry, or, when the turn brought its own
   * (`extraTools`, an agent's MCP tools, docs/adr/0023), a view with them over it.
   */
  private toolsOf(input: TurnInput): ToolRegistry {
    if (!input.extraTools?.length) return this.options.tools;
    let view = this.turnTools.get(input);
    if (!view) {
      view = this.options.tools.withTurnTools(input.extraTools);
      this.turnTools.set(input, view);
    }
    return view;
  }

  private async runTool(
    input: TurnInput,
    call: ToolCallRequest,
    cp: TurnCheckpoints,
    signal: AbortSignal,
    tracker: NoProgressTracker,
    replays: Replays,
    state: RunState,
    /** Hold a side-effecting call that passes its gates (an earlier call of the round waits). */
    hold = false,
  ): Promise<ToolRun> {
    const tool = input.tools.includes(call.name) ? this.toolsOf(input).get(call.name) : undefined;
    const parsedArgs = parseArguments(call.arguments);
    const args = parsedArgs.ok ? parsedArgs.value : undefined;
    const parseError = parsedArgs.ok ? undefined : parsedArgs.error;
    const meta = this.callMeta(input, call);
    // A call that waits or is held leaves no trace yet: its start is journaled (and, for a side
    // effect, committed) only when it runs or is answered, so a resumed run never mistakes a
    // gated call for one that started and was never recorded (ADR 0004).
    let announced = false;
    const announce = async () => {
      if (announced) return;
      announced = true;
      await cp.emit('tool_call_started', { callId: call.id, name: call.name });
    };
    const started = Date.now();
    const gated = await withSpan(
      `execute_tool ${call.name}`,
      {
        attributes: {
          'gen_ai.operation.name': 'execute_tool',
          'gen_ai.tool.name': call.name,
          'gen_ai.tool.call.id': call.id,
        },
      },
      async (): Promise<ToolOutcome | { wait: Wait } | { held: true }> => {
        if (!tool) {
          return {
            ok: false,
            kind: 'unknown_tool',
            message: `no tool named "${call.name}" is available`,
            hint: `available tools: ${input.tools.join(', ') || 'none'}`,
            retryable: true,
          };
        }
        if (parseError !== undefined) {
          return {
            ok: false,
            kind: 'invalid_arguments',
            message: `arguments are not valid JSON: ${parseError}`,
            hint: 'send a JSON object',
            retryable: true,
          };
        }
        const gates = this.options.gates ?? {};
        const gctx = {
          tenantId: input.tenantId,
          sessionId: input.sessionId,
          turnId: input.turnId,
          call,
          tool,
          approval: input.approval,
        };
        const replay = (tool.sideEffect === 'read_only' ? replays.round : replays.turn).get(
          fingerprint(call),
        );
        if (replay) return replay;
        const blocked = input.blockedTools?.includes(call.name)
          ? `the tool "${call.name}" is blocked for this tenant`
          : await gates.blocked?.(gctx);
        if (blocked) {
          return {
            ok: false,
            kind: 'blocked',
            message: blocked,
            hint: 'this tool is not allowed here',
            retryable: false,
          };
        }
        const refused = await gates.before?.(gctx, args);
        if (refused) return { ok: false, kind: 'blocked', message: refused, retryable: false };
        const parsed = tool.schema.safeParse(args);
        if (!parsed.success) {
          return {
            ok: false,
            kind: 'invalid_arguments',
            message: parsed.error.issues
              .map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`)
              .join('; '),
            hint: 'fix the arguments to match the tool schema',
            field: parsed.error.issues[0]?.path.join('.') || undefined,
            retryable: true,
          };
        }
        // Approval (docs/adr/0013): a stored decision is acted on; without one the call waits.
        const policy = await (gates.approval ?? defaultApprovalPolicy)(gctx, parsed.data);
        if (policy) {
          const decision = input.decisions?.find((d) => d.callId === call.id);
          if (!decision) {
            return {
              wait: {
                kind: 'approval',
                approvalId: newId(),
                callId: call.id,
                tool: call.name,
                arguments: parsed.data,
                sideEffect: tool.sideEffect,
                policy,
              },
            };
          }
          if (decision.status !== 'approved') return refusedByDecision(decision);
        }
        if (hold && tool.sideEffect !== 'read_only') return { held: true };
        // An earlier run started this call and never recorded its outcome: the effect may have
        // happened. Only a read-only tool, or one that deduplicates by the idempotency key, runs again.
        const resumed = input.startedCalls?.includes(call.id) ?? false;
        if (resumed && tool.sideEffect !== 'read_only' && !tool.honoursIdempotencyKey) {
          return outcomeUnknown(call.name, meta.idempotencyKey);
        }
        // The call really runs now: its start is journaled and, for a side effect, committed first.
        await announce();
        await cp.toolStarted(meta);
        // The call's own signal: the turn's, or this call's timeout, whichever comes first.
        const timeout = new AbortController();
        const timer = setTimeout(
          () => timeout.abort(new DOMException(`tool timed out after ${tool.timeoutMs} ms`, 'TimeoutError')),
          tool.timeoutMs,
        );
        const callSignal = AbortSignal.any([signal, timeout.signal]);
        let open = true;
        try {
          return await executeBounded(
            () =>
              tool.execute(parsed.data, {
                tenantId: input.tenantId,
                agentId: input.agentId,
                sessionId: input.sessionId,
                turnId: input.turnId,
                callId: call.id,
                idempotencyKey: meta.idempotencyKey,
                signal: callSignal,
                resumed,
                writeGate: { isOpen: () => open && !callSignal.aborted },
              }),
            tool.timeoutMs,
            callSignal,
            timeout.signal,
          );
        } catch (err) {
          // The call waits for a sub-agent task (docs/adr/0024): the turn pauses like an approval.
          if (err instanceof ToolWait) return { wait: { kind: 'task', taskId: err.taskId, callId: call.id } };
          throw err;
        } finally {
          clearTimeout(timer);
          // Whatever the tool still does after this has no effect on the turn.
          open = false;
        }
      },
    );
    if ('wait' in gated || 'held' in gated) return gated;
    const result = gated;
    await announce();
    const durationMs = Date.now() - started;
    if (tool && this.options.gates?.after) {
      try {
        await this.options.gates.after(
          { tenantId: input.tenantId, sessionId: input.sessionId, turnId: input.turnId, call, tool },
          result,
        );
      } catch {
        // Best effort: a failing post-hook never changes the result.
      }
    }
    // An identical successful call later in this turn is answered from this result.
    if (result.ok && tool)
      (tool.sideEffect === 'read_only' ? replays.round : replays.turn).set(fingerprint(call), result);
    // Seed 002's tool error envelope names the tool.
    if (!result.ok) result.tool_name = call.name;
    const verdict = tracker.record(call, result);
    if (verdict.action === 'nudge' && !result.ok) result.hint = verdict.hint;
    await cp.emit('tool_call_completed', {
      ...completedEvent(call, result, durationMs),
      ...(verdict.action === 'continue' ? {} : { noProgress: verdict.action }),
    });
    const rendered = JSON.stringify(result);
    const summary = result.ok
      ? await this.summarize(input, call, meta, rendered, state, cp, signal)
      : undefined;
    const content = boundToolResult(summary?.content ?? rendered, this.toolResultMaxBytes);
    await cp.recordToolResult(meta, result, durationMs, content, summary?.record);
    return { content, ok: result.ok, halt: verdict.action === 'halt' ? verdict.summary : undefined };
  }

  /** What the checkpoints record of a call: arguments as parsed (or raw when they are not JSON). */
  private callMeta(input: TurnInput, call: ToolCallRequest): ToolCallMeta {
    const parsed = parseArguments(call.arguments);
    const tool = input.tools.includes(call.name) ? this.toolsOf(input).get(call.name) : undefined;
    return {
      call,
      sideEffect: tool?.sideEffect ?? 'read_only',
      arguments: parsed.ok ? parsed.value : { _raw: call.arguments },
      idempotencyKey: `${input.turnId}:${call.id}`,
    };
  }

  /** Records a `cancelled` result for each call of the last round that never ran. */
  private async answerUnrun(input: TurnInput, turn: ChatMessage[], cp: TurnCheckpoints): Promise<number> {
    const unrun = unansweredCalls(turn);
    for (const call of unrun) {
      const meta = this.callMeta(input, call);
      const result: Failure = {
        ...stoppedOutcome('the turn was stopped before this call ran'),
        tool_name: call.name,
      };
      const content = JSON.stringify(result);
      await cp.emit('tool_call_completed', completedEvent(call, result, 0));
      await cp.toolStarted(meta);
      await cp.recordToolResult(meta, result, 0, content);
      turn.push({ role: 'tool', toolCallId: call.id, name: call.name, content });
    }
    return unrun.length;
  }

  /**
   * The summarizer detour (seed 000): a result over the threshold is compressed
   * by the summarizer sub-agent before the model sees it. Truncation stays the
   * backstop: for absurd payloads, after a failure, and once three consecutive
   * failures in the session have turned the summarizer off.
   */
  private async summarize(
    input: TurnInput,
    call: ToolCallRequest,
    meta: ToolCallMeta,
    rendered: string,
    state: RunState,
    cp: TurnCheckpoints,
    signal: AbortSignal,
  ): Promise<{ content?: string; record: SummaryRecord } | undefined> {
    const bytes = Buffer.byteLength(rendered, 'utf8');
    if (
      !input.summarizer ||
      bytes <= this.summarizeAboveBytes ||
      bytes > this.summarizeMaxBytes ||
      state.summarizerFailures >= SUMMARIZER_FAILURE_LIMIT ||
      !canBudget(input, input.summarizer.model) ||
      signal.aborted
    ) {
      return undefined;
    }
    await cp.emit('summarizer_started', {
      agent: 'summarizer',
      callId: call.id,
      tool: call.name,
      model: input.summarizer.model,
      bytes,
    });
    const r = await sideCall(
      this.options.providers,
      'summarize',
      input.summarizer.model,
      summarizerMessages(call.name, meta.arguments, rendered, this.toolResultMaxBytes),
      signal,
      input.prices,
    );
    state.spentUsd += r.record.costUsd;
    // A cancelled turn says nothing about the summarizer's health: truncate, count nothing.
    if (!r.record.ok && signal.aborted) return undefined;
    // A summary that is no smaller than what it replaces is a failure too.
    const content = r.record.ok
      ? JSON.stringify({ ok: true, summarized: true, original_bytes: bytes, summary: r.text })
      : undefined;
    const ok = content !== undefined && Buffer.byteLength(content, 'utf8') < bytes;
    const record = ok
      ? r.record
      : { ...r.record, ok: false, error: r.record.error ?? 'the summary was not smaller' };
    state.summarizerFailures = ok ? 0 : state.summarizerFailures + 1;
    await cp.emit('summarizer_completed', {
      agent: 'summarizer',
      callId: call.id,
      ok,
      costUsd: record.costUsd,
      ...(ok ? { bytes: Buffer.byteLength(content, 'utf8') } : { error: record.error }),
      ...(state.summarizerFailures >= SUMMARIZER_FAILURE_LIMIT ? { disabled: true } : {}),
    });
    return {
      content: ok ? content : undefined,
      record: { call: record, consecutiveFailures: state.summarizerFailures },
    };
  }

  /**
   * One reflection (seed 001 4h). It always yields: a failed or unaffordable
   * reflection is a stub (no note) and the loop goes on.
   */
  private async reflect(
    input: TurnInput,
    turn: ChatMessage[],
    index: number,
    state: RunState,
    startedAt: number,
    cp: TurnCheckpoints,
    signal: AbortSignal,
  ): Promise<string | null> {
    const { maxUsd, deadlineMs } = input.budget;
    const unaffordable =
      (maxUsd !== undefined && state.spentUsd >= maxUsd) ||
      (deadlineMs !== undefined && Date.now() - startedAt >= deadlineMs);
    const model = input.reflectionModel ?? input.model;
    const unpriced = !canBudget(input, model);
    const r =
      unaffordable || unpriced
        ? {
            text: '',
            record: {
              purpose: 'reflect' as const,
              ok: false,
              costUsd: 0,
              error: unpriced
                ? 'no price for the reflection model under a maxUsd budget'
                : 'budget exhausted',
            },
          }
        : await sideCall(
            this.options.providers,
            'reflect',
            model,
            reflectionMessages(turn, 32_000),
            signal,
            input.prices,
          );
    state.spentUsd += r.record.costUsd;
    const note = r.record.ok ? reflectionNote(r.text) : null;
    await cp.emit('reflection_completed', {
      index,
      ok: r.record.ok,
      costUsd: r.record.costUsd,
      ...(r.record.ok ? {} : { error: r.record.error }),
    });
    await cp.recordReflection(index, note, r.record);
    return note;
  }
}

/**
 * Runs a tool under its call signal: when that aborts (the call's timeout, or the turn stopping) the
 * call is answered at once, and the tool, which sees the same signal, is expected to stop.
 */
async function executeBounded(
  fn: () => Promise<unknown>,
  timeoutMs: number,
  callSignal: AbortSignal,
  timeoutSignal: AbortSignal,
): Promise<ToolOutcome> {
  let onAbort: (() => void) | undefined;
  // Whatever the tool answers once its signal has aborted (often the abort itself), the abort's cause wins.
  const aborted = () => (timeoutSignal.aborted ? new ToolTimeout(timeoutMs) : new TurnStopped());
  try {
    const result = await Promise.race([
      fn(),
      new Promise<never>((_, reject) => {
        onAbort = () => reject(aborted());
        if (callSignal.aborted) onAbort();
        else callSignal.addEventListener('abort', onAbort, { once: true });
      }),
    ]).catch((err: unknown) => {
      throw callSignal.aborted ? aborted() : err;
    });
    if (callSignal.aborted) throw aborted();
    try {
      // The result becomes a transcript entry and a JSON column: it must survive JSON.
      JSON.stringify(result);
    } catch (err) {
      return {
        ok: false,
        kind: 'invalid_result',
        message: `tool returned a value that cannot be serialised: ${errorMessage(err)}`,
        retryable: false,
      };
    }
    return { ok: true, result: result ?? null };
  } catch (err) {
    // A sub-agent wait is no outcome: the caller turns it into the round's `task` wait.
    if (err instanceof ToolWait) throw err;
    if (err instanceof ToolError) {
      const field = (err.details as { field?: unknown } | undefined)?.field;
      return {
        ok: false,
        kind: err.kind,
        message: err.message,
        ...(err.recoveryHint ? { hint: err.recoveryHint } : {}),
        ...(typeof field === 'string' ? { field } : {}),
        retryable: err.retryable,
        ...(err.details === undefined ? {} : { details: boundDetails(err.details) }),
      };
    }
    if (err instanceof ToolTimeout) {
      return {
        ok: false,
        kind: 'timeout',
        message: err.message,
        hint: 'try a smaller request',
        retryable: true,
      };
    }
    if (err instanceof TurnStopped) return stoppedOutcome('the turn was stopped while this call ran');
    return { ok: false, kind: 'execution_failed', message: errorMessage(err), retryable: false };
  } finally {
    if (onAbort) callSignal.removeEventListener('abort', onAbort);
  }
}

/** Largest `details` of a tool error shown whole; a larger one becomes a preview and a digest (seed 002). */
export const TOOL_ERROR_DETAILS_MAX_BYTES = 2048;

export function boundDetails(details: unknown): unknown {
  let json: string;
  try {
    json = JSON.stringify(details) ?? 'null';
  } catch {
    return { unserialisable: true };
  }
  const bytes = Buffer.byteLength(json, 'utf8');
  if (bytes <= TOOL_ERROR_DETAILS_MAX_BYTES) return details;
  return {
    preview: json.slice(0, 256),
    digest: `sha256:${createHash('sha256').update(json).digest('hex')}`,
    bytes,
  };
}

function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message;
  if (typeof err === 'string') return err;
  return `non-error value thrown: ${String(err)}`;
}

class TurnStopped extends Error {
  constructor() {
    super('turn stopped');
  }
}

type Failure = Extract<ToolOutcome, { ok: false }>;

/** What running one call gives the round: its answer, a wait for a decision, or a call held for later. */
type ToolRun = { content: string; ok: boolean; halt?: string } | { wait: Wait } | { held: true };

/** The result a gated call gets when its decision was not an approval (classified; never retried as is). */
function refusedByDecision(d: ApprovalDecision): Failure {
  const why = d.reason ? `: ${d.reason}` : '';
  switch (d.status) {
    case 'expired':
      return {
        ok: false,
        kind: 'approval_expired',
        message: `nobody decided on this call before its approval expired${why}`,
        hint: 'ask the user whether to try again; do not repeat the call unasked',
        retryable: false,
      };
    case 'cancelled':
      return stoppedOutcome(`the approval of this call was cancelled${why}`);
    case 'approved':
    case 'rejected':
      return {
        ok: false,
        kind: 'approval_rejected',
        message: `a person rejected this call${why}`,
        hint: 'do not retry this call; continue without it or ask the user what to do instead',
        retryable: false,
      };
  }
}

/** A call cut off, or never run, because the turn stopped (cancel, deadline, lost lease). */
function stoppedOutcome(message: string): Failure {
  return {
    ok: false,
    kind: 'cancelled',
    message,
    hint: 'the call may be made again in a later turn',
    retryable: true,
  };
}

/**
 * Seed 002's envelope for a side-effecting call an earlier run started but never recorded: the
 * effect may or may not have happened, so the call is not repeated blindly.
 */
function outcomeUnknown(tool: string, idempotencyKey: string): Failure {
  return {
    ok: false,
    kind: 'outcome_unknown',
    message: `an earlier run of this turn started "${tool}" and stopped before its result was recorded; its effect may or may not have happened`,
    hint: 'verify whether the effect happened (read back what the call would have changed) before calling the tool again',
    retryable: false,
    details: { idempotencyKey },
  };
}

class ToolTimeout extends Error {
  constructor(ms: number) {
    super(`tool timed out after ${ms} ms`);
  }
}

function parseArguments(raw: string): { ok: true; value: unknown } | { ok: false; error: string } {
  try {
    return { ok: true, value: raw.trim() === '' ? {} : (JSON.parse(raw) as unknown) };
  } catch (err) {
    return { ok: false, error: (err as Error).message };
  }
}

/** The `tool_call_completed` event: outcome, and for a failure its class and seed 002's error object. */
function completedEvent(
  call: ToolCallRequest,
  result: ToolOutcome,
  durationMs: number,
): EventData<'tool_call_completed'> {
  return {
    callId: call.id,
    name: call.name,
    ok: result.ok,
    durationMs,
    ...(result.ok
      ? {}
      : {
          failure: { kind: result.kind, retryable: result.retryable, ...classifyToolFailure(result) },
          // Audit events keep the structured error object, and `error` flattened.
          tool_error: result,
          error: `${result.kind}: ${result.message}`,
        }),
  };
}

function unansweredCalls(turn: ChatMessage[]): ToolCallRequest[] {
  for (let i = turn.length - 1; i >= 0; i--) {
    const m = turn[i];
    if (m.role === 'assistant') {
      const answered = new Set(turn.slice(i + 1).flatMap((x) => (x.role === 'tool' ? [x.toolCallId] : [])));
      return m.toolCalls.filter((c) => !answered.has(c.id));
    }
  }
  return [];
}

function lastText(turn: ChatMessage[]): string {
  for (let i = turn.length - 1; i >= 0; i--) {
    const m = turn[i];
    if (m.role === 'assistant' && m.content) return m.content;
  }
  return '';
}

/**
 * The per-call result budget: a result over `maxBytes` is cut at a UTF-8
 * boundary and ends with an explicit marker, so the model knows it saw a part.
 */
export function boundToolResult(content: string, maxBytes: number): string {
  const bytes = Buffer.byteLength(content, 'utf8');
  if (bytes <= maxBytes) return content;
  const marker = `\n…[truncated: showing the first ${maxBytes} of ${bytes} bytes of this tool result]`;
  const keep = Math.max(0, maxBytes - Buffer.byteLength(marker, 'utf8'));
  let cut = Buffer.from(content, 'utf8').subarray(0, keep).toString('utf8');
  // A multi-byte character cut in half decodes to U+FFFD: drop it.
  if (cut.endsWith('\uFFFD')) cut = cut.slice(0, -1);
  return cut + marker;
}

/** A resumed turn's breaker starts from the failures its transcript already holds. */
interface Replays {
  round: Map<string, ToolOutcome>;
  turn: Map<string, ToolOutcome>;
}

function replayFailures(turn: ChatMessage[]): NoProgressTracker {
  const tracker = new NoProgressTracker();
  const calls = new Map<string, ToolCallRequest>();
  for (const m of turn) {
    if (m.role === 'assistant') for (const c of m.toolCalls) calls.set(c.id, c);
    if (m.role !== 'tool') continue;
    const call = calls.get(m.toolCallId);
    if (!call) continue;
    try {
      tracker.record(call, JSON.parse(m.content) as ToolOutcome);
    } catch {
      // A result cut by the result budget was a success large enough to be cut.
      tracker.record(call, { ok: true, result: null });
    }
  }
  return tracker;
}
