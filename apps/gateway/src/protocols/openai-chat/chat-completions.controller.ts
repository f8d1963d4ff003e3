import { Body, Controller, HttpCode, Inject, Post, Req, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiHeader, ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AGENT_TURNS, type AgentTurns } from '@switchboard/agent-turns';
import {
  ChatCompletionResponse,
  fromChatResponseFormat,
  responseFormatProblem,
  unsupportedChatParameter,
} from '@switchboard/contracts';
import { KeyAgents, TenantId } from '../../platform/auth/guard';
import {
  chatClientToolRefusal,
  chatClientTools,
  chatToolChoice,
  chatSessionRefusal,
  chatToolParam,
  completionOf,
  endedTurnError,
  modelNotFound,
  notEnded,
  OpenAiError,
  planConversation,
  requestedSessionId,
  toolCallsCompletion,
  trailingToolResults,
} from '@switchboard/protocols';
import type { LiveWatch } from '@switchboard/live';
import { holdRequest } from '../hold';
import { ErrorShapeOf } from '../../platform/errors';
import { IdempotencyKeyHeader } from '../../api/idempotency';
import { API_KEY_AUTH, OpenAiErrorResponses, schemaRef } from '../../platform/openapi';
import { ChatCompletionStreamer } from './chat-completion-stream';
import { ChatCompletionDto } from '../../api/dto';
import { RateLimitBucketOf } from '../../platform/rate-limit';

const SESSION_HEADER = 'x-session-id';

const ERRORS: [number, string][] = [
  [
    400,
    'Invalid request (body, header), an OpenAI parameter the facade does not support, a `response_format` schema that is not a usable JSON Schema (`invalid_response_format`), a `tool_choice` naming no declared tool or `required` with no tool at all (`invalid_tool_choice`), or a model that is not the session’s agent',
  ],
  [401, 'Missing, invalid or revoked API key'],
  [
    403,
    'The operator paused the tenant (`tenant_paused`, type `permission_error`: the stock client raises PermissionDeniedError)',
  ],
  [
    404,
    'No agent of the tenant with that name or id (`model_not_found`), no such session, or a `tool` message for no waiting client tool call (`unknown_call`)',
  ],
  [408, 'The turn did not end within WAIT_TIMEOUT_MS (`turn_timeout`): it goes on; poll GET /v1/turns/{id}'],
  [
    409,
    'The session is closed, the turn was cancelled, a request with this Idempotency-Key is still in flight, or a client tool call was answered otherwise before or expired (`answered_otherwise`, `expired`)',
  ],
  [413, 'Request body larger than the limit'],
  [415, 'Body is not application/json'],
  [422, 'Idempotency-Key reused with a different request'],
  [
    429,
    'Rate limit exceeded (`rate_limited`, type `rate_limit_error`: the stock client raises RateLimitError): retry after Retry-After seconds',
  ],
  [500, 'Unexpected failure (logged)'],
  [
    502,
    'The turn failed (`turn_failed`: its provider failed, or a budget could not be enforced; `structured_output_invalid`: the answer did not match `response_format` after a repair round)',
  ],
  [
    503,
    'A dependency (Postgres, Redis) is unavailable, or the gateway is shutting down (`server_shutting_down`): retry later',
  ],
];

/**
 * `POST /v1/chat/completions`, OpenAI-compatible (SPEC §3; docs/adr/0016-chat-completions-facade.md):
 * `model` names an agent, the conversation is a session, the last user message is admitted through
 * the same Admission as POST /v1/sessions/:id/messages (operator authority, Idempotency-Key honoured),
 * and the answer is the turn's final text, whole or streamed as `chat.completion.chunk`s. Errors come
 * in OpenAI's shape (the route declares it: `ErrorShapeOf`), so the stock `openai` client maps them.
 */
@ApiTags('chat')
@ApiBearerAuth(API_KEY_AUTH)
@Controller('v1/chat')
export class ChatCompletionsController {
  constructor(
    @Inject(AGENT_TURNS) private readonly turns: AgentTurns,
    @Inject(ChatCompletionStreamer) private readonly streamer: ChatCompletionStreamer,
  ) {}

  @Post('completions')
  @RateLimitBucketOf('admission')
  @HttpCode(200)
  // Every error of the route in OpenAI's shape: the guard's, the body parser's and the handler's.
  @ErrorShapeOf('openai')
  @ApiOperation({
    operationId: 'createChatCompletion',
    summary: 'OpenAI-compatible chat completion: the agent named by `model` answers in a session',
    description:
      "OpenAI's Chat Completions wire format in front of an agent: `model` names the agent, the last user message is admitted into a session (continued with `X-Session-Id`, or new, seeded with the earlier messages) and the answer is the ended turn's final text, or its chunks with `stream: true`. Honors `Idempotency-Key` as POST /v1/sessions/{id}/messages does; errors in OpenAI's shape (404 `model_not_found` for an unknown agent). `tools` are tools the client runs (docs/adr/0047): when the agent's model calls one the answer is `finish_reason: \"tool_calls\"` with `message.tool_calls`; a conversation ending with `tool` messages answers those calls and resumes the same turn.",
  })
  @ApiResponse({
    status: 200,
    description:
      'The turn ended: its final answer as a `chat.completion`, or with `stream: true` Server-Sent Events, ' +
      'one `chat.completion.chunk` (ChatCompletionChunk) per `data:` frame, ending with `data: [DONE]`. ' +
      'The `X-Session-Id` header names the session (new or continued).',
    content: {
      'application/json': { schema: schemaRef(ChatCompletionResponse) },
      'text/event-stream': { schema: { type: 'string' } },
    },
  })
  @OpenAiErrorResponses(ERRORS)
  @ApiHeader({
    name: 'X-Session-Id',
    required: false,
    description:
      'The session to continue (or `metadata.session_id`). Without one a new session of the agent is ' +
      'created, seeded with the earlier messages of the request; its id comes back in this header.',
    schema: { type: 'string', format: 'uuid' },
  })
  @ApiHeader({
    name: 'Idempotency-Key',
    required: false,
    description:
      'As on POST /v1/sessions/{id}/messages. Without X-Session-Id, the new session is derived from ' +
      'the key, so a retry continues the same session and waits for the same turn.',
    schema: { type: 'string', minLength: 1, maxLength: 200 },
  })
  async create(
    @TenantId() tenantId: string,
    @Body() body: ChatCompletionDto,
    @IdempotencyKeyHeader() idempotencyKey: string | undefined,
    @Req() req: FastifyRequest,
    @KeyAgents() only: string[] | undefined,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    const unsupported = unsupportedChatParameter(body);
    if (unsupported) {
      throw new OpenAiError(400, unsupported.code, unsupported.message, { param: unsupported.param });
    }
    // Structured output (docs/adr/0048): a schema the validator cannot use is refused before anything is admitted.
    const responseFormat = fromChatResponseFormat(body.response_format);
    const problem = responseFormat && responseFormatProblem(responseFormat);
    if (problem) {
      throw new OpenAiError(
        400,
        'invalid_response_format',
        `response_format.json_schema.schema: ${problem}`,
        {
          param: 'response_format',
        },
      );
    }
    const agentId = await this.turns.agentNamed(tenantId, body.model);
    // A key limited to agents (docs/adr/0066) sees another agent as no agent.
    if (!agentId || (only && !only.includes(agentId.toLowerCase()))) throw modelNotFound(body.model);
    const requested = requestedSessionId(req.headers[SESSION_HEADER], body.metadata);
    // A conversation ending with `tool` messages answers the calls a waiting turn handed out
    // (docs/adr/0047): that turn resumes; nothing new is admitted.
    const results = trailingToolResults(body.messages);
    if (results) return this.resume(tenantId, body, results, requested, reply);
    const plan = planConversation(body.messages);
    const agent = await this.turns.agent(tenantId, agentId);
    if (!agent) throw modelNotFound(body.model);
    let clientTools: ReturnType<typeof chatClientTools> = [];
    let toolChoice: ReturnType<typeof chatToolChoice>;
    try {
      clientTools = this.turns.clientToolsFor(agent, chatClientTools(body), chatToolParam);
      toolChoice = this.turns.toolChoiceFor(agent, clientTools, chatToolChoice(body), 'tool_choice');
    } catch (err) {
      chatClientToolRefusal(err);
    }
    const sessionId = await this.turns
      .session(
        tenantId,
        agentId,
        requested !== undefined
          ? { sessionId: requested }
          : {
              new: {
                createdBy: 'chat.completions',
                history: plan.history,
                importedAs: 'chat.completions',
                ...(idempotencyKey ? { key: { idempotencyKey } } : {}),
              },
            },
        // A key limited to agents (docs/adr/0066): another agent's session is a missing one.
        only,
      )
      .catch(chatSessionRefusal(requested));
    void reply.header(SESSION_HEADER, sessionId);

    // Listening starts before the admission (as for `wait` on POST …/messages): nothing the turn
    // commits can be missed.
    const { session_id: _, ...metadata } = body.metadata ?? {};
    const admitted = await this.turns.admit({
      tenantId,
      sessionId,
      text: plan.prompt,
      metadata: { ...metadata, ...(body.user !== undefined ? { user: body.user } : {}) },
      idempotencyKey,
      responseFormat,
      clientTools,
      ...(toolChoice ? { toolChoice } : {}),
    });
    try {
      await this.answer(reply, body, { ...admitted, after: 0 }, idempotencyKey);
    } finally {
      admitted.watch.close();
    }
  }

  /**
   * The client's tool results (docs/adr/0047): the waiting turn their ids name is answered (once:
   * the same results again change nothing) and the request is held as a new one would be, until the
   * turn ends or waits for the client's tools again. With X-Session-Id the calls must be that
   * session's. Refusals (unknown, missing, expired ids) in OpenAI's shape, nothing answered.
   */
  private async resume(
    tenantId: string,
    body: ChatCompletionDto,
    results: { callId: string; output: string }[],
    requested: string | undefined,
    reply: FastifyReply,
  ): Promise<void> {
    const answered = await this.turns
      .answerClientTools({
        tenantId,
        results,
        ...(requested !== undefined ? { sessionId: requested } : {}),
        answeredBy: 'chat.completions',
      })
      .catch(chatClientToolRefusal);
    void reply.header(SESSION_HEADER, answered.sessionId);
    // Watched after the answer: the hold reads the turn first, so nothing committed since is missed.
    const watch = this.turns.watch(answered.sessionId);
    try {
      await this.answer(
        reply,
        body,
        { ...answered, watch, subscribedBeforeAdmission: false, after: answered.afterSeq },
        undefined,
      );
    } finally {
      watch.close();
    }
  }

  /** The turn's answer: streamed, or held until it ends or waits for the client's tools. */
  private async answer(
    reply: FastifyReply,
    body: ChatCompletionDto,
    t: {
      tenantId: string;
      sessionId: string;
      turnId: string;
      watch: LiveWatch;
      subscribedBeforeAdmission: boolean;
      after: number;
    },
    idempotencyKey: string | undefined,
  ): Promise<void> {
    if (body.stream) {
      await this.streamer.stream(reply, t.watch, {
        tenantId: t.tenantId,
        sessionId: t.sessionId,
        turnId: t.turnId,
        model: body.model,
        includeUsage: body.stream_options?.include_usage === true,
        after: t.after,
        // A structured answer is sent once validated, not as the rounds write it (docs/adr/0048).
        finalOnly: fromChatResponseFormat(body.response_format) !== null,
      });
      return;
    }
    // Non-streaming: the request is held until the turn ends or waits for the client's tools
    // (bounded by WAIT_TIMEOUT_MS).
    const held = await holdRequest(this.turns, reply, t, { orClientTool: true });
    if (held.settled) {
      if (held.turn.status === 'awaiting_client_tool') {
        const calls = await this.turns.clientToolCalls(t.tenantId, t.turnId);
        const pending = calls.filter((c) => c.status === 'pending');
        await reply.status(200).send(toolCallsCompletion(held.turn, pending, body.model));
        return;
      }
      const failed = endedTurnError(held.turn);
      if (failed) throw failed;
      await reply.status(200).send(completionOf(held.turn, body.model));
    } else if (held.why !== 'left') {
      throw notEnded(t.turnId, held.why, this.turns.waitTimeoutMs, idempotencyKey);
    }
  }
}
