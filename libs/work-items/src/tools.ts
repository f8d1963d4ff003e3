import { z } from 'zod';
import {
  Blocker,
  COMPLETE_WORK_ITEM_TOOL,
  CREATE_WORK_ITEM_TOOL,
  Objective,
  PICK_WORK_ITEM_TOOL,
  PlanStatus,
  PlanText,
  TodoList,
  UPDATE_WORK_ITEM_TOOL,
} from '@switchboard/contracts';
import { defineTool, ToolError, type ToolContext, type ToolDefinition } from '@switchboard/tools';
import { readinessOf, type Refusal, type WorkItemRow, type WorkItemStore } from './store';

/** The longest `recheck_after` a blocker may ask for: 30 days. */
export const MAX_RECHECK_AFTER_MS = 30 * 24 * 3_600_000;

const WorkItemId = z.uuid().describe('The work item id, as the work items context or a tool result gave it');

function scope(ctx: ToolContext): { tenantId: string; agentId: string } {
  if (!ctx.agentId)
    throw new ToolError('no_agent', 'work items are per agent and this call runs outside an agent');
  return { tenantId: ctx.tenantId, agentId: ctx.agentId };
}

/** What a tool answers about an item: the model's view of it (snake_case, as the tools' inputs). */
export function itemResult(w: WorkItemRow): Record<string, unknown> {
  return {
    work_item_id: w.id,
    objective: w.objective,
    state: w.state,
    plan_status: w.planStatus,
    todo_list: w.todoList,
    blocked_by: w.blockedBy,
    recheck_at: w.recheckAt?.toISOString() ?? null,
    current: w.current,
    readiness: readinessOf(w),
  };
}

function refused(r: Refusal): never {
  if (r === 'not_found') {
    throw new ToolError('not_found', 'this agent has no work item with that id', {
      recoveryHint: 'Use a work_item_id exactly as the work items context or create_work_item gave it.',
    });
  }
  throw new ToolError('work_item_closed', 'the work item is completed or cancelled: it cannot change', {
    recoveryHint: 'Create a new work item for further work.',
  });
}

const unlessRefused = (r: WorkItemRow | Refusal): WorkItemRow => (typeof r === 'string' ? refused(r) : r);

/**
 * `create_work_item`, `pick_work_item`, `update_work_item`, `complete_work_item` (seed 002). Tenant and
 * agent come from the turn, never from the model. Each honours the call's idempotency key: a
 * re-run create finds the item its first run made, and the others set state (a repeat is the same).
 * `complete_work_item` takes no summary: the text the model wrote in the same round is the report.
 */
export function workItemTools(store: WorkItemStore): ToolDefinition[] {
  const common = {
    sideEffect: 'local_write' as const,
    timeoutMs: 5_000,
    needsApproval: false,
    honoursIdempotencyKey: true,
    // Work-item calls of one round touch the agent's focus: one at a time.
    resourceKeys: () => ['work_items'],
  };

  const create = defineTool({
    ...common,
    name: CREATE_WORK_ITEM_TOOL,
    description:
      'Creates a new open work item: a durable objective that outlives this turn. It is queued; call ' +
      'pick_work_item to make it your current focus.',
    schema: z.strictObject({
      objective: Objective.describe('What done looks like, in a sentence or two'),
      plan_status: PlanStatus.optional().describe('draft, ready (default) or needs_input'),
      plan: PlanText.optional().describe('Durable plan prose kept with the item'),
      todo_list: TodoList.optional().describe(
        'The full checklist: [{text, state: pending|in_progress|completed}]',
      ),
    }),
    async execute(args, ctx) {
      const row = await store.create({
        ...scope(ctx),
        objective: args.objective,
        planStatus: args.plan_status,
        plan: args.plan,
        todoList: args.todo_list,
        createdBy: 'agent',
        createdTurnId: ctx.turnId,
        idempotencyKey: ctx.idempotencyKey,
      });
      if (!row) throw new ToolError('no_agent', 'the agent no longer exists');
      return itemResult(row);
    },
  });

  const pick = defineTool({
    ...common,
    name: PICK_WORK_ITEM_TOOL,
    description: 'Makes an open work item of yours the current one: the focus later turns continue.',
    schema: z.strictObject({ work_item_id: WorkItemId }),
    async execute({ work_item_id }, ctx) {
      const { tenantId, agentId } = scope(ctx);
      return itemResult(unlessRefused(await store.pick(tenantId, agentId, work_item_id)));
    },
  });

  const update = defineTool({
    ...common,
    name: UPDATE_WORK_ITEM_TOOL,
    description:
      'Updates an open work item after material progress: objective, plan_status, plan, the full ' +
      'todo_list snapshot (replaces the list), or a blocker. blocked_by names what the item waits for ' +
      '(null clears it); recheck_after (ms, only with blocked_by) is when the runtime reminds you to check it again.',
    schema: z
      .strictObject({
        work_item_id: WorkItemId,
        objective: Objective.optional(),
        plan_status: PlanStatus.optional(),
        plan: PlanText.optional(),
        todo_list: TodoList.optional().describe('The full checklist; replaces the current one'),
        blocked_by: Blocker.nullable()
          .optional()
          .describe('What the item waits for; null clears the blocker'),
        recheck_after: z
          .int()
          .min(1)
          .max(MAX_RECHECK_AFTER_MS)
          .optional()
          .describe('Milliseconds until one reminder to recheck the blocker (only with blocked_by)'),
      })
      .refine((a) => a.recheck_after === undefined || typeof a.blocked_by === 'string', {
        message: 'recheck_after applies only when setting blocked_by',
        path: ['recheck_after'],
      }),
    async execute(args, ctx) {
      const { tenantId, agentId } = scope(ctx);
      const row = await store.update(tenantId, agentId, args.work_item_id, {
        objective: args.objective,
        planStatus: args.plan_status,
        plan: args.plan,
        todoList: args.todo_list,
        blockedBy: args.blocked_by,
        recheckAfterMs: args.recheck_after,
      });
      return itemResult(unlessRefused(row));
    },
  });

  const complete = defineTool({
    ...common,
    name: COMPLETE_WORK_ITEM_TOOL,
    description:
      'Marks a work item completed. Write the completion report for the operator as your text in the ' +
      'same reply as this call: that text becomes the delivery summary. It takes no summary argument.',
    schema: z.strictObject({ work_item_id: WorkItemId }),
    async execute({ work_item_id }, ctx) {
      const { tenantId, agentId } = scope(ctx);
      const report = ctx.roundText?.trim() ? ctx.roundText.trim() : null;
      const row = unlessRefused(
        await store.close(tenantId, agentId, work_item_id, {
          state: 'completed',
          by: 'agent',
          turnId: ctx.turnId,
          report,
        }),
      );
      return {
        ...itemResult(row),
        completion_report: row.resultSummary !== null,
        ...(row.resultSummary === null
          ? {
              warning: {
                kind: 'missing_completion_report',
                message:
                  'completed without a report: no assistant text came with this call, so no delivery ' +
                  'summary was recorded. Next time write the report in the same reply as complete_work_item.',
              },
            }
          : {}),
      };
    },
  });

  return [create, pick, update, complete] as ToolDefinition[];
}
