import {
  renderRecall,
  RecallTimeout,
  type RecallOptions,
  type RecallQuery,
  type RecallSearch,
} from './recall';
import { EMBED_QUERY_TIMEOUT_MS, type HybridSearchResult } from './search';
import { CLAIMED_PREFERENCES_LIMIT } from '@switchboard/contracts';
import { PREFERENCE_TAG, preferenceHit, RECALL_RANK_CANDIDATES, type MemoryScope } from './store';
import { MEMORY_SEARCH_MAX_LIMIT, type MemoryHit } from './types';
import { claimedMemoryState } from './vectors';

/** Preferences the context pack shows whatever the input, newest first, at most: as many as the claim reads. */
export const PACK_PREFERENCES_LIMIT = CLAIMED_PREFERENCES_LIMIT;

/** A record as the context pack shows it (structurally the engine's `PackItem`). */
export interface MemoryPackItem {
  ref: string;
  title: string;
  text: string;
}

/** A record offered to a turn, with its provenance (structurally the engine's `RecalledRecord`, docs/adr/0060). */
export interface MemoryRecalledRecord {
  ref: string;
  kind: string;
  title: string;
  score: number | null;
  path: string | null;
  via: 'episodic' | 'facts' | 'preferences';
  source: string | null;
  sourceTurnId: string | null;
  sourceSessionId: string | null;
}

/** A hit as a recalled record; a standing preference (read by recency) has no score or path. */
export function recalledRecord(
  h: MemoryHit,
  via: MemoryRecalledRecord['via'],
  matched = true,
): MemoryRecalledRecord {
  return {
    ref: h.sourceRef,
    kind: h.kind,
    title: h.title,
    score: matched ? h.score : null,
    path: matched ? h.path : null,
    via,
    source: h.provenance?.source ?? null,
    sourceTurnId: h.provenance?.turnId ?? null,
    sourceSessionId: h.provenance?.sessionId ?? null,
  };
}

/** What memory context searches with: `MemorySearch`, whose store also reads the agent's preferences. */
export interface MemoryContextSearch extends RecallSearch {
  store: { preferences(q: MemoryScope & { limit: number }): Promise<MemoryHit[]> };
}

export interface MemoryContextOptions extends RecallOptions {
  /** Facts in the context pack at most (default `limit`). */
  factLimit?: number;
  /** The agent's newest preferences in the pack at most (default `PACK_PREFERENCES_LIMIT`). */
  preferenceLimit?: number;
}

/** The two loads of seed 001 stage 1 over an agent's memory (docs/adr/0052). */
export interface MemoryContext {
  /** Episodic recall: episodes and notes matching the input, and the preference items among them. */
  episodic: (q: RecallQuery) => Promise<{
    text: string | null;
    preferences: MemoryPackItem[];
    records: MemoryRecalledRecord[];
  } | null>;
  /** The context pack's memory part: facts matching the input and the agent's preferences. */
  pack: (q: RecallQuery) => Promise<{
    facts: MemoryPackItem[];
    preferences: MemoryPackItem[];
    records: MemoryRecalledRecord[];
  } | null>;
}

const isPreference = (h: MemoryHit) => h.tags.includes(PREFERENCE_TAG);
const item = (h: MemoryHit): MemoryPackItem => ({ ref: h.sourceRef, title: h.title, text: h.snippet });

/**
 * Seed 001 stage 1's two concurrent loads over one agent's memory (docs/adr/0052). Episodic recall
 * (`memory_future`) is the agent's episodes and notes matching the input, rendered as the memory
 * block; the preference items among them go to the pack. The pack's memory part (`context_future`)
 * is the facts matching the input plus the agent's preferences (records tagged `preference`), the
 * newest few whatever the input.
 *
 * Both loads take their matches from ONE search per turn (full-text, vectors or both per the agent's
 * settings, `MemorySearch`), shared by the query object the engine hands both sources, and split by
 * kind: two kind-filtered searches would read the agent's settings twice and run every ranking
 * statement twice. The pack adds one indexed read, the preferences, unless the turn's claim read them
 * with the agent's settings (docs/adr/0076): then the search is the turn's only memory statement. Each load is bounded by the
 * recall timeout and fails alone; an embedder failure answers full-text with one warning.
 */
export function memoryContext(memory: MemoryContextSearch, options: MemoryContextOptions): MemoryContext {
  const factLimit = options.factLimit ?? options.limit;
  const preferenceLimit = options.preferenceLimit ?? PACK_PREFERENCES_LIMIT;
  // Deep enough that one kind seldom crowds the other out of the split.
  const searchLimit = Math.min(2 * (options.limit + factLimit), MEMORY_SEARCH_MAX_LIMIT);
  const bound = options.timeoutMs + (options.embedTimeoutMs ?? EMBED_QUERY_TIMEOUT_MS);
  const shared = new WeakMap<RecallQuery, Promise<HybridSearchResult | null>>();

  const off = (q: RecallQuery) => options.timeoutMs <= 0 || !q.agentId || q.hasMemory === false;

  const search = (q: RecallQuery): Promise<HybridSearchResult | null> => {
    let found = shared.get(q);
    if (!found) {
      found = searchOnce(q);
      shared.set(q, found);
    }
    return found;
  };

  const searchOnce = async (q: RecallQuery): Promise<HybridSearchResult | null> => {
    if (q.input.trim() === '') return null;
    const started = performance.now();
    const seconds = () => (performance.now() - started) / 1000;
    try {
      const result = await within(
        memory.search({
          tenantId: q.tenantId,
          agentId: q.agentId!,
          query: q.input,
          limit: searchLimit,
          candidates: options.candidates ?? RECALL_RANK_CANDIDATES,
          excludeSessionId: q.sessionId,
          // The agent's settings and vector set came with the claim (docs/adr/0076): not read again.
          ...(q.claimedMemory ? { agent: claimedMemoryState(q.claimedMemory) } : {}),
        }),
        bound,
      );
      // The query's embedding, when a billing embedder made it, is booked with the turn (once: one search).
      if (result.embedder && result.embeddingTokens > 0) {
        q.spend?.({ embedder: result.embedder, inputTokens: result.embeddingTokens });
      }
      // Only a failure of what the agent is set to use is worth a warning: not "no vectors yet".
      if (result.fallback === 'embedder_failed' && result.warning) q.warn?.('memory', result.warning);
      options.observe?.(result.hits.length > 0 ? 'hits' : 'empty', seconds());
      return result;
    } catch (err) {
      options.observe?.(err instanceof RecallTimeout ? 'timeout' : 'failed', seconds());
      throw err;
    }
  };

  return {
    episodic: async (q) => {
      if (off(q)) {
        if (q.hasMemory === false) options.observe?.('skipped', 0);
        return null;
      }
      const result = await search(q);
      if (!result) return null;
      const hits = result.hits.filter((h) => h.kind !== 'fact');
      const shown = hits.filter((h) => !isPreference(h)).slice(0, options.limit);
      const preferences = hits.filter(isPreference);
      return {
        text: renderRecall(shown, options.maxChars),
        preferences: preferences.map(item),
        // Candidates: the engine keeps those the rendered text shows (docs/adr/0060).
        records: [
          ...shown.map((h) => recalledRecord(h, 'episodic')),
          ...preferences.map((h) => recalledRecord(h, 'preferences')),
        ],
      };
    },

    pack: async (q) => {
      if (off(q)) return null;
      const [result, standing] = await Promise.all([
        search(q),
        // The claim read the newest preferences (docs/adr/0076): no statement here unless more are asked.
        q.claimedMemory && preferenceLimit <= CLAIMED_PREFERENCES_LIMIT
          ? q.claimedMemory.preferences.slice(0, preferenceLimit).map(preferenceHit)
          : within(
              memory.store.preferences({ tenantId: q.tenantId, agentId: q.agentId!, limit: preferenceLimit }),
              bound,
            ),
      ]);
      const facts = (result?.hits ?? []).filter((h) => h.kind === 'fact');
      const shownFacts = facts.filter((h) => !isPreference(h)).slice(0, factLimit);
      const matchedPreferences = facts.filter(isPreference);
      return {
        facts: shownFacts.map(item),
        preferences: [...matchedPreferences, ...standing].map(item),
        records: [
          ...shownFacts.map((h) => recalledRecord(h, 'facts')),
          ...matchedPreferences.map((h) => recalledRecord(h, 'preferences')),
          ...standing.map((h) => recalledRecord(h, 'preferences', false)),
        ],
      };
    },
  };
}

/** `work`, or a `RecallTimeout` past `ms` (the statement itself finishes on its own connection). */
async function within<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new RecallTimeout(ms)), ms);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
