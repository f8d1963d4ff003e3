import { abortableSleep, EmbedderRegistry, type ProviderRegistry } from '@switchboard/providers';
import type { ToolRegistry } from '@switchboard/tools';
import { NO_CONTEXT, type ContextSources } from './context';
import type { ToolGates } from './gates';
import { withinDeadline } from './run/deadline';
import { runTurn } from './run/loop';
import type { EngineResources, TokenJuiceOptions } from './run/resources';
import { TurnRun } from './run/turn-run';
import { SemanticToolSelector } from './tool-selection';
import type { TurnCheckpoints, TurnInput, TurnOutcome } from './types';

export { boundDetails, boundToolResult, TOOL_ERROR_DETAILS_MAX_BYTES } from './run/result-bounds';
export type { CompactionOriginals, TokenJuiceOptions } from './run/resources';

export interface EngineOptions {
  providers: ProviderRegistry;
  tools: ToolRegistry;
  /** Retries on the same model for retryable failures (seed 002: 2). */
  maxRetries?: number;
  /** Upper bound for a single backoff, whatever retry-after says. */
  maxBackoffMs?: number;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Tool gates around each tool call (seed 001 4g). */
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
  /** TokenJuice (docs/adr/0033): where lossy compactions keep originals; without it only lossless ones run. */
  tokenjuice?: TokenJuiceOptions;
  /** The embedders semantic tool selection may use (docs/adr/0049); default: the built-in ones. */
  embedders?: EmbedderRegistry;
  /** Longest wait for the embedder ranking a turn's tools (default 5 s); past it every tool is offered. */
  toolSelectionTimeoutMs?: number;
}

/**
 * The agent turn: the tool-call loop of SPEC §5. Plain TypeScript, no I/O of its
 * own: providers, tools and persistence come in through its ports. Each run is
 * one `TurnRun` (run/turn-run.ts) driven by the loop in run/loop.ts.
 */
export class TurnEngine {
  private readonly resources: EngineResources;

  constructor(options: EngineOptions) {
    const toolResultMaxBytes = options.toolResultMaxBytes ?? 16 * 1024;
    this.resources = {
      providers: options.providers,
      tools: options.tools,
      gates: options.gates ?? {},
      context: options.context ?? NO_CONTEXT,
      retry: {
        maxRetries: options.maxRetries ?? 2,
        maxBackoffMs: options.maxBackoffMs ?? 30_000,
        sleep: options.sleep ?? abortableSleep,
      },
      toolResultMaxBytes,
      summarizeAboveBytes: options.summarizeAboveBytes ?? toolResultMaxBytes,
      summarizeMaxBytes: options.summarizeMaxBytes ?? 512 * 1024,
      reflectEvery: options.reflectEvery ?? 3,
      tokenjuice: options.tokenjuice ?? {},
      toolSelector: new SemanticToolSelector(options.embedders ?? new EmbedderRegistry()),
      toolSelectionTimeoutMs: options.toolSelectionTimeoutMs ?? 5000,
    };
  }

  /**
   * Runs the turn. The wall-clock deadline also bounds what is in flight: at the
   * deadline a hung model call or tool is cut off, and the turn ends as the
   * deadline stop hook would have ended it, not as cancelled (run/deadline.ts).
   */
  async run(input: TurnInput, cp: TurnCheckpoints, signal: AbortSignal): Promise<TurnOutcome> {
    return withinDeadline(input, cp, signal, (runInput, runSignal) =>
      runTurn(new TurnRun(this.resources, runInput, cp, runSignal)),
    );
  }
}
