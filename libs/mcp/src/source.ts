import type { McpServer } from '@prisma/client';
import type { Db, Prisma } from '@switchboard/database';
import type { ToolDefinition } from '@switchboard/tools';
import type { McpClients, McpConnection, McpToolEntry } from './clients';
import { namesMcpTools, offerable, splitMcpToolName } from './naming';
import { approvalOf, mcpToolDefinition, unavailableToolDefinition } from './tools';

export interface McpToolSourceOptions {
  db: Db;
  clients: McpClients;
  /** Opens a stored auth header value (SecretBox.open); undefined when it cannot. */
  openSecret: (stored: string) => string | undefined;
  /** How long a tool list is trusted before it is listed again (MCP_TOOLS_TTL_MS). */
  ttlMs: number;
  now?: () => number;
}

/** A registration as the worker connects to it. */
export function connectionOf(
  row: McpServer,
  openSecret: (stored: string) => string | undefined,
): McpConnection {
  const secret = row.authHeaderValue ? openSecret(row.authHeaderValue) : undefined;
  return {
    id: row.id,
    name: row.name,
    url: row.url,
    headers: row.authHeaderName && secret !== undefined ? { [row.authHeaderName]: secret } : {},
    timeoutMs: row.timeoutMs,
    version: row.updatedAt.toISOString(),
  };
}

/** The cached tool list of a row (what the last listing stored). */
export function storedTools(row: Pick<McpServer, 'tools'>): McpToolEntry[] {
  return Array.isArray(row.tools) ? (row.tools as unknown as McpToolEntry[]) : [];
}

/**
 * Lists a server's tools and stores the answer on its row (cache, status, last error): the API's
 * registration and refresh, and a worker whose cache went stale.
 */
export async function refreshServer(
  db: Db,
  clients: McpClients,
  row: McpServer,
  openSecret: (stored: string) => string | undefined,
): Promise<McpServer> {
  try {
    const tools = await clients.listTools(connectionOf(row, openSecret));
    return await db.mcpServer.update({
      where: { id: row.id },
      data: {
        tools: tools as unknown as Prisma.InputJsonValue,
        toolsFetchedAt: new Date(),
        status: 'ok',
        lastError: null,
        // Keep the connection's version: only a new URL or secret makes a new connection.
        updatedAt: row.updatedAt,
      },
    });
  } catch (err) {
    return db.mcpServer.update({
      where: { id: row.id },
      data: {
        status: 'unreachable',
        lastError: (err as Error).message.slice(0, 1000),
        updatedAt: row.updatedAt,
      },
    });
  }
}

/**
 * An agent's MCP tools for one turn (docs/adr/0023). A turn whose agent names no `server__tool`
 * costs nothing here; otherwise one query reads the tenant's named servers, and each server's tool
 * list comes from this worker's memory (fresh for MCP_TOOLS_TTL_MS, dropped on list_changed), else
 * the row's stored list when fresh, else a live listing (stored back); a listing that fails falls
 * back to the stored list.
 */
export class McpToolSource {
  private readonly lists = new Map<string, { version: string; at: number; tools: McpToolEntry[] }>();
  private readonly now: () => number;

  constructor(private readonly o: McpToolSourceOptions) {
    this.now = o.now ?? Date.now;
  }

  /** A server's list changed (or a call said the tool is gone): the next turn lists it again. */
  invalidate(serverId: string): void {
    this.lists.delete(serverId);
  }

  async forTurn(tenantId: string, names: readonly string[]): Promise<ToolDefinition[]> {
    if (!namesMcpTools(names)) return [];
    const wanted = new Map<string, string[]>();
    for (const n of names) {
      const split = splitMcpToolName(n);
      if (split) wanted.set(split.server, [...(wanted.get(split.server) ?? []), split.tool]);
    }
    const rows = await this.o.db.mcpServer.findMany({
      where: { tenantId, name: { in: [...wanted.keys()] }, deletedAt: null },
    });
    const perServer = await Promise.all(rows.map((row) => this.toolsOf(row, wanted.get(row.name) ?? [])));
    return perServer.flat();
  }

  private async toolsOf(row: McpServer, tools: string[]): Promise<ToolDefinition[]> {
    const conn = connectionOf(row, this.o.openSecret);
    let listed = await this.list(row, conn, false);
    // A tool the agent names and the list lacks may be new: list once more before giving up on it.
    if (listed.fresh === false && tools.some((t) => !listed.tools.some((e) => e.name === t))) {
      listed = await this.list(row, conn, true);
    }
    return tools.flatMap((t) => {
      const entry = listed.tools.find((e) => e.name === t);
      if (entry && offerable(row.name, entry.name)) {
        // A refused call may mean the list changed: the next turn lists the server again.
        return [
          mcpToolDefinition(
            conn,
            { idempotencyKeys: row.idempotencyKeys, approval: approvalOf(row.approval) },
            entry,
            this.o.clients,
            () => this.invalidate(row.id),
          ),
        ];
      }
      // Never listed (the server has been down since it was registered): a classified failure.
      if (!entry && listed.unavailable) return [unavailableToolDefinition(conn, t, listed.unavailable)];
      return [];
    });
  }

  /** `fresh`: listed live just now; `unavailable`: why nothing could be listed at all. */
  private async list(
    row: McpServer,
    conn: McpConnection,
    force: boolean,
  ): Promise<{ tools: McpToolEntry[]; fresh: boolean; unavailable?: string }> {
    const now = this.now();
    const memo = this.lists.get(row.id);
    if (!force && memo && memo.version === conn.version && now - memo.at < this.o.ttlMs) {
      return { tools: memo.tools, fresh: false };
    }
    const fetchedAt = row.toolsFetchedAt?.getTime();
    if (!force && fetchedAt !== undefined && now - fetchedAt < this.o.ttlMs) {
      this.lists.set(row.id, { version: conn.version, at: fetchedAt, tools: storedTools(row) });
      return { tools: storedTools(row), fresh: false };
    }
    const updated = await refreshServer(this.o.db, this.o.clients, row, this.o.openSecret);
    if (updated.status === 'ok') {
      const tools = storedTools(updated);
      this.lists.set(row.id, { version: conn.version, at: now, tools });
      return { tools, fresh: true };
    }
    const stale = storedTools(row);
    return {
      tools: stale,
      fresh: true,
      ...(fetchedAt === undefined ? { unavailable: updated.lastError ?? 'unreachable' } : {}),
    };
  }
}

/**
 * The `server__tool` names among `names` an agent of the tenant cannot have: no live server of that
 * name, or a server that has listed its tools without that one (a server never listed accepts any).
 */
export async function unknownMcpTools(db: Db, tenantId: string, names: readonly string[]): Promise<string[]> {
  const split = names.flatMap((n) => {
    const s = splitMcpToolName(n);
    return s ? [{ name: n, ...s }] : [];
  });
  if (split.length === 0) return [];
  const rows = await db.mcpServer.findMany({
    where: { tenantId, deletedAt: null, name: { in: [...new Set(split.map((s) => s.server))] } },
    select: { name: true, tools: true, toolsFetchedAt: true },
  });
  return split
    .filter((s) => {
      const row = rows.find((r) => r.name === s.server);
      if (!row) return true;
      return row.toolsFetchedAt !== null && !storedTools(row).some((t) => t.name === s.tool);
    })
    .map((s) => s.name);
}
