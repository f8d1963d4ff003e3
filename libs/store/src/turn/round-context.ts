import { join, json, ofTenant, sql, type Sql, type SqlRunner } from '../sql';
import type { TurnFrame } from './checkpoint-rows';

/**
 * "What the model saw" (docs/adr/0045): each round's exact context, stored content-addressed. A part
 * (the system prompt, the tool list, one message) is stored once per tenant under a 128-bit hash of
 * its JSON; a round is the ordered list of its parts' hashes with each one's source. A turn's rounds
 * repeat the system prompt, the tools and the whole history, so a round costs one small row plus its
 * new messages, not its whole context again; and a round that extends an earlier round of its turn
 * stores only what it adds (`StoredPartList`).
 */

/** One distinct part of a context: its hash, content (JSON) and estimated tokens. */
export interface ContextPartInsert {
  hash: string;
  content: unknown;
  tokens: number;
}

/** One entry of a round's part list: the part's hash and where it came from. */
export interface RoundPartRef {
  /** 128 bits (the first half of the SHA-256 of the part's JSON), hex. */
  h: string;
  /** system | tools | transcript | recall | work_items | summary | other */
  s: string;
}

/** A round's context: its parts in the order they were sent. */
export interface RoundContextInsert {
  round: number;
  parts: RoundPartRef[];
  /**
   * An earlier round of the same turn whose first `keep` parts this round's list begins with: only
   * the parts after them are stored, with a reference to that round.
   */
  base?: { round: number; keep: number };
}

/**
 * A round's part list as `turn_round_contexts.parts` holds it: the hashes, and the sources as one
 * letter per part (`SOURCE_CODES`); with `p` (an earlier round of the same turn) and `k`, the list
 * is that round's first `k` parts followed by these. Parallel arrays, not an object per part: a round
 * lists the turn's whole history, and the per-part keys were most of its bytes.
 */
export interface StoredPartList {
  h: string[];
  s: string;
  p?: number;
  k?: number;
}

const SOURCE_CODES: Record<string, string> = {
  system: 'y',
  tools: 'x',
  transcript: 't',
  recall: 'r',
  work_items: 'w',
  summary: 's',
  other: 'o',
};
const SOURCES_BY_CODE = Object.fromEntries(Object.entries(SOURCE_CODES).map(([k, v]) => [v, k]));

/** A round's list as stored: whole, or after its base's first `keep` parts. */
export function encodeRoundParts(r: RoundContextInsert): StoredPartList {
  const own = r.base ? r.parts.slice(r.base.keep) : r.parts;
  const list: StoredPartList = {
    h: own.map((p) => p.h),
    s: own.map((p) => SOURCE_CODES[p.s] ?? 'o').join(''),
  };
  return r.base ? { ...list, p: r.base.round, k: r.base.keep } : list;
}

/**
 * Round `round`'s full part list from the stored lists of its turn's rounds (by index), following
 * each list's base within the turn; undefined when the round, or a round it extends, is not stored.
 * A base is always an earlier round, so the walk ends within the turn's rounds.
 */
export function decodeRoundParts(
  lists: Record<string, StoredPartList>,
  round: number,
): RoundPartRef[] | undefined {
  const list = lists[String(round)];
  if (!list) return undefined;
  const own = list.h.map((h, i) => ({ h, s: SOURCES_BY_CODE[list.s[i] ?? ''] ?? 'other' }));
  if (list.p === undefined) return own;
  if (list.p >= round) return undefined;
  const base = decodeRoundParts(lists, list.p);
  return base ? [...base.slice(0, list.k ?? 0), ...own] : undefined;
}

/** Only when the fenced session update matched (as every checkpoint row). */
const FENCED = sql`WHERE EXISTS (SELECT 1 FROM s)`;

/**
 * `xp`, `xr`: a checkpoint's new context parts (a part another round or turn of the tenant already
 * stored conflicts and is skipped) and its rounds' part lists (a round written again by a resumed run
 * replaces the first list).
 */
export function roundContextCtes(
  f: TurnFrame,
  parts: ContextPartInsert[] | undefined,
  rounds: RoundContextInsert[] | undefined,
): Sql[] {
  const ctes: Sql[] = [];
  if (parts && parts.length > 0) {
    const rows = parts.map(
      (p) => sql`(${f.tenantId}::uuid, ${p.hash}::text, ${json(p.content)}::jsonb, ${p.tokens}::int)`,
    );
    ctes.push(sql`xp AS (
      INSERT INTO context_parts (tenant_id, hash, content, tokens)
      SELECT v.* FROM (VALUES ${join(rows)}) AS v ${FENCED}
      ON CONFLICT (tenant_id, hash) DO NOTHING)`);
  }
  if (rounds && rounds.length > 0) {
    const rows = rounds.map(
      (r) =>
        sql`(${f.tenantId}::uuid, ${f.turnId}::uuid, ${r.round}::int, ${json(encodeRoundParts(r))}::jsonb)`,
    );
    ctes.push(sql`xr AS (
      INSERT INTO turn_round_contexts (tenant_id, turn_id, round_index, parts)
      SELECT v.* FROM (VALUES ${join(rows)}) AS v ${FENCED}
      ON CONFLICT (turn_id, round_index) DO UPDATE SET parts = excluded.parts, created_at = now())`);
  }
  return ctes;
}

/** A stored round context as `readRoundContext` answers it: the part list and each part's content. */
export interface StoredRoundContext {
  round: number;
  parts: RoundPartRef[];
  /** By hash; a part missing here was never stored (it cannot be: parts commit with their round). */
  contents: Record<string, { content: unknown; tokens: number }>;
  createdAt: Date;
}

/**
 * The tenant's turn's round context, one statement: undefined when the turn is not the tenant's,
 * `{turn: true}` without `context` when the turn is but the round was never recorded. It reads the
 * turn's lists up to the round (a round's list may extend an earlier one's) and the parts they name.
 */
export async function readRoundContext(
  db: SqlRunner,
  tenantId: string,
  turnId: string,
  round: number,
): Promise<{ context?: StoredRoundContext } | undefined> {
  const row = await db.first<{
    lists: Record<string, { parts: StoredPartList; at: string }> | null;
    contents: StoredRoundContext['contents'] | null;
  }>(sql`
    WITH r AS (
      SELECT r.round_index, r.parts, r.created_at FROM turn_round_contexts r
       WHERE r.turn_id = ${turnId}::uuid AND r.round_index <= ${round}::int)
    SELECT
      (SELECT jsonb_object_agg(r.round_index, jsonb_build_object('parts', r.parts, 'at', r.created_at))
         FROM r) AS lists,
      (SELECT jsonb_object_agg(p.hash, jsonb_build_object('content', p.content, 'tokens', p.tokens))
         FROM context_parts p
        WHERE p.tenant_id = t.tenant_id
          AND p.hash IN (SELECT jsonb_array_elements_text(r.parts->'h') FROM r)) AS contents
    FROM turns t
    WHERE t.id = ${turnId}::uuid AND ${ofTenant('t.tenant_id', tenantId)}`);
  if (!row) return undefined;
  const own = row.lists?.[String(round)];
  const lists = Object.fromEntries(Object.entries(row.lists ?? {}).map(([k, v]) => [k, v.parts]));
  const parts = own ? decodeRoundParts(lists, round) : undefined;
  if (!own || !parts) return {};
  return {
    context: { round, parts, contents: row.contents ?? {}, createdAt: new Date(own.at) },
  };
}
