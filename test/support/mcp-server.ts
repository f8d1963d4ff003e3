import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

/** One tools/call the server answered (or started), with the request's `_meta`. */
export interface SeenCall {
  tool: string;
  args: Record<string, unknown>;
  meta?: Record<string, unknown>;
}

export interface TestMcpServer {
  url: string;
  port: number;
  calls: SeenCall[];
  /** Requests refused for a missing or wrong Authorization header. */
  unauthorized: number;
  /** Every Authorization header value the server was sent. */
  authHeaders: string[];
  /**
   * Adds a read-only tool answering `text`; in a stateful server the live sessions are told
   * (notifications/tools/list_changed).
   */
  addTool(name: string, text: string): void;
  close(): Promise<void>;
}

/**
 * A real MCP server over Streamable HTTP (the SDK's McpServer, stateless: one server and transport
 * per request), on a random local port. Tools: `add` (read-only), `delete_item` (destructive, the
 * MCP default), `append_note` (additive, closed-world: local_write), `fail` (an isError result),
 * `slow` (read-only, answers after `ms` unless the client gives up first).
 */
export async function startMcpServer(
  options: { token?: string; port?: number; stateful?: boolean } = {},
): Promise<TestMcpServer> {
  const calls: SeenCall[] = [];
  const state = { unauthorized: 0, authHeaders: [] as string[] };
  const added: { name: string; text: string }[] = [];
  const sessions = new Map<string, { server: McpServer; transport: StreamableHTTPServerTransport }>();
  const addTo = (server: McpServer, tool: { name: string; text: string }) =>
    server.registerTool(
      tool.name,
      { description: `Answers ${tool.text}.`, annotations: { readOnlyHint: true } },
      async () => ({ content: [{ type: 'text', text: tool.text }] }),
    );
  const build = () => {
    const server = new McpServer({ name: 'test-tools', version: '1.0.0' });
    for (const tool of added) addTo(server, tool);
    server.registerTool(
      'add',
      {
        description: 'Adds two numbers.',
        inputSchema: { a: z.number(), b: z.number() },
        annotations: { readOnlyHint: true },
      },
      async ({ a, b }, extra) => {
        calls.push({ tool: 'add', args: { a, b }, meta: extra._meta });
        return { content: [{ type: 'text', text: String(a + b) }] };
      },
    );
    server.registerTool(
      'delete_item',
      { description: 'Deletes an item by id.', inputSchema: { id: z.string() } },
      async ({ id }, extra) => {
        calls.push({ tool: 'delete_item', args: { id }, meta: extra._meta });
        return { content: [{ type: 'text', text: `deleted ${id}` }] };
      },
    );
    server.registerTool(
      'append_note',
      {
        description: 'Appends a note.',
        inputSchema: { text: z.string() },
        annotations: { destructiveHint: false, openWorldHint: false, idempotentHint: true },
      },
      async ({ text }, extra) => {
        calls.push({ tool: 'append_note', args: { text }, meta: extra._meta });
        return { content: [{ type: 'text', text: 'noted' }] };
      },
    );
    server.registerTool(
      'fail',
      { description: 'Always fails.', inputSchema: {}, annotations: { readOnlyHint: true } },
      async (_args, extra) => {
        calls.push({ tool: 'fail', args: {}, meta: extra._meta });
        return { isError: true, content: [{ type: 'text', text: 'the widget is jammed' }] };
      },
    );
    server.registerTool(
      'slow',
      {
        description: 'Answers after ms milliseconds.',
        inputSchema: { ms: z.number().int().min(0) },
        annotations: { readOnlyHint: true },
      },
      async ({ ms }, extra) => {
        calls.push({ tool: 'slow', args: { ms }, meta: extra._meta });
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, ms);
          extra.signal.addEventListener('abort', () => {
            clearTimeout(timer);
            resolve();
          });
        });
        return { content: [{ type: 'text', text: 'finally' }] };
      },
    );
    return server;
  };

  const authorised = (req: IncomingMessage) => {
    if (!options.token) return true;
    const header = req.headers.authorization ?? '';
    state.authHeaders.push(header);
    return header === `Bearer ${options.token}`;
  };

  const http: Server = createServer((req, res) => {
    if (!authorised(req)) {
      state.unauthorized++;
      res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"unauthorized"}');
      return;
    }
    if (options.stateful) {
      const id = req.headers['mcp-session-id'];
      const session = typeof id === 'string' ? sessions.get(id) : undefined;
      if (session) {
        void session.transport.handleRequest(req, res);
        return;
      }
      if (req.method !== 'POST' || id !== undefined) {
        res.writeHead(404).end();
        return;
      }
      const server = build();
      const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (sid) => void sessions.set(sid, { server, transport }),
      });
      server
        .connect(transport)
        .then(() => transport.handleRequest(req, res))
        .catch(() => {
          if (!res.headersSent) res.writeHead(500).end();
        });
      return;
    }
    if (req.method !== 'POST') {
      res.writeHead(405, { allow: 'POST' }).end();
      return;
    }
    const server = build();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    server
      .connect(transport)
      .then(() => transport.handleRequest(req, res))
      .catch(() => {
        if (!res.headersSent) res.writeHead(500).end();
      });
  });
  await new Promise<void>((resolve) => http.listen(options.port ?? 0, '127.0.0.1', resolve));
  const port = (http.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    port,
    calls,
    get unauthorized() {
      return state.unauthorized;
    },
    authHeaders: state.authHeaders,
    addTool: (name, text) => {
      const tool = { name, text };
      added.push(tool);
      for (const { server } of sessions.values()) addTo(server, tool);
    },
    close: async () => {
      await Promise.all([...sessions.values()].map(({ server }) => server.close().catch(() => undefined)));
      sessions.clear();
      http.closeAllConnections();
      await new Promise((resolve) => http.close(resolve));
    },
  };
}
