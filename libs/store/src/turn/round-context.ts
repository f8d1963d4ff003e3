import { join, json, ofTenant, sql, type Sql, type SqlRunner } from '../sql';
import type { TurnFrame } from './checkpoint-rows';

/**
 * "What the model saw" (docs/adr/0045): each round's exact context, stored content-addressed. A part
 * (the system prompt, the tool list, one message) is stored once per tenant under its SHA-256; a
 * round is the ordered list of its parts' hashes with each one's source. A turn's rounds repeat the
 * system prompt, the tools and the whole history, so a round costs one small row plus its new
 * messages, not its whole context again.
 */

/** One distinct part of a context: its hash, content (JSON) and estimated tokens. */
export interface ContextPartInsert {
  hash: string;
  content: unknown;
  tokens: number;
}

/** One entry of a round's part list: the part's hash and where it came from. */
export interface RoundPartRef {
  /** SHA-256, hex. */
  h: string;
  /** system | tools | transcript | recall | work_items | summary | other */
  s: string;
}

/** A round's context: its parts in the order they were sent. */
export interface RoundContextInsert {
  round: number;
  parts: RoundPartRef[];
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
      (r) => sql`(${f.tenantId}::uuid, ${f.turnId}::uuid, ${r.round}::int, ${json(r.parts)}::jsonb)`,
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
 * `{turn: true}` without `context` when the turn is but the round was never recorded.
 */
export async function readRoundContext(
  db: SqlRunner,
  tenantId: string,
  turnId: string,
  round: number,
): Promise<{ context?: StoredRoundContext } | undefined> {
  const row = await db.first<{
    round: number | null;
    parts: RoundPartRef[] | null;
    contents: StoredRoundContext['contents'] | null;
    createdAt: string | null;
  }>(sql`
    SELECT r.round_index AS round, r.parts, r.created_at AS "createdAt",
      (SELECT jsonb_object_agg(p.hash, jsonb_build_object('content', p.content, 'tokens', p.tokens))
         FROM context_parts p
        WHERE p.tenant_id = t.tenant_id
          AND p.hash IN (SELECT x->>'h' FROM jsonb_array_elements(r.parts) x)) AS contents
    FROM turns t
    LEFT JOIN turn_round_contexts r ON r.turn_id = t.id AND r.round_index = ${round}::int
    WHERE t.id = ${turnId}::uuid AND ${ofTenant('t.tenant_id', tenantId)}`);
  if (!row) return undefined;
  if (row.round === null || row.parts === null || row.createdAt === null) return {};
  return {
    context: {
      round: row.round,
      parts: row.parts,
      contents: row.contents ?? {},
      createdAt: new Date(row.createdAt),
    },
  };
}
