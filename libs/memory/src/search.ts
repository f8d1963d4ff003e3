import { recallModeOf, type RecallMode } from '@switchboard/contracts';
import type { EmbedderRegistry } from '@switchboard/providers';
import { sql, type SqlRunner } from '@switchboard/store';
import { snippetOf } from './snippet';
import { encodeSourceRef } from './source-ref';
import {
  contentChars,
  cutContent,
  fitContent,
  MemoryStore,
  RANK_CANDIDATES,
  type MemoryRecordRow,
  type MemorySearchQuery,
} from './store';
import { MEMORY_SEARCH_MAX_LIMIT, type MemoryHitPath, type MemoryHit } from './types';
import { agentMemoryState, vectorSearch, type AgentMemoryState } from './vectors';

/** Reciprocal rank fusion's constant (docs/adr/0050): the value of Cormack et al. (2009). */
export const RRF_K = 60;
/** Longest a search waits for the query's embedding before it answers with full-text alone. */
export const EMBED_QUERY_TIMEOUT_MS = 1_500;

export interface HybridSearchQuery extends MemorySearchQuery {
  /** How to search; default the agent's recall mode (hybrid with an embedder, else fts). */
  mode?: RecallMode;
  /**
   * The agent's memory state as the caller already read it (a turn's claim, docs/adr/0076): the
   * search reads it in no statement of its own. Absent: read from the agent's row first.
   */
  agent?: AgentMemoryState;
}

export interface HybridSearchResult {
  hits: MemoryHit[];
  /** The mode asked (or the agent's). */
  mode: RecallMode;
  /** The mode that answered: `fts` when the vector side could not run. */
  used: RecallMode;
  /** Why the vector side did not run, when it was asked for. */
  warning: string | null;
  /**
   * `embedder_failed`: the embedder erred or was slow (a turn's recall emits a warning event);
   * `no_vectors`: the agent has no complete vector set (yet). Null when nothing fell back.
   */
  fallback: 'embedder_failed' | 'no_vectors' | null;
  /** Tokens the embedder billed for the query (0 for the built-in ones). */
  embeddingTokens: number;
  /** The embedder the query was embedded with, when it was. */
  embedder: string | null;
}

/** The fused order of ranked id lists: Σ 1/(k + rank) over the lists an id is in, best first. */
export function reciprocalRankFusion(lists: string[][], k = RRF_K): { id: string; score: number }[] {
  const scores = new Map<string, number>();
  for (const list of lists) {
    list.forEach((id, i) => scores.set(id, (scores.get(id) ?? 0) + 1 / (k + i + 1)));
  }
  // Ties keep the order of first appearance (the full-text list first): deterministic.
  return [...scores].map(([id, score]) => ({ id, score })).sort((a, b) => b.score - a.score);
}

/**
 * An agent's memory searched by full-text, by meaning, or both (docs/adr/0050): what automatic
 * recall, `memory_search` and the API's search share. Full-text is `MemoryStore.search` as before;
 * the vector side embeds the query with the embedder of the agent's active vector set (bounded by
 * `embedTimeoutMs`) and scans that set; hybrid fuses both ranked lists by reciprocal rank fusion.
 * When the vector side cannot run (no complete set yet, the embedder fails or is slow) the answer is
 * full-text's, with a `warning` saying why: never an error for that.
 */
export class MemorySearch {
  readonly store: MemoryStore;

  constructor(
    private readonly db: SqlRunner,
    private readonly embedders: EmbedderRegistry,
    private readonly options: { embedTimeoutMs?: number } = {},
  ) {
    this.store = new MemoryStore(db);
  }

  async search(q: HybridSearchQuery): Promise<HybridSearchResult> {
    const limit = Math.min(Math.max(q.limit ?? 8, 1), MEMORY_SEARCH_MAX_LIMIT);
    const state = q.agent ?? (await agentMemoryState(this.db, q));
    const mode: RecallMode = state ? recallModeOf(state.settings, state.embedder, q.mode) : (q.mode ?? 'fts');
    const result = (
      hits: MemoryHit[],
      used: RecallMode,
      fallback: HybridSearchResult['fallback'] = null,
      warning: string | null = null,
      tokens = 0,
      by: string | null = null,
    ): HybridSearchResult => ({ hits, mode, used, warning, fallback, embeddingTokens: tokens, embedder: by });
    if (mode === 'fts' || !state) return result(await this.store.search({ ...q, limit }), 'fts');
    const model = state.vectorsModel;
    if (!model) {
      const why = state.embedder
        ? `the agent's records are not embedded with ${state.embedder} yet`
        : 'the agent has no embedder';
      return result(await this.store.search({ ...q, limit }), 'fts', 'no_vectors', `${why}: full-text only`);
    }
    // Each side ranks more than it returns, so fusion has something to reorder.
    const depth = Math.min(Math.max(limit * 3, 20), MEMORY_SEARCH_MAX_LIMIT);
    const [fts, embedded] = await Promise.all([
      mode === 'hybrid'
        ? this.store.search({ ...q, limit: depth, candidates: q.candidates ?? RANK_CANDIDATES })
        : Promise.resolve([]),
      this.embedQuery(model, q.query).then(
        (r) => ({ ok: true as const, ...r }),
        (err: unknown) => ({ ok: false as const, error: err instanceof Error ? err.message : String(err) }),
      ),
    ]);
    if (!embedded.ok) {
      const warning = `the embedder ${model} failed (${embedded.error}): full-text only`;
      const hits = mode === 'hybrid' ? fts.slice(0, limit) : await this.store.search({ ...q, limit });
      return result(hits, 'fts', 'embedder_failed', warning);
    }
    const near = await vectorSearch(this.db, {
      ...q,
      model,
      vector: embedded.vector,
      limit: mode === 'hybrid' ? depth : limit,
      candidates: q.candidates,
    });
    if (mode === 'vector') {
      const hits = await this.read(q, near.slice(0, limit), new Map());
      return result(
        hits.map((h) => ({ ...h, path: 'vector' as const })),
        'vector',
        null,
        null,
        embedded.tokens,
        model,
      );
    }
    const ftsIds = fts.map((h) => h.sourceRef);
    const nearByRef = new Map(near.map((n) => [encodeSourceRef(n.id), n]));
    const fused = reciprocalRankFusion([ftsIds, [...nearByRef.keys()]]).slice(0, limit);
    const inFts = new Set(ftsIds);
    const known = new Map(fts.map((h) => [h.sourceRef, h]));
    const read = await this.read(
      q,
      fused.flatMap((f) => (known.has(f.id) ? [] : [nearByRef.get(f.id)!])),
      known,
    );
    for (const h of read) known.set(h.sourceRef, h);
    const hits = fused.flatMap((f): MemoryHit[] => {
      const h = known.get(f.id);
      if (!h) return [];
      const path: MemoryHitPath =
        inFts.has(f.id) && nearByRef.has(f.id) ? 'both' : inFts.has(f.id) ? 'fts' : 'vector';
      return [{ ...h, score: Math.round(f.score * 1e6) / 1e6, path }];
    });
    return result(hits, 'hybrid', null, null, embedded.tokens, model);
  }

  /** The query's vector, bounded by the timeout (the provider call is aborted past it). */
  private async embedQuery(model: string, text: string): Promise<{ vector: Float32Array; tokens: number }> {
    const embedder = this.embedders.resolve(model);
    const ms = this.options.embedTimeoutMs ?? EMBED_QUERY_TIMEOUT_MS;
    const abort = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        abort.abort();
        reject(new Error(`no answer within ${ms} ms`));
      }, ms);
    });
    try {
      const res = await Promise.race([
        embedder.provider.embed({ model: embedder.model, texts: [text], signal: abort.signal }),
        timeout,
      ]);
      const vector = res.vectors[0];
      if (!vector) throw new Error('no vector returned');
      return { vector, tokens: res.inputTokens };
    } finally {
      clearTimeout(timer);
    }
  }

  /** The hits of the vector side's records, in the order given, each scored by its cosine. */
  private async read(
    q: HybridSearchQuery,
    near: { id: string; score: number }[],
    known: Map<string, MemoryHit>,
  ): Promise<MemoryHit[]> {
    const ids = near.map((n) => n.id).filter((id) => !known.has(encodeSourceRef(id)));
    if (ids.length === 0) return [];
    const rows = await this.db.rows<MemoryRecordRow>(sql`
      SELECT id, kind, title, ${cutContent('content', 20000)} AS content, ${contentChars('content')} AS "totalChars",
        provenance, tags, created_at AS "createdAt", updated_at AS "updatedAt"
      FROM memory_records
      WHERE id = ANY(${ids}::uuid[]) AND tenant_id = ${q.tenantId}::uuid AND agent_id = ${q.agentId}::uuid`);
    const byId = new Map(rows.map((r) => [r.id, fitContent(r, 20000)]));
    return near.flatMap((n) => {
      const r = byId.get(n.id);
      if (!r) return [];
      return [
        {
          sourceRef: encodeSourceRef(r.id),
          kind: r.kind,
          title: r.title,
          snippet: snippetOf(r.content, q.query),
          score: Math.round(n.score * 10_000) / 10_000,
          updatedAt: r.updatedAt.toISOString(),
          provenance: r.provenance,
          totalChars: r.totalChars,
          createdAt: r.createdAt.toISOString(),
          tags: r.tags,
          path: 'vector' as const,
        },
      ];
    });
  }
}
