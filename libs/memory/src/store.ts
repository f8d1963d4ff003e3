import { newId, PREFERENCE_CHARS, type ClaimedPreference } from '@switchboard/contracts';
import { contentCipher } from '@switchboard/database';
import { join, json, planEachCall, Sql, sql, type SqlRunner } from '@switchboard/store';
import { SEARCH_CONFIG, searchQuery, searchText } from './cjk';
import { snippetOf } from './snippet';
import { decodeSourceRef, encodeSourceRef } from './source-ref';
import {
  MEMORY_CONTENT_MAX_CHARS,
  MEMORY_DEDUPE_KEY_MAX_CHARS,
  MEMORY_GET_DEFAULT_CHARS,
  MEMORY_GET_MAX_CHARS,
  MEMORY_KINDS,
  MEMORY_MAX_TAGS,
  MEMORY_SEARCH_MAX_LIMIT,
  MEMORY_TAG_PATTERN,
  MEMORY_TITLE_MAX_CHARS,
  type MemoryDocument,
  type MemoryHit,
  type MemoryItem,
  type MemoryKind,
  type MemoryProvenance,
  type MemoryWrite,
} from './types';

const CONFIG = new Sql([`'${SEARCH_CONFIG}'::regconfig`], []);

/**
 * The search vector of a title and content: the title weighs more (A) than the content (B). Empty
 * for a tenant whose settings set strict encryption (docs/adr/0067): no lexeme of its content is kept,
 * and full-text search finds nothing of it (recall falls back to what needs no index).
 */
function vector(tenantId: string, title: string, content: string, strict?: boolean): Sql {
  const lexemes = sql`setweight(to_tsvector(${CONFIG}, ${searchText(title)}), 'A') ||
      setweight(to_tsvector(${CONFIG}, ${searchText(content)}), 'B')`;
  // Prepared (a cipher is set): the mode is known, ENCRYPTION_DEFAULT_MODE included.
  if (strict !== undefined) return strict ? sql`''::tsvector` : lexemes;
  return sql`CASE WHEN (SELECT settings->'encryption'->>'mode' FROM tenants WHERE id = ${tenantId}::uuid) = 'strict'
    THEN ''::tsvector
    ELSE setweight(to_tsvector(${CONFIG}, ${searchText(title)}), 'A') ||
      setweight(to_tsvector(${CONFIG}, ${searchText(content)}), 'B') END`;
}

/**
 * A record ready for its insert (docs/adr/0067): its title and content as stored — sealed for a
 * tenant whose encryption mode is on or strict — and whether the mode is strict (no lexeme kept).
 * The search vector is still derived from the plaintext, inside the statement (a parameter, never a
 * stored column).
 */
export interface PreparedMemoryWrite extends MemoryWrite {
  stored?: { title: string; content: string };
  strict?: boolean;
}

/**
 * `records` ready for `memoryInsertSql`: sealed for their tenant when a content cipher is set and the
 * tenant's mode (its setting, else ENCRYPTION_DEFAULT_MODE) is on or strict. Without a cipher the same
 * array, no query.
 */
export async function prepareMemory(records: MemoryWrite[]): Promise<PreparedMemoryWrite[]> {
  const cipher = contentCipher();
  if (!cipher) return records;
  return Promise.all(
    records.map(async (r): Promise<PreparedMemoryWrite> => {
      const mode = await cipher.mode(r.tenantId);
      if (mode === 'off') return { ...r, strict: false };
      return {
        ...r,
        strict: mode === 'strict',
        stored: {
          title: await cipher.sealText(r.tenantId, r.title),
          content: await cipher.sealText(r.tenantId, r.content),
        },
      };
    }),
  );
}

/** Whether a content cipher is set, so that a memory text read may be sealed (docs/adr/0067). */
const sealable = () => contentCipher() !== undefined;

/**
 * `left(column, max)` — unless the value is sealed, which is read whole (a cut sealed value does not
 * open) and cut by `fitContent` once opened. Exactly `left(column, max)` without a content cipher.
 */
export function cutContent(column: string, max: number): Sql {
  const c = new Sql([column], []);
  if (!sealable()) return sql`left(${c}, ${max})`;
  return sql`CASE WHEN ${c} LIKE 'sbe1.%' THEN ${c} ELSE left(${c}, ${max}) END`;
}

/** `char_length(column)`, or -1 for a sealed value (counted by `fitContent` once opened). */
export function contentChars(column: string): Sql {
  const c = new Sql([column], []);
  if (!sealable()) return sql`char_length(${c})`;
  return sql`CASE WHEN ${c} LIKE 'sbe1.%' THEN -1 ELSE char_length(${c}) END`;
}

/** A row read with `cutContent`/`contentChars`, its opened content cut to `max` and counted. */
export function fitContent<R extends { content: string; totalChars: number }>(r: R, max: number): R {
  if (r.totalChars >= 0) return r;
  const chars = Array.from(r.content);
  return {
    ...r,
    content: chars.length > max ? chars.slice(0, max).join('') : r.content,
    totalChars: chars.length,
  };
}

function check(r: MemoryWrite): void {
  if (!MEMORY_KINDS.includes(r.kind))
    throw new RangeError(`memory kind must be one of ${MEMORY_KINDS.join(', ')}`);
  if (r.title.length > MEMORY_TITLE_MAX_CHARS)
    throw new RangeError(`memory title is over ${MEMORY_TITLE_MAX_CHARS} characters`);
  if (r.content.length === 0 || r.content.length > MEMORY_CONTENT_MAX_CHARS)
    throw new RangeError(`memory content must be 1 to ${MEMORY_CONTENT_MAX_CHARS} characters`);
  if (r.dedupeKey.length === 0 || r.dedupeKey.length > MEMORY_DEDUPE_KEY_MAX_CHARS)
    throw new RangeError(`memory dedupe key must be 1 to ${MEMORY_DEDUPE_KEY_MAX_CHARS} characters`);
  const tags = r.tags ?? [];
  if (tags.length > MEMORY_MAX_TAGS || tags.some((t) => !MEMORY_TAG_PATTERN.test(t)))
    throw new RangeError(`at most ${MEMORY_MAX_TAGS} tags of 1 to 50 letters, digits, "_", "-", "." or ":"`);
}

/**
 * One statement inserting `records`, `ON CONFLICT (agent_id, dedupe_key) DO NOTHING`, returning the
 * ids it inserted. A hook runs it in its own transaction next to its `hook_runs` insert, or embeds it
 * as a data-modifying CTE of its one statement (`WITH mem AS (${memoryInsertSql(records)}) ...`), so
 * the records and the hook's run commit together and a re-run writes nothing twice. `when` inserts
 * them only when a condition of that statement holds (the hook's run was claimed by it).
 * Throws a RangeError for a record out of bounds (kind, title, content, dedupe key): cut before.
 */
export function memoryInsertSql(records: PreparedMemoryWrite[], when?: Sql): Sql {
  const unique = [...new Map(records.map((r) => [`${r.agentId}\u0000${r.dedupeKey}`, r])).values()];
  if (unique.length === 0) return sql`SELECT NULL::uuid AS id WHERE false`;
  for (const r of unique) check(r);
  // With a cipher set, a record not prepared would go in clear: refuse rather than leak.
  if (sealable() && unique.some((r) => r.strict === undefined))
    throw new Error('memory records must be prepared (prepareMemory) before their insert is built');
  const rows = unique.map(
    (
      r,
    ) => sql`(${newId()}::uuid, ${r.tenantId}::uuid, ${r.agentId}::uuid, ${r.kind}, ${r.stored?.title ?? r.title},
      ${r.stored?.content ?? r.content}, ${r.dedupeKey}, ${json(r.provenance)}::jsonb,
      ${vector(r.tenantId, r.title, r.content, r.strict)}, ${[...new Set(r.tags ?? [])]}::text[])`,
  );
  const columns = sql`(id, tenant_id, agent_id, kind, title, content, dedupe_key, provenance, search, tags)`;
  // With `when`: only when that condition holds (e.g. `EXISTS (SELECT 1 FROM claim)` of the caller's CTE).
  const source = when
    ? sql`SELECT * FROM (VALUES ${join(rows)}) AS v ${columns} WHERE ${when}`
    : sql`VALUES ${join(rows)}`;
  return sql`INSERT INTO memory_records ${columns}
    ${source}
    ON CONFLICT (agent_id, dedupe_key) DO NOTHING
    RETURNING id`;
}

/** Inserts `records` on `db` (the pool or the caller's open transaction); the number written. */
export async function writeMemory(db: SqlRunner, records: MemoryWrite[]): Promise<number> {
  if (records.length === 0) return 0;
  return db.execute(memoryInsertSql(await prepareMemory(records)));
}

export interface MemoryScope {
  tenantId: string;
  agentId: string;
}

/** What a search or a listing keeps (docs/adr/0050): kinds, a creation time range, tags all present. */
export interface MemoryFilters {
  kinds?: MemoryKind[];
  /** Created at or after. */
  since?: Date;
  /** Created before. */
  until?: Date;
  /** Records carrying every one of these tags. */
  tags?: string[];
}

export interface MemorySearchQuery extends MemoryScope, MemoryFilters {
  query: string;
  limit?: number;
  /** Leave out records distilled from this session (recall: its turns are already in the history). */
  excludeSessionId?: string;
  /**
   * Matches ranked at most, newest first (default and ceiling `RANK_CANDIDATES`). Automatic recall,
   * which runs before every turn, ranks fewer (`RECALL_RANK_CANDIDATES`) than an explicit search.
   */
  candidates?: number;
}

export interface MemoryListQuery extends MemoryScope, MemoryFilters {
  limit?: number;
  /** The record id of the previous page's last item. */
  after?: string;
}

/** A memory record as the store's and hybrid search's reads select it. */
export interface MemoryRecordRow {
  id: string;
  kind: MemoryKind;
  title: string;
  content: string;
  totalChars: number;
  provenance: MemoryProvenance;
  tags: string[];
  createdAt: Date;
  updatedAt: Date;
}

const PREVIEW_CHARS = 200;
/** The tag that marks a record as one of the user's preferences or habits (docs/adr/0052). */
export const PREFERENCE_TAG = 'preference';
/** The partial index's predicate, verbatim (a planner matches it only so). */
const PREFERENCE_TAGGED = new Sql([`tags @> '{${PREFERENCE_TAG}}'::text[]`], []);
/** Matches ranked per search at most (the newest ones): bounds a search's cost whatever the query. */
export const RANK_CANDIDATES = 1000;
/** The default bound of automatic recall, which runs before every turn (`RECALL_CANDIDATES`). */
export const RECALL_RANK_CANDIDATES = 250;

/**
 * An agent's memory (docs/adr/0022): records in `memory_records`, searched with Postgres full-text
 * search. Every read and delete is filtered by tenant AND agent: nothing of another agent or tenant
 * is ever found, whatever ref or query is given. `db` is the store's handle (`SqlDb`) on the shared
 * pool; each call is one statement outside any transaction.
 */
export class MemoryStore {
  constructor(private readonly db: SqlRunner) {}

  write(records: MemoryWrite[]): Promise<number> {
    return writeMemory(this.db, records);
  }

  /** Writes one record; its `source_ref`, or null when the agent already has a record with its dedupe key. */
  async add(record: MemoryWrite): Promise<string | null> {
    const [row] = await this.db.rows<{ id: string }>(memoryInsertSql(await prepareMemory([record])));
    return row ? encodeSourceRef(row.id) : null;
  }

  /** Best matches first (rank, then newest); [] for a query with no searchable term. */
  async search(q: MemorySearchQuery): Promise<MemoryHit[]> {
    const tsquery = searchQuery(q.query);
    if (tsquery === null) return [];
    const limit = Math.min(Math.max(q.limit ?? 8, 1), MEMORY_SEARCH_MAX_LIMIT);
    const candidates = Math.min(Math.max(q.candidates ?? RANK_CANDIDATES, limit), RANK_CANDIDATES);
    // Ranked among the newest `candidates` matches: a query of common words matches most of an
    // agent's records, and ranking them all costs ~4 µs a row (200 ms at 50k); the newest
    // candidates come off the (tenant, agent, created_at) index newest first and the scan stops
    // there (not off the primary key: other agents' newer rows would be scanned past). They are
    // ranked in that scan (the row is at hand) and only the `limit` best are read again for their
    // text: joining every candidate back by id first cost twice the whole search (measured,
    // docs/adr/0022). The tsquery is inlined (no CTE) so each statement is planned with its value:
    // selective queries take the GIN index instead.
    // Planned for each query (`planEachCall`): the generic plan of a prepared statement joins the
    // GIN and (tenant, agent) bitmaps and ranks every match before the bound (3.3 s at 50k records).
    const rows = await this.db.rows<MemoryRecordRow & { score: number }>(
      planEachCall(sql`
      WITH c AS (
        SELECT id, updated_at, ts_rank(search, to_tsquery(${CONFIG}, ${tsquery}), 1)::float8 AS score
        FROM memory_records
        WHERE tenant_id = ${q.tenantId}::uuid AND agent_id = ${q.agentId}::uuid
          AND search @@ to_tsquery(${CONFIG}, ${tsquery}) ${memoryFilters(q)}
          ${sessionFilter(q.excludeSessionId)} ${rewoundFilter(q)}
        ORDER BY created_at DESC
        LIMIT ${candidates}
      ), best AS (
        SELECT id, score FROM c ORDER BY score DESC, updated_at DESC, id LIMIT ${limit}
      )
      SELECT m.id, m.kind, m.title, ${cutContent('m.content', 20000)} AS content, ${contentChars('m.content')} AS "totalChars",
        m.provenance, m.tags, m.created_at AS "createdAt", m.updated_at AS "updatedAt", best.score
      FROM best JOIN memory_records m ON m.id = best.id
      ORDER BY best.score DESC, m.updated_at DESC, m.id`),
    );
    return rows.map((read) => {
      const r = fitContent(read, 20000);
      return {
        sourceRef: encodeSourceRef(r.id),
        kind: r.kind,
        title: r.title,
        snippet: snippetOf(r.content, q.query),
        score: Math.round(r.score * 10_000) / 10_000,
        updatedAt: r.updatedAt.toISOString(),
        provenance: r.provenance,
        totalChars: r.totalChars,
        createdAt: r.createdAt.toISOString(),
        tags: r.tags,
        path: 'fts' as const,
      };
    });
  }

  /** The record's exact content, cut to `maxChars` (default 12,000, at most 50,000); null when not this agent's. */
  async get(q: MemoryScope & { sourceRef: string; maxChars?: number }): Promise<MemoryDocument | null> {
    const id = decodeSourceRef(q.sourceRef);
    if (id === null) return null;
    const max = Math.min(Math.max(q.maxChars ?? MEMORY_GET_DEFAULT_CHARS, 1), MEMORY_GET_MAX_CHARS);
    const read = await this.db.first<MemoryRecordRow>(sql`
      SELECT id, kind, title, ${cutContent('content', max)} AS content, ${contentChars('content')} AS "totalChars",
        provenance, tags, created_at AS "createdAt", updated_at AS "updatedAt"
      FROM memory_records
      WHERE id = ${id}::uuid AND tenant_id = ${q.tenantId}::uuid AND agent_id = ${q.agentId}::uuid`);
    if (!read) return null;
    const row = fitContent(read, max);
    return {
      sourceRef: q.sourceRef,
      kind: row.kind,
      title: row.title,
      content: row.content,
      truncated: row.totalChars > max,
      totalChars: row.totalChars,
      provenance: row.provenance,
      tags: row.tags,
      createdAt: row.createdAt.toISOString(),
      updatedAt: row.updatedAt.toISOString(),
    };
  }

  /**
   * The agent's preferences (records tagged `preference`, docs/adr/0052), newest first, at most
   * `limit`: what the context pack shows whatever the input. The tag test is a literal, not a
   * parameter, so the partial index `memory_records_preference_idx` serves it in every plan.
   */
  async preferences(q: MemoryScope & { limit: number }): Promise<MemoryHit[]> {
    const rows = await this.db.rows<MemoryRecordRow>(sql`
      SELECT id, kind, title, ${cutContent('content', PREFERENCE_CHARS)} AS content, ${contentChars('content')} AS "totalChars",
        provenance, tags, created_at AS "createdAt", updated_at AS "updatedAt"
      FROM memory_records
      WHERE tenant_id = ${q.tenantId}::uuid AND agent_id = ${q.agentId}::uuid AND ${PREFERENCE_TAGGED}
        ${rewoundFilter(q)}
      ORDER BY created_at DESC, id DESC
      LIMIT ${Math.min(Math.max(q.limit, 1), MEMORY_SEARCH_MAX_LIMIT)}`);
    return rows.map(preferenceHit);
  }

  /** Newest first, `limit + 1` rows asked so the caller knows whether there is a next page. */
  async list(q: MemoryListQuery): Promise<{ items: (MemoryItem & { id: string })[]; more: boolean }> {
    const limit = Math.min(Math.max(q.limit ?? 20, 1), 200);
    // Keyset on (created_at, id) from the cursor's record: the (tenant, agent, created_at) index
    // serves it; a cursor whose record was forgotten meanwhile ends the listing.
    const after = q.after
      ? sql`AND (created_at, id) < (SELECT created_at, id FROM memory_records
          WHERE id = ${q.after}::uuid AND tenant_id = ${q.tenantId}::uuid AND agent_id = ${q.agentId}::uuid)`
      : sql``;
    const rows = await this.db.rows<MemoryRecordRow>(sql`
      SELECT id, kind, title, ${cutContent('content', PREVIEW_CHARS)} AS content,
        ${contentChars('content')} AS "totalChars", provenance, tags, created_at AS "createdAt", updated_at AS "updatedAt"
      FROM memory_records
      WHERE tenant_id = ${q.tenantId}::uuid AND agent_id = ${q.agentId}::uuid ${memoryFilters(q)} ${after}
      ORDER BY created_at DESC, id DESC
      LIMIT ${limit + 1}`);
    return {
      items: rows.slice(0, limit).map((read) => {
        const r = fitContent(read, PREVIEW_CHARS);
        return {
          id: r.id,
          sourceRef: encodeSourceRef(r.id),
          kind: r.kind,
          title: r.title,
          preview: r.content,
          totalChars: r.totalChars,
          provenance: r.provenance,
          tags: r.tags,
          createdAt: r.createdAt.toISOString(),
          updatedAt: r.updatedAt.toISOString(),
        };
      }),
      more: rows.length > limit,
    };
  }

  /** Deletes the record; false when the ref names nothing of this agent's. */
  async forget(q: MemoryScope & { sourceRef: string }): Promise<boolean> {
    const id = decodeSourceRef(q.sourceRef);
    if (id === null) return false;
    const n = await this.db.execute(sql`
      DELETE FROM memory_records
      WHERE id = ${id}::uuid AND tenant_id = ${q.tenantId}::uuid AND agent_id = ${q.agentId}::uuid`);
    return n > 0;
  }
}

/**
 * A preference record as the context pack shows it (docs/adr/0052): read by `MemoryStore.preferences`
 * or by the turn's claim (docs/adr/0076, its dates as JSON text), its opened content cut and counted.
 * A standing preference is read by recency, not matched: no score.
 */
export function preferenceHit(read: MemoryRecordRow | ClaimedPreference): MemoryHit {
  const r = fitContent(read, PREFERENCE_CHARS);
  return {
    sourceRef: encodeSourceRef(r.id),
    kind: r.kind as MemoryKind,
    title: r.title,
    snippet: snippetOf(r.content, ''),
    score: 0,
    updatedAt: new Date(r.updatedAt).toISOString(),
    provenance: r.provenance as MemoryProvenance,
    totalChars: r.totalChars,
    createdAt: new Date(r.createdAt).toISOString(),
    tags: r.tags,
    path: 'fts' as const,
  };
}

/** `AND …` conditions on `memory_records` columns (unqualified, or of `alias`) for the filters given. */
export function memoryFilters(f: MemoryFilters, alias?: string): Sql {
  const c = (column: string) => new Sql([alias ? `${alias}.${column}` : column], []);
  const parts: Sql[] = [];
  if (f.kinds && f.kinds.length > 0) parts.push(sql`AND ${c('kind')} = ANY(${f.kinds}::text[])`);
  if (f.since) parts.push(sql`AND ${c('created_at')} >= ${f.since}::timestamptz`);
  if (f.until) parts.push(sql`AND ${c('created_at')} < ${f.until}::timestamptz`);
  if (f.tags && f.tags.length > 0) parts.push(sql`AND ${c('tags')} @> ${f.tags}::text[]`);
  return parts.length > 0 ? join(parts, ' ') : sql``;
}

/** How many forks up recall follows a session's lineage (`sessionFilter`). */
const LINEAGE_DEPTH_MAX = 100;

/**
 * Leaves out what was distilled from this session, and from the sessions it was forked from
 * (docs/adr/0053): their turns up to the fork point are in its history already (copied), and their
 * turns after it are another branch's future, which a fork (a replay above all) must not be told.
 * The lineage is read once per statement (an uncorrelated subquery): one key lookup for a session that
 * is not a fork.
 */
export function sessionFilter(sessionId: string | undefined, alias?: string): Sql {
  const p = new Sql([alias ? `${alias}.provenance` : 'provenance'], []);
  if (!sessionId) return sql``;
  const lineage = sql`ARRAY(WITH RECURSIVE up AS (
      SELECT ls.forked_from_session_id AS id, 1 AS depth FROM sessions ls
      WHERE ls.id = ${sessionId}::uuid AND ls.forked_from_session_id IS NOT NULL
      UNION ALL
      SELECT ls.forked_from_session_id, up.depth + 1 FROM up JOIN sessions ls ON ls.id = up.id
      WHERE ls.forked_from_session_id IS NOT NULL AND up.depth < ${LINEAGE_DEPTH_MAX}::int
    ) SELECT id::text FROM up)`;
  return sql`AND (${p}->>'sessionId') IS DISTINCT FROM ${sessionId}
    AND NOT coalesce((${p}->>'sessionId') = ANY(${lineage}), false)`;
}

/**
 * Leaves out what the post-turn hooks derived from the agent's rewound turns (docs/adr/0053): a record
 * whose provenance names a rewound turn (`turnId`, or one of the archivist's `turnIds`). Excluded, not
 * deleted: the rewind keeps what happened, and a hook that ends after the rewind writes its record all
 * the same, which this leaves out as well. The agent's rewound turns are read once per statement (an
 * uncorrelated subquery) off the partial index turns_rewound_idx: nothing for an agent that never rewound.
 */
export function rewoundFilter(scope: MemoryScope, alias?: string): Sql {
  const p = new Sql([alias ? `${alias}.provenance` : 'provenance'], []);
  const rewound = sql`ARRAY(SELECT rt.id::text FROM turns rt
    WHERE rt.tenant_id = ${scope.tenantId}::uuid AND rt.agent_id = ${scope.agentId}::uuid AND rt.rewound_at IS NOT NULL)`;
  return sql`AND NOT coalesce((${p}->>'turnId') = ANY(${rewound}) OR (${p}->'turnIds') ?| ${rewound}, false)`;
}
