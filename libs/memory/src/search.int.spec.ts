import { newId } from '@switchboard/contracts';
import { poolOf } from '@switchboard/database';
import {
  EmbedderRegistry,
  normalize,
  ProviderError,
  type EmbeddingProvider,
  type EmbeddingRequest,
  type EmbeddingResponse,
} from '@switchboard/providers';
import { sql, sqlDbFor, type SqlDb } from '@switchboard/store';
import { createTestEnv, seedTenant, type TestEnv } from '@switchboard/testing';
import { MemorySearch } from './search';
import type { MemoryWrite } from './types';
import { pgvectorSupport } from './pgvector';
import { agentMemoryState, embedPending, embeddingStatus, VECTOR_CANDIDATES } from './vectors';

/**
 * Vector memory and hybrid recall on real Postgres (docs/adr/0050). A test embedder with controlled
 * vectors stands for one that knows meaning ("ship" and "deploy" are one concept), since the built-in
 * local/hash-256 is lexical; it can be made to fail or hang.
 */
jest.setTimeout(120_000);

const CONCEPTS: [RegExp, number][] = [
  [/\b(ship|deploy|release|rollout)\w*/i, 0],
  [/\b(cat|kitten|pet|feline)\w*/i, 1],
  [/\b(colou?r|teal|crimson)\w*/i, 2],
];

/** `concepts/v1`: 4 dimensions, one per concept a text names (the last: none). */
class ConceptEmbedder implements EmbeddingProvider {
  readonly name = 'concepts';
  mode: 'ok' | 'fail' | 'hang' = 'ok';
  calls = 0;
  dimensionsOf(model: string): number | undefined {
    return model === 'v1' ? 4 : undefined;
  }
  embed(r: EmbeddingRequest): Promise<EmbeddingResponse> {
    this.calls++;
    if (this.mode === 'fail') return Promise.reject(new ProviderError('server', 'embedder is down'));
    if (this.mode === 'hang')
      return new Promise((_, reject) =>
        r.signal?.addEventListener('abort', () => reject(new Error('aborted'))),
      );
    const vectors = r.texts.map((t) => {
      const v = new Float32Array(4);
      for (const [re, i] of CONCEPTS) if (re.test(t)) v[i] = 1;
      if (v.every((x) => x === 0)) v[3] = 1;
      return normalize(v);
    });
    return Promise.resolve({ vectors, inputTokens: r.texts.length });
  }
}

describe('MemorySearch (vectors and hybrid)', () => {
  let env: TestEnv;
  let db: SqlDb;
  let concepts: ConceptEmbedder;
  let embedders: EmbedderRegistry;
  let memory: MemorySearch;

  beforeAll(async () => {
    env = await createTestEnv();
    db = sqlDbFor(poolOf(env.db), 'test');
    concepts = new ConceptEmbedder();
    embedders = new EmbedderRegistry();
    embedders.register(concepts);
    memory = new MemorySearch(db, embedders, { embedTimeoutMs: 200 });
  });

  afterAll(async () => {
    await env?.cleanup();
  });

  const rec = (
    tenantId: string,
    agentId: string,
    title: string,
    content: string,
    over: Partial<MemoryWrite> = {},
  ): MemoryWrite => ({
    tenantId,
    agentId,
    kind: 'fact',
    title,
    content,
    dedupeKey: `${title}:${content}`,
    provenance: { source: 'api' },
    ...over,
  });

  async function agentWith(name: string, settings: { embedder: string }) {
    const a = await seedTenant(env.db, name);
    await env.db.agent.update({ where: { id: a.agentId }, data: { embedder: settings.embedder } });
    return a;
  }

  async function embedAll(scope: { tenantId: string; agentId: string }) {
    const r = await embedPending(db, embedders, scope, { batchSize: 2, maxBatches: 100 });
    expect(r.done).toBe(true);
  }

  it('finds a paraphrase sharing no words by vector only, and fuses both paths with their path named', async () => {
    const a = await agentWith('paraphrase', { embedder: 'concepts/v1' });
    await memory.store.write([
      rec(a.tenantId, a.agentId, 'Release cadence', 'Deploys happen on Thursdays.'),
      rec(a.tenantId, a.agentId, 'Pets', 'The user has two cats named Miso and Tofu.'),
      rec(a.tenantId, a.agentId, 'Ship names', 'When naming a ship, we use birds.'),
    ]);
    await embedAll(a);
    const question = 'when do we ship?';
    // Full-text: no shared word with the Thursday record (stop words aside).
    const fts = await memory.search({ ...a, query: question, mode: 'fts' });
    expect(fts.hits.map((h) => h.title)).toEqual(['Ship names']);
    expect(fts.hits[0].path).toBe('fts');

    const vec = await memory.search({ ...a, query: question, mode: 'vector' });
    expect(vec.used).toBe('vector');
    expect(
      vec.hits
        .slice(0, 2)
        .map((h) => h.title)
        .sort(),
    ).toEqual(['Release cadence', 'Ship names']);
    expect(vec.hits.every((h) => h.path === 'vector')).toBe(true);

    // The agent's default with an embedder: hybrid.
    const hybrid = await memory.search({ ...a, query: question });
    expect(hybrid.mode).toBe('hybrid');
    expect(hybrid.used).toBe('hybrid');
    expect(hybrid.warning).toBeNull();
    const byTitle = new Map(hybrid.hits.map((h) => [h.title, h]));
    expect(byTitle.get('Ship names')?.path).toBe('both');
    expect(byTitle.get('Release cadence')?.path).toBe('vector');
    // Found by both ranks first (RRF: two reciprocal ranks beat one).
    expect(hybrid.hits[0].title).toBe('Ship names');
    expect(hybrid.embeddingTokens).toBe(1);
    expect(hybrid.embedder).toBe('concepts/v1');
  });

  it('filters by kind, tags and time range on both paths', async () => {
    const a = await agentWith('filters', { embedder: 'concepts/v1' });
    await memory.store.write([
      rec(a.tenantId, a.agentId, 'Deploy A', 'Rollout on Mondays.', { tags: ['ops', 'eu'] }),
      rec(a.tenantId, a.agentId, 'Deploy B', 'Rollout on Fridays.', { tags: ['ops'], kind: 'note' }),
    ]);
    await db.execute(sql`UPDATE memory_records SET created_at = '2026-01-01T00:00:00Z'
      WHERE agent_id = ${a.agentId}::uuid AND title = 'Deploy A'`);
    await embedAll(a);
    for (const mode of ['fts', 'vector', 'hybrid'] as const) {
      const titles = async (f: object) =>
        (await memory.search({ ...a, query: 'rollout', mode, ...f })).hits.map((h) => h.title).sort();
      expect(await titles({})).toEqual(['Deploy A', 'Deploy B']);
      expect(await titles({ tags: ['eu'] })).toEqual(['Deploy A']);
      expect(await titles({ tags: ['ops', 'eu'] })).toEqual(['Deploy A']);
      expect(await titles({ kinds: ['note'] })).toEqual(['Deploy B']);
      expect(await titles({ since: new Date('2026-06-01T00:00:00Z') })).toEqual(['Deploy B']);
      expect(await titles({ until: new Date('2026-06-01T00:00:00Z') })).toEqual(['Deploy A']);
    }
  });

  it('keeps answering from the old set while a model change re-embeds, never mixing dimensions, then switches', async () => {
    const a = await agentWith('model-change', { embedder: 'concepts/v1' });
    await memory.store.write(
      Array.from({ length: 5 }, (_, i) => rec(a.tenantId, a.agentId, `Deploy ${i}`, `Rollout number ${i}.`)),
    );
    await embedAll(a);
    expect((await agentMemoryState(db, a))?.vectorsModel).toBe('concepts/v1');

    // The embedder changes to one of 256 dimensions: one batch of 2 of 5 records.
    await env.db.agent.update({ where: { id: a.agentId }, data: { embedder: 'local/hash-256' } });
    const partial = await embedPending(db, embedders, a, { batchSize: 2, maxBatches: 1 });
    expect(partial).toMatchObject({ done: false, embedded: 2, target: 'local/hash-256' });
    const sets = await db.rows<{ model: string; dimensions: number; n: number }>(sql`
      SELECT model, dimensions, count(*)::int AS n FROM memory_embeddings
      WHERE agent_id = ${a.agentId}::uuid GROUP BY model, dimensions ORDER BY model`);
    expect(sets).toEqual([
      { model: 'concepts/v1', dimensions: 4, n: 5 },
      { model: 'local/hash-256', dimensions: 256, n: 2 },
    ]);
    expect(await embeddingStatus(db, a)).toEqual({
      model: 'concepts/v1',
      target: 'local/hash-256',
      embedded: 2,
      total: 5,
      complete: false,
    });
    // Recall still compares with the complete old set, with the old model's query vector.
    const during = await memory.search({ ...a, query: 'when do we ship', mode: 'vector' });
    expect(during.embedder).toBe('concepts/v1');
    expect(during.hits).toHaveLength(5);

    // The rest, then the switch: the old set is gone.
    const rest = await embedPending(db, embedders, a, { batchSize: 2, maxBatches: 10 });
    expect(rest).toMatchObject({ done: true, embedded: 3 });
    expect(await embeddingStatus(db, a)).toMatchObject({ model: 'local/hash-256', complete: true });
    const after = await db.rows<{ model: string }>(sql`
      SELECT DISTINCT model FROM memory_embeddings WHERE agent_id = ${a.agentId}::uuid`);
    expect(after).toEqual([{ model: 'local/hash-256' }]);
    const now = await memory.search({ ...a, query: 'rollout number', mode: 'vector' });
    expect(now.embedder).toBe('local/hash-256');
    expect(now.hits.length).toBeGreaterThan(0);
    // A re-run embeds nothing.
    expect(await embedPending(db, embedders, a)).toMatchObject({ done: true, embedded: 0 });

    // No embedder any more: the vectors go, recall is full-text.
    await env.db.agent.update({ where: { id: a.agentId }, data: { embedder: null } });
    expect(await embedPending(db, embedders, a)).toMatchObject({ done: true, target: null });
    expect(await agentMemoryState(db, a)).toMatchObject({ vectorsModel: null });
    const none = await db.first<{ n: number }>(
      sql`SELECT count(*)::int AS n FROM memory_embeddings WHERE agent_id = ${a.agentId}::uuid`,
    );
    expect(none?.n).toBe(0);
  });

  it('answers with full-text and a warning when the embedder fails or hangs; before any vector, says so', async () => {
    const a = await agentWith('embedder-down', { embedder: 'concepts/v1' });
    await memory.store.write([rec(a.tenantId, a.agentId, 'Ship names', 'When naming a ship, we use birds.')]);

    // No complete set yet: full-text, `no_vectors`.
    const early = await memory.search({ ...a, query: 'ship' });
    expect(early).toMatchObject({ mode: 'hybrid', used: 'fts', fallback: 'no_vectors' });
    expect(early.hits.map((h) => h.path)).toEqual(['fts']);

    await embedAll(a);
    try {
      for (const mode of ['fail', 'hang'] as const) {
        concepts.mode = mode;
        for (const asked of ['hybrid', 'vector'] as const) {
          const started = Date.now();
          const r = await memory.search({ ...a, query: 'ship', mode: asked });
          expect(Date.now() - started).toBeLessThan(5_000);
          expect(r).toMatchObject({ mode: asked, used: 'fts', fallback: 'embedder_failed' });
          expect(r.warning).toContain('concepts/v1');
          expect(r.hits.map((h) => [h.title, h.path])).toEqual([['Ship names', 'fts']]);
        }
      }
    } finally {
      concepts.mode = 'ok';
    }
  });

  it("never returns another agent's or tenant's records, by any path", async () => {
    const mine = await agentWith('isolation-mine', { embedder: 'concepts/v1' });
    const theirs = await agentWith('isolation-theirs', { embedder: 'concepts/v1' });
    const sibling = newId();
    await env.db.agent.create({
      data: {
        id: sibling,
        tenantId: mine.tenantId,
        name: 'sibling',
        model: 'scripted/demo',
        embedder: 'concepts/v1',
      },
    });
    const content = 'Deploys happen on Thursdays; ship it.';
    await memory.store.write([
      rec(mine.tenantId, mine.agentId, 'Mine', content),
      rec(theirs.tenantId, theirs.agentId, 'Other tenant', content),
      rec(mine.tenantId, sibling, 'Sibling agent', content),
    ]);
    for (const s of [mine, theirs, { tenantId: mine.tenantId, agentId: sibling }]) await embedAll(s);
    for (const mode of ['fts', 'vector', 'hybrid'] as const) {
      const r = await memory.search({ ...mine, query: 'when do we ship', mode, limit: 50 });
      expect(r.hits.map((h) => h.title)).toEqual(['Mine']);
      // The agent named with another tenant finds nothing at all.
      const crossed = await memory.search({
        tenantId: mine.tenantId,
        agentId: theirs.agentId,
        query: 'ship',
        mode,
      });
      expect(crossed.hits).toEqual([]);
    }
  });

  it('refuses a vector of the wrong dimension from an embedder and writes nothing', async () => {
    const a = await agentWith('bad-dimension', { embedder: 'concepts/v1' });
    await memory.store.write([rec(a.tenantId, a.agentId, 'Deploy', 'Rollout.')]);
    const liar: EmbeddingProvider = {
      name: 'liar',
      dimensionsOf: () => 8,
      embed: async (r) => ({
        vectors: r.texts.map(() => normalize(new Float32Array(4).fill(1))),
        inputTokens: 0,
      }),
    };
    const registry = new EmbedderRegistry();
    registry.register(liar);
    await env.db.agent.update({ where: { id: a.agentId }, data: { embedder: 'liar/x' } });
    await expect(embedPending(db, registry, a)).rejects.toThrow(/4 dimensions, not 8/);
    // An unknown embedder: a ProviderError, nothing written.
    await env.db.agent.update({ where: { id: a.agentId }, data: { embedder: 'nobody/x' } });
    await expect(embedPending(db, registry, a)).rejects.toThrow(/no embedder "nobody\/x"/);
    const n = await db.first<{ n: number }>(
      sql`SELECT count(*)::int AS n FROM memory_embeddings WHERE agent_id = ${a.agentId}::uuid`,
    );
    expect(n?.n).toBe(0);
    // The table refuses a vector whose length is not its dimension.
    const [{ id }] = await db.rows<{ id: string }>(
      sql`SELECT id FROM memory_records WHERE agent_id = ${a.agentId}::uuid`,
    );
    await expect(
      db.execute(sql`INSERT INTO memory_embeddings (record_id, tenant_id, agent_id, model, dimensions, embedding)
        VALUES (${id}::uuid, ${a.tenantId}::uuid, ${a.agentId}::uuid, 'x/y', 3, ${[1, 0]}::real[])`),
    ).rejects.toThrow(/memory_embeddings_dimensions_check/);
  });

  it('without pgvector (this Postgres) the migration added nothing and the exact scan keeps its newest-1,000 window', async () => {
    // The pgvector migration's DO block did nothing here: no extension, no embedding_v, no HNSW index.
    expect(await pgvectorSupport(db)).toBeNull();
    const cols = await db.rows<{ name: string }>(sql`
      SELECT attname AS name FROM pg_attribute
      WHERE attrelid = 'memory_embeddings'::regclass AND attnum > 0 AND NOT attisdropped`);
    expect(cols.map((c) => c.name)).not.toContain('embedding_v');
    const a = await agentWith('scan-window', { embedder: 'concepts/v1' });
    await memory.store.write([rec(a.tenantId, a.agentId, 'Oldest', 'We deploy on Thursdays.')]);
    // 1,000 newer records, none about shipping (one bulk statement; the embed job embeds them all).
    await db.execute(sql`
      INSERT INTO memory_records (id, tenant_id, agent_id, kind, title, content, dedupe_key, search, created_at)
      SELECT gen_random_uuid(), ${a.tenantId}::uuid, ${a.agentId}::uuid, 'fact', 'Filler ' || i, 'A cat.',
        'filler-' || i, to_tsvector('simple', 'a cat'), now() + i * interval '1 second'
      FROM generate_series(1, ${VECTOR_CANDIDATES}) i`);
    await embedPending(db, embedders, a, { batchSize: 500, maxBatches: 10 });
    const r = await memory.search({ ...a, query: 'when do we ship?', mode: 'vector', limit: 5 });
    expect(r.used).toBe('vector');
    // The scan compares the newest 1,000 only (docs/adr/0050): the oldest record is out of its reach.
    expect(r.hits.map((h) => h.title)).not.toContain('Oldest');
    // Inside the window it is found.
    const within = await memory.search({
      ...a,
      query: 'when do we ship?',
      mode: 'vector',
      limit: 5,
      until: new Date(Date.now() + 1000),
    });
    expect(within.hits[0]?.title).toBe('Oldest');
  });
});
