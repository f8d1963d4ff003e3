import {
  applyDecorators,
  Body,
  Controller,
  Get,
  HttpCode,
  Inject,
  Param,
  Post,
  Query,
  Res,
} from '@nestjs/common';
import { RouteConfig } from '@nestjs/platform-fastify';
import { ApiBody, ApiOperation, ApiResponse, ApiSecurity, ApiTags } from '@nestjs/swagger';
import type { Session } from '@prisma/client';
import type { FastifyReply } from 'fastify';
import type { z } from 'zod';
import {
  AppError,
  isUuid,
  LangGraphAssistant,
  LangGraphAssistantList,
  LangGraphErrorResponse,
  LangGraphHistoryRequest,
  LangGraphRun,
  LangGraphRunList,
  LangGraphThread,
  LangGraphThreadList,
  LangGraphThreadState,
  LangGraphThreadStateList,
  LangGraphUpdateStateRequest,
  LangGraphUpdateStateResponse,
  LangGraphValues,
  newId,
  cancelCause,
} from '@switchboard/contracts';
import type { Approvals } from '@switchboard/turns';
import { Actor, ApiKeyId, KeyAgents, TenantId } from '../../platform/auth/guard';
import {
  LangGraphAssistantSearchDto,
  LangGraphCancelQueryDto,
  LangGraphHistoryDto,
  LangGraphHistoryQueryDto,
  LangGraphJoinQueryDto,
  LangGraphJoinStreamQueryDto,
  LangGraphRunDto,
  LangGraphRunListQueryDto,
  LangGraphStateAtDto,
  LangGraphStateQueryDto,
  LangGraphThreadCreateDto,
  LangGraphThreadSearchDto,
} from '../../api/dto';
import type { ErrorShapeConfig } from '../../platform/errors';
import { API_KEY_AUTH, RATE_LIMIT_HEADERS, schemaRef } from '../../platform/openapi';
import { RateLimitBucketOf } from '../../platform/rate-limit';
import { AGENT_TURNS, SessionRefused, type AgentTurns } from '@switchboard/agent-turns';
import type { LiveWatch } from '@switchboard/live';
import { holdRequest } from '../hold';
import { validateOptionalBody } from '../../platform/validation';
import {
  assistantOf,
  bodyText,
  checkpointIdOf,
  checkpointIdOfRef,
  checkpointOf,
  clientToolsOfRun,
  historyFilterOf,
  LangGraphError,
  ONE_MESSAGE,
  planRun,
  resumeOf,
  runCheckpointOf,
  runOf,
  runOriginOf,
  stateOf,
  stateOriginOf,
  streamModesOf,
  threadOf,
  threadRefusal,
  turnStatusesOf,
  updateStateOf,
  valuesOf,
  type CheckpointOrigin,
  type RunPlan,
} from '@switchboard/protocols';
import type { MessageImage } from '@switchboard/contracts';
import { LangGraphReads } from './reads';
import { LangGraphRunStreamer } from './run-stream';
import { LangGraphSnapshots } from './snapshots';
import { SESSION_HISTORY, type SessionHistory } from '../../api/session-history';
import { APPROVALS } from '../../api/approvals.controller';

/** Turn statuses that have not ended: a rewind waits for none of them. */
const UNFINISHED = new Set([
  'queued',
  'running',
  'awaiting_approval',
  'awaiting_subagent',
  'awaiting_client_tool',
]);

/** The security scheme of the `x-api-key` header the LangGraph SDK sends. */
export const LANGGRAPH_API_KEY_AUTH = 'langgraphApiKey';

const ERROR_TEXT: Record<number, string> = {
  400: 'The body is not JSON, or a header or query is malformed',
  401: 'Missing, invalid or revoked API key (`x-api-key`, or `Authorization: Bearer`)',
  403: 'The operator paused the tenant: nothing is admitted until it is resumed',
  404: 'No such assistant, thread, run or checkpoint for the calling tenant',
  408: 'The run did not end within WAIT_TIMEOUT_MS: it goes on; join it again',
  409: 'The thread is busy (multitask_strategy reject), interrupted (resume it), bound to another assistant, or exists; or the checkpoint lies on a branch a run from an earlier checkpoint left',
  413: 'Request body larger than the limit',
  415: 'Body is not application/json',
  422: 'The body failed validation, or asks for what the subset does not support (rollback, values in updateState…)',
  429: 'Rate limit exceeded: retry after Retry-After seconds',
  500: 'Unexpected failure (logged)',
  503: 'A dependency (Postgres, Redis) is unavailable, or the gateway is shutting down: retry later',
};

const COMMON = [401, 429, 500, 503];
const BODY = [400, 413, 415, 422];

/**
 * One LangGraph route: LangGraph's `{detail}` error shape for every error of the request (the guard's
 * and the body parser's too), the `x-api-key` header accepted as the API key, and its OpenAPI entry.
 */
function LangGraphRoute(o: {
  id: string;
  summary: string;
  description: string;
  /** The success status; none for a route that only refuses (documented by its errors alone). */
  status?: number;
  schema?: z.ZodType;
  stream?: boolean;
  errors: number[];
}) {
  return applyDecorators(
    RouteConfig({ errorShape: 'langgraph', apiKeyHeader: true } satisfies ErrorShapeConfig),
    ApiOperation({ operationId: o.id, summary: o.summary, description: o.description }),
    ...(o.status === undefined
      ? []
      : [
          ApiResponse({
            status: o.status,
            description: o.summary,
            ...(o.stream
              ? { content: { 'text/event-stream': { schema: { type: 'string' } } } }
              : o.schema
                ? { schema: schemaRef(o.schema) }
                : {}),
          }),
        ]),
    ...[...new Set([...o.errors, ...COMMON])].map((status) =>
      ApiResponse({
        status,
        description: ERROR_TEXT[status],
        schema: schemaRef(LangGraphErrorResponse),
        ...(status === 429 ? { headers: RATE_LIMIT_HEADERS } : {}),
      }),
    ),
  );
}

/**
 * The LangGraph Agent Server API subset (docs/adr/0038-langgraph-agent-server-api.md), so
 * `@langchain/langgraph-sdk`'s `new Client({ apiUrl: '<gateway>/langgraph', apiKey })` works unmodified:
 * assistants are agents, threads sessions, runs turns, interrupts approvals. A thin adapter over the
 * same seams as `/v1/chat/completions`: Admission admits, the TurnWaiter waits, the event-stream seam
 * streams, TurnSteering cancels, Approvals decides.
 */
@ApiTags('langgraph')
@ApiSecurity(LANGGRAPH_API_KEY_AUTH)
@ApiSecurity(API_KEY_AUTH)
@Controller('langgraph')
export class LangGraphController {
  constructor(
    @Inject(LangGraphReads) private readonly reads: LangGraphReads,
    @Inject(LangGraphSnapshots) private readonly snapshots: LangGraphSnapshots,
    @Inject(LangGraphRunStreamer) private readonly streamer: LangGraphRunStreamer,
    @Inject(AGENT_TURNS) private readonly turns: AgentTurns,
    @Inject(APPROVALS) private readonly approvals: Approvals,
    @Inject(SESSION_HISTORY) private readonly sessionHistory: SessionHistory,
  ) {}

  // ---------------------------------------------------------------------------------------------
  // Assistants
  // ---------------------------------------------------------------------------------------------

  @Post('assistants/search')
  @HttpCode(200)
  @LangGraphRoute({
    id: 'langgraphSearchAssistants',
    description:
      "The tenant's agents as LangGraph assistants (`client.assistants.search`): `graph_id` and `name` filter by the agent's name, `metadata` by the assistant's metadata (model, tools, approval_required); newest first, paged by limit/offset.",
    summary: "The tenant's agents as LangGraph assistants (graph_id = the agent's name)",
    status: 200,
    schema: LangGraphAssistantList,
    errors: BODY,
  })
  async searchAssistants(
    @TenantId() tenantId: string,
    @Body() body: LangGraphAssistantSearchDto,
    @KeyAgents() only: string[] | undefined,
  ): Promise<LangGraphAssistant[]> {
    if (body.graph_id !== undefined && body.name !== undefined && body.graph_id !== body.name) return [];
    const rows = await this.reads.agents(tenantId, {
      graphId: body.graph_id,
      name: body.name,
      limit: body.limit ?? 10,
      offset: body.offset ?? 0,
      sortBy: body.sort_by ?? 'created_at',
      desc: (body.sort_order ?? 'desc') === 'desc',
      // A key limited to agents (docs/adr/0066) finds only those.
      ...(only ? { agentIds: only } : {}),
    });
    // Metadata filters match the assistant's metadata (its model, tools, approval_required).
    const wanted = Object.entries(body.metadata ?? {});
    return rows
      .map(assistantOf)
      .filter((a) => wanted.every(([k, v]) => JSON.stringify(a.metadata[k]) === JSON.stringify(v)));
  }

  @Get('assistants/:assistant_id')
  @LangGraphRoute({
    id: 'langgraphGetAssistant',
    description:
      'One agent as an assistant (`client.assistants.get`), by its id or by its name (the most recent agent of that name).',
    summary: 'An assistant: an agent by id or by name',
    status: 200,
    schema: LangGraphAssistant,
    errors: [404],
  })
  async getAssistant(
    @TenantId() tenantId: string,
    @Param('assistant_id') id: string,
  ): Promise<LangGraphAssistant> {
    return assistantOf(await this.assistant(tenantId, id));
  }

  // ---------------------------------------------------------------------------------------------
  // Threads
  // ---------------------------------------------------------------------------------------------

  @Post('threads')
  @HttpCode(200)
  @LangGraphRoute({
    id: 'langgraphCreateThread',
    description:
      'Creates a thread (`client.threads.create({ graphId })`): a session of the agent that `metadata.assistant_id` or `metadata.graph_id` names, with the given `thread_id` or a new one. Without an assistant the request is refused (422): a session belongs to one agent.',
    summary:
      'Create a thread: a session of the assistant named by metadata.assistant_id or metadata.graph_id',
    status: 200,
    schema: LangGraphThread,
    errors: [...BODY, 404, 409],
  })
  async createThread(
    @TenantId() tenantId: string,
    @Body() body: LangGraphThreadCreateDto,
  ): Promise<LangGraphThread> {
    const { assistant_id, graph_id, ...metadata } = body.metadata ?? {};
    const named =
      typeof assistant_id === 'string' ? assistant_id : typeof graph_id === 'string' ? graph_id : undefined;
    if (named === undefined) {
      throw new LangGraphError(
        422,
        'metadata.assistant_id (or graph_id: the agent name, `threads.create({ graphId })`) is required: ' +
          'a Switchboard thread is a session of one agent. Or start a run on a new thread id with ' +
          'if_not_exists: "create".',
      );
    }
    const agent = await this.assistant(tenantId, named);
    const id = body.thread_id ?? newId();
    const created = await this.turns.openSession({ id, tenantId, agentId: agent.id, metadata });
    if (!created) {
      const existing = await this.reads.session(tenantId, id);
      if (existing && body.if_exists === 'do_nothing') return this.presentThread(existing);
      throw new LangGraphError(409, `thread ${id} already exists`);
    }
    return this.presentThread(created, agent.name);
  }

  @Post('threads/search')
  @HttpCode(200)
  @LangGraphRoute({
    id: 'langgraphSearchThreads',
    description:
      "The tenant's sessions as threads (`client.threads.search`), newest first: `ids`, `metadata` (assistant_id / graph_id pick the agent) and `status` filter; searching by `values` is not supported (422).",
    summary:
      "The tenant's sessions as threads, newest first; metadata.assistant_id / graph_id pick the agent",
    status: 200,
    schema: LangGraphThreadList,
    errors: BODY,
  })
  async searchThreads(
    @TenantId() tenantId: string,
    @Body() body: LangGraphThreadSearchDto,
    @KeyAgents() only: string[] | undefined,
  ): Promise<LangGraphThread[]> {
    for (const key of ['values', 'extract'] as const) {
      if (Object.keys(body[key] ?? {}).length > 0) {
        throw new LangGraphError(422, `${key}: searching threads by their state is not supported`);
      }
    }
    const { assistant_id, graph_id, ...metadata } = body.metadata ?? {};
    let agentId: string | undefined;
    const named =
      typeof assistant_id === 'string' ? assistant_id : typeof graph_id === 'string' ? graph_id : undefined;
    if (named !== undefined) {
      const agent = await this.reads.agent(tenantId, named);
      // Another agent than a limited key's is as unknown (docs/adr/0066).
      if (!agent || (only && !only.includes(agent.id.toLowerCase()))) return [];
      agentId = agent.id;
    }
    const rows = await this.reads.sessions(tenantId, {
      ids: body.ids,
      agentId,
      // A key limited to agents (docs/adr/0066) finds only their threads.
      ...(only ? { agentIds: only } : {}),
      metadata,
      limit: body.limit ?? 10,
      offset: body.offset ?? 0,
      sortBy: body.sort_by ?? 'created_at',
      desc: (body.sort_order ?? 'desc') === 'desc',
    });
    const names = new Map(
      (await this.reads.agentsById(tenantId, [...new Set(rows.map((r) => r.agentId))])).map((a) => [
        a.id,
        a.name,
      ]),
    );
    const threads = await Promise.all(rows.map((r) => this.presentThread(r, names.get(r.agentId))));
    return body.status ? threads.filter((t) => t.status === body.status) : threads;
  }

  @Get('threads/:thread_id')
  @LangGraphRoute({
    id: 'langgraphGetThread',
    description:
      'A thread (`client.threads.get`): the session with its status (idle, busy, interrupted, error), its values (`{messages}`) and its interrupts by run id.',
    summary: 'A thread',
    status: 200,
    schema: LangGraphThread,
    errors: [404],
  })
  async getThread(@TenantId() tenantId: string, @Param('thread_id') id: string): Promise<LangGraphThread> {
    return this.presentThread(await this.thread(tenantId, id));
  }

  @Get('threads/:thread_id/state')
  @LangGraphRoute({
    id: 'langgraphGetThreadState',
    description:
      "The thread's current state (`client.threads.getState`): the state at the end of the newest run of its branch, whose id is the checkpoint id, that run's input checkpoint the parent; the transcript as LangChain message dicts (human, ai with tool_calls, tool), `__interrupt__` and a task while an approval waits, `next: ['tools']` then.",
    summary:
      "The thread's current state: its transcript as LangChain messages, pending approvals as interrupts",
    status: 200,
    schema: LangGraphThreadState,
    errors: [400, 404, 422],
  })
  async getState(
    @TenantId() tenantId: string,
    @Param('thread_id') id: string,
    @Query() q: LangGraphStateQueryDto,
  ): Promise<LangGraphThreadState> {
    void q;
    const session = await this.thread(tenantId, id);
    return stateOf(session, await this.snapshots.head(session.id));
  }

  @Get('threads/:thread_id/state/:checkpoint_id')
  @LangGraphRoute({
    id: 'langgraphGetThreadStateAt',
    description:
      "The thread's state at a checkpoint (`client.threads.getState(id, checkpointId)`): a checkpoint is the thread's initial state, a run's input (its id the run id's version-8 twin) or a run's end (its id the run's), rewound branches' included; 404 for one that is not this thread's, 422 for an id that cannot be one.",
    summary:
      "The thread's state at a checkpoint: its initial state, a run's input or a run's end (id = run id)",
    status: 200,
    schema: LangGraphThreadState,
    errors: [400, 404, 422],
  })
  async getStateAt(
    @TenantId() tenantId: string,
    @Param('thread_id') id: string,
    @Param('checkpoint_id') checkpointId: string,
    @Query() q: LangGraphStateQueryDto,
  ): Promise<LangGraphThreadState> {
    void q;
    const session = await this.thread(tenantId, id);
    return this.stateAt(session, checkpointIdOf(session.id, 'checkpoint_id', checkpointId));
  }

  @Post('threads/:thread_id/state/checkpoint')
  @HttpCode(200)
  @LangGraphRoute({
    id: 'langgraphGetThreadStateAtCheckpoint',
    description:
      "The thread's state at a checkpoint config (`client.threads.getState(id, {checkpoint_id…})`, RemoteGraph's `getState`, which sends `{thread_id}` alone for the current state): a `checkpoint_id` names one of the thread's states (initial, a run's input, a run's end); none is the current state.",
    summary: "The thread's state at a checkpoint config ({thread_id} alone: the current state)",
    status: 200,
    schema: LangGraphThreadState,
    errors: [...BODY, 404],
  })
  async postStateAt(
    @TenantId() tenantId: string,
    @Param('thread_id') id: string,
    @Body() body: LangGraphStateAtDto,
  ): Promise<LangGraphThreadState> {
    const session = await this.thread(tenantId, id);
    return this.stateAt(session, checkpointIdOf(session.id, 'checkpoint', body.checkpoint));
  }

  @Post('threads/:thread_id/state')
  @HttpCode(200)
  @LangGraphRoute({
    id: 'langgraphUpdateThreadState',
    description:
      "`client.threads.updateState` / RemoteGraph's `updateState` with no values (LangGraph's fork of a checkpoint, `as_node: '__copy__'`): the thread goes on from the checkpoint named (`checkpoint` / `checkpoint_id`; none: the current one, a no-op). A past checkpoint of the thread's branch rewinds the later runs (docs/adr/0053: kept, marked rewound, out of the model's history); the answer names the checkpoint the thread now stands at. Values (messages written as a node) are refused (422): a thread's state is its transcript, written only by its runs. A run's input checkpoint is 422, one on a left branch or a busy thread 409; nothing is written then.",
    summary: 'Go on from a checkpoint (updateState with no values): later runs rewound; values refused (422)',
    status: 200,
    schema: LangGraphUpdateStateResponse,
    errors: [...BODY, 404, 409],
  })
  @ApiBody({
    schema: { type: 'object' },
    required: false,
    examples: {
      fork: {
        value: { values: null, checkpoint_id: '0193b6f0-0000-7000-8000-000000000001', as_node: '__copy__' },
      },
    },
  })
  async updateState(
    @TenantId() tenantId: string,
    @Actor() actor: string,
    @Param('thread_id') id: string,
    @Body() raw: unknown,
  ): Promise<LangGraphUpdateStateResponse> {
    const body = validateOptionalBody(LangGraphUpdateStateRequest, raw);
    const session = await this.thread(tenantId, id);
    const named = updateStateOf(session.id, body);
    const tree = await this.snapshots.tree(session.id);
    const ref = named === null ? tree.headRef() : tree.resolve(session.id, named);
    if (named !== null && !ref) {
      throw new LangGraphError(404, `checkpoint ${named} not found in thread ${session.id}`);
    }
    // A thread with no run has no checkpoint: nothing to go on from but its empty state.
    if (!ref) return { checkpoint: checkpointOf(session.id, null) };
    const origin = stateOriginOf(tree, session.id, ref);
    if (origin.kind === 'rewind') {
      await this.rewind(tenantId, session.id, origin.rewindFrom.id, actor);
    }
    return { checkpoint: checkpointOf(session.id, checkpointIdOfRef(session.id, ref)) };
  }

  @Post('threads/:thread_id/copy')
  @HttpCode(200)
  @LangGraphRoute({
    id: 'langgraphCopyThread',
    description:
      "`client.threads.copy`: a fork of the session (docs/adr/0053) at its current checkpoint — a new thread of the same assistant whose runs are copies of the current branch's ended runs (new run ids, so new checkpoint ids; usage not counted twice), with the lineage recorded on both; nothing runs. Runs of branches a rewind left, and a run that has not ended, are not copied. A thread whose only run of its branch has not ended is 409.",
    summary: "Copy a thread: a fork of the session at its current branch's last ended run",
    status: 200,
    schema: LangGraphThread,
    errors: [...BODY, 404, 409],
  })
  async copyThread(
    @TenantId() tenantId: string,
    @Actor() actor: string,
    @Param('thread_id') id: string,
  ): Promise<LangGraphThread> {
    const session = await this.thread(tenantId, id);
    const point = await this.reads.copyPoint(session.id);
    let copyId: string;
    if (point) {
      const forked = await this.sessionHistory
        .fork(tenantId, session.id, { turnId: point.turnId, position: point.position }, actor)
        .catch((err: unknown) => {
          if (err instanceof AppError && err.code === 'conflict') {
            throw new LangGraphError(409, `thread ${session.id} cannot be copied now: ${err.message}`);
          }
          throw err;
        });
      copyId = forked.sessionId;
    } else {
      // No run yet: a new, empty thread of the assistant with the thread's metadata.
      const created = await this.turns.openSession({
        id: newId(),
        tenantId,
        agentId: session.agentId,
        metadata: (session.metadata ?? {}) as Record<string, unknown>,
      });
      if (!created) throw new Error('a new thread id was taken');
      copyId = created.id;
    }
    return this.presentThread(await this.thread(tenantId, copyId));
  }

  @Get('threads/:thread_id/history')
  @LangGraphRoute({
    id: 'langgraphGetThreadHistory',
    description:
      "The thread's states, newest first: per run its end (checkpoint id = run id) and its input (before the model ran; the parent of the end), the initial state last, branches a rewind left included; `before` (a checkpoint id) pages back, `limit` (default 10) bounds.",
    summary: "The thread's states, per run its end and its input, newest first (paged by before/limit)",
    status: 200,
    schema: LangGraphThreadStateList,
    errors: [400, 404, 422],
  })
  async getHistory(
    @TenantId() tenantId: string,
    @Param('thread_id') id: string,
    @Query() q: LangGraphHistoryQueryDto,
  ): Promise<LangGraphThreadState[]> {
    const session = await this.thread(tenantId, id);
    return this.history(session, { limit: q.limit, before: q.before });
  }

  @Post('threads/:thread_id/history')
  @HttpCode(200)
  @LangGraphRoute({
    id: 'langgraphSearchThreadHistory',
    description:
      "The thread's states (`client.threads.getHistory`, RemoteGraph's `getStateHistory`, `useStream`'s history), newest first: per run its end (checkpoint id = run id) and its input (before the model ran, the end's parent; its parent the end of the run it followed), the initial state last, branches a rewind left included. `before` (a checkpoint config or id) pages back, `limit` (default 10) bounds, `checkpoint` with an id narrows to that state, `metadata` filters by equality (step, run_id, source, the thread's metadata).",
    summary: "The thread's states, per run its end and its input, newest first (paged by before/limit)",
    status: 200,
    schema: LangGraphThreadStateList,
    errors: [...BODY, 404],
  })
  @ApiBody({ type: LangGraphHistoryDto, required: false })
  async postHistory(
    @TenantId() tenantId: string,
    @Param('thread_id') id: string,
    @Body() raw: unknown,
  ): Promise<LangGraphThreadState[]> {
    const body = validateOptionalBody(LangGraphHistoryRequest, raw);
    const session = await this.thread(tenantId, id);
    return this.history(session, body);
  }

  // ---------------------------------------------------------------------------------------------
  // Runs
  // ---------------------------------------------------------------------------------------------

  @Post('threads/:thread_id/runs')
  @HttpCode(200)
  @RateLimitBucketOf('admission')
  @LangGraphRoute({
    id: 'langgraphCreateRun',
    description:
      "Starts a run in the background (`client.runs.create`): the one human message is admitted as a turn (multitask_strategy enqueue, reject or interrupt), or `command.resume` decides the thread's pending approvals and answers its client tool calls (headless-tool interrupts; tools the client runs are declared in `context.tools`) and the paused turn goes on. Answers the run at once. With `checkpoint_id` (or `checkpoint`) naming a past state of the thread's branch, the later runs are rewound first (kept, out of the model's history) and the run goes on from that state; from a run's input checkpoint with no input, that input runs again (time travel, docs/adr/0038).",
    summary:
      'Start a run in the background: the message is admitted as a turn (or command.resume decides the approvals)',
    status: 200,
    schema: LangGraphRun,
    errors: [...BODY, 403, 404, 409],
  })
  async createRun(
    @TenantId() tenantId: string,
    @ApiKeyId() apiKeyId: string,
    @Actor() actor: string,
    @Param('thread_id') threadId: string,
    @Body() body: LangGraphRunDto,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    const started = await this.start(tenantId, apiKeyId, actor, threadId, body);
    const turn = await this.reads.turn(tenantId, started.sessionId, started.turnId);
    if (!turn) throw new LangGraphError(404, `run ${started.turnId} not found`);
    await reply
      .header('content-location', runPath(started.sessionId, started.turnId))
      .status(200)
      .send(runOf(turn, { multitask: started.multitask, metadata: body.metadata }));
  }

  @Post('threads/:thread_id/runs/stream')
  @HttpCode(200)
  @RateLimitBucketOf('admission')
  @LangGraphRoute({
    id: 'langgraphStreamRun',
    description:
      "Starts a run and streams it as Server-Sent Events (`client.runs.stream`): `metadata`, then per stream_mode `values`, `updates`, `messages` tuples or `messages/partial` and `messages/complete`, an `error` for a failed turn, and `end` with the run's status. The stream ends when the turn ends or pauses for approval. With `checkpoint_id` (or `checkpoint`) naming a past state of the thread's branch, the later runs are rewound first (kept, out of the model's history) and the run goes on from that state; from a run's input checkpoint with no input, that input runs again (time travel, docs/adr/0038).",
    summary: 'Start a run and stream it as Server-Sent Events (metadata, values, updates, messages, end)',
    status: 200,
    stream: true,
    errors: [...BODY, 403, 404, 409],
  })
  async streamRun(
    @TenantId() tenantId: string,
    @ApiKeyId() apiKeyId: string,
    @Actor() actor: string,
    @Param('thread_id') threadId: string,
    @Body() body: LangGraphRunDto,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    const modes = streamModesOf(body.stream_mode);
    const started = await this.start(tenantId, apiKeyId, actor, threadId, body);
    try {
      void reply.header('content-location', runPath(started.sessionId, started.turnId));
      const ended = await this.streamer.stream(reply, started.watch, {
        tenantId,
        sessionId: started.sessionId,
        turnId: started.turnId,
        after: started.after,
        modes,
      });
      // `on_disconnect: cancel`: the client left before the run ended.
      if (ended === 'left' && body.on_disconnect === 'cancel') {
        await this.turns.cancel(
          tenantId,
          started.turnId,
          cancelCause('client_disconnected', 'LangGraph runs.stream, on_disconnect: cancel'),
        );
      }
    } finally {
      started.watch.close();
    }
  }

  @Post('threads/:thread_id/runs/wait')
  @HttpCode(200)
  @RateLimitBucketOf('admission')
  @LangGraphRoute({
    id: 'langgraphWaitRun',
    description:
      "Starts a run and holds the request until the turn ends or pauses at an interrupt (an approval, or a call of the client's tools) (`client.runs.wait`), bounded by WAIT_TIMEOUT_MS (408, the run goes on); answers the thread's values, `__error__` for a failed turn. With `checkpoint_id` (or `checkpoint`) naming a past state of the thread's branch, the later runs are rewound first (kept, out of the model's history) and the run goes on from that state; from a run's input checkpoint with no input, that input runs again (time travel, docs/adr/0038).",
    summary:
      "Start a run and answer the thread's values when it ends or pauses for approval (bounded by WAIT_TIMEOUT_MS)",
    status: 200,
    schema: LangGraphValues,
    errors: [...BODY, 403, 404, 408, 409],
  })
  async waitRun(
    @TenantId() tenantId: string,
    @ApiKeyId() apiKeyId: string,
    @Actor() actor: string,
    @Param('thread_id') threadId: string,
    @Body() body: LangGraphRunDto,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    const started = await this.start(tenantId, apiKeyId, actor, threadId, body);
    try {
      void reply.header('content-location', runPath(started.sessionId, started.turnId));
      await this.answerWhenSettled(reply, tenantId, started);
    } finally {
      started.watch.close();
    }
  }

  @Get('threads/:thread_id/runs')
  @LangGraphRoute({
    id: 'langgraphListRuns',
    description:
      "The thread's runs, its turns newest first (`client.runs.list`), paged by limit/offset and filtered by run status.",
    summary: "The thread's runs (its turns), newest first",
    status: 200,
    schema: LangGraphRunList,
    errors: [400, 404, 422],
  })
  async listRuns(
    @TenantId() tenantId: string,
    @Param('thread_id') threadId: string,
    @Query() q: LangGraphRunListQueryDto,
  ): Promise<LangGraphRun[]> {
    const session = await this.thread(tenantId, threadId);
    const turns = await this.reads.turns(session.id, {
      statuses: q.status ? turnStatusesOf(q.status) : undefined,
      limit: q.limit ?? 10,
      offset: q.offset ?? 0,
    });
    return turns.map((t) => runOf(t));
  }

  @Get('threads/:thread_id/runs/:run_id')
  @LangGraphRoute({
    id: 'langgraphGetRun',
    description:
      'A run (`client.runs.get`): the turn with its status as LangGraph names it (pending, running, interrupted, success, error).',
    summary: 'A run (a turn)',
    status: 200,
    schema: LangGraphRun,
    errors: [404],
  })
  async getRun(
    @TenantId() tenantId: string,
    @Param('thread_id') threadId: string,
    @Param('run_id') runId: string,
  ): Promise<LangGraphRun> {
    return runOf(await this.run(tenantId, threadId, runId));
  }

  @Get('threads/:thread_id/runs/:run_id/join')
  @LangGraphRoute({
    id: 'langgraphJoinRun',
    description:
      "Holds the request until the run ends or pauses for approval (`client.runs.join`), bounded by WAIT_TIMEOUT_MS; answers the thread's values.",
    summary: "Wait for a run to end or pause for approval; the thread's values (bounded by WAIT_TIMEOUT_MS)",
    status: 200,
    schema: LangGraphValues,
    errors: [400, 404, 408, 422],
  })
  async joinRun(
    @TenantId() tenantId: string,
    @Param('thread_id') threadId: string,
    @Param('run_id') runId: string,
    @Query() q: LangGraphJoinQueryDto,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    void q;
    const turn = await this.run(tenantId, threadId, runId);
    const watch = this.turns.watch(turn.sessionId);
    try {
      await this.answerWhenSettled(reply, tenantId, { sessionId: turn.sessionId, turnId: turn.id, watch });
    } finally {
      watch.close();
    }
  }

  @Get('threads/:thread_id/runs/:run_id/stream')
  @LangGraphRoute({
    id: 'langgraphJoinRunStream',
    description:
      'Streams a run from its start as `runs/stream` does (`client.runs.joinStream`): an ended run is replayed from the journal to its `end`; `cancel_on_disconnect=1` cancels the run when the client leaves.',
    summary:
      'Stream a run from its start (an ended run replays from the journal), as runs/stream does; ' +
      'cancel_on_disconnect=1 cancels it when the client leaves',
    status: 200,
    stream: true,
    errors: [400, 404, 422],
  })
  async joinRunStream(
    @TenantId() tenantId: string,
    @Param('thread_id') threadId: string,
    @Param('run_id') runId: string,
    @Query() q: LangGraphJoinStreamQueryDto,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    const turn = await this.run(tenantId, threadId, runId);
    const watch = this.turns.watch(turn.sessionId);
    try {
      void reply.header('content-location', runPath(turn.sessionId, turn.id));
      const ended = await this.streamer.stream(reply, watch, {
        tenantId,
        sessionId: turn.sessionId,
        turnId: turn.id,
        after: 0,
        modes: streamModesOf(q.stream_mode),
      });
      if (ended === 'left' && (q.cancel_on_disconnect === '1' || q.cancel_on_disconnect === 'true')) {
        await this.turns.cancel(
          tenantId,
          turn.id,
          cancelCause('client_disconnected', 'LangGraph runs.joinStream, cancel_on_disconnect'),
        );
      }
    } finally {
      watch.close();
    }
  }

  @Post('threads/:thread_id/runs/:run_id/cancel')
  @HttpCode(204)
  @LangGraphRoute({
    id: 'langgraphCancelRun',
    description:
      'Cancels a run (`client.runs.cancel`, action interrupt) through the same cancel as POST /v1/turns/{id}/cancel; with `wait=1` answers once it ended. `action=rollback` is refused (422): a cancelled turn stays in the thread.',
    summary:
      'Cancel a run (action interrupt): 204 once the cancel is recorded (with wait=1, once the run ended); ' +
      'rollback is refused (422)',
    status: 204,
    errors: [400, 404, 422],
  })
  async cancelRun(
    @TenantId() tenantId: string,
    @Param('thread_id') threadId: string,
    @Param('run_id') runId: string,
    @Query() q: LangGraphCancelQueryDto,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    if (q.action === 'rollback') {
      throw new LangGraphError(
        422,
        'action rollback is not supported: a cancelled run stays in the thread (use action interrupt)',
      );
    }
    const turn = await this.run(tenantId, threadId, runId);
    const watch = q.wait === '1' || q.wait === 'true' ? this.turns.watch(turn.sessionId) : undefined;
    try {
      const result = await this.turns.cancel(
        tenantId,
        turn.id,
        cancelCause('api_cancel', q.reason ?? 'LangGraph runs.cancel'),
      );
      if (!result) throw new LangGraphError(404, `run ${runId} not found`);
      if (watch) {
        await this.turns.untilEnded({ tenantId, turnId: turn.id, watch, subscribedBeforeAdmission: false });
      }
      await reply.status(204).send();
    } finally {
      watch?.close();
    }
  }

  // ---------------------------------------------------------------------------------------------

  /**
   * Starts what a run asks for: admits its human message as a turn (multitask_strategy reject /
   * enqueue / interrupt as Admission's), or decides the thread's pending approvals with
   * `command.resume` (the paused turn goes on: the run is that turn). Listening starts first.
   */
  private async start(
    tenantId: string,
    apiKeyId: string,
    actor: string,
    threadId: string,
    body: LangGraphRunDto,
  ): Promise<{
    sessionId: string;
    turnId: string;
    after: number;
    multitask: LangGraphRun['multitask_strategy'];
    watch: LiveWatch;
  }> {
    const plan = planRun(body);
    const named = runCheckpointOf(threadId, body);
    const origin =
      named === null ? { kind: 'head' as const } : await this.originOf(tenantId, threadId, named, plan);
    if (plan.kind === 'none' && origin.kind === 'head') throw new LangGraphError(422, ONE_MESSAGE);
    const agent = await this.assistant(tenantId, body.assistant_id);
    // Tools the client runs (`context.tools`), checked before anything is written. A resume keeps
    // the ones its turn was admitted with (useStream sends its context again: it is not refused).
    const clientTools =
      plan.kind !== 'resume'
        ? this.turns.clientToolsFor(agent, clientToolsOfRun(body), (i, f) => `context.tools[${i}].${f}`)
        : [];
    // A thread the run names; with `if_not_exists: create` a new one is made as the run is admitted
    // (a stopped agent or a paused tenant is refused before it is written).
    const create = body.if_not_exists === 'create' && isUuid(threadId);
    const session = {
      id: await this.turns
        .session(tenantId, agent.id, { sessionId: threadId })
        .catch((err: unknown) => {
          if (!create || !(err instanceof SessionRefused) || err.reason !== 'session_not_found') throw err;
          return this.turns.session(tenantId, agent.id, {
            new: { id: threadId, createdBy: 'langgraph', metadata: {} },
          });
        })
        .catch(threadRefusal(threadId)),
    };
    if (origin.kind === 'rewind' && plan.kind !== 'resume') {
      return this.startFrom(tenantId, actor, session.id, origin, plan, body, clientTools, named!);
    }
    const pending = await this.reads.pending(session.id);
    if (plan.kind === 'resume') {
      const { decisions, results } = resumeOf(plan.resume, pending);
      let after = await this.reads.lastEventSeq(session.id);
      let turnId = pending[0]?.turnId;
      const watch = this.turns.watch(session.id);
      try {
        // The client's results first: a refusal writes nothing (docs/adr/0047), so a bad answer
        // leaves the approvals undecided too.
        if (results.length > 0) {
          const answered = await this.turns.answerClientTools({
            tenantId,
            sessionId: session.id,
            results,
            answeredBy: 'langgraph',
          });
          turnId = answered.turnId;
          // The same answer again: the turn was resumed once already; its run is followed from the start.
          if (answered.replayed) after = 0;
        }
        for (const d of decisions) {
          const outcome = await this.approvals.decide({
            approvalId: d.approvalId,
            tenantId,
            verdict: d.verdict,
            reason: d.reason,
            decidedBy: apiKeyId,
            actor,
          });
          if (outcome.kind === 'not_found')
            throw new LangGraphError(404, `interrupt ${d.approvalId} not found`);
          if (outcome.kind === 'conflict') {
            throw new LangGraphError(
              409,
              `interrupt ${d.approvalId} can no longer be resumed (${outcome.why})`,
            );
          }
        }
      } catch (err) {
        watch.close();
        throw err;
      }
      if (turnId === undefined) throw new Error('a resume without a turn');
      return { sessionId: session.id, turnId, after, multitask: null, watch };
    }
    if (pending.length > 0 && plan.multitask !== 'interrupt') {
      const waitsFor = pending.some((a) => a.kind === 'client_tool')
        ? "the client's tool results. Resume it with command: { resume: { [toolCall.id]: result } }"
        : "approval. Resume it with command: { resume: 'approve' | 'reject' }";
      throw new LangGraphError(
        409,
        `thread ${session.id} is interrupted: run ${pending[0].turnId} waits for ${waitsFor}, ` +
          'or send multitask_strategy interrupt to cancel it',
      );
    }
    if (plan.kind === 'none') throw new LangGraphError(422, ONE_MESSAGE);
    const admitted = await this.turns.admit({
      tenantId,
      sessionId: session.id,
      text: plan.text,
      metadata: { ...(body.metadata ?? {}), via: 'langgraph' },
      multitask: plan.multitask,
      clientTools,
    });
    return { ...admitted, after: 0, multitask: plan.multitask };
  }

  /**
   * Where a run that names a checkpoint goes on from (docs/adr/0038, time travel): the thread's
   * current state (a plain run), or a past state of its branch (the later runs are rewound first).
   * A checkpoint that is not the thread's is 404 (also for a thread that does not exist yet: nothing
   * is created); a resume continues the paused run at the current checkpoint only (422 else).
   */
  private async originOf(
    tenantId: string,
    threadId: string,
    checkpointId: string,
    plan: RunPlan,
  ): Promise<CheckpointOrigin> {
    const session = await this.reads.session(tenantId, threadId);
    const tree = session ? await this.snapshots.tree(session.id) : undefined;
    const ref = session && tree ? tree.resolve(session.id, checkpointId) : undefined;
    if (!session || !tree || !ref) {
      throw new LangGraphError(404, `checkpoint ${checkpointId} not found in thread ${threadId}`);
    }
    if (plan.kind === 'resume') {
      const head = tree.headRef();
      if (head && checkpointIdOfRef(session.id, head) === checkpointId) return { kind: 'head' };
      throw new LangGraphError(
        422,
        `command.resume continues the paused run at the thread's current checkpoint; ${checkpointId} is ` +
          'another one (send the resume without a checkpoint)',
      );
    }
    return runOriginOf(tree, session.id, ref, plan.kind === 'message');
  }

  /**
   * A run from a past checkpoint: the thread's later runs are rewound (kept, marked rewound, out of
   * the model's history: docs/adr/0053), then the run's message — or, from a run's input checkpoint,
   * that run's own input again — is admitted. The rewind needs the thread idle: a busy or interrupted
   * thread is 409, unless `multitask_strategy: interrupt`, which cancels its unfinished runs and waits
   * for them to end first. The admission after the rewind refuses a run that slipped in between (409).
   */
  private async startFrom(
    tenantId: string,
    actor: string,
    sessionId: string,
    origin: Extract<CheckpointOrigin, { kind: 'rewind' }>,
    plan: Extract<RunPlan, { kind: 'message' | 'none' }>,
    body: LangGraphRunDto,
    clientTools: ReturnType<AgentTurns['clientToolsFor']>,
    checkpointId: string,
  ) {
    const open = (await this.reads.statusTurns(sessionId)).filter((t) => UNFINISHED.has(t.status));
    if (open.length > 0) {
      if (plan.multitask !== 'interrupt') {
        const waiting = open.find(
          (t) => t.status === 'awaiting_approval' || t.status === 'awaiting_client_tool',
        );
        throw new LangGraphError(
          409,
          `thread ${sessionId} is ${waiting ? 'interrupted' : 'busy'} (run ${(waiting ?? open[0]).id} has not ended): ` +
            `a run from an earlier checkpoint rewinds the later runs, which needs the thread idle. Wait for the run, ` +
            'cancel it, or send multitask_strategy interrupt to cancel it first',
        );
      }
      await this.stopAll(tenantId, sessionId, open);
    }
    let text: string;
    let images: MessageImage[] | undefined;
    if (plan.kind === 'message') {
      text = plan.text;
    } else {
      const input = await this.snapshots.inputOf(sessionId, origin.rerun!.id);
      if (!input) throw new LangGraphError(409, `the input of run ${origin.rerun!.id} is no longer held`);
      text = bodyText(input.body);
      const carried = (input.body as { images?: unknown } | null)?.images;
      images = Array.isArray(carried) && carried.length > 0 ? (carried as MessageImage[]) : undefined;
    }
    await this.rewind(tenantId, sessionId, origin.rewindFrom.id, actor);
    const admitted = await this.turns.admit({
      tenantId,
      sessionId,
      text,
      images,
      metadata: { ...(body.metadata ?? {}), via: 'langgraph', checkpoint_id: checkpointId },
      multitask: 'reject',
      clientTools,
    });
    return { ...admitted, after: 0, multitask: plan.multitask };
  }

  /**
   * Rewinds `turnId` and every later live turn through the one rewind of docs/adr/0053 (one
   * transaction under the session's lock, journaled, audited with the caller as actor, its event sent
   * live); a thread that turned busy meanwhile (or closed) is a 409 `{detail}`, nothing written.
   */
  private async rewind(tenantId: string, sessionId: string, turnId: string, actor: string): Promise<void> {
    try {
      await this.sessionHistory.rewind(tenantId, sessionId, turnId, actor);
    } catch (err) {
      if (err instanceof AppError && (err.code === 'session_busy' || err.code === 'conflict')) {
        throw new LangGraphError(
          409,
          `thread ${sessionId} cannot go back to an earlier checkpoint now: ${err.message}`,
        );
      }
      throw err;
    }
  }

  /** `multitask_strategy: interrupt` before a rewind: the thread's unfinished runs cancelled, and waited for. */
  private async stopAll(tenantId: string, sessionId: string, open: { id: string }[]): Promise<void> {
    const watch = this.turns.watch(sessionId);
    try {
      for (const t of open) {
        await this.turns.cancel(
          tenantId,
          t.id,
          cancelCause(
            'superseded',
            'a LangGraph run from an earlier checkpoint (multitask_strategy: interrupt)',
          ),
        );
      }
      for (const t of open) {
        const ended = await this.turns.untilEnded({
          tenantId,
          turnId: t.id,
          watch,
          subscribedBeforeAdmission: false,
        });
        if (!ended) {
          throw new LangGraphError(409, `run ${t.id} was cancelled but has not ended yet: retry when it has`);
        }
      }
    } finally {
      watch.close();
    }
  }

  /** Holds the request until the run ends or pauses; the thread's values (`__error__` for a failed run). */
  private async answerWhenSettled(
    reply: FastifyReply,
    tenantId: string,
    t: { sessionId: string; turnId: string; watch: LiveWatch },
  ): Promise<void> {
    const held = await holdRequest(
      this.turns,
      reply,
      { ...t, tenantId, subscribedBeforeAdmission: false },
      { orPaused: true, orClientTool: true },
    );
    if (!held.settled) {
      if (held.why === 'left') return;
      throw new LangGraphError(
        held.why === 'shutdown' ? 503 : 408,
        `run ${t.turnId} did not end within ${Math.round(this.turns.waitTimeoutMs / 1000)} s; it goes on: ` +
          `join it again (GET /langgraph/threads/${t.sessionId}/runs/${t.turnId}/join)`,
      );
    }
    const snap = await this.snapshots.read(t.sessionId);
    const values: Record<string, unknown> = valuesOf(snap.messages, snap.pending);
    if (held.turn.status === 'failed') {
      values.__error__ = {
        error: 'turn_failed',
        message: await this.snapshots.failureOf(tenantId, t.turnId),
      };
    }
    await reply.status(200).send(values);
  }

  /** The state at a checkpoint of the thread (null: the current one); 404 for one that is not its. */
  private async stateAt(session: Session, checkpointId: string | null): Promise<LangGraphThreadState> {
    if (checkpointId === null) return stateOf(session, await this.snapshots.head(session.id));
    const snap = await this.snapshots.at(session.id, checkpointId);
    if (!snap) throw new LangGraphError(404, `checkpoint ${checkpointId} not found in thread ${session.id}`);
    return stateOf(session, snap);
  }

  /**
   * A page of the thread's states, newest first: per run its end and its input, the initial state
   * last; before a checkpoint, narrowed as asked.
   */
  private async history(
    session: Session,
    q: Pick<LangGraphHistoryRequest, 'limit' | 'before' | 'checkpoint' | 'metadata'>,
  ): Promise<LangGraphThreadState[]> {
    const before = checkpointIdOf(session.id, 'before', q.before);
    const only = checkpointIdOf(session.id, 'checkpoint', q.checkpoint);
    const filter = historyFilterOf(session, q.metadata);
    if (filter.none) return [];
    const snaps = await this.snapshots.history(session, {
      before,
      only,
      seq: filter.seq,
      turnId: filter.turnId,
      source: filter.source,
      limit: q.limit ?? 10,
    });
    return snaps.map((s) => stateOf(session, s));
  }

  private async assistant(tenantId: string, idOrName: string) {
    const agent = await this.reads.agent(tenantId, idOrName);
    if (!agent) throw new LangGraphError(404, `assistant ${idOrName} not found`);
    return agent;
  }

  private async thread(tenantId: string, id: string) {
    const session = await this.reads.session(tenantId, id);
    if (!session) throw new LangGraphError(404, `thread ${id} not found`);
    return session;
  }

  private async run(tenantId: string, threadId: string, runId: string) {
    const session = await this.thread(tenantId, threadId);
    const turn = await this.reads.turn(tenantId, session.id, runId);
    if (!turn) throw new LangGraphError(404, `run ${runId} not found`);
    return turn;
  }

  private async presentThread(
    session: NonNullable<Awaited<ReturnType<LangGraphReads['session']>>>,
    graphId?: string,
  ): Promise<LangGraphThread> {
    const snap = await this.snapshots.read(session.id);
    const name = graphId ?? (await this.reads.agentsById(session.tenantId, [session.agentId]))[0]?.name;
    return threadOf(session, { ...snap, graphId: name });
  }
}

/** Where a run is read: the SDK takes the run's id from this header (`onRunCreated`). */
const runPath = (threadId: string, runId: string) => `/langgraph/threads/${threadId}/runs/${runId}`;
