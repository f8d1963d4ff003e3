import type { ProviderRegistry } from '@switchboard/providers';
import type { ToolRegistry } from '@switchboard/tools';
import type { ContextSources } from '../context';
import type { ToolGates } from '../gates';
import type { RetryPolicy } from '../provider-attempts';
import type { SemanticToolSelector } from '../tool-selection';

/**
 * Where lossy compactions keep their originals (docs/adr/0033): the harness's `OriginalsStore`. A
 * marker enters history only after its original is kept.
 */
export interface CompactionOriginals {
  keep(original: {
    tenantId: string;
    id: string;
    sessionId?: string;
    turnId?: string;
    callId?: string;
    tool: string;
    kind: string;
    content: string;
  }): Promise<void>;
}

/** TokenJuice's part of the engine: where originals go and the bounds of what it compacts. */
export interface TokenJuiceOptions {
  /** Absent: only lossless (`light`) rewrites happen, whatever the turn asks. */
  originals?: CompactionOriginals;
  /** Results smaller than this (UTF-8 bytes) are left alone. */
  minBytes?: number;
  /** Larger inputs are never parsed: head and tail only (lossy), or left alone (light). */
  maxInputChars?: number;
}

/** What every run shares: the engine's ports and limits, fixed when the engine is built. */
export interface EngineResources {
  providers: ProviderRegistry;
  /** The process-wide registry; a turn that brings its own tools sees a view over it (`TurnRun.tools`). */
  tools: ToolRegistry;
  /** The tool gates policy fills in (seed 001 4g); `{}` when none. */
  gates: ToolGates;
  context: ContextSources;
  /** How a model round retries and falls back (`model-round.ts`, `provider-attempts.ts`). */
  retry: RetryPolicy;
  /** Largest tool result the model sees, in UTF-8 bytes. */
  toolResultMaxBytes: number;
  /** Results above this go through the summarizer first (when the turn has one). */
  summarizeAboveBytes: number;
  /** Results above this are too big to pay a model call for: truncation only. */
  summarizeMaxBytes: number;
  /** With reflections in the budget, reflect after a failing round and every this many rounds. */
  reflectEvery: number;
  /** Ranks a turn's tools when it has more than its agent's `maxPerTurn` (docs/adr/0049). */
  toolSelector: SemanticToolSelector;
  /** Longest wait for the embedder that ranks tools; past it every tool is offered. */
  toolSelectionTimeoutMs: number;
  /** TokenJuice's originals store and bounds (docs/adr/0033); a turn's mode is `input.toolResultCompression`. */
  tokenjuice: TokenJuiceOptions;
}
