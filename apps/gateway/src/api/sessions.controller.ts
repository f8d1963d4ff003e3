import {
  Body,
  Controller,
  Delete,
  Get,
  HttpCode,
  Inject,
  Param,
  Patch,
  Post,
  Query,
  Res,
} from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { ApiHeader } from '@nestjs/swagger';
import {
  AdmitMessageResponse,
  AppError,
  EventPageResponse,
  ForkSessionResponse,
  MessagePageResponse,
  notFound,
  responseFormatProblem,
  RewindSessionResponse,
  SessionLineageResponse,
  SessionPageResponse,
  SessionResponse,
  TurnPageResponse,
  TurnResponse,
} from '@switchboard/contracts';
import type { Config } from '@switchboard/config';
import { SessionsRepository } from '@switchboard/store';
import { AgentsRepository, createSessionForAgent } from '@switchboard/subagents';
import { Actor, TenantId } from '../platform/auth/guard';
import {
  AdmitMessageDto,
  CreateSessionDto,
  EventsQueryDto,
  ForkSessionDto,
  PageQueryDto,
  RewindSessionDto,
  SessionsQueryDto,
  UpdateSessionDto,
} from './dto';
import { IdempotencyKeyHeader } from './idempotency';
import { BODY_ERRORS, Operation, TenantApi } from '../platform/openapi';
import {
  decodeCursor,
  encodeCursor,
  pathId,
  presentEvent,
  presentMessage,
  presentSession,
  presentTurn,
} from './presenters';
import { CONFIG, DB } from '@switchboard/platform';
import type { Db } from '@switchboard/database';
import { AGENT_TURNS, type AgentTurns } from '@switchboard/agent-turns';
import { holdRequest } from '../protocols/hold';
import { GATEWAY_READS, type GatewayReads } from './reads';
import { RateLimitBucketOf } from '../platform/rate-limit';
import { SESSION_HISTORY, type SessionHistory } from './session-history';

@TenantApi('sessions')
@Controller('v1/sessions')
export class SessionsController {
  constructor(
    @Inject(SessionsRepository) private readonly sessions: SessionsRepository,
    @Inject(AgentsRepository) private readonly agents: AgentsRepository,
    @Inject(AGENT_TURNS) private readonly turns: AgentTurns,
    @Inject(CONFIG) private readonly config: Config,
    @Inject(GATEWAY_READS) private readonly reads: GatewayReads,
    @Inject(SESSION_HISTORY) private readonly history: SessionHistory,
    @Inject(DB) private readonly db: Db,
  ) {}

  @Post()
  @HttpCode(201)
  @Operation({
    id: 'createSession',
    summary: 'Start a session with an agent',
    description:
      "Starts a session with one of the tenant's agents: the conversation that messages, webhook deliveries and schedule ticks are admitted into. 404 when the agent does not exist or is deleted; each call makes a new session. The session is pinned to the agent's current version (`agentVersion`, docs/adr/0061): a later change of the agent does not change it; PATCH /v1/sessions/{id} re-pins it. While the agent has a running canary (PUT /v1/agents/{id}/canary, docs/adr/0064) it is pinned to the canary's candidate or baseline version instead, by a stable hash of its id.",
    status: 201,
    schema: SessionResponse,
    errors: [...BODY_ERRORS, 404],
  })
  async create(@TenantId() tenantId: string, @Body() body: CreateSessionDto): Promise<SessionResponse> {
    const agent = await this.agents.find(tenantId, body.agentId);
    if (!agent) throw notFound('agent');
    // Pinned to the agent's current version, or as its running canary says (docs/adr/0064).
    const row = await createSessionForAgent(this.db, {
      tenantId,
      agentId: agent.id,
      version: agent.version,
      title: body.title ?? null,
      metadata: body.metadata ?? {},
    });
    return presentSession(row);
  }

  @Patch(':id')
  @Operation({
    id: 'updateSession',
    summary: 'Re-pin a session to a version of its agent',
    description:
      "`agentVersion`: the agent version the session's next turns run on (docs/adr/0061), or `latest` to follow " +
      "the agent's newest version from now on. A change of version renders the session's system prompt again on " +
      "its next turn. 400 for a version the agent does not have; 404 when the session is not the calling tenant's. " +
      'Nothing is written when it is refused.',
    status: 200,
    schema: SessionResponse,
    errors: [...BODY_ERRORS, 404],
  })
  async update(
    @TenantId() tenantId: string,
    @Param('id') id: string,
    @Body() body: UpdateSessionDto,
  ): Promise<SessionResponse> {
    const sessionId = pathId(id, 'session');
    const row = await this.sessions.pin(
      tenantId,
      sessionId,
      body.agentVersion === 'latest' ? null : body.agentVersion,
    );
    if (!row) throw notFound('session');
    return presentSession(row);
  }

  @Get()
  @Operation({
    id: 'listSessions',
    summary: 'Sessions of the tenant, by id (optionally of one agent, one status)',
    description:
      "The tenant's sessions by id, open and closed, each with its `lastActivityAt`; `agentId` and `status` (`active`, `closed`) narrow the list (another tenant's agent: an empty list). Paged by `limit` (default 50, at most 200) and `cursor` (the previous page's `nextCursor`, with the same filters).",
    status: 200,
    schema: SessionPageResponse,
    errors: [400],
  })
  async list(@TenantId() tenantId: string, @Query() q: SessionsQueryDto): Promise<SessionPageResponse> {
    const after = decodeCursor<[string]>(q.cursor, ['string']);
    const limit = q.limit ?? 50;
    const page = await this.sessions.page(tenantId, after?.[0], limit, {
      agentId: q.agentId,
      status: q.status,
    });
    return {
      data: page.rows.map(presentSession),
      nextCursor: page.more ? encodeCursor([page.rows[page.rows.length - 1].id]) : null,
    };
  }

  private async find(tenantId: string, id: string) {
    const row = await this.sessions.find(tenantId, pathId(id, 'session'));
    if (!row) throw notFound('session');
    return row;
  }

  @Get(':id')
  @Operation({
    id: 'getSession',
    summary: 'A session',
    description:
      "A session: its agent, status (open or closed), title, metadata, usage and timestamps. 404 when it is not the calling tenant's.",
    status: 200,
    schema: SessionResponse,
    errors: [404],
  })
  async get(@TenantId() tenantId: string, @Param('id') id: string): Promise<SessionResponse> {
    return presentSession(await this.find(tenantId, id));
  }

  /** Closes the session: its history stays readable; new messages are refused with 409. */
  @Delete(':id')
  @Operation({
    id: 'closeSession',
    summary: 'Close a session',
    description:
      'Closes the session: its history stays readable and new messages are refused with 409. Closing a closed session is harmless and answers it as it is.',
    status: 200,
    schema: SessionResponse,
    errors: [404],
  })
  async close(@TenantId() tenantId: string, @Param('id') id: string): Promise<SessionResponse> {
    const session = await this.find(tenantId, id);
    return presentSession(await this.sessions.close(session));
  }

  /** The transcript in order, with provenance on every entry. */
  @Get(':id/messages')
  @Operation({
    id: 'listMessages',
    summary: "The session's transcript",
    description:
      "The session's transcript in order, with provenance (who or what admitted each entry) on every entry. Paged by `limit` and `cursor`; 404 for an unknown session.",
    status: 200,
    schema: MessagePageResponse,
    errors: [400, 404],
  })
  async messages(
    @TenantId() tenantId: string,
    @Param('id') id: string,
    @Query() q: PageQueryDto,
  ): Promise<MessagePageResponse> {
    const sessionId = pathId(id, 'session');
    const after = decodeCursor<[number, number]>(q.cursor, ['number', 'number']);
    const limit = q.limit ?? 100;
    // The session and its transcript from one side: the read replica once it has replayed the
    // primary's position, else the primary (docs/adr/0042).
    const page = await this.reads.read(async ({ sessions }) => {
      const session = await sessions.find(tenantId, sessionId);
      if (!session) throw notFound('session');
      return sessions.messages(session.id, after, limit);
    });
    const last = page.rows[page.rows.length - 1];
    return {
      data: page.rows.map(presentMessage),
      nextCursor: page.more ? encodeCursor([last.turnSeq, last.position]) : null,
    };
  }

  /**
   * Admits a message: persisted before the 202, then a turn runs it. Honors Idempotency-Key. With
   * `wait`, answers 200 with the turn once it has ended, or 202 when the bound passes first.
   */
  @Post(':id/messages')
  @RateLimitBucketOf('admission')
  @HttpCode(202)
  @Operation({
    id: 'admitMessage',
    summary: 'Admit a message: a turn runs it',
    description:
      "Admits a message into the session: it is persisted before the answer, then a turn runs it (202 with the turn's id). With `wait` the request holds until the turn ends and answers 200 with it, or 202 when the bound passes first. An `Idempotency-Key` makes a retry return the first admission; 409 for a closed session or a stopped agent, 403 when the operator paused the tenant.",
    status: 202,
    schema: AdmitMessageResponse,
    response:
      'Admitted: the turn is queued (or, with `wait`, did not end within the bound). A replayed ' +
      'Idempotency-Key answers the first admission.',
    alternative: {
      status: 200,
      schema: TurnResponse,
      description:
        '`wait` was set and the turn ended within the bound (WAIT_TIMEOUT_MS, or `wait` seconds ' +
        'when fewer): the turn as GET /v1/turns/{id} shows it.',
    },
    errors: [...BODY_ERRORS, 403, 404, 409, 422],
  })
  @ApiHeader({
    name: 'Idempotency-Key',
    required: false,
    description:
      'Up to 200 printable ASCII characters. A retry with the same key and body returns the first ' +
      'admission; the same key with another body is 422 idempotency_key_reused; a retry while the ' +
      'first request is still being admitted is 409 idempotency_key_in_flight.',
    schema: { type: 'string', minLength: 1, maxLength: 200 },
  })
  async admit(
    @TenantId() tenantId: string,
    @Param('id') id: string,
    @Body() body: AdmitMessageDto,
    @IdempotencyKeyHeader() idempotencyKey: string | undefined,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    const sessionId = pathId(id, 'session');
    // Structured output (docs/adr/0048): a schema the validator cannot use is refused before anything is admitted.
    const problem = body.responseFormat && responseFormatProblem(body.responseFormat);
    if (problem) {
      throw new AppError('validation_failed', `responseFormat.schema: ${problem}`, {
        issues: [{ path: 'responseFormat.schema', message: problem }],
      });
    }
    const waitMs =
      body.wait === undefined || body.wait === false
        ? 0
        : Math.min(this.config.WAIT_TIMEOUT_MS, body.wait === true ? Infinity : body.wait * 1000);
    const deadline = Date.now() + waitMs;
    const request = {
      tenantId,
      sessionId,
      text: typeof body.content === 'string' ? body.content : body.content.map((c) => c.text).join('\n\n'),
      priority: body.priority,
      metadata: body.metadata,
      correlationId: body.correlationId,
      idempotencyKey,
      multitask: body.multitask,
      responseFormat: body.responseFormat,
    };
    if (waitMs === 0) {
      await reply.status(202).send(accepted(await this.turns.admit(request, { watch: false })));
      return;
    }
    // Listening starts before the admission, so its SUBSCRIBE overlaps the admission statement.
    const admitted = await this.turns.admit(request);
    try {
      const held = await holdRequest(this.turns, reply, admitted, { deadline, orPaused: true });
      if (held.settled) await reply.status(200).send(held.turn);
      else if (held.why !== 'left') await reply.status(202).send(accepted(admitted));
    } finally {
      admitted.watch.close();
    }
  }

  /** The durable event journal, ordered by the per-session seq. */
  @Get(':id/events')
  @Operation({
    id: 'listEvents',
    summary: "The session's event journal",
    description:
      "The session's durable event journal, ordered by its per-session `seq`: every turn's rounds, tool calls, approvals and ends. Pass `after` = the last seq you saw for the next events, up to `limit` (at most 500); the same journal the SSE streams replay.",
    status: 200,
    schema: EventPageResponse,
    errors: [400, 404],
  })
  async events(
    @TenantId() tenantId: string,
    @Param('id') id: string,
    @Query() q: EventsQueryDto,
  ): Promise<EventPageResponse> {
    const sessionId = pathId(id, 'session');
    const limit = q.limit ?? 200;
    // As the transcript: one side, the replica once it has replayed the primary's position.
    const rows = await this.reads.read(async ({ sessions }) => {
      const session = await sessions.find(tenantId, sessionId);
      if (!session) throw notFound('session');
      return sessions.events(session.id, q.after ?? 0, limit);
    });
    return {
      data: rows.map(presentEvent),
      lastSeq: rows.length > 0 ? rows[rows.length - 1].seq : (q.after ?? 0),
    };
  }

  /** The session's turns by seq, rewound ones included with `rewoundAt` (docs/adr/0053). */
  @Get(':id/turns')
  @Operation({
    id: 'listSessionTurns',
    summary: "The session's turns",
    description:
      "The session's turns in seq (admission) order, each as GET /v1/turns/{id} shows it without its children: rewound turns are listed with `rewoundAt`, a fork's copies with `copiedFromTurnId`. Paged by `limit` (default 50, at most 200) and `cursor`; 404 for an unknown session.",
    status: 200,
    schema: TurnPageResponse,
    errors: [400, 404],
  })
  async listTurns(
    @TenantId() tenantId: string,
    @Param('id') id: string,
    @Query() q: PageQueryDto,
  ): Promise<TurnPageResponse> {
    const sessionId = pathId(id, 'session');
    const after = decodeCursor<[number]>(q.cursor, ['number']);
    const limit = q.limit ?? 50;
    const page = await this.reads.read(async ({ sessions }) => {
      const session = await sessions.find(tenantId, sessionId);
      if (!session) throw notFound('session');
      return sessions.turns(session.id, after?.[0] ?? 0, limit);
    });
    return {
      data: page.rows.map(presentTurn),
      nextCursor: page.more ? encodeCursor([page.rows[page.rows.length - 1].seq]) : null,
    };
  }

  /**
   * Forks the session at an ended turn (docs/adr/0053): a new session whose transcript is the prefix,
   * lineage on both; nothing runs. Optional model and instructions for the fork.
   */
  @Post(':id/fork')
  @HttpCode(201)
  @Operation({
    id: 'forkSession',
    summary: 'Fork the session at a turn',
    description:
      "Makes a new session of the same agent whose transcript is this one's up to a turn boundary, and runs nothing: the fork takes messages like any session. The fork point is `turnId` (a turn of this session) or `eventSeq` (the journal seq of a turn's end event: turn_completed, turn_failed, turn_cancelled), exactly one; `position` `after` (default) keeps that turn, `before` leaves it out. The copied turns are new rows (`copiedFromTurnId`) with zero usage and cost (the original's are counted once) and no tool calls (the original's stay authoritative); the original session is not changed beyond a `session_fork_created` event in its journal, and the fork's journal starts with `session_forked`. `model` and `instructions` override the agent's for every turn of the fork (a fork of a fork inherits them). Allowed while this session has a running turn, from a turn that has ended: a fork point that has not ended is 409. 404 for another tenant's session, a turn not in it or an unknown event seq; 400 for an event that is not a turn's end. Nothing is written on a refusal; the fork is audited (`session.forked`).",
    status: 201,
    schema: ForkSessionResponse,
    errors: [...BODY_ERRORS, 404, 409],
  })
  async fork(
    @TenantId() tenantId: string,
    @Actor() actor: string,
    @Param('id') id: string,
    @Body() body: ForkSessionDto,
  ): Promise<ForkSessionResponse> {
    const sessionId = pathId(id, 'session');
    const forked = await this.history.fork(tenantId, sessionId, body, actor);
    const session = await this.sessions.find(tenantId, forked.sessionId);
    if (!session) throw notFound('session');
    return {
      session: presentSession(session),
      forkPoint: {
        sessionId,
        turnId: session.forkedAtTurnId!,
        turnSeq: forked.turnSeq,
        position: body.position ?? 'after',
        forkedAtTurnSeq: forked.forkedAtTurnSeq,
        copiedTurns: forked.copiedTurns.length,
      },
    };
  }

  /**
   * Rewinds the session to before a turn (docs/adr/0053): it and every later turn are left out of the
   * model's history from now on, kept in the journal and the transcript.
   */
  @Post(':id/rewind')
  @HttpCode(200)
  @Operation({
    id: 'rewindSession',
    summary: 'Rewind the session to before a turn',
    description:
      "The session goes on as if `turnId` and every later turn had not happened: they are marked `rewoundAt` (never deleted; still in the journal, GET …/turns and the transcript), left out of the model's history, and the memory records post-turn hooks derived from them are left out of recall and memory_search (not deleted: the memory API still lists them). `session_rewound` is journaled; a new turn takes the next seq. A context compaction that summarised rewound turns is cleared. 409 `session_busy` while the session has a turn that has not ended (queued, running or waiting: cancel it or let it end first); 409 for a turn already rewound or a closed session; 404 for another tenant's session or a turn not in it. Nothing is written on a refusal; the rewind is audited (`session.rewound`).",
    status: 200,
    schema: RewindSessionResponse,
    errors: [...BODY_ERRORS, 404, 409],
  })
  async rewind(
    @TenantId() tenantId: string,
    @Actor() actor: string,
    @Param('id') id: string,
    @Body() body: RewindSessionDto,
  ): Promise<RewindSessionResponse> {
    const sessionId = pathId(id, 'session');
    const result = await this.history.rewind(tenantId, sessionId, body.turnId, actor);
    return { sessionId, rewoundTurnIds: result.rewoundTurnIds, compactionCleared: result.compactionCleared };
  }

  /** Where the session was forked from (its ancestors, nearest first) and its forks (docs/adr/0053). */
  @Get(':id/lineage')
  @Operation({
    id: 'getSessionLineage',
    summary: "The session's lineage: what it was forked from, and its forks",
    description:
      "The sessions this one descends from by forks, nearest first, each with the turn the next one down was forked at (`missing` when that session no longer exists), and its own forks, oldest first (at most 500), each with its fork point. 404 when the session is not the calling tenant's.",
    status: 200,
    schema: SessionLineageResponse,
    errors: [404],
  })
  async lineage(@TenantId() tenantId: string, @Param('id') id: string): Promise<SessionLineageResponse> {
    const sessionId = pathId(id, 'session');
    const lineage = await this.history.lineage(tenantId, sessionId);
    if (!lineage) throw notFound('session');
    return {
      sessionId,
      ancestors: lineage.ancestors.map((a) => ({ ...a, createdAt: a.createdAt?.toISOString() ?? null })),
      children: lineage.children.map((c) => ({ ...c, createdAt: c.createdAt.toISOString() })),
    };
  }
}

const accepted = (a: { messageId: string; turnId: string; status: string }): AdmitMessageResponse => ({
  messageId: a.messageId,
  turnId: a.turnId,
  status: a.status as AdmitMessageResponse['status'],
});
