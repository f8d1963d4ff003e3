import { Body, Controller, Get, HttpCode, Inject, Param, Post, Query, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiHeader, ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import type { Admission, TurnSteering as TurnControl } from '@switchboard/admission';
import {
  newId,
  ResponseInputItemList,
  ResponseObject,
  unsupportedResponsesParameter,
  type ResponseInputItemObject,
  type TurnResponse,
} from '@switchboard/contracts';
import type { Config } from '@switchboard/config';
import type { Db } from '@switchboard/database';
import { ADMISSION, CONFIG, DB } from '@switchboard/platform';
import { readTurn, SessionsRepository, type SqlDb } from '@switchboard/store';
import { AgentsRepository } from '@switchboard/subagents';
import { TenantId } from '../../platform/auth/guard';
import { CreateResponseDto, InputItemsQueryDto, RetrieveResponseQueryDto } from '../../api/dto';
import { OPERATOR_PROMPT, OpenAiError, sessionIdForKey } from '@switchboard/protocols';
import { ErrorShapeOf } from '../../platform/errors';
import { IdempotencyKeyHeader } from '../../api/idempotency';
import { API_KEY_AUTH, OpenAiErrorResponses, schemaRef } from '../../platform/openapi';
import { presentTurn } from '../../api/presenters';
import { RateLimitBucketOf } from '../../platform/rate-limit';
import {
  inputItemIdOf,
  planInput,
  requestRecordOf,
  responseIdOf,
  turnIdOf,
  type ResponseMeta,
  type ResponseRequestRecord,
} from '@switchboard/protocols';
import { ResponsesStreamer } from './responses-stream';
import { TURN_CONTROL } from '../../api/turn-control';
import { TURN_WAITER, type TurnWaiter } from '../../http/turn-waiter';
import { GATEWAY_SQL } from '../../api/streams.controller';

const ERRORS: [number, string][] = [
  [
    400,
    'Invalid request (body, query, header), a parameter the adapter does not support (client `tools`, ' +
      '`store: false`…), or a `previous_response_id` of another agent',
  ],
  [401, 'Missing, invalid or revoked API key'],
  [403, 'The operator paused the tenant (`tenant_paused`)'],
  [
    404,
    'No agent of the tenant with that name or id (`model_not_found`), or no response of the tenant with ' +
      'that id (`response_not_found`; another tenant’s too)',
  ],
  [408, 'The turn did not end within WAIT_TIMEOUT_MS (`turn_timeout`): it goes on; retrieve the response'],
  [409, 'The session is closed, or a request with this Idempotency-Key is still in flight'],
  [413, 'Request body larger than the limit'],
  [415, 'Body is not application/json'],
  [422, 'Idempotency-Key reused with a different request'],
  [429, 'Rate limit exceeded (`rate_limited`): retry after Retry-After seconds'],
  [500, 'Unexpected failure (logged)'],
  [503, 'A dependency is unavailable, or the gateway is shutting down (`server_shutting_down`): retry later'],
];
const errors = (codes: number[]) => ERRORS.filter(([status]) => codes.includes(status));

/**
 * `/v1/responses`, OpenAI's Responses API per the Open Responses specification
 * (docs/adr/0035-responses-api.md): a thin adapter over the seams `/v1/chat/completions` uses (ADR
 * 0016): `model` names an agent, the input is admitted through the same Admission (operator authority,
 * Idempotency-Key honoured), a response is its turn (`resp_<turn id hex>`), `previous_response_id`
 * continues the turn's session, the answer waits with the TurnWaiter or streams through the
 * event-stream seam. Errors in OpenAI's shape.
 */
@ApiTags('responses')
@ApiBearerAuth(API_KEY_AUTH)
@Controller('v1/responses')
export class ResponsesController {
  constructor(
    @Inject(AgentsRepository) private readonly agents: AgentsRepository,
    @Inject(SessionsRepository) private readonly sessions: SessionsRepository,
    @Inject(ADMISSION) private readonly admission: Admission,
    @Inject(TURN_WAITER) private readonly waiter: TurnWaiter,
    @Inject(TURN_CONTROL) private readonly control: TurnControl,
    @Inject(GATEWAY_SQL) private readonly sql: SqlDb,
    @Inject(DB) private readonly db: Db,
    @Inject(CONFIG) private readonly config: Config,
    @Inject(ResponsesStreamer) private readonly streamer: ResponsesStreamer,
  ) {}

  @Post()
  @RateLimitBucketOf('admission')
  @HttpCode(200)
  @ErrorShapeOf('openai')
  @ApiOperation({
    operationId: 'createResponse',
    summary: 'Open Responses: the agent named by `model` answers; a response is a turn',
    description:
      'Admits `input` as one turn of the agent named by `model` (ADR 0035): in a new session seeded with ' +
      "the input's earlier messages, or in the session of `previous_response_id`. Waits for the turn " +
      '(408 `turn_timeout` past WAIT_TIMEOUT_MS), streams its semantic events (`stream: true`), or answers ' +
      'at once `queued` (`background: true`). With an Idempotency-Key a retry gets the same response. ' +
      'Client function tools, `store: false` and non-text parts are refused with 400 before anything is written.',
  })
  @ApiResponse({
    status: 200,
    description:
      'The response: ended (or, with `background: true`, queued). With `stream: true`, Server-Sent Events ' +
      '(`event:` the type, `data:` the event with its `sequence_number`): response.created, ' +
      'response.in_progress, response.output_item.added, response.content_part.added, ' +
      'response.output_text.delta, response.output_text.done, response.content_part.done, ' +
      'response.output_item.done, then response.completed, response.incomplete or response.failed.',
    content: {
      'application/json': { schema: schemaRef(ResponseObject) },
      'text/event-stream': { schema: { type: 'string' } },
    },
  })
  @OpenAiErrorResponses(ERRORS)
  @ApiHeader({
    name: 'Idempotency-Key',
    required: false,
    description:
      'As on POST /v1/sessions/{id}/messages. Without previous_response_id, the new session is derived ' +
      'from the key, so a retry answers with the same response.',
    schema: { type: 'string', minLength: 1, maxLength: 200 },
  })
  async create(
    @TenantId() tenantId: string,
    @Body() body: CreateResponseDto,
    @IdempotencyKeyHeader() idempotencyKey: string | undefined,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    const unsupported = unsupportedResponsesParameter(body);
    if (unsupported) {
      throw new OpenAiError(400, unsupported.code, unsupported.message, { param: unsupported.param });
    }
    const plan = planInput(body.input);
    const agentId = await this.agentOf(tenantId, body.model);
    const previous = body.previous_response_id ?? null;
    const sessionId = previous
      ? await this.continued(tenantId, agentId, previous)
      : await this.newSession(tenantId, agentId, idempotencyKey, plan.history);
    const record: ResponseRequestRecord = {
      model: body.model,
      background: body.background === true,
      previous_response_id: previous,
      metadata: body.metadata ?? {},
      user: body.user ?? null,
      imported: previous ? 0 : plan.history.length,
    };

    const watch = this.waiter.watch(sessionId);
    const alreadySubscribed = watch.subscription.isReady;
    try {
      const admitted = await this.admission.admit({
        tenantId,
        sessionId,
        ...OPERATOR_PROMPT,
        body: { type: 'text', text: plan.prompt },
        metadata: { responses: record },
        idempotencyKey,
      });
      const meta: ResponseMeta = { turnId: admitted.turnId, sessionId, record };
      if (body.stream) {
        await this.streamer.stream(reply, { tenantId, meta, watch });
        return;
      }
      if (record.background) {
        await reply
          .status(200)
          .send(await this.streamer.present(tenantId, meta, await this.turn(tenantId, admitted.turnId)));
        return;
      }
      const turn = await this.waitFor(
        reply,
        watch,
        tenantId,
        admitted.turnId,
        alreadySubscribed && !admitted.replayed,
        idempotencyKey,
      );
      if (turn) await reply.status(200).send(await this.streamer.present(tenantId, meta, turn));
    } finally {
      watch.close();
    }
  }

  @Get(':id')
  @ErrorShapeOf('openai')
  @ApiOperation({
    operationId: 'getResponse',
    summary:
      'A response (any turn of the tenant, by `resp_<turn id hex>`); `stream=true` replays and follows its events',
    description:
      "Reads the response's turn as it is now (a response id is its turn's id, derived both ways, nothing " +
      'stored beside it). With `stream=true` the semantic events are replayed from the journal and followed ' +
      'live; `starting_after=N` resumes right after the sequence number a client last saw. Another ' +
      "tenant's id is 404 `response_not_found`.",
  })
  @ApiResponse({
    status: 200,
    description:
      'The response as it stands, or with `stream=true` its events as on POST /v1/responses with ' +
      '`stream: true`, from the first (or after `starting_after`) until it ends.',
    content: {
      'application/json': { schema: schemaRef(ResponseObject) },
      'text/event-stream': { schema: { type: 'string' } },
    },
  })
  @OpenAiErrorResponses(errors([400, 401, 404, 429, 500, 503]))
  async get(
    @TenantId() tenantId: string,
    @Param('id') id: string,
    @Query() q: RetrieveResponseQueryDto,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    if (q.starting_after !== undefined && q.stream !== 'true') {
      throw new OpenAiError(400, 'invalid_value', 'starting_after: only with stream=true', {
        param: 'starting_after',
      });
    }
    const { meta, turn } = await this.response(tenantId, id);
    if (q.stream === 'true') {
      await this.streamer.stream(reply, { tenantId, meta, startingAfter: q.starting_after });
      return;
    }
    await reply.status(200).send(await this.streamer.present(tenantId, meta, turn));
  }

  @Post(':id/cancel')
  @HttpCode(200)
  @ErrorShapeOf('openai')
  @ApiOperation({
    operationId: 'cancelResponse',
    summary:
      'Cancel a response (its turn, as POST /v1/turns/{id}/cancel): any response, background or not; ' +
      'one that ended is answered as it is',
    description:
      "Cancels the response's turn as POST /v1/turns/{id}/cancel does: a queued turn ends at once, a running " +
      'one at its next safe point. Safe to repeat: a response that already ended is answered as it is. ' +
      "Another tenant's id is 404 `response_not_found`.",
  })
  @ApiResponse({
    status: 200,
    description:
      'The response: `cancelled` when its turn was queued or awaiting approval, `in_progress` while its ' +
      'worker stops it at the next safe point, or as it ended',
    schema: schemaRef(ResponseObject),
  })
  @OpenAiErrorResponses(errors([400, 401, 404, 429, 500, 503]))
  async cancel(@TenantId() tenantId: string, @Param('id') id: string): Promise<ResponseObject> {
    const { meta } = await this.response(tenantId, id);
    const done = await this.control.cancel(
      tenantId,
      meta.turnId,
      'cancelled through POST /v1/responses/{id}/cancel',
    );
    if (!done) throw notFoundResponse(id);
    return this.streamer.present(tenantId, meta, await this.turn(tenantId, meta.turnId));
  }

  @Get(':id/input_items')
  @ErrorShapeOf('openai')
  @ApiOperation({
    operationId: 'listResponseInputItems',
    summary:
      'The input items of a response: the message its turn admitted, after the messages it seeded a new ' +
      'session with',
    description:
      "Lists, in OpenAI's list shape and paged by `after`/`limit`/`order`, the message items the response " +
      'admitted. An `after` that names no item of this response is 400.',
  })
  @ApiResponse({
    status: 200,
    description: 'A page of input items',
    schema: schemaRef(ResponseInputItemList),
  })
  @OpenAiErrorResponses(errors([400, 401, 404, 429, 500, 503]))
  async inputItems(
    @TenantId() tenantId: string,
    @Param('id') id: string,
    @Query() q: InputItemsQueryDto,
  ): Promise<ResponseInputItemList> {
    const { meta, turn } = await this.response(tenantId, id);
    const rows = await this.db.message.findMany({
      where: {
        tenantId,
        sessionId: meta.sessionId,
        OR: [
          { id: turn.inputMessageId },
          ...(meta.record.imported > 0
            ? [{ turnSeq: 1, metadata: { path: ['imported'], equals: 'responses' } }]
            : []),
        ],
      },
      orderBy: [{ turnSeq: 'asc' }, { position: 'asc' }],
    });
    const items: ResponseInputItemObject[] = rows.map((m) => {
      const text = (m.body as { text?: unknown }).text;
      const assistant = m.role === 'assistant';
      return {
        type: 'message',
        id: inputItemIdOf(m.id),
        role: assistant ? 'assistant' : 'user',
        status: 'completed',
        content: [
          { type: assistant ? 'output_text' : 'input_text', text: typeof text === 'string' ? text : '' },
        ],
      } as ResponseInputItemObject;
    });
    // OpenAI's default order is newest first.
    const ordered = q.order === 'asc' ? items : items.reverse();
    let start = 0;
    if (q.after !== undefined) {
      const i = ordered.findIndex((it) => it.id === q.after);
      if (i < 0)
        throw new OpenAiError(400, 'invalid_value', `after: no input item ${q.after} in this response`, {
          param: 'after',
        });
      start = i + 1;
    }
    let end = ordered.length;
    if (q.before !== undefined) {
      const i = ordered.findIndex((it) => it.id === q.before);
      if (i < 0)
        throw new OpenAiError(400, 'invalid_value', `before: no input item ${q.before} in this response`, {
          param: 'before',
        });
      end = i;
    }
    const limit = q.limit ?? 20;
    const data = ordered.slice(start, Math.max(start, end)).slice(0, limit);
    return {
      object: 'list',
      data,
      first_id: data[0]?.id ?? null,
      last_id: data.at(-1)?.id ?? null,
      has_more: start + data.length < end,
    };
  }

  /** Holds the request until the turn ends (bounded by WAIT_TIMEOUT_MS), as chat completions does. */
  private async waitFor(
    reply: FastifyReply,
    watch: ReturnType<TurnWaiter['watch']>,
    tenantId: string,
    turnId: string,
    subscribedBeforeAdmission: boolean,
    idempotencyKey: string | undefined,
  ): Promise<TurnResponse | undefined> {
    const bound = this.config.WAIT_TIMEOUT_MS;
    const gone = new AbortController();
    const onClose = () => gone.abort();
    reply.raw.once('close', onClose);
    try {
      const turn = await this.waiter.untilEnded(watch, {
        tenantId,
        turnId,
        deadline: Date.now() + bound,
        signal: gone.signal,
        subscribedBeforeAdmission,
      });
      if (gone.signal.aborted) return undefined;
      if (turn) return turn;
      const id = responseIdOf(turnId);
      const headers = { 'x-turn-id': turnId, 'x-response-id': id };
      if (this.waiter.shutdown.aborted) {
        throw new OpenAiError(
          503,
          'server_shutting_down',
          `the gateway is shutting down; response ${id} goes on: GET /v1/responses/${id} for it`,
          { retry: idempotencyKey !== undefined, headers },
        );
      }
      throw new OpenAiError(
        408,
        'turn_timeout',
        `response ${id} did not end within ${Math.round(bound / 1000)} s; it goes on running: ` +
          `GET /v1/responses/${id} for it (or send it with background: true)` +
          (idempotencyKey ? ', or send the request again with the same Idempotency-Key to wait again' : ''),
        { retry: idempotencyKey !== undefined, headers },
      );
    } finally {
      reply.raw.off('close', onClose);
    }
  }

  /** The response an id names, of the tenant: its turn and what its request recorded; 404 otherwise. */
  private async response(tenantId: string, id: string): Promise<{ meta: ResponseMeta; turn: TurnResponse }> {
    const turnId = turnIdOf(id);
    const row = turnId ? await readTurn(this.sql, tenantId, turnId) : undefined;
    if (!row) throw notFoundResponse(id);
    const turn = presentTurn(row);
    const message = await this.db.message.findFirst({
      where: { id: turn.inputMessageId, tenantId },
      select: { metadata: true },
    });
    const agent = await this.agents.find(tenantId, turn.agentId);
    const record = requestRecordOf(message?.metadata, agent?.name ?? turn.agentId);
    return { meta: { turnId: turn.id, sessionId: turn.sessionId, record }, turn };
  }

  private async turn(tenantId: string, turnId: string): Promise<TurnResponse> {
    const row = await readTurn(this.sql, tenantId, turnId);
    if (!row) throw notFoundResponse(responseIdOf(turnId));
    return presentTurn(row);
  }

  /** The agent `model` names: by name (the most recent when names repeat) or by id; 404 model_not_found. */
  private async agentOf(tenantId: string, model: string): Promise<string> {
    const agentId = await this.agents.idByModel(tenantId, model);
    if (!agentId) {
      throw new OpenAiError(
        404,
        'model_not_found',
        `The model \`${model}\` does not exist: name an agent of the tenant (GET /v1/models), by name or id`,
        { param: 'model' },
      );
    }
    return agentId;
  }

  /** The session of the response `previous_response_id` names: the agent's, open. */
  private async continued(tenantId: string, agentId: string, previous: string): Promise<string> {
    const turnId = turnIdOf(previous);
    const turn = turnId ? await readTurn(this.sql, tenantId, turnId) : undefined;
    if (!turn) {
      throw new OpenAiError(
        404,
        'previous_response_not_found',
        `Previous response with id '${previous}' not found.`,
        {
          param: 'previous_response_id',
        },
      );
    }
    const session = await this.sessions.find(tenantId, turn.sessionId);
    if (!session) {
      throw new OpenAiError(
        404,
        'previous_response_not_found',
        `Previous response with id '${previous}' not found.`,
        {
          param: 'previous_response_id',
        },
      );
    }
    if (session.agentId !== agentId) {
      throw new OpenAiError(
        400,
        'model_session_mismatch',
        'model: the previous response was answered by another agent',
        { param: 'model' },
      );
    }
    if (session.status === 'closed') {
      throw new OpenAiError(409, 'session_closed', `the session of ${previous} is closed`, { retry: false });
    }
    return session.id;
  }

  /**
   * A new session of the agent, seeded with the input's earlier messages (as chat completions does).
   * With an Idempotency-Key its id is derived from the key, so a retry lands in it again.
   */
  private async newSession(
    tenantId: string,
    agentId: string,
    idempotencyKey: string | undefined,
    history: ReturnType<typeof planInput>['history'],
  ): Promise<string> {
    const id = idempotencyKey ? sessionIdForKey(tenantId, idempotencyKey, 'responses') : newId();
    const imported = await this.admission.importSession({
      sessionId: id,
      tenantId,
      agentId,
      metadata: { createdBy: 'responses' },
      history,
      ...OPERATOR_PROMPT,
      messageMetadata: { imported: 'responses' },
    });
    if (imported === 'other_agent') {
      throw new OpenAiError(
        422,
        'idempotency_key_reused',
        'this Idempotency-Key was already used with a different request: use a new key for a new request',
      );
    }
    return id;
  }
}

const notFoundResponse = (id: string) =>
  new OpenAiError(404, 'response_not_found', `Response with id '${id}' not found.`, { param: 'response_id' });
