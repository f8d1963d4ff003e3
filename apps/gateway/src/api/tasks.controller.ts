import { Body, Controller, Get, HttpCode, Inject, Param, Post } from '@nestjs/common';
import { AppError, notFound, TaskResponse } from '@switchboard/contracts';
import { TASKS } from '@switchboard/platform';
import type { TaskRow, TaskService } from '@switchboard/subagents';
import { TenantId } from '../platform/auth/guard';
import { AnswerTaskDto } from './dto';
import { BODY_ERRORS, Operation, TenantApi } from '../platform/openapi';
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
}
