import {
  Controller,
  Delete,
  Get,
  HttpCode,
  Inject,
  Post,
  Req,
  Res,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import { OPERATOR_ACTOR } from '@switchboard/store';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  createMcpHandler,
  createRequestStateCodec,
  isLegacyRequest,
  type McpHttpHandler,
  type RequestStateCodec,
} from '@modelcontextprotocol/server';
import { randomBytes } from 'node:crypto';
import { toNodeHandler, toWebRequest, type NodeMcpRequestHandler } from '@modelcontextprotocol/node';
import type { Config } from '@switchboard/config';
import type { Logger } from '@switchboard/observability';
import { CONFIG, LOGGER, REDIS } from '@switchboard/platform';
import { ApiKeyId, KeyAgents, TenantId } from '../../platform/auth/guard';
import { AGENT_TURNS, type AgentTurns } from '@switchboard/agent-turns';
import { JSONRPC_INVALID_REQUEST } from '@switchboard/protocols';
import { ErrorShapeOf } from '../../platform/errors';
import { JSON_RPC_MESSAGE_SCHEMA, JsonRpcErrorResponses } from '../../platform/jsonrpc-openapi';
import { mcpServerFor, modernMcpServerFor, type ClientToolState, type McpCallRegistry } from './mcp-server';
import { API_KEY_AUTH } from '../../platform/openapi';
import { RateLimitBucketOf } from '../../platform/rate-limit';
import type { RedisConnection } from '@switchboard/queue';

/** How long a tool call is remembered for a cancellation (longer than any wait holds a call). */
const CALL_TTL_S = 3600;

/**
 * How long a minted requestState is honoured: past the longest client tool wait (7 days, ADR 0047);
 * the wait's own expiry is the real bound (an answer after it is refused `expired`).
 */
const REQUEST_STATE_TTL_S = 8 * 24 * 3600;

/** In-flight calls in Redis, per API key: a cancellation reaches whichever replica it lands on. */
class RedisCallRegistry implements McpCallRegistry {
  constructor(
    private readonly redis: RedisConnection,
    private readonly prefix: string,
  ) {}

  private key(requestId: string | number): string {
    return `${this.prefix}:mcp-call:${JSON.stringify(requestId)}`;
  }

  async note(requestId: string | number, turnId: string): Promise<void> {
    await this.redis.set(this.key(requestId), turnId, 'EX', CALL_TTL_S);
  }

  async forget(requestId: string | number): Promise<void> {
    await this.redis.del(this.key(requestId));
  }

  async find(requestId: string | number): Promise<string | undefined> {
    return (await this.redis.get(this.key(requestId))) ?? undefined;
  }
}

/** GET (a server-initiated stream) and DELETE (end a session): a stateless server has neither. */
const methodNotAllowed = (reply: FastifyReply) =>
  reply
    .status(405)
    .header('allow', 'POST')
    .send({
      jsonrpc: '2.0',
      id: null,
      error: {
        code: JSONRPC_INVALID_REQUEST,
        message:
          'Method not allowed: this MCP server is stateless (no sessions, no server-initiated stream); POST only',
      },
    });

/** What the gateway hands the revision-2026-07-28 handler about the caller (its guard verified the key). */
interface Caller {
  tenantId: string;
  /** The agents the key is limited to (docs/adr/0066); unset: every agent. */
  agentIds?: string[];
}

/**
 * `/mcp`: the tenant's agents as MCP tools over Streamable HTTP (docs/adr/0036). Stateless: every
 * POST gets a fresh MCP server and transport (no Mcp-Session-Id, any replica answers), its answer
 * an SSE stream (progress notifications, then the result) or JSON; GET and DELETE answer 405, as the
 * spec has a stateless server do. The tenant's API key is the bearer (the gateway's AuthGuard).
 * Both protocol eras on the one endpoint: a request without 2026-07-28's `_meta` envelope (an
 * `initialize`, or any request of a 2025-11-25 client) goes to the SDK v1 server as before; one with
 * it (`server/discover`, `tools/list`, `tools/call`…) to SDK v2's `createMcpHandler`.
 */
@ApiTags('mcp')
@ApiBearerAuth(API_KEY_AUTH)
@Controller('mcp')
export class McpController implements OnApplicationShutdown {
  /** Revision 2026-07-28 (and later): modern-only, the 2025 era is routed to the v1 server before it. */
  private readonly modern: McpHttpHandler;
  private readonly serveModern: NodeMcpRequestHandler;
  /** Signs and verifies the requestState of a call waiting for the client's tools (2026-07-28). */
  private readonly requestState: RequestStateCodec<ClientToolState>;

  constructor(
    @Inject(AGENT_TURNS) private readonly turns: AgentTurns,
    @Inject(REDIS) private readonly redis: RedisConnection,
    @Inject(CONFIG) private readonly config: Config,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    const onerror = (err: Error) => this.logger.error({ err }, 'MCP (2026-07-28) request failed');
    this.requestState = createRequestStateCodec<ClientToolState>({
      key: this.config.MCP_REQUEST_STATE_KEY ?? randomBytes(32),
      ttlSeconds: REQUEST_STATE_TTL_S,
      // Bound to the tenant: a state minted for one tenant's call is refused on another's.
      bind: (ctx) => (ctx.http?.authInfo?.extra as unknown as Caller | undefined)?.tenantId ?? '',
    });
    this.modern = createMcpHandler(
      ({ authInfo }) =>
        modernMcpServerFor(
          this.turns,
          { ...(authInfo?.extra as unknown as Caller), logger: this.logger },
          this.requestState,
        ),
      { legacy: 'reject', onerror },
    );
    this.serveModern = toNodeHandler(this.modern, { onerror });
  }

  /**
   * After the drain (in-flight calls have finished or the grace ran out): closing aborts the modern
   * exchanges still open, whose turns would be cancelled, so never before it.
   */
  async onApplicationShutdown(): Promise<void> {
    await this.modern.close();
  }

  @Post()
  // Tool calls and messages admit turns: the bucket of POST …/messages and chat completions (ADR 0028).
  @RateLimitBucketOf('admission')
  @HttpCode(200)
  @ErrorShapeOf('jsonrpc')
  @ApiOperation({
    operationId: 'mcpPost',
    summary: "MCP server (Streamable HTTP, stateless): the tenant's agents as tools",
    description:
      'Not a REST operation: POST carries MCP JSON-RPC messages as the MCP specification defines, in ' +
      'either revision: 2025-11-25 (`initialize`, then `tools/list`, `tools/call`, `notifications/cancelled`, …) ' +
      'or 2026-07-28 (no handshake: every request carries `_meta` `io.modelcontextprotocol/protocolVersion` and ' +
      '`clientCapabilities` and the `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` headers; `server/discover` ' +
      'names the revisions and capabilities); send `Accept: application/json, text/event-stream`. Each agent is a ' +
      'tool named after it, input `{message, session_id?}`; a call answers with the turn’s final text and ' +
      '`structuredContent` `{session_id, turn_id, status}`; a failed turn is a result with `isError`. `client_tools` ' +
      '(MCP Tool objects) declares tools the client runs for the turn: when the agent calls one, 2026-07-28 answers ' +
      '`input_required` (a form `elicitation/create` per call, keyed by its call id, and a signed `requestState`; the ' +
      'retried call resumes the turn), 2025-11-25 an `isError` result with `client_tool_calls`, answered at POST ' +
      '/v1/turns/{id}/client-tool-results. GET and ' +
      'DELETE answer 405 (stateless server: no session, no server-initiated stream). docs/adr/0036.',
  })
  @ApiBody({
    schema: JSON_RPC_MESSAGE_SCHEMA as object,
    required: false,
    examples: {
      call: {
        summary: 'Call an agent',
        value: {
          jsonrpc: '2.0',
          id: 2,
          method: 'tools/call',
          params: {
            name: 'support',
            arguments: { message: 'Where is order 1182?' },
            _meta: { progressToken: 7 },
          },
        },
      },
      list: { summary: 'List the agents', value: { jsonrpc: '2.0', id: 1, method: 'tools/list' } },
      discover: {
        summary:
          'Revision 2026-07-28: discover (with MCP-Protocol-Version: 2026-07-28, Mcp-Method: server/discover)',
        value: {
          jsonrpc: '2.0',
          id: 1,
          method: 'server/discover',
          params: {
            _meta: {
              'io.modelcontextprotocol/protocolVersion': '2026-07-28',
              'io.modelcontextprotocol/clientCapabilities': {},
            },
          },
        },
      },
    },
  })
  @ApiResponse({
    status: 200,
    description:
      'The JSON-RPC response: an SSE stream (`text/event-stream`: progress notifications, then the response) ' +
      'or a JSON body',
    content: {
      'text/event-stream': { schema: { type: 'string' } },
      'application/json': { schema: JSON_RPC_MESSAGE_SCHEMA as object },
    },
  })
  @ApiResponse({ status: 202, description: 'A notification or response was accepted (no body)' })
  @JsonRpcErrorResponses([
    [
      400,
      'Not valid JSON (-32700), or not a valid JSON-RPC message / MCP request (-32600); 2026-07-28: a revision ' +
        'the server does not speak (-32022, `error.data.supported`), headers that are missing or disagree with ' +
        'the body (-32020), a malformed `_meta` envelope (-32602)',
    ],
    [401, 'Missing, invalid or revoked API key'],
    [404, '2026-07-28: a method this server does not have (-32601)'],
    [405, 'GET or DELETE: this stateless server has no sessions or server-initiated streams'],
    [406, 'The Accept header does not allow application/json and text/event-stream'],
    [413, 'Request body larger than the limit'],
    [415, 'Body is not application/json'],
    [429, 'Rate limit exceeded: retry after Retry-After seconds'],
    [500, 'Unexpected failure (logged)'],
    [503, 'A dependency (Postgres, Redis) is unavailable: retry later'],
  ])
  async post(
    @TenantId() tenantId: string,
    @ApiKeyId() apiKeyId: string,
    @Req() req: FastifyRequest,
    @Res() reply: FastifyReply,
    @KeyAgents() agentIds: string[] | undefined,
  ): Promise<void> {
    await this.handle(tenantId, apiKeyId, req, reply, agentIds);
  }

  @Get()
  @ErrorShapeOf('jsonrpc')
  @ApiOperation({
    operationId: 'mcpGet',
    summary: 'MCP server: no server-initiated stream (stateless): 405',
    description:
      'The server is stateless (ADR 0036): it opens no server-initiated SSE stream, so GET is answered 405 ' +
      'as the Streamable HTTP transport allows; every exchange is a POST.',
  })
  @JsonRpcErrorResponses([
    [401, 'Missing, invalid or revoked API key'],
    [405, 'This stateless server has no server-initiated stream'],
    [429, 'Rate limit exceeded: retry after Retry-After seconds'],
    [500, 'Unexpected failure (logged)'],
    [503, 'A dependency (Postgres, Redis) is unavailable: retry later'],
  ])
  async get(@Res() reply: FastifyReply): Promise<void> {
    await methodNotAllowed(reply);
  }

  @Delete()
  @ErrorShapeOf('jsonrpc')
  @ApiOperation({
    operationId: 'mcpDelete',
    summary: 'MCP server: no session to end (stateless): 405',
    description:
      'The server issues no `Mcp-Session-Id` (ADR 0036), so there is no session to end: DELETE is answered 405.',
  })
  @JsonRpcErrorResponses([
    [401, 'Missing, invalid or revoked API key'],
    [405, 'This stateless server has no sessions'],
    [429, 'Rate limit exceeded: retry after Retry-After seconds'],
    [500, 'Unexpected failure (logged)'],
    [503, 'A dependency (Postgres, Redis) is unavailable: retry later'],
  ])
  async delete(@Res() reply: FastifyReply): Promise<void> {
    await methodNotAllowed(reply);
  }

  private async handle(
    tenantId: string,
    apiKeyId: string,
    req: FastifyRequest,
    reply: FastifyReply,
    agentIds: string[] | undefined,
  ): Promise<void> {
    // The SDK writes the response itself; the headers set so far (request id, security) go with it.
    reply.hijack();
    for (const [name, value] of Object.entries(reply.getHeaders())) {
      if (value !== undefined) reply.raw.setHeader(name, value);
    }
    if (!(await isLegacyRequest(await toWebRequest(req.raw, req.body), req.body))) {
      // The key's id, never its secret: the SDK carries it to the factory, which reads the tenant.
      const caller: Caller = { tenantId, ...(agentIds ? { agentIds } : {}) };
      const auth = { token: apiKeyId, clientId: apiKeyId, scopes: [], extra: { ...caller } };
      await this.serveModern(Object.assign(req.raw, { auth }), reply.raw, req.body);
      return;
    }
    const server = mcpServerFor(this.turns, {
      tenantId,
      // A key limited to agents (docs/adr/0066) sees and calls only theirs.
      ...(agentIds ? { agentIds } : {}),
      // Per API key; the operator acting as a tenant (`operator`) per tenant, never one scope for all.
      calls: new RedisCallRegistry(
        this.redis,
        `${this.config.QUEUE_PREFIX}:${apiKeyId === OPERATOR_ACTOR ? `operator:${tenantId}` : apiKeyId}`,
      ),
      logger: this.logger,
    });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    // The client left (or the answer is complete): closing aborts the calls still in progress, whose
    // turns are cancelled (the request's abort is MCP's cancellation too).
    reply.raw.once('close', () => {
      void server.close().catch(() => undefined);
    });
    await server.connect(transport);
    await transport.handleRequest(req.raw, reply.raw, req.body);
  }
}
