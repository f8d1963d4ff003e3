import { z } from 'zod';
import { ApiSchemas } from './responses';
import { PageQuery } from './api';

/**
 * Work items (seed 002 "Work-Item Persistence Foundation" … "Work-Queue Activation And Tick",
 * docs/adr/0031): an agent's persisted objectives. Focus is the agent's current work item, not a
 * state; queued, blocked, waiting for operator and runnable are views derived from the row.
 */

/** The work-item mutation tools (seed 002 "Work-Item Mutation Tools"), by the names the model calls. */
export const CREATE_WORK_ITEM_TOOL = 'create_work_item';
export const PICK_WORK_ITEM_TOOL = 'pick_work_item';
export const UPDATE_WORK_ITEM_TOOL = 'update_work_item';
export const COMPLETE_WORK_ITEM_TOOL = 'complete_work_item';

/**
 * All four: libs/work-items defines them, and a successful call of one is what the engine's
 * work reminder counts as a work-item update (docs/adr/0031).
 */
export const WORK_ITEM_TOOLS: readonly string[] = [
  CREATE_WORK_ITEM_TOOL,
  PICK_WORK_ITEM_TOOL,
  UPDATE_WORK_ITEM_TOOL,
  COMPLETE_WORK_ITEM_TOOL,
];

/** `cancelled` is the operator's: an agent finishes an item only by completing it. */
export const WorkItemState = z.enum(['open', 'completed', 'cancelled']);
export type WorkItemState = z.infer<typeof WorkItemState>;

export const PlanStatus = z.enum(['draft', 'ready', 'needs_input']);
export type PlanStatus = z.infer<typeof PlanStatus>;

export const TodoState = z.enum(['pending', 'in_progress', 'completed']);

export const TodoItem = z.strictObject({
  text: z.string().trim().min(1).max(2000),
  state: TodoState,
});
export type TodoItem = z.infer<typeof TodoItem>;

/** A full checklist snapshot: every update replaces the whole list. */
export const TodoList = z.array(TodoItem).max(100);

export const WORK_ITEM_OBJECTIVE_MAX = 4000;
export const WORK_ITEM_PLAN_MAX = 20_000;
export const WORK_ITEM_BLOCKER_MAX = 2000;

export const Objective = z.string().trim().min(1).max(WORK_ITEM_OBJECTIVE_MAX);
export const PlanText = z.string().max(WORK_ITEM_PLAN_MAX);
export const Blocker = z.string().trim().min(1).max(WORK_ITEM_BLOCKER_MAX);

/**
 * The derived views (seed 002): `queued` open, not current, not blocked; `blocked` open with a
 * blocker; `waiting_for_operator` open, not blocked, plan_status needs_input; `runnable` open, not
 * blocked, not needs_input (current or queued); `completed` completed or cancelled; `current` the
 * agent's current item.
 */
export const WorkItemView = z.enum([
  'all',
  'current',
  'queued',
  'runnable',
  'blocked',
  'waiting_for_operator',
  'completed',
]);
export type WorkItemView = z.infer<typeof WorkItemView>;

/** Where an item stands for the scheduler (seed 002 readiness projection). */
export const WorkItemReadiness = z.enum(['runnable', 'waiting_for_operator', 'blocked', 'completed']);
export type WorkItemReadiness = z.infer<typeof WorkItemReadiness>;

/** POST /v1/agents/:id/work-items: a control-plane enqueue; never replaces the current item. */
export const CreateWorkItemRequest = z.strictObject({
  objective: Objective,
  planStatus: PlanStatus.optional(),
  plan: PlanText.optional(),
  todoList: TodoList.optional(),
});
export type CreateWorkItemRequest = z.infer<typeof CreateWorkItemRequest>;

/** GET /v1/agents/:id/work-items: a page of one view, oldest first. */
export const WorkItemsQuery = PageQuery.extend({ view: WorkItemView.optional() });
export type WorkItemsQuery = z.infer<typeof WorkItemsQuery>;

/** POST …/work-items/:itemId/complete: the operator's report stands as the completion report. */
export const CompleteWorkItemRequest = z.strictObject({
  summary: z.string().trim().min(1).max(20_000).optional(),
});
export type CompleteWorkItemRequest = z.infer<typeof CompleteWorkItemRequest>;

/** POST …/work-items/:itemId/cancel. */
export const CancelWorkItemRequest = z.strictObject({
  reason: z.string().trim().min(1).max(500).optional(),
});
export type CancelWorkItemRequest = z.infer<typeof CancelWorkItemRequest>;

const Id = z.uuid();
const Timestamp = z.iso.datetime({ offset: true });

export const WorkItemResponse = z
  .strictObject({
    id: Id,
    agentId: Id,
    objective: z.string(),
    state: WorkItemState,
    planStatus: PlanStatus,
    plan: z.string().nullable(),
    todoList: z.array(TodoItem),
    blockedBy: z.string().nullable(),
    recheckAt: Timestamp.nullable(),
    recheckConsumedAt: Timestamp.nullable(),
    /** The agent's current work item. */
    current: z.boolean(),
    readiness: WorkItemReadiness,
    /**
     * The completion report (seed 002 DeliverySummaryRecord): the assistant text of the round whose
     * complete_work_item call finished the item, or the operator's summary; null when none was given.
     */
    completionReport: z
      .strictObject({
        text: z.string(),
        by: z.enum(['agent', 'operator']),
        turnId: Id.nullable(),
        at: Timestamp,
      })
      .nullable(),
    createdBy: z.enum(['agent', 'operator']),
    createdTurnId: Id.nullable(),
    closedBy: z.enum(['agent', 'operator']).nullable(),
    createdAt: Timestamp,
    updatedAt: Timestamp,
    completedAt: Timestamp.nullable(),
  })
  .register(ApiSchemas, { id: 'WorkItem' });
export type WorkItemResponse = z.infer<typeof WorkItemResponse>;

export const WorkItemPageResponse = z
  .strictObject({ data: z.array(WorkItemResponse), nextCursor: z.string().nullable() })
  .register(ApiSchemas, { id: 'WorkItemPage' });
export type WorkItemPageResponse = z.infer<typeof WorkItemPageResponse>;
