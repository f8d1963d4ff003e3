import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite/vector';
import { newId } from '@switchboard/contracts';
import {
  EmbedderRegistry,
  normalize,
  type EmbeddingProvider,
  type EmbeddingRequest,
  type EmbeddingResponse,
} from '@switchboard/providers';
import { sql, type SqlTransactor } from '@switchboard/store';
import { migrationSql, pgliteRunner } from '@switchboard/testing';
import {
  efSearchFor,
  hnswIndexName,
  hnswSearch,
  modelLiteral,
  nearestSql,
  pgvectorSupport,
} from './pgvector';
import { MemorySearch } from './search';
import { writeMemory } from './store';
import type { MemoryWrite } from './types';
import { embedPending, VECTOR_CANDIDATES } from './vectors';

/**
 * The pgvector path (docs/adr/0050, "pgvector") against a real pgvector: PGlite (Postgres 17 in
 * WASM) with its bundled pgvector 0.8, since these machines' Postgres has none. The tables come from
 * the project's own migrations (the memory ones, on a minimal `agents`), the pgvector migration
 * included; the statements are the store's, run through `pgliteRunner`.
 */
jest.setTimeout(300_000);

/** `axis/d8` and `axis/d4`: the vector written in the text as `@[x,y,…]` (normalised), padded or cut. */
class AxisEmbedder implements EmbeddingProvider {
  readonly name = 'axis';
  dimensionsOf(model: string): number | undefined {
    return model === 'd8' ? 8 : model === 'd4' ? 4 : undefined;
  }
  embed(r: EmbeddingRequest): Promise<EmbeddingResponse> {
    const n = this.dimensionsOf(r.model)!;
    const vectors = r.texts.map((t) => {
      const m = /@\[([-\d.,e ]+)\]/.exec(t);
      const v = new Float32Array(n);
      const xs = m ? m[1].split(',').map(Number) : [0, 0, 0, 1];
      xs.slice(0, n).forEach((x, i) => (v[i] = x));
      return normalize(v);
    });
    return Promise.resolve({ vectors, inputTokens: r.texts.length });
  }
}

/** A deterministic generator (mulberry32), so the filler vectors are the same on every run. */
function prng(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('vector memory on pgvector (PGlite)', () => {
  let pg: PGlite;
  let db: SqlTransactor;
  let memory: MemorySearch;
  const embedders = new EmbedderRegistry();
  embedders.register(new AxisEmbedder());

  const T1 = newId();
  const T2 = newId();
  const A = { tenantId: T1, agentId: newId() }; // d8, 1,200+ records
  const B = { tenantId: T2, agentId: newId() }; // d8, another tenant
  const C = { tenantId: T1, agentId: newId() }; // d8, another agent of the same tenant
  const D = { tenantId: T1, agentId: newId() }; // d4
  const Z = { tenantId: T1, agentId: newId() }; // embedded before the pgvector migration

  const rec = (
    scope: { tenantId: string; agentId: string },
    title: string,
    v: number[],
    over: Partial<MemoryWrite> = {},
  ): MemoryWrite => ({
    ...scope,
    kind: 'fact',
    title,
    content: `about ${title} @[${v.join(',')}]`,
    dedupeKey: title,
    provenance: { source: 'api' },
    ...over,
  });

  async function agent(scope: { tenantId: string; agentId: string }, embedder: string) {
    await db.execute(
      sql`INSERT INTO agents (id, tenant_id, embedder) VALUES (${scope.agentId}::uuid, ${scope.tenantId}::uuid, ${embedder})`,
    );
  }

  async function embedAll(scope: { tenantId: string; agentId: string }) {
    const r = await embedPending(db, embedders, scope, { batchSize: 64, maxBatches: 1000 });
    expect(r.done).toBe(true);
  }

  beforeAll(async () => {
    pg = new PGlite({ extensions: { vector } });
    db = pgliteRunner(pg);
    // A minimal agents table (the columns vector memory reads), then the memory migrations as they are.
    await pg.exec('CREATE TABLE agents (id uuid PRIMARY KEY, tenant_id uuid NOT NULL, embedder text)');
    // And of turns, what recall reads to leave out records of rewound turns (docs/adr/0053).
    await pg.exec(
      'CREATE TABLE turns (id uuid PRIMARY KEY, tenant_id uuid NOT NULL, agent_id uuid NOT NULL, rewound_at timestamptz)',
    );
    // And of sessions, the fork lineage recall leaves out the records of.
    await pg.exec('CREATE TABLE sessions (id uuid PRIMARY KEY, forked_from_session_id uuid)');
    // The memory insert reads the tenant's encryption mode (docs/adr/0067): none here, so not strict.
    await pg.exec('CREATE TABLE tenants (id uuid PRIMARY KEY, settings jsonb)');
    await pg.exec(migrationSql('20261124000100_memory'));
    await pg.exec(migrationSql('20261207020000_memory_vectors'));
    // Z's vectors exist before pgvector does: the migration copies them and indexes their set.
    await agent(Z, 'axis/d8');
    await writeMemory(db, [rec(Z, 'z one', [1, 0, 0, 0, 0, 0, 0, 0])]);
    await db.execute(sql`
      INSERT INTO memory_embeddings (record_id, tenant_id, agent_id, model, dimensions, embedding)
      SELECT id, tenant_id, agent_id, 'axis/d8', 8, '{1,0,0,0,0,0,0,0}'::real[] FROM memory_records`);
    await pg.exec(migrationSql('20261208010000_memory_pgvector'));
    memory = new MemorySearch(db, embedders);
  });

  afterAll(async () => {
    await pg?.close();
  });

  it('the migration adds the extension and embedding_v, copies existing vectors and indexes their set', async () => {
    expect(await pgvectorSupport(db)).toEqual({ version: '0.8.1', iterativeScan: true });
    const z = await db.first<{ v: string }>(
      sql`SELECT embedding_v::text AS v FROM memory_embeddings WHERE agent_id = ${Z.agentId}::uuid`,
    );
    expect(z?.v).toBe('[1,0,0,0,0,0,0,0]');
    const idx = await db.rows<{ indexname: string; indexdef: string }>(
      sql`SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'memory_embeddings' AND indexdef LIKE '%hnsw%'`,
    );
    // The name the migration computed in SQL is the one the code derives.
    expect(idx.map((i) => i.indexname)).toEqual([hnswIndexName('axis/d8', 8)]);
    expect(idx[0].indexdef).toContain("WHERE ((model = 'axis/d8'::text) AND (dimensions = 8))");
  });

  it("finds the nearest records in order over all the agent's records, the oldest beyond the newest 1,000 included", async () => {
    await agent(A, 'axis/d8');
    const rand = prng(33);
    // Filler: vectors pointing away from the query [1,0,…] (first component ≤ 0).
    const filler = Array.from({ length: VECTOR_CANDIDATES + 200 }, (_, i) =>
      rec(A, `filler ${i}`, [-rand(), rand(), rand(), rand(), rand(), rand(), rand(), rand()]),
    );
    await writeMemory(db, [
      rec(A, 'oldest exact', [1, 0.01, 0, 0, 0, 0, 0, 0]),
      rec(A, 'near one', [0.9, 0.1, 0, 0, 0, 0, 0, 0]),
      rec(A, 'near two', [0.7, 0.3, 0, 0, 0, 0, 0, 0], { kind: 'note', tags: ['x'] }),
      rec(A, 'near three', [0.5, 0.5, 0, 0, 0, 0, 0, 0]),
    ]);
    for (let i = 0; i < filler.length; i += 400) await writeMemory(db, filler.slice(i, i + 400));
    // 'oldest exact' is older than every filler record: outside the exact scan's newest-1,000 window.
    await db.execute(
      sql`UPDATE memory_records SET created_at = now() - interval '1 year' WHERE title = 'oldest exact'`,
    );
    await db.execute(
      sql`UPDATE memory_records SET created_at = now() - interval '30 days' WHERE title LIKE 'near %'`,
    );
    await embedAll(A);
    // The set's index was there already (Z's, made by the migration): one HNSW index for axis/d8.
    const r = await memory.search({ ...A, query: 'q @[1,0,0,0,0,0,0,0]', mode: 'vector', limit: 5 });
    expect(r.used).toBe('vector');
    expect(r.hits.slice(0, 4).map((h) => h.title)).toEqual([
      'oldest exact',
      'near one',
      'near two',
      'near three',
    ]);
    expect(r.hits[0].score).toBeCloseTo(1, 3);
    expect(r.hits).toHaveLength(5);

    // The same order as an exact computation over every vector of A.
    const all = await db.rows<{ title: string; cos: number }>(sql`
      SELECT m.title, (1 - (e.embedding_v <=> '[1,0,0,0,0,0,0,0]'::vector))::float8 AS cos
      FROM memory_embeddings e JOIN memory_records m ON m.id = e.record_id
      WHERE e.agent_id = ${A.agentId}::uuid AND e.model = 'axis/d8' ORDER BY cos DESC LIMIT 5`);
    expect(r.hits.map((h) => h.title)).toEqual(all.map((a) => a.title));

    // Hybrid: full-text ranks among the newest 1,000 only (ADR 0022), so the word "oldest" does not
    // reach that record; the vector side does.
    const hybrid = await memory.search({ ...A, query: 'oldest @[1,0,0,0,0,0,0,0]', limit: 5 });
    expect(hybrid.used).toBe('hybrid');
    expect(hybrid.hits.find((h) => h.title === 'oldest exact')?.path).toBe('vector');
  });

  it("walks the set's HNSW index (EXPLAIN), with ef_search and the iterative scan set for the statement", async () => {
    const q = {
      ...A,
      model: 'axis/d8',
      vector: normalize(new Float32Array([1, 0, 0, 0, 0, 0, 0, 0])),
      limit: 10,
    };
    await db.execute(sql`ANALYZE memory_embeddings, memory_records`);
    const plan = await db.transaction(async (tx) => {
      await tx.execute(
        sql`SELECT set_config('hnsw.ef_search', ${String(efSearchFor(10))}, true), set_config('hnsw.iterative_scan', 'relaxed_order', true)`,
      );
      const rows = await tx.rows<{ 'QUERY PLAN': string }>(sql`EXPLAIN ${nearestSql(q, 'hnsw')}`);
      return rows.map((p) => p['QUERY PLAN']).join('\n');
    });
    expect(plan).toContain(hnswIndexName('axis/d8', 8));
    // On that plan, the walk reaches the record outside the newest 1,000 (no exact fallback: a full page).
    const near = await hnswSearch(db, (await pgvectorSupport(db))!, q);
    expect(near).toHaveLength(10);
    const oldest = await db.first<{ id: string }>(
      sql`SELECT id FROM memory_records WHERE title = 'oldest exact'`,
    );
    expect(near[0].id).toBe(oldest?.id);
    // The setting lasted the transaction only.
    const after = await db.first<{ s: string }>(sql`SELECT current_setting('hnsw.iterative_scan') AS s`);
    expect(after?.s).toBe('off');
  });

  it('applies kind, tags and time filters inside the statement', async () => {
    const q = 'q @[1,0,0,0,0,0,0,0]';
    const tagged = await memory.search({ ...A, query: q, mode: 'vector', tags: ['x'], limit: 5 });
    expect(tagged.hits.map((h) => h.title)).toEqual(['near two']);
    const notes = await memory.search({ ...A, query: q, mode: 'vector', kinds: ['note'], limit: 5 });
    expect(notes.hits.map((h) => h.title)).toEqual(['near two']);
    const recent = await memory.search({
      ...A,
      query: q,
      mode: 'vector',
      since: new Date(Date.now() - 40 * 86_400_000),
      limit: 3,
    });
    expect(recent.hits.map((h) => h.title)).toEqual(['near one', 'near two', 'near three']);
    const old = await memory.search({
      ...A,
      query: q,
      mode: 'vector',
      until: new Date(Date.now() - 100 * 86_400_000),
      limit: 3,
    });
    expect(old.hits.map((h) => h.title)).toEqual(['oldest exact']);
  });

  it("never returns another tenant's, agent's or model's vectors, and never compares two dimensions", async () => {
    for (const [scope, model] of [
      [B, 'axis/d8'],
      [C, 'axis/d8'],
      [D, 'axis/d4'],
    ] as const) {
      await agent(scope, model);
      // Each holds the query's exact vector: the best possible hit, were it ever compared.
      await writeMemory(db, [
        rec(scope, `exact of ${scope.agentId}`, [1, 0, 0, 0, 0, 0, 0, 0]),
        rec(scope, `other of ${scope.agentId}`, [0, 1, 0, 0, 0, 0, 0, 0]),
      ]);
      await embedAll(scope);
    }
    const q = 'q @[1,0,0,0,0,0,0,0]';
    const a = await memory.search({ ...A, query: q, mode: 'vector', limit: 50 });
    const aIds = new Set(
      (
        await db.rows<{ title: string }>(
          sql`SELECT title FROM memory_records WHERE agent_id = ${A.agentId}::uuid`,
        )
      ).map((r) => r.title),
    );
    expect(a.hits).toHaveLength(50);
    expect(a.hits.every((h) => aIds.has(h.title))).toBe(true);
    for (const scope of [B, C, D]) {
      const own = await memory.search({ ...scope, query: q, mode: 'vector', limit: 10 });
      expect(own.hits.map((h) => h.title)).toEqual([
        `exact of ${scope.agentId}`,
        `other of ${scope.agentId}`,
      ]);
    }
    // A second set for A of another dimension (a model change under way): A's recall keeps comparing
    // its axis/d8 set; the d4 vectors sit beside it, indexed apart.
    await db.execute(sql`UPDATE agents SET embedder = 'axis/d4' WHERE id = ${A.agentId}::uuid`);
    const partial = await embedPending(db, embedders, A, { batchSize: 64, maxBatches: 2 });
    expect(partial.done).toBe(false);
    const again = await memory.search({ ...A, query: q, mode: 'vector', limit: 4 });
    expect(again.embedder).toBe('axis/d8');
    expect(again.hits.map((h) => h.title)).toEqual(['oldest exact', 'near one', 'near two', 'near three']);
    const idx = await db.rows<{ indexname: string }>(
      sql`SELECT indexname FROM pg_indexes WHERE tablename = 'memory_embeddings' AND indexdef LIKE '%hnsw%' ORDER BY 1`,
    );
    expect(idx.map((i) => i.indexname).sort()).toEqual(
      [hnswIndexName('axis/d8', 8), hnswIndexName('axis/d4', 4)].sort(),
    );
  });

  it('puts only a plain model name into statement text', () => {
    expect(modelLiteral("acme/it's")).toBe("'acme/it''s'");
    expect(modelLiteral('back\\slash')).toBeNull();
    expect(modelLiteral('new\nline')).toBeNull();
    expect(modelLiteral('')).toBeNull();
    expect(hnswIndexName("acme/it's", 8)).toMatch(/^memory_embeddings_hnsw_[0-9a-f]{24}$/);
  });
});
