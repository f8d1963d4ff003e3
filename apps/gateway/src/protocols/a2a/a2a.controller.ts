import { Controller, Get, HttpCode, Inject, Param, Post, Req, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiOperation, ApiParam, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { A2A_VERSION_HEADER, AgentCard } from '@a2a-js/sdk';
import { LegacyJsonRpcTransportHandler } from '@a2a-js/sdk/compat/v0_3/server';
import { JsonRpcTransportHandler, ServerCallContext, validateVersion } from '@a2a-js/sdk/server';
import type { Config } from '@switchboard/config';
import { notFound, parseTenantSettings } from '@switchboard/contracts';
import type { Logger } from '@switchboard/observability';
import { CONFIG, LOGGER } from '@switchboard/platform';
import { A2aStore, sql, type SqlDb } from '@switchboard/store';
import { KeyAgents, TenantId } from '../../platform/auth/guard';
import { agentCardJson, agentCardOf } from '@switchboard/protocols';
import { A2aAgent } from './a2a';
import { GATEWAY_SQL } from '../../api/streams.controller';
import { AGENT_TURNS, type AgentTurns } from '@switchboard/agent-turns';
import { ErrorShapeOf } from '../../platform/errors';
import { JSON_RPC_MESSAGE_SCHEMA, JsonRpcErrorResponses } from '../../platform/jsonrpc-openapi';
import { API_KEY_AUTH } from '../../platform/openapi';
import { RateLimitBucketOf } from '../../platform/rate-limit';
import { clientGone, SseStream } from '../../platform/sse';

const AGENT_PARAM = {
  name: 'agentId',
  description: 'The agent (GET /v1/agents): its A2A endpoint is /a2a/{agentId}',
  schema: { type: 'string', format: 'uuid' },
} as const;

const HTTP_ERRORS: [number, string][] = [
  [400, 'Not valid JSON (-32700 parse error)'],
  [401, 'Missing, invalid or revoked API key'],
  [404, 'No agent of the tenant with that id'],
  [413, 'Request body larger than the limit'],
  [415, 'Body is not application/json'],
  [429, 'Rate limit exceeded: retry after Retry-After seconds'],
  [500, 'Unexpected failure (logged)'],
  [503, 'A dependency (Postgres, Redis) is unavailable: retry later'],
];

/**
 * A2A (docs/adr/0037): each agent of the tenant at `/a2a/{agentId}`, its agent card at
 * `/a2a/{agentId}/.well-known/agent-card.json` (the SDK's ClientFactory resolves it from the base
 * URL `/a2a/{agentId}/`). The SDK's JSON-RPC transport handlers parse and answer (v1.0 methods, and
 * v0.3's when the request's A2A-Version is 0.3 or absent); `A2aAgent` runs them over turns and the
 * push notification configs (`A2aStore`). The tenant's API key is the bearer.
 */
@ApiTags('a2a')
@ApiBearerAuth(API_KEY_AUTH)
@Controller('a2a')
export class A2aController {
  private readonly store: A2aStore;
  private readonly allowHosts: ReadonlySet<string>;

  constructor(
    @Inject(AGENT_TURNS) private readonly turns: AgentTurns,
    @Inject(LOGGER) private readonly logger: Logger,
    @Inject(GATEWAY_SQL) private readonly sql: SqlDb,
    @Inject(CONFIG) config: Config,
  ) {
    this.store = new A2aStore(sql);
    this.allowHosts = new Set(config.OUTBOUND_WEBHOOK_ALLOW_HOSTS ?? []);
  }

  @Get(':agentId/.well-known/agent-card.json')
  @ErrorShapeOf('jsonrpc')
  @ApiOperation({
    operationId: 'getAgentCard',
    summary: "An agent's A2A agent card (v0.3 and v1.0; security: the bearer API key)",
    description:
      "The agent's card (ADR 0037): its name, description, skills, the JSON-RPC endpoint `/a2a/{agentId}` " +
      'and the bearer security scheme; `capabilities.pushNotifications: true`. Negotiated by the ' +
      '`A2A-Version` request header: `1.0` gets the v1.0 proto JSON card (`supportedInterfaces`); none or ' +
      "`0.3` gets that card with v0.3's fields beside it (top-level `url`, `protocolVersion`, " +
      "`preferredTransport`, `security`), valid under both versions. Another tenant's agent, or an id " +
      'that is not one, is 404.',
  })
  @ApiParam(AGENT_PARAM)
  @ApiResponse({
    status: 200,
    description: 'The agent card (A2A v1.0 AgentCard JSON; with the v0.3 fields unless A2A-Version is 1.0)',
    content: { 'application/json': { schema: { type: 'object' } } },
  })
  @JsonRpcErrorResponses(HTTP_ERRORS.filter(([s]) => [401, 404, 429, 500, 503].includes(s)))
  async card(
    @TenantId() tenantId: string,
    @Param('agentId') agentId: string,
    @Req() req: FastifyRequest,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    const agent = await this.agent(tenantId, agentId);
    const card = agentCardOf(agent, this.endpoint(req, agent.id));
    // As the SDK's own card handler negotiates: a v1.0 client (it sends A2A-Version: 1.0) gets the
    // v1.0 proto JSON it parses as such; no header or 0.3 gets the card with v0.3's fields beside
    // v1.0's (valid under both: a v0.3 client reads its top-level `url`).
    await reply
      .header('cache-control', 'private, no-cache')
      .header('vary', 'Authorization, A2A-Version')
      .send(legacyRequest(req) ? agentCardJson(card) : AgentCard.toJSON(card));
  }

  @Post(':agentId')
  // Tool calls and messages admit turns: the bucket of POST …/messages and chat completions (ADR 0028).
  @RateLimitBucketOf('admission')
  @HttpCode(200)
  @ErrorShapeOf('jsonrpc')
  @ApiOperation({
    operationId: 'callAgentJsonRpc',
    summary:
      "An agent's A2A JSON-RPC endpoint (message/send, message/stream, tasks/get, tasks/cancel, " +
      'push notification configs, ListTasks)',
    description:
      'Not a REST operation: a JSON-RPC 2.0 request as the A2A specification defines it. v1.0 methods ' +
      '(`SendMessage`, `SendStreamingMessage`, `GetTask`, `ListTasks`, `CancelTask`, `SubscribeToTask`, ' +
      '`CreateTaskPushNotificationConfig`, `GetTaskPushNotificationConfig`, ' +
      '`ListTaskPushNotificationConfigs`, `DeleteTaskPushNotificationConfig`) with `A2A-Version: 1.0`; ' +
      'v0.3 methods (`message/send`, `message/stream`, `tasks/get`, `tasks/cancel`, `tasks/resubscribe`, ' +
      '`tasks/pushNotificationConfig/set|get|list|delete`; v0.3 has no tasks/list) with ' +
      '`A2A-Version: 0.3` or none. A task is a turn (its id the turn id), a context a session (contextId ' +
      'the session id). A push notification config (also accepted with a message) gets the ended task ' +
      "POSTed to its URL in the version's shape, signed with the tenant's webhook secret (Standard " +
      'Webhooks, like completion webhooks), with its token (`X-A2A-Notification-Token`) and ' +
      'authentication (`Authorization`), retried with backoff; a private or metadata address is ' +
      'refused. Protocol errors (unknown method -32601, invalid params -32602, task not found -32001, ' +
      "task not cancelable -32002, push notifications need the tenant's secret -32003, agent stopped " +
      '-32050, tenant paused -32051, …) come as JSON-RPC error responses with status 200. ' +
      'docs/adr/0037.',
  })
  @ApiParam(AGENT_PARAM)
  @ApiBody({
    schema: JSON_RPC_MESSAGE_SCHEMA as object,
    examples: {
      send: {
        summary: 'Send a message (v0.3)',
        value: {
          jsonrpc: '2.0',
          id: 1,
          method: 'message/send',
          params: {
            message: {
              kind: 'message',
              messageId: '0b0c1d2e-3f40-4a5b-8c6d-7e8f90a1b2c3',
              role: 'user',
              parts: [{ kind: 'text', text: 'Where is order 1182?' }],
            },
          },
        },
      },
    },
  })
  @ApiResponse({
    status: 200,
    description:
      'The JSON-RPC response (result or error), or for a streaming method an SSE stream of JSON-RPC responses',
    content: {
      'application/json': { schema: JSON_RPC_MESSAGE_SCHEMA as object },
      'text/event-stream': { schema: { type: 'string' } },
    },
  })
  @JsonRpcErrorResponses(HTTP_ERRORS)
  async rpc(
    @TenantId() tenantId: string,
    @Param('agentId') agentId: string,
    @Req() req: FastifyRequest,
    @Res() reply: FastifyReply,
    @KeyAgents() only: string[] | undefined,
  ): Promise<void> {
    const agent = await this.agent(tenantId, agentId);
    const gone = clientGone(reply);
    const card = agentCardOf(agent, this.endpoint(req, agent.id));
    const version = requestedVersion(req);
    const legacy = legacyRequest(req);
    const handler = new A2aAgent(this.turns, tenantId, agent, card, gone.signal, {
      store: this.store,
      allowHosts: this.allowHosts,
      signs: () => this.signs(tenantId),
      version: legacy ? '0.3' : '1.0',
      ...(only ? { reach: only } : {}),
    });
    const mapError = (err: unknown): unknown =>
      legacy
        ? LegacyJsonRpcTransportHandler.mapToLegacyJSONRPCError(err)
        : JsonRpcTransportHandler.mapToJSONRPCError(err);
    const id = (req.body as { id?: unknown } | null)?.id ?? null;
    try {
      const context = new ServerCallContext({ requestedVersion: version });
      let answer: unknown;
      try {
        validateVersion(context.requestedVersion, card, 'JSONRPC');
        answer = await (
          legacy ? new LegacyJsonRpcTransportHandler(handler) : new JsonRpcTransportHandler(handler)
        ).handle(req.body as Record<string, unknown>, context);
      } catch (err) {
        answer = { jsonrpc: '2.0', id, error: mapError(err) };
      }
      if (!isStream(answer)) {
        await reply.status(200).send(answer);
        return;
      }
      // A streaming method: the first event (or its error, as JSON) decides before the stream opens.
      const iterator = answer[Symbol.asyncIterator]();
      let first: IteratorResult<unknown>;
      try {
        first = await iterator.next();
      } catch (err) {
        await reply.status(200).send({ jsonrpc: '2.0', id, error: mapError(err) });
        return;
      }
      const sse = SseStream.open(reply, { gone });
      try {
        if (!first.done) sse.data(first.value);
        for (let next = await iterator.next(); !next.done; next = await iterator.next()) {
          await sse.drained();
          sse.data(next.value);
        }
      } catch (err) {
        this.logger.warn({ err, agentId }, 'A2A stream failed');
        sse.data({ jsonrpc: '2.0', id, error: mapError(err) }, 'error');
      } finally {
        await iterator.return?.(undefined);
        sse.close();
      }
    } finally {
      gone.release();
    }
  }

  private async agent(tenantId: string, agentId: string) {
    const agent = await this.turns.agent(tenantId, agentId);
    if (!agent) throw notFound('agent');
    return agent;
  }

  /** Whether the tenant has a webhook signing secret (push deliveries are signed with it). */
  private async signs(tenantId: string): Promise<boolean> {
    const row = await this.sql.first<{ settings: unknown }>(
      sql`SELECT settings FROM tenants WHERE id = ${tenantId}::uuid`,
    );
    return parseTenantSettings(row?.settings).notifySecret !== undefined;
  }

  /** The agent's endpoint as this request reached the gateway. */
  private endpoint(req: FastifyRequest, agentId: string): string {
    return `${req.protocol}://${req.host}/a2a/${agentId}`;
  }
}

const isStream = (v: unknown): v is AsyncIterable<unknown> =>
  typeof (v as AsyncIterable<unknown> | null)?.[Symbol.asyncIterator] === 'function';

/** The request's A2A-Version header, if it has one. */
const requestedVersion = (req: FastifyRequest): string | undefined => {
  const header = req.headers[A2A_VERSION_HEADER.toLowerCase()];
  return (Array.isArray(header) ? header[0] : header)?.trim() || undefined;
};

/** A v0.3 request: A2A-Version 0.3 (or 0.3.x), or none (the spec: a missing header means 0.3). */
const legacyRequest = (req: FastifyRequest): boolean => {
  const version = requestedVersion(req);
  return version === undefined || version === '0.3' || version.startsWith('0.3.');
};
