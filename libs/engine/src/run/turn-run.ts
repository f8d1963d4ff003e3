import type { ChatMessage, ToolCallRequest, ToolSpec } from '@switchboard/providers';
import type { ToolDefinition, ToolRegistry } from '@switchboard/tools';
import type { LoadedContext } from '../context';
import { calledTools, decisionStrategy } from '../decision';
import { NoProgressTracker } from '../no-progress';
import { isReflectionNote } from '../side-calls/reflection-note';
import type { ToolOutcome, TurnCheckpoints, TurnInput, TurnOutcome } from '../types';
import { withRepairPrompts } from '../structured-output';
import { offeredTools } from '../tool-selection';
import { clientToolDefinitions } from './client-tool-defs';
import { RecordedEffects } from './recorded-effects';
import { Replays } from './replays';
import type { EngineResources } from './resources';

/**
 * One run of a turn: its input, checkpoints and signal, and everything the run accumulates. A run
 * starts from what earlier runs committed (`input.turnMessages`), so its counters, the no-progress
 * breaker and the reflections are rebuilt from that transcript. The loop (`loop.ts`) and every step
 * it takes read and update this one object.
 */
export class TurnRun {
  /**
   * The turn's messages: its input, what earlier runs persisted (with the repair prompts of a
   * structured answer put back, docs/adr/0048), then what this run adds.
   */
  readonly messages: ChatMessage[];
  /** Rounds so far (the contract's `iterations`). */
  rounds: number;
  /** The round count when this run last sent a work-item reminder (docs/adr/0031). */
  lastWorkReminderRound?: number;
  /** Tool calls answered so far. */
  toolCalls: number;
  /** Reflections taken so far (seed 001 4h). */
  reflections: number;
  /** Spend of the turn so far, earlier runs included: rounds and side calls. */
  spentUsd: number;
  /** The session's consecutive summarizer failures (seed 000: three turn it off). */
  summarizerFailures: number;
  /** When the turn first started, for the wall-clock deadline (epoch ms). */
  readonly startedAt: number;
  /** The no-progress breaker, seeded with the failures the transcript already holds. */
  readonly noProgress: NoProgressTracker;
  /** The duplicate/replay gate's memory of successful calls. */
  readonly replays = new Replays();
  /** A replay turn's recorded side effects (docs/adr/0054); undefined for every other turn. */
  readonly recorded?: RecordedEffects;
  /** Earlier turns, as the model sees them: compacted at most once per run (the context guard). */
  history: ChatMessage[];
  compacted = false;
  /** Memory and the context pack, loaded once before the first round. */
  context: LoadedContext = { memory: null, contextPack: null, failed: [], warnings: [] };
  /** Every tool the turn has, as specs, in order (its own, then the client's). */
  toolSpecs: ToolSpec[] = [];
  /**
   * The tools semantic selection chose for the turn (tool-selection.ts); undefined: all of them are
   * offered (no `maxPerTurn`, few enough tools, or the embedder failed).
   */
  chosenTools?: Set<string>;
  private toolView?: ToolRegistry;
  /**
   * The client's tools (docs/adr/0047), by name; a name the agent's own tools have is the agent's
   * (admission refuses the clash; a tool appearing later, an MCP server's, still wins).
   */
  readonly clientTools: Map<string, ToolDefinition>;

  constructor(
    readonly resources: EngineResources,
    readonly input: TurnInput,
    readonly cp: TurnCheckpoints,
    readonly signal: AbortSignal,
  ) {
    this.messages = withRepairPrompts(input.turnMessages, input.responseFormat);
    this.rounds = this.messages.filter((m) => m.role === 'assistant').length;
    this.toolCalls = this.messages.filter((m) => m.role === 'tool').length;
    this.spentUsd = input.spentUsd ?? 0;
    this.summarizerFailures = input.summarizer?.consecutiveFailures ?? 0;
    this.reflections = this.messages.filter((m, i) => i > 0 && isReflectionNote(m)).length;
    this.startedAt = input.startedAt ?? Date.now();
    this.noProgress = replayFailures(this.messages);
    this.history = input.history;
    this.clientTools = clientToolDefinitions(input.clientTools ?? [], input.tools);
    if (input.replay) this.recorded = new RecordedEffects(input.replay);
  }

  /**
   * The tools this turn can call: the process-wide registry, or, when the turn brought its own
   * (`extraTools`, an agent's MCP tools, docs/adr/0023), a view with them over it.
   */
  get tools(): ToolRegistry {
    if (!this.input.extraTools?.length) return this.resources.tools;
    this.toolView ??= this.resources.tools.withTurnTools(this.input.extraTools);
    return this.toolView;
  }

  /** What a round offers the model: the chosen tools and any the turn called, in the turn's order. */
  offeredToolSpecs(): ToolSpec[] {
    if (!this.chosenTools) return this.toolSpecs;
    const called = new Set(
      this.messages.flatMap((m) => (m.role === 'assistant' ? m.toolCalls.map((c) => c.name) : [])),
    );
    return offeredTools(this.toolSpecs, this.chosenTools, called);
  }

  /** The tool a call names, when the turn may call it. */
  toolFor(call: ToolCallRequest): ToolDefinition | undefined {
    if (this.input.tools.includes(call.name)) return this.tools.get(call.name);
    return this.clientTools.get(call.name);
  }

  /** Whether a tool is one the client declared and runs (docs/adr/0047). */
  isClientTool(tool: ToolDefinition): boolean {
    return this.clientTools.get(tool.name) === tool;
  }

  /** Whether a call would change something if it ran here: a tool of the turn's own that is not read-only. */
  isSideEffecting(call: ToolCallRequest): boolean {
    const tool = this.toolFor(call);
    return tool !== undefined && !this.isClientTool(tool) && tool.sideEffect !== 'read_only';
  }

  /** An outcome of this run, with its counters. */
  outcome(o: Omit<TurnOutcome, 'iterations' | 'toolCalls'>): TurnOutcome {
    const recalled = this.context.recalled?.length ?? 0;
    return {
      ...o,
      iterations: this.rounds,
      toolCalls: this.toolCalls,
      // Seed 001 stage 6.7 (docs/adr/0060): what the answer drew on.
      strategy: decisionStrategy(calledTools(this.messages), recalled),
      ...(recalled > 0 ? { recalledRecords: recalled } : {}),
    };
  }

  /** The run ends `cancelled` (a cancel, an interrupt, a lost lease, or the deadline: `deadline.ts`). */
  cancelled(): TurnOutcome {
    return this.outcome({ status: 'cancelled', stopReason: 'cancelled', finalText: this.lastText() });
  }

  /** The latest text the model wrote in this turn. */
  lastText(): string {
    for (let i = this.messages.length - 1; i >= 0; i--) {
      const m = this.messages[i];
      if (m.role === 'assistant' && m.content) return m.content;
    }
    return '';
  }

  /** The calls of the last round that have no result yet. */
  unansweredCalls(): ToolCallRequest[] {
    const turn = this.messages;
    for (let i = turn.length - 1; i >= 0; i--) {
      const m = turn[i];
      if (m.role === 'assistant') {
        const answered = new Set(turn.slice(i + 1).flatMap((x) => (x.role === 'tool' ? [x.toolCallId] : [])));
        return m.toolCalls.filter((c) => !answered.has(c.id));
      }
    }
    return [];
  }

  /** Time since the turn first started. */
  elapsedMs(): number {
    return Date.now() - this.startedAt;
  }
}

/** A resumed turn's breaker starts from the failures its transcript already holds. */
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
