import { Body, Controller, Get, HttpCode, Inject, Param, Post, Query } from '@nestjs/common';
import { InjectQueue } from '@nestjs/bullmq';
import { ApiBody } from '@nestjs/swagger';
import type { Queue } from 'bullmq';
import type { Config } from '@switchboard/config';
import {
  AppError,
  CancelWorkItemRequest,
  Jobs,
  QueueName,
  CompleteWorkItemRequest,
  notFound,
  WorkItemPageResponse,
  WorkItemResponse,
} from '@switchboard/contracts';
import type { Logger } from '@switchboard/observability';
import { CONFIG, LOGGER } from '@switchboard/platform';
import { publish, withTimeout } from '@switchboard/queue';
import type { SqlDb } from '@switchboard/store';
import { AgentsRepository } from '@switchboard/subagents';
import { readinessOf, WorkItemStore, type Refusal, type WorkItemRow } from '@switchboard/work-items';
import { TenantId } from '../platform/auth/guard';
import { CancelWorkItemDto, CompleteWorkItemDto, CreateWorkItemDto, WorkItemsQueryDto } from './dto';
import { BODY_ERRORS, Operation, TenantApi } from '../platform/openapi';
import { decodeCursor, encodeCursor, pathId } from './presenters';
import { validateOptionalBody } from '../platform/validation';
import { GATEWAY_SQL } from './streams.controller';

export const presentWorkItem = (w: WorkItemRow): WorkItemResponse => ({
  id: w.id,
  agentId: w.agentId,
  objective: w.objective,
  state: w.state,
  planStatus: w.planStatus,
  plan: w.plan,
  todoList: w.todoList,
  blockedBy: w.blockedBy,
  recheckAt: w.recheckAt?.toISOString() ?? null,
  recheckConsumedAt: w.recheckConsumedAt?.toISOString() ?? null,
  current: w.current,
  readiness: readinessOf(w),
  completionReport:
    w.resultSummary !== null && w.closedBy !== null && w.completedAt !== null
      ? { text: w.resultSummary, by: w.closedBy, turnId: w.closedTurnId, at: w.completedAt.toISOString() }
      : null,
  createdBy: w.createdBy,
  createdTurnId: w.createdTurnId,
  closedBy: w.closedBy,
  createdAt: w.createdAt.toISOString(),
  updatedAt: w.updatedAt.toISOString(),
  completedAt: w.completedAt?.toISOString() ?? null,
});

function settled(r: WorkItemRow | Refusal): WorkItemRow {
  if (r === 'not_found') throw notFound('work item');
  if (r === 'not_open') throw new AppError('conflict', 'the work item is already completed or cancelled');
  return r;
}

/**
 * An agent's work items over HTTP (SPEC §3, seed 002 "Control-Plane Work-Item Enqueue", docs/adr/0031):
 * enqueue without a transcript message (never replacing the current item), list by derived view,
 * read one, and the operator's complete and cancel. The agent must be the caller tenant's (else 404);
 * the store filters every statement by tenant and agent too.
 */
@TenantApi('work-items')
@Controller('v1/agents/:id/work-items')
export class WorkItemsController {
  private readonly store: WorkItemStore;

  constructor(
    @Inject(AgentsRepository) private readonly agents: AgentsRepository,
    @Inject(GATEWAY_SQL) sql: SqlDb,
    @Inject(CONFIG) config: Config,
    @InjectQueue(QueueName.Work) private readonly work: Queue,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    this.store = new WorkItemStore(sql, config.WORK_ITEM_RECHECK_MS);
  }

  private async agent(tenantId: string, id: string): Promise<string> {
    const agent = await this.agents.find(tenantId, pathId(id, 'agent'));
    if (!agent) throw notFound('agent');
    return agent.id;
  }

  @Post()
  @HttpCode(201)
  @Operation({
    id: 'createWorkItem',
    summary: 'Enqueue a work item for the agent',
    description:
      'A control-plane enqueue: an open item joins the queue without any transcript message and never ' +
      "replaces the agent's current item. An idle agent is driven to it by runtime system ticks.",
    status: 201,
    schema: WorkItemResponse,
    errors: [...BODY_ERRORS, 404],
  })
  async create(
    @TenantId() tenantId: string,
    @Param('id') id: string,
    @Body() body: CreateWorkItemDto,
  ): Promise<WorkItemResponse> {
    const agentId = await this.agent(tenantId, id);
    const row = await this.store.create({
      tenantId,
      agentId,
      objective: body.objective,
      planStatus: body.planStatus,
      plan: body.plan,
      todoList: body.todoList,
      createdBy: 'operator',
    });
    // Deleted since it was read.
    if (!row) throw notFound('agent');
    // An idle agent is woken for it (docs/adr/0031). The item stands either way: a Redis that is
    // away leaves it to the maintenance sweep.
    try {
      const job = publish(this.work, Jobs.work, { tenantId, agentId, cause: `item-${row.id}` });
      job.catch(() => undefined);
      await withTimeout(job, 2000);
    } catch (err) {
      this.logger.warn({ err, workItemId: row.id }, 'work activation not requested; the sweep will');
    }
    return presentWorkItem(row);
  }

  @Get()
  @Operation({
    id: 'listWorkItems',
    summary: "The agent's work items of one view, oldest first",
    description:
      '`view`: all (default), current, queued (open, not current, not blocked), runnable (open, not ' +
      'blocked, plan not needs_input), blocked, waiting_for_operator (plan needs_input), completed ' +
      '(completed or cancelled).',
    status: 200,
    schema: WorkItemPageResponse,
    errors: [400, 404],
  })
  async list(
    @TenantId() tenantId: string,
    @Param('id') id: string,
    @Query() q: WorkItemsQueryDto,
  ): Promise<WorkItemPageResponse> {
    const agentId = await this.agent(tenantId, id);
    const after = decodeCursor<[number]>(q.cursor, ['number']);
    const limit = q.limit ?? 50;
    const page = await this.store.page(
      { tenantId, agentId, view: q.view ?? 'all', afterPosition: after ? String(after[0]) : undefined },
      limit,
    );
    return {
      data: page.rows.map(presentWorkItem),
      nextCursor: page.more ? encodeCursor([Number(page.rows[page.rows.length - 1].position)]) : null,
    };
  }

  @Get(':itemId')
  @Operation({
    id: 'getWorkItem',
    summary: 'A work item',
    description:
      'A work item of the agent: its objective, state, plan and todo list, what blocks it, its readiness and completion report. 404 when the agent or the item is unknown.',
    status: 200,
    schema: WorkItemResponse,
    errors: [404],
  })
  async get(
    @TenantId() tenantId: string,
    @Param('id') id: string,
    @Param('itemId') itemId: string,
  ): Promise<WorkItemResponse> {
    const agentId = await this.agent(tenantId, id);
    const row = await this.store.find(tenantId, agentId, pathId(itemId, 'work item'));
    if (!row) throw notFound('work item');
    return presentWorkItem(row);
  }

  @Post(':itemId/complete')
  @HttpCode(200)
  @Operation({
    id: 'completeWorkItem',
    summary: 'Complete a work item as the operator',
    description: '`summary`, when given, is its completion report. 409 when it is already closed.',
    status: 200,
    schema: WorkItemResponse,
    errors: [...BODY_ERRORS, 404, 409],
  })
  @ApiBody({ type: CompleteWorkItemDto, required: false })
  async complete(
    @TenantId() tenantId: string,
    @Param('id') id: string,
    @Param('itemId') itemId: string,
    @Body() raw: unknown,
  ): Promise<WorkItemResponse> {
    const body = validateOptionalBody(CompleteWorkItemRequest, raw);
    const agentId = await this.agent(tenantId, id);
    const row = await this.store.close(tenantId, agentId, pathId(itemId, 'work item'), {
      state: 'completed',
      by: 'operator',
      report: body.summary ?? null,
    });
    return presentWorkItem(settled(row));
  }

  @Post(':itemId/cancel')
  @HttpCode(200)
  @Operation({
    id: 'cancelWorkItem',
    summary: 'Cancel a work item',
    description:
      'The item leaves the queue for good (state cancelled); the agent drops it as its focus. ' +
      '`reason` is kept as its closing note. 409 when it is already closed.',
    status: 200,
    schema: WorkItemResponse,
    errors: [...BODY_ERRORS, 404, 409],
  })
  @ApiBody({ type: CancelWorkItemDto, required: false })
  async cancel(
    @TenantId() tenantId: string,
    @Param('id') id: string,
    @Param('itemId') itemId: string,
    @Body() raw: unknown,
  ): Promise<WorkItemResponse> {
    const body = validateOptionalBody(CancelWorkItemRequest, raw);
    const agentId = await this.agent(tenantId, id);
    const row = await this.store.close(tenantId, agentId, pathId(itemId, 'work item'), {
      state: 'cancelled',
      by: 'operator',
      report: body.reason ?? null,
    });
    return presentWorkItem(settled(row));
  }
}
