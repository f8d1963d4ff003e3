import { Body, Controller, HttpCode, Inject, Post, Req, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiHeader, ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Admission, Admitted } from '@switchboard/admission';
import { ChatCompletionResponse, isUuid, newId, unsupportedChatParameter } from '@switchboard/contracts';
import type { Config } from '@switchboard/config';
import { ADMISSION, CONFIG } from '@switchboard/platform';
import { SessionsRepository } from '@switchboard/store';
import { AgentsRepository } from '@switchboard/subagents';
import { TenantId } from '../../platform/auth/guard';
import {
  completionOf,
  endedTurnError,
  OPERATOR_PROMPT,
  OpenAiError,
  planConversation,
  requestedSessionId,
  sessionIdForKey,
  type ConversationPlan,
} from '@switchboard/protocols';
import { ErrorShapeOf } from '../../platform/errors';
import { IdempotencyKeyHeader } from '../../api/idempotency';
import { API_KEY_AUTH, OpenAiErrorResponses, schemaRef } from '../../platform/openapi';
import { TURN_WAITER, type TurnWaiter } from '../../http/turn-waiter';
import { ChatCompletionStreamer } from './chat-completion-stream';
import { ChatCompletionDto } from '../../api/dto';
import { RateLimitBucketOf } from '../../platform/rate-limit';

const SESSION_HEADER = 'x-session-id';

const ERRORS: [number, string][] = [
  [
    400,
    'Invalid request (body, header), an OpenAI parameter the facade does not support, or a model that is not the session’s agent',
  ],
  [401, 'Missing, invalid or revoked API key'],
  [
    403,
    'The operator paused the tenant (`tenant_paused`, type `permission_error`: the stock client raises PermissionDeniedError)',
  ],
  [404, 'No agent of the tenant with that name or id (`model_not_found`), or no such session'],
  [408, 'The turn did not end within WAIT_TIMEOUT_MS (`turn_timeout`): it goes on; poll GET /v1/turns/{id}'],
  [
    409,
    'The session is closed, the turn was cancelled, or a request with this Idempotency-Key is still in flight',
  ],
  [413, 'Request body larger than the limit'],
  [415, 'Body is not application/json'],
  [422, 'Idempotency-Key reused with a different request'],
  [
    429,
    'Rate limit exceeded (`rate_limited`, type `rate_limit_error`: the stock client raises RateLimitError): retry after Retry-After seconds',
  ],
  [500, 'Unexpected failure (logged)'],
  [502, 'The turn failed (`turn_failed`: its provider failed, or a budget could not be enforced)'],
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
    @Inject(AgentsRepository) private readonly agents: AgentsRepository,
    @Inject(SessionsRepository) private readonly sessions: SessionsRepository,
    @Inject(ADMISSION) private readonly admission: Admission,
    @Inject(TURN_WAITER) private readonly waiter: TurnWaiter,
    @Inject(CONFIG) private readonly config: Config,
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
      "OpenAI's Chat Completions wire format in front of an agent: `model` names the agent, the last user message is admitted into a session (continued with `X-Session-Id`, or new, seeded with the earlier messages) and the answer is the ended turn's final text, or its chunks with `stream: true`. Honors `Idempotency-Key` as POST /v1/sessions/{id}/messages does; errors in OpenAI's shape (404 `model_not_found` for an unknown agent).",
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
    @Res() reply: FastifyReply,
  ): Promise<void> {
    const unsupported = unsupportedChatParameter(body);
    if (unsupported) {
      throw new OpenAiError(400, unsupported.code, unsupported.message, { param: unsupported.param });
    }
    const plan = planConversation(body.messages);
    const agentId = await this.agentOf(tenantId, body.model);
    const sessionId = await this.sessionFor(
      tenantId,
      agentId,
      requestedSessionId(req.headers[SESSION_HEADER], body.metadata),
      idempotencyKey,
      plan,
    );
    void reply.header(SESSION_HEADER, sessionId);

    // Listening starts before the admission (as for `wait` on POST …/messages): nothing the turn
    // commits can be missed.
    const watch = this.waiter.watch(sessionId);
    const alreadySubscribed = watch.subscription.isReady;
    try {
      const admitted = await this.admit(tenantId, sessionId, body, plan, idempotencyKey);
      const subscribedBeforeAdmission = alreadySubscribed && !admitted.replayed;
      if (body.stream) {
        await this.streamer.stream(reply, watch, {
          tenantId,
          sessionId,
          turnId: admitted.turnId,
          model: body.model,
          includeUsage: body.stream_options?.include_usage === true,
        });
        return;
      }
      await this.answer(
        reply,
        watch,
        tenantId,
        admitted,
        body.model,
        subscribedBeforeAdmission,
        idempotencyKey,
      );
    } finally {
      watch.close();
    }
  }

  /** Non-streaming: holds the request until the turn ends (bounded by WAIT_TIMEOUT_MS). */
  private async answer(
    reply: FastifyReply,
    watch: ReturnType<TurnWaiter['watch']>,
    tenantId: string,
    admitted: Admitted,
    model: string,
    subscribedBeforeAdmission: boolean,
    idempotencyKey: string | undefined,
  ): Promise<void> {
    const bound = this.config.WAIT_TIMEOUT_MS;
    const gone = new AbortController();
    const onClose = () => gone.abort();
    reply.raw.once('close', onClose);
    try {
      const turn = await this.waiter.untilEnded(watch, {
        tenantId,
        turnId: admitted.turnId,
        deadline: Date.now() + bound,
        signal: gone.signal,
        subscribedBeforeAdmission,
      });
      if (gone.signal.aborted) return;
      if (!turn && this.waiter.shutdown.aborted) {
        throw new OpenAiError(
          503,
          'server_shutting_down',
          `the gateway is shutting down; turn ${admitted.turnId} goes on: GET /v1/turns/${admitted.turnId} ` +
            'for its answer',
          { retry: idempotencyKey !== undefined, headers: { 'x-turn-id': admitted.turnId } },
        );
      }
      if (!turn) {
        throw new OpenAiError(
          408,
          'turn_timeout',
          `turn ${admitted.turnId} did not end within ${Math.round(bound / 1000)} s; it goes on running: ` +
            `GET /v1/turns/${admitted.turnId} for its answer` +
            (idempotencyKey ? ', or send the request again with the same Idempotency-Key to wait again' : ''),
          // A retry with the same key waits for the same turn; without one it would admit the message again.
          { retry: idempotencyKey !== undefined, headers: { 'x-turn-id': admitted.turnId } },
        );
      }
      const failed = endedTurnError(turn);
      if (failed) throw failed;
      await reply.status(200).send(completionOf(turn, model));
    } finally {
      reply.raw.off('close', onClose);
    }
  }

  /** The agent `model` names: by name (the most recent when names repeat) or by id; 404 model_not_found. */
  private async agentOf(tenantId: string, model: string): Promise<string> {
    const agentId = await this.agents.idByModel(tenantId, model);
    if (!agentId) {
      throw new OpenAiError(
        404,
        'model_not_found',
        `The model \`${model}\` does not exist: name an agent of the tenant (GET /v1/agents), by name or id`,
        { param: 'model' },
      );
    }
    return agentId;
  }

  /**
   * The session to admit into: the one the request names (it must be the agent's and open), or a new
   * one seeded with the request's earlier messages (docs/adr/0016). With an Idempotency-Key the new
   * session's id is derived from the key, so a retry lands in it again and is not seeded twice.
   */
  private async sessionFor(
    tenantId: string,
    agentId: string,
    requested: string | undefined,
    idempotencyKey: string | undefined,
    plan: ConversationPlan,
  ): Promise<string> {
    if (requested !== undefined) {
      const session = isUuid(requested) ? await this.sessions.find(tenantId, requested) : null;
      if (!session) {
        throw new OpenAiError(404, 'session_not_found', `session ${requested} not found`, {
          param: 'X-Session-Id',
        });
      }
      if (session.agentId !== agentId) {
        throw new OpenAiError(400, 'model_session_mismatch', 'model: the session belongs to another agent', {
          param: 'model',
        });
      }
      if (session.status === 'closed') {
        throw new OpenAiError(409, 'session_closed', `session ${requested} is closed`, { retry: false });
      }
      return requested;
    }
    const id = idempotencyKey ? sessionIdForKey(tenantId, idempotencyKey) : newId();
    const imported = await this.admission.importSession({
      sessionId: id,
      tenantId,
      agentId,
      metadata: { createdBy: 'chat.completions' },
      history: plan.history,
      // The caller wrote both sides of this history: the operator's provenance, as `admit` gives it.
      ...OPERATOR_PROMPT,
      messageMetadata: { imported: 'chat.completions' },
    });
    // The key's session exists of another agent: the same key sent for another request.
    if (imported === 'other_agent') {
      throw new OpenAiError(
        422,
        'idempotency_key_reused',
        'this Idempotency-Key was already used with a different request: use a new key for a new message',
      );
    }
    return id;
  }

  /** The last user message, as POST /v1/sessions/:id/messages admits an operator's message. */
  private admit(
    tenantId: string,
    sessionId: string,
    body: ChatCompletionDto,
    plan: ConversationPlan,
    idempotencyKey: string | undefined,
  ): Promise<Admitted> {
    const { session_id: _, ...metadata } = body.metadata ?? {};
    return this.admission.admit({
      tenantId,
      sessionId,
      ...OPERATOR_PROMPT,
      body: { type: 'text', text: plan.prompt },
      metadata: { ...metadata, ...(body.user !== undefined ? { user: body.user } : {}) },
      idempotencyKey,
    });
  }
}
