import { Body, Controller, Get, HttpCode, Inject, Param, Post, Query, Res } from '@nestjs/common';
import { ApiBody } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import type { Admission, TurnSteering } from '@switchboard/admission';
import {
  ACTIVE_TURN_STATUSES,
  CancelTurnRequest,
  TurnPageResponse,
  notFound,
  ReplayTurnRequest,
  RoundContextResponse,
  RoundIndexParam,
  TurnComparisonResponse,
  TurnReplayResponse,
  TurnResponse,
  TurnTimelineResponse,
  cancelCause,
  AppError,
  TurnFeedbackResponse,
} from '@switchboard/contracts';
import type { Config } from '@switchboard/config';
import type { Db } from '@switchboard/database';
import { Actor, TenantId } from '../platform/auth/guard';
import { AGENT_TURNS, type AgentTurns } from '@switchboard/agent-turns';
import {
  ActiveTurnsQueryDto,
  CancelTurnDto,
  ClientToolResultsDto,
  ReplayTurnDto,
  TurnFeedbackDto,
} from './dto';
import { GATEWAY_SQL } from './streams.controller';
import { BODY_ERRORS, Operation, TenantApi } from '../platform/openapi';
import { decodeCursor, encodeCursor, pathId, presentTurn } from './presenters';
import { validateOptionalBody, validateParam } from '../platform/validation';
import { ADMISSION, CONFIG, DB, TASKS } from '@switchboard/platform';
import type { TaskService } from '@switchboard/subagents';
import { turnDetail } from './turn-detail';
import { TURN_STEERING } from './turn-steering';
import {
  findTurn,
  OPERATOR_ACTOR,
  readComparison,
  readRoundContext,
  readTimeline,
  readTurn,
  writeFeedback,
  type SqlDb,
} from '@switchboard/store';
import { assembleRoundContext, assembleTimeline } from './turn-timeline';
import { GATEWAY_READS, type GatewayReads } from './reads';

@TenantApi('turns')
@Controller('v1/turns')
export class TurnsController {
  constructor(
    @Inject(DB) private readonly db: Db,
    @Inject(TURN_STEERING) private readonly control: TurnSteering,
    @Inject(TASKS) private readonly tasks: TaskService,
    @Inject(GATEWAY_READS) private readonly reads: GatewayReads,
    @Inject(CONFIG) private readonly config: Config,
    @Inject(AGENT_TURNS) private readonly turns: AgentTurns,
    @Inject(ADMISSION) private readonly admission: Admission,
    @Inject(GATEWAY_SQL) private readonly sql: SqlDb,
  ) {}

  /** The tenant's turns that have not ended (seed 000 active runs, docs/adr/0058), oldest first. */
  @Get()
  @Operation({
    id: 'listActiveTurns',
    summary: "The tenant's running and queued turns",
    description:
      "The calling tenant's turns that have not ended (seed 000 active runs), oldest first (admission order), each as GET /v1/turns/{id} shows it without its children. `status`: one or more of queued, running, awaiting_approval, awaiting_subagent, awaiting_client_tool, comma-separated (default all of them; an ended status is a 400: ended turns are listed per session, GET /v1/sessions/{id}/turns). `agentId` / `sessionId` narrow it to one agent or session. Paged by `limit` (default 50, at most 200) and `cursor`.",
    status: 200,
    schema: TurnPageResponse,
    errors: [400],
  })
  async listActive(@TenantId() tenantId: string, @Query() q: ActiveTurnsQueryDto): Promise<TurnPageResponse> {
    const after = decodeCursor<[string]>(q.cursor, ['string']);
    const limit = q.limit ?? 50;
    const filter = {
      statuses: q.status ?? ACTIVE_TURN_STATUSES,
      ...(q.agentId ? { agentId: q.agentId } : {}),
      ...(q.sessionId ? { sessionId: q.sessionId } : {}),
    };
    const page = await this.reads.read(({ sessions }) =>
      sessions.activeTurns(tenantId, filter, after?.[0], limit),
    );
    return {
      data: page.rows.map(presentTurn),
      nextCursor: page.more ? encodeCursor([page.rows[page.rows.length - 1].id]) : null,
    };
  }

  /** Status, final text, stop reason, usage, cost, tool calls and the provider attempt timeline. */
  @Get(':id')
  @Operation({
    id: 'getTurn',
    summary: 'A turn',
    description:
      "A turn: status, final text, stop reason, usage and cost, tool calls and the provider attempt timeline. 404 when it is not the calling tenant's.",
    status: 200,
    schema: TurnResponse,
    errors: [404],
  })
  async get(@TenantId() tenantId: string, @Param('id') id: string): Promise<TurnResponse> {
    // Its sub-agent tasks (docs/adr/0024) and their cost (docs/adr/0025), as `wait` on admission adds them.
    const turnId = pathId(id, 'turn');
    // On the read replica once it has replayed the primary's position (docs/adr/0042).
    const turn = await this.reads.read(({ sql }) => readTurn(sql, tenantId, turnId));
    if (!turn) throw notFound('turn');
    return turnDetail(this.tasks)(tenantId, turn);
  }

  /**
   * The turn's story (docs/adr/0045): admission, queue wait, claim, each model round with its
   * attempts and tool calls, child turns, post-turn hooks, the journal and the trace. Two statements
   * on the routed reads: `readTurn` (the turn and its cost roll-up, as GET /v1/turns/:id) and
   * `readTimeline` (everything else about it).
   */
  @Get(':id/timeline')
  @Operation({
    id: 'getTurnTimeline',
    summary: "A turn's timeline",
    description:
      "The story of one turn, assembled from what it stored: admission, queue wait and claim; each model round (model, every attempt with retries and fallbacks, latency, tokens with cached and cache-write, cost) with its tool calls (gates, approval, effect class, outcome including outcome_unknown, duration, result size before and after compaction and the original's id for GET /v1/tool-results/:id); its sub-agents' child turns with their cost roll-up; post-turn hook runs; its journal; the trace id, with a Jaeger link when JAEGER_UI_URL is set. 404 when it is not the calling tenant's (docs/adr/0045).",
    status: 200,
    schema: TurnTimelineResponse,
    errors: [404],
  })
  async timeline(@TenantId() tenantId: string, @Param('id') id: string): Promise<TurnTimelineResponse> {
    const turnId = pathId(id, 'turn');
    const read = await this.reads.read(async ({ sql }) => {
      const turn = await readTurn(sql, tenantId, turnId);
      return turn && { turn, timeline: await readTimeline(sql, tenantId, turnId) };
    });
    if (!read?.timeline) throw notFound('turn');
    return assembleTimeline({
      // `spawned: false`: the timeline reads the children itself (readTimeline), with their turns.
      turn: await turnDetail(this.tasks)(tenantId, { ...read.turn, spawned: false }),
      read: read.timeline,
      jaegerUiUrl: this.config.JAEGER_UI_URL,
    });
  }

  /**
   * What the model saw in one round (docs/adr/0045): the exact context its checkpoint recorded,
   * rebuilt from the content-addressed parts, with token estimates per part.
   */
  @Get(':id/rounds/:index/context')
  @Operation({
    id: 'getTurnRoundContext',
    summary: 'What the model saw in a round',
    description:
      "The exact context sent to the provider for one model round of the turn (rounds are numbered from 0, as the timeline numbers them): the system prompt, the tools offered, and every message in order with its source (transcript, recalled memory, the work-item projection, a compaction summary) and estimated tokens per part. 400 for an index that is not a non-negative integer; 404 when the turn is not the calling tenant's or the round was not recorded (docs/adr/0045).",
    status: 200,
    schema: RoundContextResponse,
    errors: [400, 404],
  })
  async roundContext(
    @TenantId() tenantId: string,
    @Param('id') id: string,
    @Param('index') index: string,
  ): Promise<RoundContextResponse> {
    const turnId = pathId(id, 'turn');
    const round = validateParam(RoundIndexParam, index, 'index');
    const read = await this.reads.read(({ sql }) => readRoundContext(sql, tenantId, turnId, round));
    if (!read) throw notFound('turn');
    if (!read.context) throw notFound('round context');
    return assembleRoundContext(read.context);
  }

  /**
   * Cancels a turn (docs/adr/0014). A queued turn, or one awaiting approval, ends at once: 200 with
   * the turn, `cancelled`. A running turn is stopped by its worker at the next safe point: 202 with
   * the turn as it stands (`running`, `cancelRequestedAt` set); it ends `cancelled` with
   * `turn_cancelled` journaled. A turn that already ended is answered 200 as it is, unchanged.
   */
  @Post(':id/cancel')
  @Operation({
    id: 'cancelTurn',
    summary: 'Cancel a turn',
    description:
      "Cancels a turn (docs/adr/0014). A queued turn, or one awaiting approval, ends at once (200, `cancelled`); a running turn is stopped by its worker at the next safe point (202, `cancelRequestedAt` set). Cancelling an ended turn changes nothing and answers it as it is, so a repeat is harmless. The turn says why (docs/adr/0055): cancelReason `api_cancel` with the optional `reason` as its cancelNote (`operator`, audited, when the operator's ADMIN_TOKEN acts as the tenant); the first cancel's reason stands.",
    status: 202,
    schema: TurnResponse,
    response:
      'The turn is running: the cancel is recorded and its worker stops it at the next safe point ' +
      '(before a provider call or a tool); the turn as it stands, with cancelRequestedAt.',
    alternative: {
      status: 200,
      schema: TurnResponse,
      description:
        'The turn has ended: it was queued or awaiting approval and is now cancelled, or it had ' +
        'already ended (a repeated cancel changes nothing).',
    },
    errors: [...BODY_ERRORS, 404],
  })
  @ApiBody({ type: CancelTurnDto, required: false })
  async cancel(
    @TenantId() tenantId: string,
    @Actor() actor: string,
    @Param('id') id: string,
    @Body() raw: unknown,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    const turnId = pathId(id, 'turn');
    const body = validateOptionalBody(CancelTurnRequest, raw);
    // The client's own words are the note; the reason is api_cancel, or operator (audited) when the
    // operator's ADMIN_TOKEN acts as the tenant (the console's tenant view; docs/adr/0055).
    const operator = actor === OPERATOR_ACTOR;
    const result = await this.control.cancel(
      tenantId,
      turnId,
      cancelCause(operator ? 'operator' : 'api_cancel', body.reason),
      operator ? { auditActor: OPERATOR_ACTOR } : {},
    );
    if (!result) throw notFound('turn');
    const turn = await this.find(tenantId, turnId);
    // 202 from what the cancel did, not from a re-read: the worker may have stopped the turn already.
    await reply.status(result.status === 'running' ? 202 : 200).send(turn);
  }

  /**
   * The client's results for the client tool calls the turn waits for (docs/adr/0047): all of its
   * pending calls at once. 202 once answered (the turn is queued and resumes exactly once); the same
   * results again change nothing (200). Unknown ids (another tenant's too) 404, a pending call left
   * out 400, an expired wait or another output for an answered call 409, each naming the ids.
   */
  @Post(':id/client-tool-results')
  @Operation({
    id: 'answerClientTools',
    summary: "Send the results of a turn's client tool calls",
    description:
      'Answers the client tool calls a turn waits for (`awaiting_client_tool`, docs/adr/0047) by the ids its `client_tool_requested` events handed out; every pending call of the turn at once. The turn resumes exactly once; sending the same results again changes nothing. Unknown ids (another tenant’s included) are 404, a pending call left out is 400, an expired wait (the turn ended `client_tool_timeout`) or another output for an answered call is 409; the error details name the ids.',
    status: 202,
    schema: TurnResponse,
    response: 'Answered: the turn is queued again and resumes on a worker; the turn as it stands.',
    alternative: {
      status: 200,
      schema: TurnResponse,
      description: 'The same results were sent before: nothing changed; the turn as it stands.',
    },
    errors: [...BODY_ERRORS, 404, 409],
  })
  async answerClientTools(
    @TenantId() tenantId: string,
    @Param('id') id: string,
    @Body() body: ClientToolResultsDto,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    const turnId = pathId(id, 'turn');
    // A turn that is not the tenant's is 404 `turn` before its calls are looked up: the same answer a
    // key limited to agents gets for another agent's turn (docs/adr/0066).
    await this.find(tenantId, turnId);
    const answered = await this.turns.answerClientTools({
      tenantId,
      turnId,
      results: body.results,
      answeredBy: 'api',
    });
    const turn = await this.find(tenantId, turnId);
    await reply.status(answered.replayed ? 200 : 202).send(turn);
  }

  /**
   * Replays an ended turn (docs/adr/0054): a fork of its session taken just before it (with the
   * overrides), the turn's input admitted into the fork as a queued turn that names the original.
   * Its side-effecting calls are answered from the original's recorded results, or wait for a person.
   */
  @Post(':id/replay')
  @Operation({
    id: 'replayTurn',
    summary: 'Replay a turn without repeating its side effects',
    description:
      "Runs an ended turn's input again in a new session forked just before it (docs/adr/0053), optionally on another `model` or with other `instructions`: read-only tools run again; a side-effecting call with the same tool and canonically equal arguments as a call the original completed is answered from its recorded result (each original call once, in order), marked `replayed` in the journal and never executed; any other side-effecting call waits for an approval (policy `replay_unrecorded_side_effect`). Each call makes a new replay. The turn must have ended (409 otherwise); a replay can be replayed. 404 when the turn is not the calling tenant's. Nothing is written when it is refused. Compare the result with GET /v1/turns/{id}/comparison (docs/adr/0054). `agentVersion` runs the replay on that version of the agent (docs/adr/0061; default: the version the original turn ran on; one the agent does not have: 400).",
    status: 202,
    schema: TurnReplayResponse,
    response: 'The replay turn, queued in the fork; it runs on a worker like any admitted turn.',
    errors: [...BODY_ERRORS, 403, 404, 409],
  })
  @ApiBody({ type: ReplayTurnDto, required: false })
  @HttpCode(202)
  async replay(
    @TenantId() tenantId: string,
    @Actor() actor: string,
    @Param('id') id: string,
    @Body() raw: unknown,
  ): Promise<TurnReplayResponse> {
    const turnId = pathId(id, 'turn');
    const body = validateOptionalBody(ReplayTurnRequest, raw);
    const replayed = await this.admission.replay({
      tenantId,
      turnId,
      actor,
      ...(body.model !== undefined || body.instructions !== undefined
        ? { overrides: { model: body.model, instructions: body.instructions } }
        : {}),
      ...(body.agentVersion !== undefined ? { agentVersion: body.agentVersion } : {}),
    });
    return {
      replay: {
        turnId: replayed.turnId,
        sessionId: replayed.sessionId,
        originalTurnId: replayed.originalTurnId,
        status: replayed.status,
      },
    };
  }

  /**
   * A replay beside the turn it replays (docs/adr/0054): final text, tool calls, tokens, cost and
   * latency of each, and their differences once the replay has ended.
   */
  @Get(':id/comparison')
  @Operation({
    id: 'getTurnComparison',
    summary: 'A replay compared with the turn it replays',
    description:
      "For a replay turn (POST /v1/turns/{id}/replay): the original and the replay side by side — status, model, final text, tool calls in the order the model asked for them (with `replayed` for a call answered from the recorded result), tokens, cost and latency (start to end, less time spent waiting for a person or a sub-agent) — and `diff` (final text equal, tool calls equal by name and canonical arguments in order, token, cost and latency deltas, replay minus original), null until the replay has ended. 404 when the turn is not the calling tenant's or is not a replay (docs/adr/0054).",
    status: 200,
    schema: TurnComparisonResponse,
    errors: [404],
  })
  async comparison(@TenantId() tenantId: string, @Param('id') id: string): Promise<TurnComparisonResponse> {
    const turnId = pathId(id, 'turn');
    const compared = await this.reads.read(({ sql }) => readComparison(sql, tenantId, turnId));
    if (!compared) throw notFound('replay turn');
    return compared as TurnComparisonResponse;
  }

  /** Feedback on an ended turn (docs/adr/0062): a score row of source `feedback`. */
  @Post(':id/feedback')
  @HttpCode(201)
  @Operation({
    id: 'postTurnFeedback',
    summary: 'Give feedback on a turn',
    description:
      'Records feedback on an ended turn as a score (docs/adr/0062): `score` (0..1), `rating` (`up`: score 1, ' +
      'passed; `down`: score 0, not passed), `label` (≤ 100 characters), `value` (any number) — at least one of ' +
      'them — with `comment` (≤ 2000) and `by` (who gave it, 1–200 characters). It counts in ' +
      'GET /v1/agents/{id}/scores as scorer `feedback` of the version the turn ran on, and shows in the ' +
      "turn's `scores`. Any number of feedback rows per turn. 404 when the turn is not the calling tenant's; " +
      '409 when it has not ended; nothing is written when it is refused.',
    status: 201,
    schema: TurnFeedbackResponse,
    errors: [...BODY_ERRORS, 404, 409],
  })
  async feedback(
    @TenantId() tenantId: string,
    @Param('id') id: string,
    @Body() body: TurnFeedbackDto,
  ): Promise<TurnFeedbackResponse> {
    const turnId = pathId(id, 'turn');
    const b = body;
    if (b.score !== undefined && b.rating !== undefined && b.score !== (b.rating === 'up' ? 1 : 0)) {
      throw new AppError('validation_failed', 'score and rating disagree', {
        issues: [{ path: 'rating', message: `rating ${b.rating} is score ${b.rating === 'up' ? 1 : 0}` }],
      });
    }
    const score = b.score ?? (b.rating === undefined ? null : b.rating === 'up' ? 1 : 0);
    const r = await writeFeedback(this.sql, {
      tenantId,
      turnId,
      score,
      passed: b.rating !== undefined ? b.rating === 'up' : null,
      label: b.label ?? null,
      value: b.value ?? null,
      comment: b.comment ?? null,
      rating: b.rating ?? null,
      givenBy: b.by,
    });
    if (r.outcome === 'not_found') throw notFound('turn');
    if (r.outcome === 'not_ended') {
      throw new AppError('conflict', `the turn has not ended (it is ${r.status})`, { status: r.status });
    }
    return r.score as TurnFeedbackResponse;
  }

  private async find(tenantId: string, id: string): Promise<TurnResponse> {
    const turn = await findTurn(this.db, tenantId, id);
    if (!turn) throw notFound('turn');
    return presentTurn(turn);
  }
}
