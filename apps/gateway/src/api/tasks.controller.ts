import { Body, Controller, Get, HttpCode, Inject, Param, Post, Res } from '@nestjs/common';
import { ApiBody } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { AppError, CancelTurnRequest, cancelCause, notFound, TaskResponse } from '@switchboard/contracts';
import { TASKS } from '@switchboard/platform';
import { OPERATOR_ACTOR } from '@switchboard/store';
import type { TaskRow, TaskService } from '@switchboard/subagents';
import { Actor, TenantId } from '../platform/auth/guard';
import { AnswerTaskDto, CancelTurnDto } from './dto';
import { BODY_ERRORS, Operation, TenantApi } from '../platform/openapi';
import { validateOptionalBody } from '../platform/validation';
import { pathId } from './presenters';

/** A task row as the API shows it. */
export function presentTask(t: TaskRow): TaskResponse {
  return {
    id: t.id,
    agent: t.agentName,
    agentId: t.agentId,
    status: t.status,
    depth: t.depth,
    blocking: t.blocking,
    parentTurnId: t.parentTurnId,
    parentSessionId: t.parentSessionId,
    childSessionId: t.sessionId,
    childTurnId: t.childTurnId,
    input: t.input ?? {},
    handback: t.handback ?? null,
    output: t.output,
    costUsd: t.costUsd,
    createdAt: new Date(t.createdAt).toISOString(),
    completedAt: t.completedAt ? new Date(t.completedAt).toISOString() : null,
    closedAt: t.closedAt ? new Date(t.closedAt).toISOString() : null,
    rejoin: t.rejoin ?? null,
    rejoinedAt: t.rejoinedAt ? new Date(t.rejoinedAt).toISOString() : null,
    rejoinMessageId: t.rejoinMessageId ?? null,
    rejoinTurnId: t.rejoinTurnId ?? null,
  };
}

/**
 * Sub-agent tasks (docs/adr/0024): what a parent turn delegated, the child session and turn that run
 * it, its status and the compact handback the parent saw. Another tenant's task is a 404.
 */
@TenantApi('tasks')
@Controller('v1/tasks')
export class TasksController {
  constructor(@Inject(TASKS) private readonly tasks: TaskService) {}

  @Get(':id')
  @Operation({
    id: 'getTask',
    summary: 'A sub-agent task',
    description:
      "A sub-agent task: its parent turn, child session and turn, status, input, its handback (the question it asks when `awaiting_user`) and output. 404 when it is not the calling tenant's.",
    status: 200,
    schema: TaskResponse,
    errors: [404],
  })
  async get(@TenantId() tenantId: string, @Param('id') id: string): Promise<TaskResponse> {
    const task = await this.tasks.get(tenantId, pathId(id, 'task'));
    if (!task) throw notFound('task');
    return presentTask(task);
  }

  /**
   * The answer to the question a sub-agent asked (`awaiting_user` handback): stored on the task, and
   * the child's turn resumes with it. 409 when the task's child is not waiting for an answer.
   */
  @Post(':id/answer')
  @HttpCode(200)
  @Operation({
    id: 'answerTask',
    summary: "Answer a sub-agent's question; the child resumes",
    description:
      "Answers the question a sub-agent asked (`awaiting_user` handback): the answer is stored on the task and the child's turn resumes with it. 409 when the child is not waiting for an answer (already answered, ended or cancelled).",
    status: 200,
    schema: TaskResponse,
    errors: [...BODY_ERRORS, 404, 409],
  })
  async answer(
    @TenantId() tenantId: string,
    @Param('id') id: string,
    @Body() body: AnswerTaskDto,
  ): Promise<TaskResponse> {
    const r = await this.tasks.answer(tenantId, pathId(id, 'task'), body.answer);
    if (r.kind === 'not_found') throw notFound('task');
    if (r.kind === 'conflict') throw new AppError('conflict', 'the task is not waiting for an answer');
    return presentTask(r.task);
  }

  /**
   * An operator's stop for a task (docs/adr/0057): its child turn is cancelled with a typed reason
   * (docs/adr/0055) and the stop is audited (`task.cancelled`).
   */
  @Post(':id/cancel')
  @Operation({
    id: 'cancelTask',
    summary: 'Stop a sub-agent task and its child turn',
    description:
      "Stops a task that has not ended: its child turn is cancelled (docs/adr/0014) with cancelReason `api_cancel` (`operator` when the operator's ADMIN_TOKEN acts as the tenant) and the optional `reason` as its cancelNote; the stop is audited (`task.cancelled`). A queued or waiting child ends at once (200, the task `cancelled`); a running one stops at its next safe point (202, the task as it stands). Its parent hears of it as of any end: a parent turn waiting for it resumes with the handback, otherwise the result rejoins the parent's session as a `task_result` message (docs/adr/0057). 404 when it is not the calling tenant's; 409 when it already ended.",
    status: 202,
    schema: TaskResponse,
    response: 'The child turn is running: the cancel is recorded and it stops at its next safe point.',
    alternative: {
      status: 200,
      schema: TaskResponse,
      description: 'The child turn was queued or waiting: it ended at once, and the task with it.',
    },
    errors: [...BODY_ERRORS, 404, 409],
  })
  @ApiBody({ type: CancelTurnDto, required: false })
  async cancel(
    @TenantId() tenantId: string,
    @Actor() actor: string,
    @Param('id') id: string,
    @Body() raw: unknown,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    const taskId = pathId(id, 'task');
    const body = validateOptionalBody(CancelTurnRequest, raw);
    const operator = actor === OPERATOR_ACTOR;
    const r = await this.tasks.stop(
      tenantId,
      taskId,
      cancelCause(operator ? 'operator' : 'api_cancel', body.reason ?? `task ${taskId} stopped`),
      actor,
    );
    if (r.kind === 'not_found') throw notFound('task');
    if (r.kind === 'conflict') throw new AppError('conflict', 'the task has already ended');
    await reply
      // 202 also when the cancel found the child running and its worker has stopped it already.
      .status(r.running || r.task.status === 'running' || r.task.status === 'pending' ? 202 : 200)
      .send(presentTask(r.task));
  }
}
