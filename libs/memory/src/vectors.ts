import { isStrict } from '@switchboard/database';
import { parseMemorySettings, type ClaimedMemory, type MemorySettings } from '@switchboard/contracts';
import type { EmbedderRegistry } from '@switchboard/providers';
import { join, planEachCall, sql, type SqlRunner } from '@switchboard/store';
import { ensureHnswIndex, hnswEligible, hnswSearch, pgvectorSupport } from './pgvector';
import {
  cutContent,
  memoryFilters,
  rewoundFilter,
  sessionFilter,
  type MemoryFilters,
  type MemoryScope,
} from './store';

/**
 * Vector memory (docs/adr/0050): one vector per (record, embedder) in `memory_embeddings`, with its
 * model and dimension. Recall compares the query's vector only with the agent's `memory_vectors_model`
 * set, the one the re-embedding job completed; a model change fills a second set beside it.
 */

/** What an agent's memory is set to, and the vector set recall compares against. */
export interface AgentMemoryState {
  settings: MemorySettings;
  /** The agent's embedder (`agents.embedder`); null: its records get no vectors. */
  embedder: string | null;
  /** The embedder of the complete set recall uses; null: no complete set (full-text only). */
  vectorsModel: string | null;
}

/** The agent's memory settings and active vector set; null when the agent is not the tenant's. */
export async function agentMemoryState(db: SqlRunner, scope: MemoryScope): Promise<AgentMemoryState | null> {
  const row = await db.first<{ memory: unknown; embedder: string | null; vectorsModel: string | null }>(sql`
    SELECT memory, embedder, memory_vectors_model AS "vectorsModel" FROM agents
    WHERE id = ${scope.agentId}::uuid AND tenant_id = ${scope.tenantId}::uuid`);
  return row
    ? { settings: parseMemorySettings(row.memory), embedder: row.embedder, vectorsModel: row.vectorsModel }
    : null;
}

/** The state a turn's claim read (docs/adr/0076), as the search takes it. */
export function claimedMemoryState(claimed: ClaimedMemory): AgentMemoryState {
  return {
    settings: parseMemorySettings(claimed.settings),
    embedder: claimed.embedder,
    vectorsModel: claimed.vectorsModel,
  };
}

export interface VectorSearchQuery extends MemoryScope, MemoryFilters {
  /** The embedder of the set compared (`memory_vectors_model`). */
  model: string;
  vector: Float32Array;
  limit: number;
  excludeSessionId?: string;
}

/**
 * Records the exact scan compares at most, the agent's newest (docs/adr/0050; the pgvector path has
 * no such bound): the exact scan costs
 * ~0.1 ms a vector here, so an unbounded one is seconds at 50k records (docs/BENCHMARKS.md).
 */
export const VECTOR_CANDIDATES = 1000;

/**
 * The agent's records nearest to `vector` by cosine (the vectors are normalised: their dot product),
 * best first. Where the database has pgvector and `embedding_v` (`pgvectorSupport`), by the set's
 * HNSW index over all the agent's records (`hnswSearch`: no newest-`candidates` window). Elsewhere an
 * exact scan of the vectors of `model` of the agent's newest `candidates` records
 * matching the filters (no pgvector on these machines), taken off the (tenant, agent, created_at)
 * index and joined to their vector by its key. Only vectors of `model` AND of the query's length are
 * compared, so two models or dimensions are never mixed.
 */
export async function vectorSearch(
  db: SqlRunner,
  q: VectorSearchQuery & { candidates?: number },
): Promise<{ id: string; score: number }[]> {
  const support = await pgvectorSupport(db);
  if (support && hnswEligible(q.model, q.vector.length)) return hnswSearch(db, support, q);
  const query = Array.from(q.vector);
  const candidates = Math.min(Math.max(q.candidates ?? VECTOR_CANDIDATES, q.limit), VECTOR_CANDIDATES);
  // The dot product by subscripts: measured 3x faster than `sum(a * b) FROM unnest(x, y)`.
  return db.rows<{ id: string; score: number }>(
    planEachCall(sql`
    WITH c AS (
      SELECT m.id, m.updated_at FROM memory_records m
      WHERE m.tenant_id = ${q.tenantId}::uuid AND m.agent_id = ${q.agentId}::uuid
        ${memoryFilters(q, 'm')} ${sessionFilter(q.excludeSessionId, 'm')} ${rewoundFilter(q, 'm')}
      ORDER BY m.created_at DESC
      LIMIT ${candidates}
    ), query AS (SELECT ${query}::real[] AS v)
    SELECT c.id,
      (SELECT sum(e.embedding[j] * query.v[j]) FROM generate_series(1, ${query.length}) j)::float8 AS score
    FROM c JOIN memory_embeddings e ON e.record_id = c.id AND e.model = ${q.model}, query
    WHERE e.tenant_id = ${q.tenantId}::uuid AND e.agent_id = ${q.agentId}::uuid
      AND e.dimensions = ${query.length}
    ORDER BY score DESC, c.updated_at DESC, c.id
    LIMIT ${q.limit}`),
  );
}

/** Characters of a record embedded: its title and the beginning of its content. */
export const EMBED_TEXT_MAX_CHARS = 8_000;

export function embeddingText(title: string, content: string): string {
  return `${title}\n${content}`.slice(0, EMBED_TEXT_MAX_CHARS);
}

/** Where an agent's vectors are: the set recall uses, the embedder configured and how far its set is. */
export interface EmbeddingStatus {
  model: string | null;
  target: string | null;
  embedded: number;
  total: number;
  complete: boolean;
}

export async function embeddingStatus(db: SqlRunner, scope: MemoryScope): Promise<EmbeddingStatus | null> {
  const state = await agentMemoryState(db, scope);
  if (!state) return null;
  const target = state.embedder;
  const row = await db.first<{ total: number; embedded: number }>(sql`
    SELECT
      (SELECT count(*)::int FROM memory_records
        WHERE tenant_id = ${scope.tenantId}::uuid AND agent_id = ${scope.agentId}::uuid) AS total,
      (SELECT count(*)::int FROM memory_embeddings
        WHERE tenant_id = ${scope.tenantId}::uuid AND agent_id = ${scope.agentId}::uuid
          AND model = ${target ?? ''}) AS embedded`);
  const total = row?.total ?? 0;
  const embedded = target ? (row?.embedded ?? 0) : 0;
  return {
    model: state.vectorsModel,
    target,
    embedded,
    total,
    complete: target !== null && state.vectorsModel === target && embedded >= total,
  };
}

export interface EmbedRunOptions {
  /** Records embedded per provider call. */
  batchSize?: number;
  /** Batches per run at most; a run that stops short says `done: false` (the job publishes the next). */
  maxBatches?: number;
  signal?: AbortSignal;
  /**
   * Told of each batch's provider call before its vectors are written (the job books its spend,
   * issue 33): a rejection fails the run with nothing of the batch written.
   */
  spent?: (batch: EmbedBatchSpend) => Promise<void>;
}

/** One batch's provider call: the records embedded, the embedder and the tokens it billed. */
export interface EmbedBatchSpend {
  embedder: string;
  recordIds: string[];
  inputTokens: number;
}

export interface EmbedRunResult {
  /** Nothing left to embed for the agent's embedder (and its set is the active one), or no embedder. */
  done: boolean;
  embedded: number;
  target: string | null;
  /** Tokens the provider billed for this run. */
  inputTokens: number;
}

/**
 * One run of the re-embedding job (docs/adr/0050): embeds the agent's records that have no vector of
 * its configured embedder, newest first, `batchSize` per provider call, `maxBatches` at most. Each
 * batch is inserted `ON CONFLICT DO NOTHING`, so a retried or concurrent run writes nothing twice;
 * what is left is read from Postgres every batch, so a run resumes where any earlier one stopped.
 * When no record is left, recall switches to the new set and the other sets are dropped, in one
 * statement that only applies while the agent's embedder is still that one. An agent with no
 * embedder has its vectors dropped. Throws a ProviderError (unknown embedder, provider down) or a
 * RangeError (a vector whose length is not the model's): the job retries.
 */
export async function embedPending(
  db: SqlRunner,
  embedders: EmbedderRegistry,
  scope: MemoryScope,
  options: EmbedRunOptions = {},
): Promise<EmbedRunResult> {
  const batchSize = options.batchSize ?? 64;
  const maxBatches = options.maxBatches ?? 16;
  const state = await agentMemoryState(db, scope);
  const target = state?.embedder ?? null;
  // A tenant in strict encryption mode keeps no vectors derived from its content (docs/adr/0067):
  // recall falls back to recency, as for an agent without an embedder.
  if (!state || !target || (await isStrict(scope.tenantId))) {
    if (state) await dropVectors(db, scope);
    return { done: true, embedded: 0, target, inputTokens: 0 };
  }
  const embedder = embedders.resolve(target);
  let expected = embedder.provider.dimensionsOf(embedder.model);
  let embedded = 0;
  let inputTokens = 0;
  for (let batch = 0; batch < maxBatches; batch++) {
    options.signal?.throwIfAborted();
    const pending = await db.rows<{ id: string; title: string; content: string }>(sql`
      SELECT m.id, m.title, ${cutContent('m.content', EMBED_TEXT_MAX_CHARS)} AS content
      FROM memory_records m
      WHERE m.tenant_id = ${scope.tenantId}::uuid AND m.agent_id = ${scope.agentId}::uuid
        AND NOT EXISTS (SELECT 1 FROM memory_embeddings e WHERE e.record_id = m.id AND e.model = ${target})
      ORDER BY m.created_at DESC, m.id
      LIMIT ${batchSize}`);
    if (pending.length === 0) {
      await activate(db, scope, target);
      const now = await agentMemoryState(db, scope);
      // Switched (or the embedder changed meanwhile: that change published a job of its own).
      if (!now || now.vectorsModel === target || now.embedder !== target)
        return { done: true, embedded, target, inputTokens };
      // A record written since the read above has no vector yet: the next batch embeds it.
      continue;
    }
    const res = await embedder.provider.embed({
      model: embedder.model,
      texts: pending.map((r) => embeddingText(r.title, r.content)),
      signal: options.signal,
    });
    if (res.vectors.length !== pending.length)
      throw new RangeError(`${target} returned ${res.vectors.length} vectors for ${pending.length} texts`);
    expected ??= res.vectors[0].length;
    for (const v of res.vectors) {
      if (v.length !== expected)
        throw new RangeError(`${target} returned a vector of ${v.length} dimensions, not ${expected}`);
    }
    inputTokens += res.inputTokens;
    await options.spent?.({
      embedder: target,
      recordIds: pending.map((r) => r.id),
      inputTokens: res.inputTokens,
    });
    // With pgvector the vector also goes to `embedding_v`, and the set's HNSW index is made before its
    // first vector (a no-op, cached, once it exists).
    const pgvector = (await pgvectorSupport(db)) !== null;
    if (pgvector) await ensureHnswIndex(db, target, expected);
    embedded += await db.execute(sql`
      INSERT INTO memory_embeddings (record_id, tenant_id, agent_id, model, dimensions, embedding
        ${pgvector ? sql`, embedding_v` : sql``})
      SELECT v.id, ${scope.tenantId}::uuid, ${scope.agentId}::uuid, ${target}, ${expected}, v.embedding
        ${pgvector ? sql`, v.embedding::vector` : sql``}
      FROM (VALUES ${join(pending.map((r, i) => sql`(${r.id}::uuid, ${Array.from(res.vectors[i])}::real[])`))})
        AS v(id, embedding)
      -- A record forgotten meanwhile is not embedded (its row is gone: no orphan vector).
      WHERE EXISTS (SELECT 1 FROM memory_records m WHERE m.id = v.id)
      ON CONFLICT (record_id, model) DO NOTHING`);
  }
  return { done: false, embedded, target, inputTokens };
}

/**
 * The set of `model` complete: recall uses it from now on, and the other sets go. Applies only while
 * the agent's embedder is `model` (a change made meanwhile starts its own set; this one is not made
 * active) and every record has a vector of it (a record written since this run read none is left).
 */
async function activate(db: SqlRunner, scope: MemoryScope, model: string): Promise<void> {
  await db.execute(sql`
    WITH switched AS (
      UPDATE agents SET memory_vectors_model = ${model}
      WHERE id = ${scope.agentId}::uuid AND tenant_id = ${scope.tenantId}::uuid
        AND embedder = ${model}
        AND NOT EXISTS (
          SELECT 1 FROM memory_records m
          WHERE m.tenant_id = ${scope.tenantId}::uuid AND m.agent_id = ${scope.agentId}::uuid
            AND NOT EXISTS (SELECT 1 FROM memory_embeddings e WHERE e.record_id = m.id AND e.model = ${model}))
      RETURNING id
    )
    DELETE FROM memory_embeddings
    WHERE tenant_id = ${scope.tenantId}::uuid AND agent_id = ${scope.agentId}::uuid
      AND model <> ${model} AND EXISTS (SELECT 1 FROM switched)`);
}

/** An agent whose embedder was removed: no set, no vectors (recall is full-text). */
async function dropVectors(db: SqlRunner, scope: MemoryScope): Promise<void> {
  await db.execute(sql`
    WITH cleared AS (
      UPDATE agents SET memory_vectors_model = NULL
      WHERE id = ${scope.agentId}::uuid AND tenant_id = ${scope.tenantId}::uuid
        AND embedder IS NULL
      RETURNING id
    )
    DELETE FROM memory_embeddings
    WHERE tenant_id = ${scope.tenantId}::uuid AND agent_id = ${scope.agentId}::uuid
      AND EXISTS (SELECT 1 FROM cleared)`);
}
