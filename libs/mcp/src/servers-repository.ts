import type { McpServer } from '@prisma/client';
import { newId } from '@switchboard/contracts';
import type { Db } from '@switchboard/database';
import type { McpClients } from './clients';
import { refreshServer, unknownMcpTools } from './source';

/** A registration's columns (the auth header value already sealed). */
export interface NewMcpServer {
  tenantId: string;
  name: string;
  url: string;
  authHeaderName: string | null;
  authHeaderValue: string | null;
  timeoutMs: number;
  idempotencyKeys: boolean;
  approval: string;
}

/** The settings a change may set. */
export interface McpServerChange {
  timeoutMs?: number;
  idempotencyKeys?: boolean;
  approval?: string;
}

/** A tenant's MCP servers (docs/adr/0023). Reads see only servers not deleted; delete is soft. */
export class McpServersRepository {
  constructor(private readonly db: Db) {}

  find(tenantId: string, id: string): Promise<McpServer | null> {
    return this.db.mcpServer.findFirst({ where: { id, tenantId, deletedAt: null } });
  }

  /** True when a live server of the tenant has this name. */
  async nameTaken(tenantId: string, name: string): Promise<boolean> {
    const taken = await this.db.mcpServer.findFirst({
      where: { tenantId, name, deletedAt: null },
      select: { id: true },
    });
    return taken !== null;
  }

  /** The new server, or `name_taken` when one with its name was registered meanwhile (the live-name unique index). */
  async create(server: NewMcpServer): Promise<McpServer | 'name_taken'> {
    return this.db.mcpServer.create({ data: { id: newId(), ...server } }).catch((err: unknown) => {
      if ((err as { code?: unknown }).code === 'P2002') return 'name_taken' as const;
      throw err;
    });
  }

  /** By id, after the cursor's id. */
  async page(
    tenantId: string,
    afterId: string | undefined,
    limit: number,
  ): Promise<{ rows: McpServer[]; more: boolean }> {
    const rows = await this.db.mcpServer.findMany({
      where: { tenantId, deletedAt: null, ...(afterId !== undefined ? { id: { gt: afterId } } : {}) },
      orderBy: { id: 'asc' },
      take: limit + 1,
    });
    return { rows: rows.slice(0, limit), more: rows.length > limit };
  }

  /** False when the server is gone (deleted meanwhile). */
  async update(tenantId: string, id: string, change: McpServerChange): Promise<boolean> {
    const { count } = await this.db.mcpServer.updateMany({
      where: { id, tenantId, deletedAt: null },
      data: {
        ...(change.timeoutMs !== undefined ? { timeoutMs: change.timeoutMs } : {}),
        ...(change.idempotencyKeys !== undefined ? { idempotencyKeys: change.idempotencyKeys } : {}),
        ...(change.approval !== undefined ? { approval: change.approval } : {}),
      },
    });
    return count > 0;
  }

  /** Soft delete; false when there was no such live server. */
  async softDelete(tenantId: string, id: string): Promise<boolean> {
    const { count } = await this.db.mcpServer.updateMany({
      where: { id, tenantId, deletedAt: null },
      data: { deletedAt: new Date() },
    });
    return count > 0;
  }

  /** Lists the server's tools and stores the answer on its row (`refreshServer`). */
  refresh(
    clients: McpClients,
    row: McpServer,
    openSecret: (stored: string) => string | undefined,
  ): Promise<McpServer> {
    return refreshServer(this.db, clients, row, openSecret);
  }

  /** The `server__tool` names among `names` the tenant's servers do not have (`unknownMcpTools`). */
  unknownTools(tenantId: string, names: readonly string[]): Promise<string[]> {
    return unknownMcpTools(this.db, tenantId, names);
  }
}
