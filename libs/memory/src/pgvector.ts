import { createHash } from 'node:crypto';
import { Sql, sql, type SqlRunner, type SqlTransactor } from '@switchboard/store';
import { memoryFilters, rewoundFilter, sessionFilter, type MemoryFilters, type MemoryScope } from './store';

/**
 * The pgvector path of vector memory (docs/adr/0050, "pgvector"). Where the database has the `vector`
 * extension and `memory_embeddings.embedding_v` (migration 20261208010000 adds it only there), every
 * vector is also written to that column and the vector side searches an HNSW index: one partial
 * expression index per (model, dimensions), `USING hnsw ((embedding_v::vector(N)) vector_cosine_ops)
 * WHERE model = '…' AND dimensions = N`, created when the embed job starts a set. Without them the
 * exact scan of `vectors.ts` runs, unchanged.
 *
 * Everything here is plain SQL on `SqlRunner` (rows/first/execute of a `Sql`), so the statements
 * run as they are against any Postgres with pgvector, PGlite's included (the tests' and the
 * benchmark's, since these machines' Postgres has none).
 */

/** What the database offers: pgvector's version and whether `embedding_v` exists. */
export interface PgvectorSupport {
  version: string;
  /** pgvector ≥ 0.8: `hnsw.iterative_scan` exists. */
  iterativeScan: boolean;
}

/** HNSW indexes `vector` of at most this many dimensions (pgvector's limit); longer sets are scanned. */
export const HNSW_MAX_DIMENSIONS = 2000;
/**
 * `hnsw.ef_search` for a search returning `limit` (≤ 50): the candidate list the graph walk keeps.
 * pgvector's default is 40, below the deepest list hybrid asks for (50); 100, or twice the limit,
 * keeps the walk's candidates well above what is returned (recall@5 measured in docs/BENCHMARKS.md).
 */
export function efSearchFor(limit: number): number {
  return Math.max(100, 2 * limit);
}

const supportCache = new WeakMap<object, Promise<PgvectorSupport | null>>();

/**
 * The database's pgvector support, read from the catalog once per runner (the store's pool handle,
 * kept for the process's life) and cached; a failed read is not cached (the next call reads again).
 */
export function pgvectorSupport(db: SqlRunner): Promise<PgvectorSupport | null> {
  let cached = supportCache.get(db);
  if (!cached) {
    cached = readSupport(db);
    supportCache.set(db, cached);
    cached.catch(() => supportCache.delete(db));
  }
  return cached;
}

/** Forgets what was read for `db` (a test that adds or drops the extension). */
export function forgetPgvectorSupport(db: SqlRunner): void {
  supportCache.delete(db);
  indexCache.delete(db);
}

async function readSupport(db: SqlRunner): Promise<PgvectorSupport | null> {
  const row = await db.first<{ version: string | null; column: boolean }>(sql`
    SELECT (SELECT extversion FROM pg_extension WHERE extname = 'vector') AS version,
      EXISTS (
        SELECT 1 FROM pg_attribute a
        WHERE a.attrelid = to_regclass('memory_embeddings') AND a.attname = 'embedding_v'
          AND NOT a.attisdropped AND format_type(a.atttypid, NULL) = 'vector'
      ) AS "column"`);
  if (!row?.version || !row.column) return null;
  const [major, minor] = row.version.split('.').map((n) => Number.parseInt(n, 10));
  return { version: row.version, iterativeScan: major > 0 || (major === 0 && minor >= 8) };
}

/**
 * A model name as a SQL literal, or null when it is not one we put in statement text. A partial
 * index's predicate and the query that must match it carry the model as a literal (a parameter would
 * not prove the predicate in a generic plan): printable ASCII without a backslash, quotes doubled,
 * ≤ 200 characters. Embedder names are `<provider>/<model>` from the registry; anything else keeps
 * the exact scan.
 */
export function modelLiteral(model: string): string | null {
  if (!/^[\x20-\x5b\x5d-\x7e]{1,200}$/.test(model)) return null;
  return `'${model.replace(/'/g, "''")}'`;
}

/** Whether the (model, dimensions) set can have an HNSW index. */
export function hnswEligible(model: string, dimensions: number): boolean {
  return (
    Number.isInteger(dimensions) &&
    dimensions >= 1 &&
    dimensions <= HNSW_MAX_DIMENSIONS &&
    modelLiteral(model) !== null
  );
}

/** The set's index name: a hash of model and dimensions, so any model name gives a valid identifier. */
export function hnswIndexName(model: string, dimensions: number): string {
  const hash = createHash('sha256').update(`${model}\n${dimensions}`).digest('hex').slice(0, 24);
  return `memory_embeddings_hnsw_${hash}`;
}

/** The set's partial HNSW index (statement text only: DDL takes no parameters). */
export function hnswIndexSql(model: string, dimensions: number): Sql {
  const literal = modelLiteral(model);
  if (literal === null || !hnswEligible(model, dimensions))
    throw new RangeError(`no HNSW index for ${model}`);
  return new Sql(
    [
      `CREATE INDEX IF NOT EXISTS ${hnswIndexName(model, dimensions)} ON memory_embeddings ` +
        `USING hnsw ((embedding_v::vector(${dimensions})) vector_cosine_ops) ` +
        `WHERE model = ${literal} AND dimensions = ${dimensions}`,
    ],
    [],
  );
}

const indexCache = new WeakMap<object, Set<string>>();

/**
 * Creates the set's HNSW index unless it exists (once per runner and set: later calls cost nothing).
 * A plain CREATE INDEX: for a new set it indexes no row and returns at once; where rows of the set
 * exist already it builds under a SHARE lock (writes of vectors wait, reads go on). Two workers
 * creating the same index at once: the loser's duplicate-name error is taken as done. False when
 * the set cannot have one (more than 2,000 dimensions, a model name not put in SQL text).
 */
export async function ensureHnswIndex(db: SqlRunner, model: string, dimensions: number): Promise<boolean> {
  if (!hnswEligible(model, dimensions)) return false;
  const name = hnswIndexName(model, dimensions);
  let made = indexCache.get(db);
  if (!made) indexCache.set(db, (made = new Set()));
  if (made.has(name)) return true;
  try {
    await db.execute(hnswIndexSql(model, dimensions));
  } catch (err) {
    const code = (err as { code?: string }).code;
    // 42P07 duplicate_table, 23505 unique_violation (pg_class's name index): created meanwhile.
    if (code !== '42P07' && code !== '23505') throw err;
  }
  made.add(name);
  return true;
}

export interface HnswSearchQuery extends MemoryScope, MemoryFilters {
  model: string;
  vector: Float32Array;
  limit: number;
  excludeSessionId?: string;
}

/** The query vector as pgvector's text form, `[x,y,…]`. */
export function vectorLiteral(vector: Float32Array): string {
  return `[${Array.from(vector).join(',')}]`;
}

/**
 * The statement: the agent's vectors of the set nearest by cosine distance, filters applied in the
 * same statement (on the record, joined by key). `ordered` (the HNSW form) orders by the index's own
 * expression, `embedding_v::vector(N) <=> q` (by its output name: the planner resolves it to the
 * expression), so the planner can walk the set's index; the exact form
 * orders by `embedding_v <=> q`, which no index serves: every vector of the agent matching the filters
 * is compared (in pgvector's C, unbounded: no newest-1,000 window). Relaxed order from an iterative
 * scan is put right by the outer ORDER BY (pgvector's documented pattern: a MATERIALIZED CTE).
 */
export function nearestSql(q: HnswSearchQuery, form: 'hnsw' | 'exact'): Sql {
  const dims = q.vector.length;
  const literal = modelLiteral(q.model);
  if (literal === null || !Number.isInteger(dims) || dims < 1)
    throw new RangeError(`no pgvector search for ${q.model}`);
  const v = new Sql([`e.embedding_v::vector(${dims})`], []);
  const distance =
    form === 'hnsw'
      ? sql`${v} <=> ${vectorLiteral(q.vector)}::vector(${raw(dims)})`
      : sql`e.embedding_v <=> ${vectorLiteral(q.vector)}::vector`;
  return sql`
    WITH near AS MATERIALIZED (
      SELECT e.record_id AS id, m.updated_at, ${distance} AS distance
      FROM memory_embeddings e JOIN memory_records m ON m.id = e.record_id
      WHERE e.model = ${raw(literal)} AND e.dimensions = ${raw(dims)}
        AND e.tenant_id = ${q.tenantId}::uuid AND e.agent_id = ${q.agentId}::uuid
        AND m.tenant_id = ${q.tenantId}::uuid AND m.agent_id = ${q.agentId}::uuid
        ${memoryFilters(q, 'm')} ${sessionFilter(q.excludeSessionId, 'm')} ${rewoundFilter(q, 'm')}
      ORDER BY distance
      LIMIT ${q.limit}
    )
    SELECT id, (1 - distance)::float8 AS score FROM near
    ORDER BY distance, updated_at DESC, id`;
}

function raw(text: string | number): Sql {
  return new Sql([String(text)], []);
}

function isTransactor(db: SqlRunner): db is SqlTransactor {
  return typeof (db as Partial<SqlTransactor>).transaction === 'function';
}

/**
 * The agent's records nearest to `q.vector` on the pgvector path, best first (score: cosine
 * similarity). The HNSW walk runs in a transaction with `hnsw.ef_search` = `efSearchFor(limit)` and,
 * on pgvector ≥ 0.8, `hnsw.iterative_scan = relaxed_order`: the index is shared by every tenant's
 * vectors of the set, so a walk that stopped after ef_search candidates would return fewer than
 * `limit` once the agent/tenant/filter conditions drop most of them; the iterative scan keeps walking
 * until `limit` rows pass (up to `hnsw.max_scan_tuples`, 20,000 by default). Should it still return
 * fewer than `limit` (a very selective filter, pgvector < 0.8), the exact form answers instead, so
 * under-return never hides a record the scan would have found. The planner may also pick the
 * (tenant, agent, model) b-tree and sort when the agent's vectors are few: exact, and as fast.
 */
export async function hnswSearch(
  db: SqlRunner,
  support: PgvectorSupport,
  q: HnswSearchQuery,
): Promise<{ id: string; score: number }[]> {
  const run = async (tx: SqlRunner) => {
    await tx.execute(sql`SELECT set_config('hnsw.ef_search', ${String(efSearchFor(q.limit))}, true)
      ${support.iterativeScan ? sql`, set_config('hnsw.iterative_scan', 'relaxed_order', true)` : sql``}`);
    return tx.rows<{ id: string; score: number }>(nearestSql(q, 'hnsw'));
  };
  // Outside a transaction `set_config(…, true)` would last one statement: the defaults then apply
  // (ef_search 40, no iterative scan), and the exact form below makes up for any shortfall.
  const near = isTransactor(db)
    ? await db.transaction(run)
    : await db.rows<{ id: string; score: number }>(nearestSql(q, 'hnsw'));
  if (near.length >= q.limit) return near;
  return db.rows<{ id: string; score: number }>(nearestSql(q, 'exact'));
}
