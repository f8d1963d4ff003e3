import type { ClaimedMemory } from '@switchboard/contracts';
import { EMBED_QUERY_TIMEOUT_MS, type HybridSearchQuery, type HybridSearchResult } from './search';
import { RECALL_RANK_CANDIDATES } from './store';
import type { MemoryHit } from './types';
import { claimedMemoryState } from './vectors';

export interface RecallOptions {
  /** Records recalled at most. */
  limit: number;
  /** The newest matches ranked at most (default `RECALL_RANK_CANDIDATES`): recall runs before every turn. */
  candidates?: number;
  /**
   * Longest the turn waits for recall's full-text side; past it (plus `embedTimeoutMs` for an agent
   * with vectors) the turn goes on without memory. 0: recall is off.
   */
  timeoutMs: number;
  /** Longest the query's embedding may take (default 1.5 s); past it recall is full-text, with a warning. */
  embedTimeoutMs?: number;
  /** The rendered block's size bound, in characters. */
  maxChars?: number;
  /** Told how each recall went and how long it took (the recall histogram). */
  observe?: (outcome: 'hits' | 'empty' | 'skipped' | 'timeout' | 'failed', seconds: number) => void;
}

export interface RecallQuery {
  tenantId: string;
  agentId?: string;
  /** The turn's session: what was distilled from it is already in the turn's history, so it is not recalled. */
  sessionId?: string;
  input: string;
  /** The claim's answer to "has this agent any memory record?": `false` skips the query (docs/adr/0032). */
  hasMemory?: boolean;
  /**
   * What the claim read of the agent's memory (docs/adr/0076): its settings and vector set (the search
   * reads them in no statement of its own) and its newest preferences. Absent: read here.
   */
  claimedMemory?: ClaimedMemory;
  /** Told when recall answered with less than it was set to (the vector side failed): a warning event. */
  warn?: (source: string, message: string) => void;
  /** Told what the query's embedding billed (a priced embedder's tokens): the turn books it (issue 33). */
  spend?: (spend: { embedder: string; inputTokens: number }) => void;
}

/** What recall searches with: `MemorySearch` (full-text, vectors, or both per the agent's settings). */
export interface RecallSearch {
  search(q: HybridSearchQuery): Promise<HybridSearchResult>;
}

const DEFAULT_MAX_CHARS = 2_000;

/** One line per hit: its ref (for `memory_get`), kind, title, date and snippet. */
export function renderRecall(hits: MemoryHit[], maxChars = DEFAULT_MAX_CHARS): string | null {
  const header =
    "Records from this agent's memory that may be relevant (memory_get with a source_ref returns the full text):";
  let text = header;
  for (const h of hits) {
    const line = `\n- [${h.sourceRef}] ${h.kind} · ${h.title} (${h.updatedAt.slice(0, 10)}): ${h.snippet}`;
    if (text.length + line.length > maxChars) break;
    text += line;
  }
  return text === header ? null : text;
}

/**
 * The `memory` context source (seed 001 stage 1, docs/adr/0022): the agent's best matching records
 * for the turn's input, as one bounded block. One read statement on the pool, outside any
 * transaction; bounded by `timeoutMs` (a rejection the engine records as `context_unavailable`
 * and goes on). The query itself is not cancelled on timeout: it is one indexed read and finishes
 * on its own connection.
 */
export function memoryRecall(
  memory: RecallSearch,
  options: RecallOptions,
): (query: RecallQuery) => Promise<string | null> {
  return async (q) => {
    if (options.timeoutMs <= 0 || !q.agentId || q.input.trim() === '') return null;
    // An agent without memory has nothing to recall: no query (the claim read it in its statement).
    if (q.hasMemory === false) {
      options.observe?.('skipped', 0);
      return null;
    }
    const started = performance.now();
    const seconds = () => (performance.now() - started) / 1000;
    let timer: NodeJS.Timeout | undefined;
    const bound = options.timeoutMs + (options.embedTimeoutMs ?? EMBED_QUERY_TIMEOUT_MS);
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new RecallTimeout(bound)), bound);
    });
    try {
      const { hits, warning, fallback, embedder, embeddingTokens } = await Promise.race([
        memory.search({
          tenantId: q.tenantId,
          agentId: q.agentId,
          query: q.input,
          limit: options.limit,
          candidates: options.candidates ?? RECALL_RANK_CANDIDATES,
          excludeSessionId: q.sessionId,
          ...(q.claimedMemory ? { agent: claimedMemoryState(q.claimedMemory) } : {}),
        }),
        timeout,
      ]);
      if (embedder && embeddingTokens > 0) q.spend?.({ embedder, inputTokens: embeddingTokens });
      // Only a failure of what the agent is set to use is worth a warning: not "no vectors yet".
      if (fallback === 'embedder_failed' && warning) q.warn?.('memory', warning);
      options.observe?.(hits.length > 0 ? 'hits' : 'empty', seconds());
      return renderRecall(hits, options.maxChars);
    } catch (err) {
      options.observe?.(err instanceof RecallTimeout ? 'timeout' : 'failed', seconds());
      throw err;
    } finally {
      clearTimeout(timer);
    }
  };
}

export class RecallTimeout extends Error {
  constructor(ms: number) {
    super(`memory recall took longer than ${ms} ms`);
    this.name = 'RecallTimeout';
  }
}
