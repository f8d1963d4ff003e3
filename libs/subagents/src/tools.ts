import { z } from 'zod';
import { defineTool, ToolError, ToolWait, type ToolDefinition } from '@switchboard/tools';
import { MAX_SPAWN_DEPTH, maySpawn, resolveSubagent, type Tier } from './archetypes';
import { agentMaxUsd, childMaxUsd } from './budget';
import { isEnded } from '@switchboard/contracts';
import { ASK_USER, type TaskRow, type TaskService } from './tasks';

/**
 * The delegation tools (docs/adr/0024). A child runs as its own turn; its parent sees one compact
 * answer: `{task_id, status}` while it runs, and `{task_id, status, handback}` once it ended. A call
 * that must wait (a blocking spawn, `wait_subagent`) throws `ToolWait`: the parent turn waits on its child and gives
 * up its worker, and the child's end resumes it, when the same call runs again and answers from the task.
 * An async child that ends with nobody waiting rejoins its parent's session as a `task_result` message
 * once the spawning turn has ended (docs/adr/0057); a call that answered with its result first (wait on
 * an ended task, list) marks it seen, and no message follows.
 */

/** The child asked its user and waits for the answer: its parent has what it needs to relay. */
const asking = (t: TaskRow): boolean => t.handback?.status === 'awaiting_user';

/** What the parent sees of a task. */
export function taskAnswer(t: TaskRow): Record<string, unknown> {
  return {
    task_id: t.id,
    agent: t.agentName,
    status: t.status,
    ...((isEnded(t.status) || asking(t)) && t.handback ? { handback: t.handback } : {}),
    ...(t.closedAt ? { closed: true } : {}),
  };
}

/** A tool call's task of this parent session, or a classified error the model can act on. */
async function ownTask(svc: TaskService, tenantId: string, sessionId: string, id: string): Promise<TaskRow> {
  const task = z.uuid().safeParse(id).success ? await svc.get(tenantId, id, sessionId) : undefined;
  if (!task) {
    throw new ToolError('unknown_task', `no sub-agent task ${id} in this session`, {
      recoveryHint: 'use a task_id that spawn_subagent or list_subagents returned',
    });
  }
  return task;
}

export function subagentTools(svc: TaskService): ToolDefinition[] {
  const spawn = defineTool({
    name: 'spawn_subagent',
    description:
      'Delegate a narrow, self-contained task to a sub-agent (a specialist archetype such as researcher, ' +
      'critic or summarizer, or one of your tenant\u2019s agents). It runs as its own turn with its own ' +
      'tools. Asynchronous by default: you get a task_id at once and call wait_subagent for the result ' +
      '(or end your turn: the result then arrives as a new task_result message); with blocking: true ' +
      'you get the result when it ends. You see one compact result, never its steps.',
    schema: z.strictObject({
      agent: z.string().min(1).max(100).describe('the sub-agent: an archetype or agent name'),
      task: z.string().min(1).max(20_000).describe('the narrow instruction the child runs with'),
      blocking: z.boolean().optional().describe('wait for the result before continuing (default false)'),
      context: z.string().max(20_000).optional().describe('facts the child needs, given with the task'),
    }),
    sideEffect: 'local_write',
    timeoutMs: 15_000,
    needsApproval: false,
    // The task is unique by (turn, call): a re-run finds the child it made and never spawns a second.
    honoursIdempotencyKey: true,
    async execute(args, ctx) {
      const existing = await svc.byCall(ctx.turnId, ctx.callId);
      if (existing) {
        const answer = answerOrWait(existing, existing.blocking);
        if (isEnded(existing.status)) await svc.markSeen([existing.id]);
        return answer;
      }
      const parent = await svc.parentContext(ctx.tenantId, ctx.turnId);
      if (!parent) throw new ToolError('unknown_turn', 'the calling turn was not found');
      const depth = parent.depth + 1;
      if (depth > MAX_SPAWN_DEPTH) {
        throw new ToolError(
          'spawn_depth_exceeded',
          `spawning here would make a sub-agent at depth ${depth}; the limit is ${MAX_SPAWN_DEPTH}`,
          {
            details: { depth, maxDepth: MAX_SPAWN_DEPTH },
            recoveryHint: 'do the task yourself or hand the blocker back to your parent',
          },
        );
      }
      const allowed = parent.agent.allowedSubagents;
      if (allowed.length > 0 && !allowed.includes(args.agent)) {
        throw new ToolError(
          'subagent_not_allowed',
          `agent "${parent.agent.name}" may not spawn "${args.agent}"`,
          {
            details: { allowed },
            recoveryHint: `spawn one of: ${allowed.join(', ')}`,
          },
        );
      }
      const child = await resolveSubagent(svc.db, ctx.tenantId, args.agent);
      if (!child) {
        throw new ToolError('unknown_subagent', `no agent or archetype named "${args.agent}"`, {
          recoveryHint: 'use an archetype name such as researcher, critic or summarizer',
        });
      }
      if (!maySpawn(parent.agent.tier as Tier, child.tier as Tier)) {
        throw new ToolError(
          'subagent_tier_not_allowed',
          `a ${parent.agent.tier}-tier agent may not spawn "${args.agent}" (${child.tier} tier)`,
          { recoveryHint: 'chat spawns reasoning or worker agents; reasoning spawns worker agents' },
        );
      }
      // The child may spend only what its parent has left (docs/adr/0025).
      const share = childMaxUsd(agentMaxUsd(child.budgets), parent.budget);
      if (share === 'exhausted') {
        throw new ToolError(
          'parent_budget_exhausted',
          `this turn has spent its budget (maxUsd ${parent.budget.maxUsd}); nothing is left for a sub-agent`,
          {
            details: { maxUsd: parent.budget.maxUsd, spentUsd: parent.budget.spentUsd },
            recoveryHint: 'finish with what you have, or report that the budget ran out',
            retryable: false,
          },
        );
      }
      const { task } = await svc.spawn({
        tenantId: ctx.tenantId,
        parentTurnId: ctx.turnId,
        parentSessionId: ctx.sessionId,
        parentTaskId: parent.taskId,
        callId: ctx.callId,
        agent: { id: child.id, name: args.agent },
        depth,
        task: args.task,
        context: args.context,
        blocking: args.blocking ?? false,
        ...(share.maxUsd !== undefined ? { maxUsd: share.maxUsd } : {}),
      });
      return answerOrWait(task, task.blocking);
    },
  });

  const wait = defineTool({
    name: 'wait_subagent',
    description:
      'Wait for a sub-agent task to end and get its result: {status, handback}. Returns at once when it ' +
      'already ended. handback is completed {result} or incomplete {reason}: relay a blocker instead of ' +
      'spawning the same delegation again.',
    schema: z.strictObject({ task_id: z.string().min(1).max(100) }),
    // Run again on resume: it answers from the ended task.
    sideEffect: 'read_only',
    timeoutMs: 10_000,
    needsApproval: false,
    async execute(args, ctx) {
      const task = await ownTask(svc, ctx.tenantId, ctx.sessionId, args.task_id);
      if (isEnded(task.status) || task.closedAt || asking(task)) {
        // The result reached the parent here: no task_result message follows (docs/adr/0057).
        if (isEnded(task.status)) await svc.markSeen([task.id]);
        return taskAnswer(task);
      }
      await svc.markBlocking(task.id);
      throw new ToolWait(task.id);
    },
  });

  const list = defineTool({
    name: 'list_subagents',
    description: 'The sub-agent tasks this session spawned, newest first, with status and result.',
    schema: z.strictObject({}),
    sideEffect: 'read_only',
    timeoutMs: 10_000,
    needsApproval: false,
    async execute(_args, ctx) {
      const tasks = await svc.list(ctx.tenantId, ctx.sessionId);
      await svc.markSeen(tasks.filter((t) => isEnded(t.status)).map((t) => t.id));
      return { tasks: tasks.map(taskAnswer) };
    },
  });

  const close = defineTool({
    name: 'close_subagent',
    description: 'Close a sub-agent task you no longer need; a child still running is cancelled.',
    schema: z.strictObject({ task_id: z.string().min(1).max(100) }),
    sideEffect: 'local_write',
    timeoutMs: 10_000,
    needsApproval: false,
    // Closing twice is closing once.
    honoursIdempotencyKey: true,
    async execute(args, ctx) {
      const task = await ownTask(svc, ctx.tenantId, ctx.sessionId, args.task_id);
      await svc.close(task);
      const after = await svc.get(ctx.tenantId, task.id);
      return taskAnswer(after ?? task);
    },
  });

  const steer = defineTool({
    name: 'steer_subagent',
    description:
      'Steer a sub-agent: your instruction reaches the child\u2019s running turn before its next model ' +
      'call (or, when it is idle, runs first as its next turn).',
    schema: z.strictObject({
      task_id: z.string().min(1).max(100),
      message: z.string().min(1).max(20_000),
    }),
    sideEffect: 'local_write',
    timeoutMs: 10_000,
    needsApproval: false,
    honoursIdempotencyKey: true,
    async execute(args, ctx) {
      const task = await ownTask(svc, ctx.tenantId, ctx.sessionId, args.task_id);
      if (!task.sessionId) throw new ToolError('unknown_task', 'the task has no child session yet');
      const admitted = await svc.steer(task, args.message, ctx.idempotencyKey, ctx.turnId);
      return { task_id: task.id, turn_id: admitted.turnId, status: admitted.status };
    },
  });

  const ask = defineTool({
    name: ASK_USER,
    description:
      'Ask your user a question you cannot go on without (a sub-agent only): your parent gets it as ' +
      'awaiting_user {question, options} and relays it; you continue with the answer as this call\u2019s result.',
    schema: z.strictObject({
      question: z.string().min(1).max(2000),
      options: z.array(z.string().min(1).max(200)).max(10).optional(),
    }),
    sideEffect: 'local_write',
    timeoutMs: 10_000,
    needsApproval: false,
    // Re-run on resume: it answers from the stored answer.
    honoursIdempotencyKey: true,
    async execute(args, ctx) {
      const task = await svc.ofChildTurn(ctx.turnId);
      if (!task)
        throw new ToolError('not_a_subagent', 'only a sub-agent can ask its user through its parent');
      const answer = task.input.answers?.[ctx.callId];
      if (answer !== undefined) return { answer };
      await svc.ask(task, ctx.callId, args.question, args.options);
      throw new ToolWait(task.id);
    },
  });

  return [spawn, wait, list, close, steer, ask];
}

/** An ended task answers; an open one the parent waits for makes the call wait; else its id and status. */
function answerOrWait(task: TaskRow, blocking: boolean): Record<string, unknown> {
  if (isEnded(task.status) || asking(task)) return taskAnswer(task);
  if (blocking && !task.closedAt) throw new ToolWait(task.id);
  return taskAnswer(task);
}
