import { Inject, Injectable } from '@nestjs/common';
import { AGENT_TURNS, type AgentTurns, type StartedTurn } from '@switchboard/agent-turns';
import {
  fromTextFormat,
  parseTenantSettings,
  responseFormatProblem,
  responsesToolChoice,
  unsupportedResponsesParameter,
  type CreateResponseRequest,
  type ToolChoice,
  type TurnResponse,
} from '@switchboard/contracts';
import {
  functionCallOutputs,
  modelNotFound,
  OpenAiError,
  planInput,
  previousNotFound,
  requestRecordOf,
  responseIdOf,
  responseRefOf,
  responsesClientToolRefusal,
  responsesClientTools,
  echoedTools,
  responsesSessionRefusal,
  responsesToolParam,
  type ResponseMeta,
  type ResponseRequestRecord,
} from '@switchboard/protocols';
import { takesImages } from '@switchboard/providers';
import { readTurn, SessionsRepository, sql, type SqlDb } from '@switchboard/store';
import { presentTurn } from '../../api/presenters';
import { GATEWAY_SQL } from '../../api/streams.controller';

/**
 * A response continued from connection-local state (WebSocket mode, docs/adr/0035): the session and
 * turn a response of the same socket ran in, so a `store: false` chain goes on without being looked
 * up as a stored response.
 */
export interface CachedResponse {
  sessionId: string;
  turnId: string;
}

/**
 * A request admitted as a turn, or one that answered a waiting turn's client tool calls (docs/adr/0047):
 * what its response shows, and the turn to follow (its watch opened before anything it shows).
 */
export interface AdmittedResponse {
  meta: ResponseMeta;
  admitted: Omit<StartedTurn, 'agentId'>;
}

/**
 * The Responses API's requests over the turn seams (docs/adr/0035), shared by the HTTP routes and
 * WebSocket mode: a create admitted as a turn (`previous_response_id` continuing its session), and a
 * response read by id. Plain mapping lives in `@switchboard/protocols`; this is its I/O.
 */
@Injectable()
export class ResponsesService {
  constructor(
    @Inject(AGENT_TURNS) private readonly turns: AgentTurns,
    @Inject(SessionsRepository) private readonly sessions: SessionsRepository,
    @Inject(GATEWAY_SQL) private readonly sql: SqlDb,
  ) {}

  /**
   * Checks and admits a create request. `cached` is the previous response as the caller's
   * connection remembers it (WebSocket mode); without it a `previous_response_id` is looked up as a
   * stored response, and one made with `store: false` is not found.
   */
  async admit(
    tenantId: string,
    body: CreateResponseRequest,
    o: {
      idempotencyKey?: string;
      cached?: CachedResponse;
      /**
       * The agents a key limited to agents reaches (docs/adr/0066): another agent is no model, its
       * responses are not found (a chain through one is `previous_response_not_found`).
       */
      only?: string[];
    } = {},
  ): Promise<AdmittedResponse> {
    const unsupported = unsupportedResponsesParameter(body);
    if (unsupported) {
      throw new OpenAiError(400, unsupported.code, unsupported.message, { param: unsupported.param });
    }
    // Structured output (docs/adr/0048): a schema the validator cannot use is refused before anything is admitted.
    const responseFormat = fromTextFormat(body.text?.format);
    const problem = responseFormat && responseFormatProblem(responseFormat);
    if (problem) {
      throw new OpenAiError(400, 'invalid_response_format', `text.format.schema: ${problem}`, {
        param: 'text.format',
      });
    }
    const agentId = await this.turns.agentNamed(tenantId, body.model);
    if (!agentId || (o.only && !o.only.includes(agentId.toLowerCase())))
      throw modelNotFound(body.model, 'GET /v1/models');
    // An input ending with `function_call_output` items answers the calls a waiting turn handed out
    // (docs/adr/0047): that turn resumes; nothing new is admitted.
    const results = functionCallOutputs(body.input);
    if (results) return this.answer(tenantId, body, results, o.cached, o.only);
    const plan = planInput(body.input);
    if (plan.images.length > 0) await this.checkImages(tenantId, agentId, body.model);
    const agent = await this.turns.agent(tenantId, agentId);
    if (!agent) throw modelNotFound(body.model, 'GET /v1/models');
    let clientTools: ReturnType<typeof responsesClientTools> = [];
    let toolChoice: ToolChoice | undefined;
    try {
      clientTools = this.turns.clientToolsFor(agent, responsesClientTools(body), responsesToolParam);
      toolChoice = this.turns.toolChoiceFor(
        agent,
        clientTools,
        responsesToolChoice(body.tool_choice) ?? undefined,
        'tool_choice',
      );
    } catch (err) {
      responsesClientToolRefusal(err);
    }
    const previous = body.previous_response_id ?? null;
    const idempotencyKey = o.idempotencyKey;
    let afterTurnId: string | undefined;
    if (previous !== null) {
      afterTurnId = o.cached?.turnId ?? (await this.storedTurnOf(tenantId, previous, o.only));
      if (!afterTurnId) throw previousNotFound(previous);
    }
    const sessionId = await this.turns
      .session(
        tenantId,
        agentId,
        afterTurnId !== undefined
          ? { afterTurnId }
          : {
              new: {
                createdBy: 'responses',
                history: plan.history,
                importedAs: 'responses',
                ...(idempotencyKey ? { key: { idempotencyKey, scope: 'responses' } } : {}),
              },
            },
        o.only,
      )
      .catch(responsesSessionRefusal(previous));
    const record: ResponseRequestRecord = {
      model: body.model,
      background: body.background === true,
      previous_response_id: previous,
      metadata: body.metadata ?? {},
      user: body.user ?? null,
      imported: previous ? 0 : plan.history.length,
      store: body.store !== false,
      ...(responseFormat && body.text?.format ? { text_format: body.text.format } : {}),
      ...echoedTools(body),
    };
    const admitted = await this.turns.admit({
      tenantId,
      sessionId,
      text: plan.prompt,
      ...(plan.images.length > 0 ? { images: plan.images } : {}),
      metadata: { responses: record },
      idempotencyKey,
      responseFormat,
      clientTools,
      ...(toolChoice ? { toolChoice } : {}),
    });
    return { meta: { turnId: admitted.turnId, sessionId, record }, admitted };
  }

  /**
   * The client's function results (docs/adr/0047): the waiting turn their ids name is answered (once:
   * the same results again change nothing) and followed from the journal seq the answer committed —
   * this request's response (`resp_<turn hex>_<seq>`). With `previous_response_id` the calls must be
   * that response's turn's. Refusals (unknown, missing, expired ids) in OpenAI's shape, nothing answered.
   */
  private async answer(
    tenantId: string,
    body: CreateResponseRequest,
    results: { callId: string; output: string }[],
    cached: CachedResponse | undefined,
    only: string[] | undefined,
  ): Promise<AdmittedResponse> {
    const previous = body.previous_response_id ?? null;
    let turnId: string | undefined;
    if (previous !== null) {
      turnId = cached?.turnId ?? (await this.storedTurnOf(tenantId, previous, only));
      if (!turnId) throw previousNotFound(previous);
    }
    const answered = await this.turns
      .answerClientTools({ tenantId, results, ...(turnId ? { turnId } : {}), answeredBy: 'responses' })
      .catch(responsesClientToolRefusal);
    const first = await this.find(tenantId, responseIdOf(answered.turnId));
    if (!first) throw notFoundResponse(responseIdOf(answered.turnId));
    // Watched after the answer: what follows reads the journal after its seq, so nothing is missed.
    const watch = this.turns.watch(answered.sessionId);
    const record: ResponseRequestRecord = {
      ...first.meta.record,
      model: body.model,
      previous_response_id: previous,
      metadata: body.metadata ?? first.meta.record.metadata,
      store: body.store !== false && first.meta.record.store,
      // What this request declared (a stock loop resends its tools); without any, the first's.
      ...(body.tools !== undefined || body.tool_choice != null ? echoedTools(body) : {}),
    };
    return {
      meta: { turnId: answered.turnId, sessionId: answered.sessionId, record, after: answered.afterSeq },
      admitted: {
        tenantId,
        sessionId: answered.sessionId,
        turnId: answered.turnId,
        watch,
        subscribedBeforeAdmission: false,
      },
    };
  }

  /** The response an id names, of the tenant: its turn and what its request recorded; 404 otherwise. */
  async response(
    tenantId: string,
    id: string,
    /** The agents a key limited to agents reaches (docs/adr/0066): another's response is not found. */
    only?: string[],
  ): Promise<{ meta: ResponseMeta; turn: TurnResponse }> {
    const found = await this.find(tenantId, id, only);
    // A `store: false` response is not kept as a response: only its own socket could continue it.
    if (!found || !found.meta.record.store) throw notFoundResponse(id);
    return found;
  }

  async turn(tenantId: string, turnId: string): Promise<TurnResponse> {
    const row = await readTurn(this.sql, tenantId, turnId);
    if (!row) throw notFoundResponse(responseIdOf(turnId));
    return presentTurn(row);
  }

  /**
   * Images go only to an agent every model of which (its model and fallbacks, any of which may answer)
   * takes them: a 400 naming the one that does not, before anything is written.
   */
  private async checkImages(tenantId: string, agentId: string, model: string): Promise<void> {
    const agent = await this.turns.agent(tenantId, agentId);
    // A tenant's `vision` route (docs/adr/0059) runs every turn with image input, whatever the agent's model.
    const tenant = await this.sql.first<{ settings: unknown }>(
      sql`SELECT settings FROM tenants WHERE id = ${tenantId}::uuid`,
    );
    const vision = parseTenantSettings(tenant?.settings).modelRoutes.vision;
    if (agent && vision !== undefined && takesImages(vision)) return;
    const refs = agent ? [agent.model, ...agent.fallbackModels] : [];
    const blind = refs.find((ref) => !takesImages(ref));
    if (blind !== undefined || refs.length === 0) {
      throw new OpenAiError(
        400,
        'unsupported_value',
        `input: the agent ${model} runs on ${blind ?? 'no model'}, which does not take images; ` +
          'give it a model that does (openai/…, openai-chat/… or anthropic/…, not a hint:), set the ' +
          "tenant's vision route (PATCH /v1/settings modelRoutes.vision) or send text",
        { param: 'input' },
      );
    }
  }

  /** The turn of a stored response (`store` not false), or undefined. */
  private async storedTurnOf(tenantId: string, id: string, only?: string[]): Promise<string | undefined> {
    const found = await this.find(tenantId, id, only);
    return found?.meta.record.store ? found.meta.turnId : undefined;
  }

  private async find(
    tenantId: string,
    id: string,
    only?: string[],
  ): Promise<{ meta: ResponseMeta; turn: TurnResponse } | undefined> {
    const ref = responseRefOf(id);
    const row = ref ? await readTurn(this.sql, tenantId, ref.turnId) : undefined;
    if (!row || !ref) return undefined;
    // Another agent's response is as absent as another tenant's (docs/adr/0066).
    if (only && !only.includes(row.agentId.toLowerCase())) return undefined;
    const turn = presentTurn(row);
    const metadata = await this.sessions.messageMetadata(tenantId, turn.inputMessageId);
    const agent = await this.turns.agent(tenantId, turn.agentId);
    const record = requestRecordOf(metadata, agent?.name ?? turn.agentId);
    // A response that followed an answer (docs/adr/0047) continued the turn's first one.
    if (ref.after > 0) record.previous_response_id = responseIdOf(turn.id);
    return { meta: { turnId: turn.id, sessionId: turn.sessionId, record, after: ref.after }, turn };
  }
}

export const notFoundResponse = (id: string) =>
  new OpenAiError(404, 'response_not_found', `Response with id '${id}' not found.`, { param: 'response_id' });
