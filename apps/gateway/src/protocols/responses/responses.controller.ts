import { Body, Controller, Get, HttpCode, Inject, Param, Post, Query, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiHeader, ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { AGENT_TURNS, type AgentTurns } from '@switchboard/agent-turns';
import {
  CompactionObject,
  ResponseInputItemList,
  ResponseObject,
  type ResponseInputItemObject,
  cancelCause,
} from '@switchboard/contracts';
import { SessionsRepository } from '@switchboard/store';
import { KeyAgents, TenantId } from '../../platform/auth/guard';
import {
  CompactResponseDto,
  CreateResponseDto,
  InputItemsQueryDto,
  RetrieveResponseQueryDto,
} from '../../api/dto';
import { modelNotFound, OpenAiError } from '@switchboard/protocols';
import { holdRequest } from '../hold';
import { ErrorShapeOf } from '../../platform/errors';
import { IdempotencyKeyHeader } from '../../api/idempotency';
import { API_KEY_AUTH, OpenAiErrorResponses, schemaRef } from '../../platform/openapi';
import { RateLimitBucketOf } from '../../platform/rate-limit';
import { compactionInput, compactionOf, inputItemIdOf, responseNotEnded } from '@switchboard/protocols';
import { ResponsesStreamer } from './responses-stream';
import { notFoundResponse, ResponsesService } from './responses.service';

const ERRORS: [number, string][] = [
  [
    400,
    'Invalid request (body, query, header), a parameter the adapter does not support (a tool type other ' +
      'than `function`, an `allowed_tools` `tool_choice`…), a `tool_choice` naming no declared tool ' +
      '(`invalid_tool_choice`), a client tool that clashes with the agent’s ' +
      '(`tool_name_clash`) or whose parameters are no usable JSON Schema (`invalid_schema`), ' +
      '`function_call_output` items that leave a pending call unanswered (`missing_call`), a `text.format` ' +
      'schema that is not a usable JSON Schema (`invalid_response_format`), or a `previous_response_id` of ' +
      'another agent',
  ],
  [401, 'Missing, invalid or revoked API key'],
  [403, 'The operator paused the tenant (`tenant_paused`)'],
  [
    404,
    'No agent of the tenant with that name or id (`model_not_found`), no response of the tenant with ' +
      'that id (`response_not_found`; another tenant’s too), or a `function_call_output` for no waiting ' +
      'client call (of the `previous_response_id`’s turn when given) (`unknown_call`)',
  ],
  [408, 'The turn did not end within WAIT_TIMEOUT_MS (`turn_timeout`): it goes on; retrieve the response'],
  [
    409,
    'The session is closed, a request with this Idempotency-Key is still in flight, or a client call was ' +
      'answered otherwise before or expired (`answered_otherwise`, `expired`)',
  ],
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
    @Inject(AGENT_TURNS) private readonly turns: AgentTurns,
    @Inject(SessionsRepository) private readonly sessions: SessionsRepository,
    @Inject(ResponsesService) private readonly responses: ResponsesService,
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
      '`tools` of type `function` are the client’s (docs/adr/0047): when the agent’s model calls one the ' +
      'response completes with `function_call` items; an `input` ending with `function_call_output` items ' +
      'answers them and follows the same turn (a new response id, `resp_<turn>_<seq>`). Other tool types ' +
      'and non-text parts other than images are refused with 400 before anything is written.',
  })
  @ApiResponse({
    status: 200,
    description:
      'The response: ended (or, with `background: true`, queued). With `stream: true`, Server-Sent Events ' +
      '(`event:` the type, `data:` the event with its `sequence_number`): response.created, ' +
      'response.in_progress, response.output_item.added, response.content_part.added, ' +
      'response.output_text.delta, response.output_text.done, response.content_part.done, ' +
      'response.output_item.done (for a client function call: response.function_call_arguments.delta and ' +
      '.done), then response.completed, response.incomplete or response.failed.',
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
    @KeyAgents() only: string[] | undefined,
  ): Promise<void> {
    await this.reaches(tenantId, body.model, only);
    const { meta, admitted } = await this.responses.admit(tenantId, body, {
      idempotencyKey,
      ...(only ? { only } : {}),
    });
    try {
      if (body.stream) {
        await this.streamer.stream(reply, { tenantId, meta, watch: admitted.watch });
        return;
      }
      if (meta.record.background) {
        await reply
          .status(200)
          .send(
            await this.streamer.present(tenantId, meta, await this.responses.turn(tenantId, admitted.turnId)),
          );
        return;
      }
      // Held until the turn ends or waits for the client's tools (bounded by WAIT_TIMEOUT_MS), as chat
      // completions is; a waiting turn's response completes with its function_call items (docs/adr/0047).
      const held = await holdRequest(this.turns, reply, admitted, { orClientTool: true });
      if (held.settled) await reply.status(200).send(await this.streamer.present(tenantId, meta, held.turn));
      else if (held.why !== 'left') {
        throw responseNotEnded(admitted.turnId, held.why, this.turns.waitTimeoutMs, idempotencyKey);
      }
    } finally {
      admitted.watch.close();
    }
  }

  /** A key limited to agents (docs/adr/0066) sees another agent as no agent: 404 `model_not_found`. */
  private async reaches(tenantId: string, model: unknown, only: string[] | undefined): Promise<void> {
    if (!only || typeof model !== 'string') return;
    const agentId = await this.turns.agentNamed(tenantId, model);
    if (agentId && !only.includes(agentId.toLowerCase())) throw modelNotFound(model, 'GET /v1/models');
  }

  @Post('compact')
  @RateLimitBucketOf('admission')
  @HttpCode(200)
  @ErrorShapeOf('openai')
  @ApiOperation({
    operationId: 'compactResponse',
    summary: 'Open Responses: pack a conversation into one `compaction` item, the base of a new response',
    description:
      'Packs the user and assistant messages of `input` (earlier compactions included) into one `compaction` ' +
      'item (ADR 0035). A new response takes it as the start of its `input` (then the next user message), ' +
      "without `previous_response_id`; its session is seeded with the packed messages, and the engine's " +
      'context guard summarises them when they near the model’s window. No turn is admitted and no model is ' +
      'called (usage is 0). `model` must name an agent of the tenant.',
  })
  @ApiResponse({ status: 200, description: 'The compacted window', schema: schemaRef(CompactionObject) })
  @OpenAiErrorResponses(errors([400, 401, 403, 404, 413, 415, 429, 500, 503]))
  async compact(
    @TenantId() tenantId: string,
    @Body() body: CompactResponseDto,
    @KeyAgents() only: string[] | undefined,
  ): Promise<CompactionObject> {
    await this.reaches(tenantId, body.model, only);
    if (body.previous_response_id != null) {
      throw new OpenAiError(
        400,
        'unsupported_parameter',
        'previous_response_id: compacting a stored chain is not supported; send its items as input',
        { param: 'previous_response_id' },
      );
    }
    const messages = compactionInput(body.input);
    const agentId = await this.turns.agentNamed(tenantId, body.model);
    if (!agentId) throw modelNotFound(body.model, 'GET /v1/models');
    return compactionOf(messages);
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
    @KeyAgents() only: string[] | undefined,
  ): Promise<void> {
    if (q.starting_after !== undefined && q.stream !== 'true') {
      throw new OpenAiError(400, 'invalid_value', 'starting_after: only with stream=true', {
        param: 'starting_after',
      });
    }
    const { meta, turn } = await this.responses.response(tenantId, id, only);
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
  async cancel(
    @TenantId() tenantId: string,
    @Param('id') id: string,
    @KeyAgents() only: string[] | undefined,
  ): Promise<ResponseObject> {
    const { meta } = await this.responses.response(tenantId, id, only);
    const done = await this.turns.cancel(
      tenantId,
      meta.turnId,
      cancelCause('api_cancel', 'POST /v1/responses/{id}/cancel'),
    );
    if (!done) throw notFoundResponse(id);
    return this.streamer.present(tenantId, meta, await this.responses.turn(tenantId, meta.turnId));
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
    @KeyAgents() only: string[] | undefined,
  ): Promise<ResponseInputItemList> {
    const { meta, turn } = await this.responses.response(tenantId, id, only);
    const rows = await this.sessions.turnInput(
      tenantId,
      meta.sessionId,
      turn.inputMessageId,
      meta.record.imported > 0 ? 'responses' : undefined,
    );
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
}
