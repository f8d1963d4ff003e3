import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { HostAllowList } from '@switchboard/tools';
import { mcpFailure } from './errors';
import type { McpToolAnnotations } from './naming';
import { blockedServer, guardedFetch, refusedServerUrl } from './url';

/** What connecting to one MCP server needs; `version` changes when its registration does. */
export interface McpConnection {
  id: string;
  name: string;
  url: string;
  /** The auth header, opened (never logged). */
  headers: Record<string, string>;
  timeoutMs: number;
  version: string;
}

/** One tool as a server lists it, as cached in `mcp_servers.tools`. */
export interface McpToolEntry {
  name: string;
  description?: string;
  inputSchema: Record<string, unknown>;
  annotations?: McpToolAnnotations;
}

export interface McpClientsOptions {
  allowHosts?: string[];
  /** A server said its tool list changed (notifications/tools/list_changed). */
  onToolsChanged?: (serverId: string) => void;
}

const CLIENT_INFO = { name: 'switchboard', version: '1.0.0' };

/**
 * MCP clients over Streamable HTTP, one per server per process, reused across turns and closed on
 * shutdown (docs/adr/0023). A connection that fails is dropped, so the next call reconnects; a
 * changed registration (new URL or secret) gets a new connection.
 */
export class McpClients {
  private readonly clients = new Map<string, { version: string; client: Promise<Client> }>();
  private readonly allow: HostAllowList;

  constructor(private readonly options: McpClientsOptions = {}) {
    this.allow = new HostAllowList(options.allowHosts ?? []);
  }

  /** The server's tools, every page. */
  async listTools(conn: McpConnection, signal?: AbortSignal): Promise<McpToolEntry[]> {
    return this.using(
      conn,
      async (client) => {
        const tools: McpToolEntry[] = [];
        let cursor: string | undefined;
        do {
          const page = await client.listTools(cursor ? { cursor } : undefined, {
            signal,
            timeout: conn.timeoutMs,
          });
          for (const t of page.tools) {
            tools.push({
              name: t.name,
              ...(t.description ? { description: t.description } : {}),
              inputSchema: t.inputSchema,
              ...(t.annotations ? { annotations: t.annotations } : {}),
            });
          }
          cursor = page.nextCursor;
        } while (cursor && tools.length < 1000);
        return tools;
      },
      signal,
    );
  }

  /** Calls a tool; a transport or protocol failure becomes a classified ToolError. */
  async callTool(
    conn: McpConnection,
    name: string,
    args: Record<string, unknown>,
    meta: Record<string, unknown> | undefined,
    signal: AbortSignal,
  ): Promise<CallToolResult> {
    return this.using(
      conn,
      async (client) => {
        const result = await client.callTool(
          { name, arguments: args, ...(meta ? { _meta: meta } : {}) },
          undefined,
          { signal, timeout: conn.timeoutMs },
        );
        return result as CallToolResult;
      },
      signal,
    );
  }

  /** Forgets a server's connection (closed in the background). */
  drop(serverId: string): void {
    const entry = this.clients.get(serverId);
    if (!entry) return;
    this.clients.delete(serverId);
    void entry.client.then((c) => c.close()).catch(() => undefined);
  }

  async close(): Promise<void> {
    const all = [...this.clients.values()];
    this.clients.clear();
    await Promise.all(all.map((e) => e.client.then((c) => c.close()).catch(() => undefined)));
  }

  private async using<T>(
    conn: McpConnection,
    fn: (client: Client) => Promise<T>,
    signal?: AbortSignal,
  ): Promise<T> {
    let client: Client;
    try {
      client = await this.client(conn);
    } catch (err) {
      this.drop(conn.id);
      throw mcpFailure(err, conn.name);
    }
    try {
      return await fn(client);
    } catch (err) {
      // The caller stopped waiting (the call's timeout, the turn's stop): its own cause wins.
      if (signal?.aborted) throw err;
      const failure = mcpFailure(err, conn.name);
      // A broken connection is not reused; a protocol-level refusal of one request keeps it.
      if (failure.kind !== 'mcp_protocol_error') this.drop(conn.id);
      throw failure;
    }
  }

  private client(conn: McpConnection): Promise<Client> {
    const cached = this.clients.get(conn.id);
    if (cached && cached.version === conn.version) return cached.client;
    if (cached) this.drop(conn.id);
    const client = this.connect(conn);
    this.clients.set(conn.id, { version: conn.version, client });
    return client;
  }

  private async connect(conn: McpConnection): Promise<Client> {
    const refused = await refusedServerUrl(conn.url, this.allow);
    if (refused) throw blockedServer(conn.name, refused);
    const client = new Client(CLIENT_INFO, {
      listChanged: {
        tools: {
          autoRefresh: false,
          onChanged: () => this.options.onToolsChanged?.(conn.id),
        },
      },
    });
    // The address is checked again on every connection the transport opens (DNS rebinding).
    const guard = guardedFetch(conn.name, this.allow);
    const transport = new StreamableHTTPClientTransport(new URL(conn.url), {
      requestInit: { headers: conn.headers, redirect: 'error' },
      fetch: guard.fetch,
    });
    client.onclose = () => void guard.close().catch(() => undefined);
    try {
      await client.connect(transport, { timeout: conn.timeoutMs });
    } catch (err) {
      await client.close().catch(() => undefined);
      throw err;
    }
    return client;
  }
}
