import {
  AppError,
  MEMORY_BLOCK_DEFAULT_LIMIT,
  MEMORY_BLOCK_DESCRIPTION_MAX,
  MEMORY_BLOCK_MAX_LIMIT,
  MEMORY_BLOCK_NAME,
  MEMORY_BLOCKS_PER_AGENT,
  newId,
  notFound,
  type MemoryBlockWriter,
} from '@switchboard/contracts';
import { sealText } from '@switchboard/database';
import { sql, type SqlRunner, type SqlTransactor } from '@switchboard/store';

/** A memory block as stored (docs/adr/0051). */
export interface MemoryBlock {
  name: string;
  description: string;
  content: string;
  limitChars: number;
  readOnly: boolean;
  version: number;
  writtenBy: MemoryBlockWriter;
  createdAt: string;
  updatedAt: string;
}

export interface MemoryBlockVersion {
  version: number;
  content: string;
  writtenBy: MemoryBlockWriter;
  turnId: string | null;
  createdAt: string;
}

export interface BlockScope {
  tenantId: string;
  agentId: string;
}

/** The operator's write (PUT): what is given replaces the block's; `content` is required to create. */
export interface OperatorBlockWrite {
  content?: string;
  description?: string;
  limitChars?: number;
  readOnly?: boolean;
  /** Write only over this version (0: only when the block does not exist yet); else a conflict. */
  expectedVersion?: number;
}

/** The agent's edit of a block's text: given the current text, the new one (or an AppError). */
export interface AgentBlockEdit {
  name: string;
  edit: (content: string) => string;
  turnId: string;
  /** The tool call's idempotency key: an edit a resumed turn already applied is not applied again. */
  callKey: string;
  /** Checked right before the write commits (the tool's write gate). */
  mayCommit?: () => boolean;
}

interface BlockRow {
  id: string;
  name: string;
  description: string;
  content: string;
  limit_chars: number;
  read_only: boolean;
  version: number;
  written_by: MemoryBlockWriter;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = sql`id, name, description, content, limit_chars, read_only, version, written_by, created_at, updated_at`;

function present(r: BlockRow): MemoryBlock {
  return {
    name: r.name,
    description: r.description,
    content: r.content,
    limitChars: r.limit_chars,
    readOnly: r.read_only,
    version: r.version,
    writtenBy: r.written_by,
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at.toISOString(),
  };
}

const badRequest = (message: string, details?: unknown) => new AppError('bad_request', message, details);

/** A name the API and the tools accept; a bad one is a 400 (or, from a tool, the model's error). */
export function checkBlockName(name: string): void {
  if (!MEMORY_BLOCK_NAME.test(name))
    throw badRequest('a block name is 1 to 40 of a-z, 0-9 and _, starting with a letter');
}

function checkFits(content: string, limitChars: number): void {
  if (content.length > limitChars) {
    throw badRequest(
      `the block's text would be ${content.length} characters, over its limit of ${limitChars}`,
      {
        chars: content.length,
        limitChars,
      },
    );
  }
}

/**
 * An agent's memory blocks (docs/adr/0051) on Postgres: `memory_blocks` holds each block's current
 * text, `memory_block_versions` every text it held (version 1 is its creation). Every statement is
 * filtered by tenant AND agent. A change takes the block's row lock (or, on creation, the agent's
 * advisory lock, which also bounds the count), so two writers are serialised and neither's change is
 * lost; the operator may ask for an optimistic check (`expectedVersion`) on top. A write that
 * changes nothing (same text and settings) writes nothing and keeps the version: the rendered
 * prompt, and the provider's cached prefix, stay as they were.
 */
export class MemoryBlockStore {
  constructor(private readonly db: SqlTransactor) {}

  async list(s: BlockScope): Promise<MemoryBlock[]> {
    const rows = await this.db.rows<BlockRow>(sql`SELECT ${COLUMNS} FROM memory_blocks
      WHERE tenant_id = ${s.tenantId}::uuid AND agent_id = ${s.agentId}::uuid ORDER BY name`);
    return rows.map(present);
  }

  async get(s: BlockScope, name: string): Promise<MemoryBlock | null> {
    const row = await this.find(this.db, s, name);
    return row ? present(row) : null;
  }

  /** Newest first, `limit` of them, before version `before` when given; null when no such block. */
  async versions(
    s: BlockScope,
    name: string,
    page: { limit: number; before?: number },
  ): Promise<{ items: MemoryBlockVersion[]; more: boolean } | null> {
    const block = await this.find(this.db, s, name);
    if (!block) return null;
    const rows = await this.db.rows<{
      version: number;
      content: string;
      written_by: MemoryBlockWriter;
      turn_id: string | null;
      created_at: Date;
    }>(sql`SELECT version, content, written_by, turn_id, created_at FROM memory_block_versions
      WHERE block_id = ${block.id}::uuid ${page.before === undefined ? sql`` : sql`AND version < ${page.before}`}
      ORDER BY version DESC LIMIT ${page.limit + 1}`);
    return {
      items: rows.slice(0, page.limit).map((r) => ({
        version: r.version,
        content: r.content,
        writtenBy: r.written_by,
        turnId: r.turn_id,
        createdAt: r.created_at.toISOString(),
      })),
      more: rows.length > page.limit,
    };
  }

  /**
   * The operator's create-or-update. 400 (nothing written) for a bad name, a text over the block's
   * limit, a limit over the maximum or below the text, a description too long, a block created
   * without content or past the agent's count; 409 when `expectedVersion` does not match.
   */
  async put(
    s: BlockScope,
    name: string,
    w: OperatorBlockWrite,
  ): Promise<{ block: MemoryBlock; created: boolean }> {
    checkBlockName(name);
    if (
      w.limitChars !== undefined &&
      (!Number.isInteger(w.limitChars) || w.limitChars < 1 || w.limitChars > MEMORY_BLOCK_MAX_LIMIT)
    )
      throw badRequest(`limitChars must be 1 to ${MEMORY_BLOCK_MAX_LIMIT}`);
    if (w.description !== undefined && w.description.length > MEMORY_BLOCK_DESCRIPTION_MAX)
      throw badRequest(`description is over ${MEMORY_BLOCK_DESCRIPTION_MAX} characters`);
    return this.db.transaction(async (tx) => {
      // The agent's lock: creations are counted and named one at a time.
      await tx.execute(
        sql`SELECT pg_advisory_xact_lock(hashtextextended(${`memory_blocks:${s.agentId}`}, 0))`,
      );
      const current = await this.find(tx, s, name, true);
      if (w.expectedVersion !== undefined && w.expectedVersion !== (current?.version ?? 0)) {
        throw new AppError(
          'conflict',
          `the block is at version ${current?.version ?? 0}, not ${w.expectedVersion}`,
          {
            version: current?.version ?? 0,
          },
        );
      }
      if (!current) {
        if (w.content === undefined) throw badRequest('content is required to create a block');
        const limitChars = w.limitChars ?? MEMORY_BLOCK_DEFAULT_LIMIT;
        checkFits(w.content, limitChars);
        const count = await tx.first<{ n: number }>(sql`SELECT count(*)::int AS n FROM memory_blocks
          WHERE tenant_id = ${s.tenantId}::uuid AND agent_id = ${s.agentId}::uuid`);
        if ((count?.n ?? 0) >= MEMORY_BLOCKS_PER_AGENT)
          throw badRequest(`an agent has at most ${MEMORY_BLOCKS_PER_AGENT} memory blocks`);
        const id = newId();
        // The text as stored: sealed for a tenant whose encryption mode is on or strict (docs/adr/0067).
        const stored = await sealText(s.tenantId, w.content);
        const [row] = await tx.rows<BlockRow>(sql`INSERT INTO memory_blocks
            (id, tenant_id, agent_id, name, description, content, limit_chars, read_only, version, written_by)
          VALUES (${id}::uuid, ${s.tenantId}::uuid, ${s.agentId}::uuid, ${name}, ${w.description ?? ''},
            ${stored}, ${limitChars}, ${w.readOnly ?? false}, 1, 'operator')
          RETURNING ${COLUMNS}`);
        await this.addVersion(tx, id, 1, stored, 'operator', null, null);
        return { block: present(row), created: true };
      }
      const content = w.content ?? current.content;
      const limitChars = w.limitChars ?? current.limit_chars;
      checkFits(content, limitChars);
      const textChanged = content !== current.content;
      const changed =
        textChanged ||
        limitChars !== current.limit_chars ||
        (w.description ?? current.description) !== current.description ||
        (w.readOnly ?? current.read_only) !== current.read_only;
      if (!changed) return { block: present(current), created: false };
      const version = current.version + 1;
      const stored = await sealText(s.tenantId, content);
      const [row] = await tx.rows<BlockRow>(sql`UPDATE memory_blocks SET content = ${stored},
          description = ${w.description ?? current.description}, limit_chars = ${limitChars},
          read_only = ${w.readOnly ?? current.read_only}, version = ${version},
          written_by = ${textChanged ? 'operator' : current.written_by}, updated_at = now()
        WHERE id = ${current.id}::uuid RETURNING ${COLUMNS}`);
      await this.addVersion(tx, current.id, version, stored, row.written_by, null, null);
      return { block: present(row), created: false };
    });
  }

  /** Deletes the block and its versions; false when the agent has no such block. */
  async delete(s: BlockScope, name: string): Promise<boolean> {
    const n = await this.db.execute(sql`DELETE FROM memory_blocks
      WHERE tenant_id = ${s.tenantId}::uuid AND agent_id = ${s.agentId}::uuid AND name = ${name}`);
    return n > 0;
  }

  /**
   * The agent's edit (its tools), under the block's row lock: the edit sees the text as it is now,
   * whatever another turn wrote since this one read its prompt. 404 for no such block, 409 for a
   * read-only one, 400 for a text over the limit (nothing written); an edit this call already
   * applied (a resumed turn) is not applied again. Returns the block after the edit.
   */
  async edit(s: BlockScope, e: AgentBlockEdit): Promise<MemoryBlock> {
    return this.db.transaction(async (tx) => {
      const current = await this.find(tx, s, e.name, true);
      if (!current) throw notFound(`memory block "${e.name}"`);
      const applied = await tx.first<{ version: number }>(sql`SELECT version FROM memory_block_versions
        WHERE block_id = ${current.id}::uuid AND call_key = ${e.callKey}`);
      if (applied) return present(current);
      if (current.read_only)
        throw new AppError('conflict', `memory block "${e.name}" is read-only`, { readOnly: true });
      const content = e.edit(current.content);
      checkFits(content, current.limit_chars);
      if (content === current.content) return present(current);
      if (e.mayCommit && !e.mayCommit())
        throw new AppError('conflict', 'the call ended before its edit committed');
      const version = current.version + 1;
      const stored = await sealText(s.tenantId, content);
      const [row] = await tx.rows<BlockRow>(sql`UPDATE memory_blocks SET content = ${stored},
          version = ${version}, written_by = 'agent', updated_at = now()
        WHERE id = ${current.id}::uuid RETURNING ${COLUMNS}`);
      await this.addVersion(tx, current.id, version, stored, 'agent', e.turnId, e.callKey);
      return present(row);
    });
  }

  private find(db: SqlRunner, s: BlockScope, name: string, lock = false): Promise<BlockRow | undefined> {
    return db.first<BlockRow>(sql`SELECT ${COLUMNS} FROM memory_blocks
      WHERE tenant_id = ${s.tenantId}::uuid AND agent_id = ${s.agentId}::uuid AND name = ${name}
      ${lock ? sql`FOR UPDATE` : sql``}`);
  }

  private async addVersion(
    tx: SqlRunner,
    blockId: string,
    version: number,
    /** As stored (sealed when the block's is). */
    content: string,
    writtenBy: MemoryBlockWriter,
    turnId: string | null,
    callKey: string | null,
  ): Promise<void> {
    await tx.execute(sql`INSERT INTO memory_block_versions (block_id, version, content, written_by, turn_id, call_key)
      VALUES (${blockId}::uuid, ${version}, ${content}, ${writtenBy}, ${turnId}::uuid, ${callKey})`);
  }
}
