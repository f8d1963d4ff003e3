import { z } from 'zod';
import { CancelReason } from './cancel-reasons';
import { ApiSchemas } from './responses';

/**
 * The LangGraph Agent Server API subset under `/langgraph` (docs/adr/0038-langgraph-agent-server-api.md):
 * what `@langchain/langgraph-sdk`'s Client sends and reads. An assistant is an agent, a thread a
 * session, a run a turn, an interrupt an approval. Request bodies are strict: a field the subset does
 * not know is refused (422 `{detail}`), so a client never believes an option was honoured.
 */

const Id = z.uuid();
const Timestamp = z.iso.datetime({ offset: true });
const JsonObject = z.record(z.string(), z.unknown());
const Limit = z.int().min(0).max(1000).optional();
const Offset = z.int().min(0).max(100_000).optional();

export const LangGraphStreamMode = z.enum([
  'values',
  'messages',
  'messages-tuple',
  'updates',
  'events',
  'debug',
  'tasks',
  'checkpoints',
  'custom',
  'tools',
  'lifecycle',
]);
export type LangGraphStreamMode = z.infer<typeof LangGraphStreamMode>;

/** POST /assistants/search. */
export const LangGraphAssistantSearchRequest = z.strictObject({
  graph_id: z.string().max(200).optional(),
  name: z.string().max(200).optional(),
  metadata: JsonObject.optional(),
  limit: Limit,
  offset: Offset,
  sort_by: z.enum(['assistant_id', 'graph_id', 'name', 'created_at', 'updated_at']).optional(),
  sort_order: z.enum(['asc', 'desc']).optional(),
  select: z.array(z.string().max(100)).max(50).optional(),
});
export type LangGraphAssistantSearchRequest = z.infer<typeof LangGraphAssistantSearchRequest>;

/** POST /threads. The assistant is named in `metadata` (`assistant_id`, or `graph_id` = the agent's name). */
export const LangGraphThreadCreateRequest = z.strictObject({
  thread_id: Id.optional(),
  metadata: JsonObject.optional(),
  if_exists: z.enum(['raise', 'do_nothing']).optional(),
  supersteps: z.array(z.unknown()).max(0, 'supersteps are not supported').optional(),
  ttl: z.unknown().optional(),
});
export type LangGraphThreadCreateRequest = z.infer<typeof LangGraphThreadCreateRequest>;

/** POST /threads/search. */
export const LangGraphThreadSearchRequest = z.strictObject({
  metadata: JsonObject.optional(),
  ids: z.array(Id).max(1000).optional(),
  status: z.enum(['idle', 'busy', 'interrupted', 'error']).optional(),
  values: JsonObject.optional(),
  limit: Limit,
  offset: Offset,
  sort_by: z.enum(['thread_id', 'status', 'created_at', 'updated_at']).optional(),
  sort_order: z.enum(['asc', 'desc']).optional(),
  select: z.array(z.string().max(100)).max(50).optional(),
  extract: JsonObject.optional(),
});
export type LangGraphThreadSearchRequest = z.infer<typeof LangGraphThreadSearchRequest>;

/**
 * A checkpoint as the SDK names one (`CheckpointConfig`): a thread's checkpoints are its initial
 * state and, per run (turn), the state once its input was in and the state at its end, whose id is
 * the run id (docs/adr/0038); `checkpoint_ns` is `''` (no subgraphs). RemoteGraph sends `{thread_id}`
 * alone for "the current state".
 */
export const LangGraphCheckpointConfig = z
  .strictObject({
    thread_id: z.string().max(200).optional(),
    checkpoint_ns: z.string().max(200).optional(),
    checkpoint_id: z.string().max(200).nullable().optional(),
    checkpoint_map: JsonObject.nullable().optional(),
  })
  .register(ApiSchemas, { id: 'LangGraphCheckpointConfig' });
export type LangGraphCheckpointConfig = z.infer<typeof LangGraphCheckpointConfig>;

/** A checkpoint inside a runnable config, as the SDK's `getHistory({ before })` types it. */
export const LangGraphRunnableConfig = z.looseObject({
  configurable: z.looseObject(LangGraphCheckpointConfig.shape),
});

/** POST /threads/{id}/history (the SDK's `threads.getHistory`, RemoteGraph's `getStateHistory`). */
export const LangGraphHistoryRequest = z.strictObject({
  limit: Limit,
  /** States older than this checkpoint: its id, a checkpoint config, or a runnable config holding one. */
  before: z
    .union([z.string().max(200), LangGraphCheckpointConfig, LangGraphRunnableConfig])
    .nullable()
    .optional(),
  /** Filters the states by their metadata (equality per key). */
  metadata: JsonObject.nullable().optional(),
  /** A checkpoint id narrows the history to that state; `{thread_id}` alone is the whole history. */
  checkpoint: LangGraphCheckpointConfig.nullable().optional(),
  select: z.array(z.string().max(100)).max(50).optional(),
});
export type LangGraphHistoryRequest = z.infer<typeof LangGraphHistoryRequest>;

/** A LangChain message as a client sends it in `input.messages`. */
const InputMessage = z.union([
  z.string(),
  z.looseObject({
    type: z.string().max(50).optional(),
    role: z.string().max(50).optional(),
    content: z.union([z.string(), z.array(z.unknown())]),
  }),
]);

/** POST /threads/{id}/runs, …/runs/stream, …/runs/wait (and the stateless /runs/*). */
export const LangGraphRunRequest = z.strictObject({
  assistant_id: z.string().min(1).max(200),
  input: z
    .looseObject({ messages: z.array(InputMessage).max(100) })
    .nullable()
    .optional(),
  command: z
    .strictObject({
      resume: z.unknown().optional(),
      update: z.unknown().optional(),
      goto: z.unknown().optional(),
      /**
       * The SDK's headless-tool flush (`useStream` with `tools`) sends its resume command as built,
       * this flag included; accepted and ignored (the resume's keys say what they are).
       */
      keyedByInterruptId: z.boolean().optional(),
    })
    .nullable()
    .optional(),
  config: JsonObject.optional(),
  context: z.unknown().optional(),
  metadata: JsonObject.optional(),
  stream_mode: z.union([LangGraphStreamMode, z.array(LangGraphStreamMode).max(11)]).optional(),
  stream_subgraphs: z.boolean().optional(),
  stream_resumable: z.boolean().optional(),
  feedback_keys: z.array(z.string()).optional(),
  interrupt_before: z.union([z.literal('*'), z.array(z.string())]).optional(),
  interrupt_after: z.union([z.literal('*'), z.array(z.string())]).optional(),
  /**
   * The checkpoint the run goes on from (time travel, docs/adr/0038): a past one of the thread's
   * branch rewinds the later runs first; a run's input checkpoint with no input runs that input again.
   */
  checkpoint: LangGraphCheckpointConfig.nullable().optional(),
  checkpoint_id: z.string().max(200).nullable().optional(),
  checkpoint_during: z.boolean().optional(),
  durability: z.string().max(20).optional(),
  webhook: z.string().optional(),
  strict_resume: z.boolean().optional(),
  multitask_strategy: z.enum(['reject', 'interrupt', 'rollback', 'enqueue']).optional(),
  on_completion: z.enum(['delete', 'keep']).optional(),
  on_disconnect: z.enum(['cancel', 'continue']).optional(),
  after_seconds: z.number().min(0).optional(),
  if_not_exists: z.enum(['create', 'reject']).optional(),
  langsmith_tracer: z.unknown().optional(),
});
export type LangGraphRunRequest = z.infer<typeof LangGraphRunRequest>;

/** Query of GET /threads/{id}/runs. */
export const LangGraphRunListQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(1000).optional(),
  offset: z.coerce.number().int().min(0).max(100_000).optional(),
  status: z.enum(['pending', 'running', 'error', 'success', 'timeout', 'interrupted']).optional(),
  select: z.union([z.string(), z.array(z.string())]).optional(),
});
export type LangGraphRunListQuery = z.infer<typeof LangGraphRunListQuery>;

/** Query of POST /threads/{id}/runs/{run_id}/cancel. */
export const LangGraphCancelQuery = z.strictObject({
  wait: z.enum(['0', '1', 'true', 'false']).optional(),
  action: z.enum(['interrupt', 'rollback']).optional(),
  reason: z.string().max(500).optional(),
});
export type LangGraphCancelQuery = z.infer<typeof LangGraphCancelQuery>;

/** Query of GET /threads/{id}/history. */
export const LangGraphHistoryQuery = z.strictObject({
  limit: z.coerce.number().int().min(0).max(1000).optional(),
  /** States older than this checkpoint id. */
  before: z.string().max(200).optional(),
});

/** POST /threads/{id}/state/checkpoint (the SDK's `threads.getState(id, {checkpoint…})`, RemoteGraph's `getState`). */
export const LangGraphStateAtRequest = z.strictObject({
  checkpoint: LangGraphCheckpointConfig,
  subgraphs: z.boolean().optional(),
  select: z.array(z.string().max(100)).max(50).optional(),
});
export type LangGraphStateAtRequest = z.infer<typeof LangGraphStateAtRequest>;

/**
 * POST /threads/{id}/state (the SDK's `threads.updateState`, RemoteGraph's `updateState`): only with
 * no values (LangGraph's fork of a checkpoint, `as_node: '__copy__'`), which makes the thread go on
 * from the checkpoint (docs/adr/0038); writing values is refused.
 */
export const LangGraphUpdateStateRequest = z.strictObject({
  values: z.unknown().optional(),
  checkpoint: LangGraphCheckpointConfig.nullable().optional(),
  checkpoint_id: z.string().max(200).nullable().optional(),
  as_node: z.string().max(200).nullable().optional(),
});
export type LangGraphUpdateStateRequest = z.infer<typeof LangGraphUpdateStateRequest>;

/** Query of GET /threads/{id}/state and GET /threads/{id}/state/{checkpoint_id}. */
export const LangGraphStateQuery = z.strictObject({
  subgraphs: z.enum(['0', '1', 'true', 'false']).optional(),
  select: z.union([z.string().max(100), z.array(z.string().max(100)).max(50)]).optional(),
});

/** Query of GET /threads/{id}/runs/{run_id}/stream (the SDK's `runs.joinStream`). */
export const LangGraphJoinStreamQuery = z.strictObject({
  stream_mode: z.union([LangGraphStreamMode, z.array(LangGraphStreamMode).max(11)]).optional(),
  cancel_on_disconnect: z.enum(['0', '1', 'true', 'false']).optional(),
});
export type LangGraphJoinStreamQuery = z.infer<typeof LangGraphJoinStreamQuery>;

/** Query of GET /threads/{id}/runs/{run_id}/join. */
export const LangGraphJoinQuery = z.strictObject({
  cancel_on_disconnect: z.enum(['0', '1', 'true', 'false']).optional(),
});

// ------------------------------------------------------------------------------------------------
// Responses
// ------------------------------------------------------------------------------------------------

/** LangGraph's error body: the SDK shows `detail` in its HTTPError's message. */
export const LangGraphErrorResponse = z
  .strictObject({ detail: z.string() })
  .register(ApiSchemas, { id: 'LangGraphError' });
export type LangGraphErrorResponse = z.infer<typeof LangGraphErrorResponse>;

export const LangGraphAssistant = z
  .strictObject({
    /** The agent's id. */
    assistant_id: Id,
    /** The agent's name. */
    graph_id: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    config: JsonObject,
    context: JsonObject,
    metadata: JsonObject,
    version: z.int(),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .register(ApiSchemas, { id: 'LangGraphAssistant' });
export type LangGraphAssistant = z.infer<typeof LangGraphAssistant>;

export const LangGraphAssistantList = z
  .array(LangGraphAssistant)
  .register(ApiSchemas, { id: 'LangGraphAssistantList' });

/** An interrupt: a tool call waiting for approval. `id` is the approval's id. */
export const LangGraphInterrupt = z
  .strictObject({ id: Id, value: JsonObject })
  .register(ApiSchemas, { id: 'LangGraphInterrupt' });
export type LangGraphInterrupt = z.infer<typeof LangGraphInterrupt>;

/** `{messages: [...]}` (LangChain message dicts), with `__interrupt__` while an approval waits. */
export const LangGraphValues = z
  .record(z.string(), z.unknown())
  .register(ApiSchemas, { id: 'LangGraphValues' });
export type LangGraphValues = z.infer<typeof LangGraphValues>;

export const LangGraphThreadStatus = z.enum(['idle', 'busy', 'interrupted', 'error']);

export const LangGraphThread = z
  .strictObject({
    /** The session's id. */
    thread_id: Id,
    created_at: Timestamp,
    updated_at: Timestamp,
    state_updated_at: Timestamp,
    metadata: JsonObject,
    status: LangGraphThreadStatus,
    values: LangGraphValues,
    /** By task id (the waiting run's id): the approvals it waits for. */
    interrupts: z.record(z.string(), z.array(LangGraphInterrupt)),
  })
  .register(ApiSchemas, { id: 'LangGraphThread' });
export type LangGraphThread = z.infer<typeof LangGraphThread>;

export const LangGraphThreadList = z
  .array(LangGraphThread)
  .register(ApiSchemas, { id: 'LangGraphThreadList' });

const Checkpoint = z.strictObject({
  thread_id: Id,
  checkpoint_ns: z.string(),
  checkpoint_id: z.string().nullable(),
  checkpoint_map: JsonObject.nullable(),
});

export const LangGraphThreadState = z
  .strictObject({
    values: LangGraphValues,
    /** `["tools"]` while an approval waits, `["agent"]` at a run's input, else empty. */
    next: z.array(z.string()),
    /**
     * The thread's initial state, a run's input (before its model ran) or a run's end, whose id is
     * the run's (turn's) id (docs/adr/0038).
     */
    checkpoint: Checkpoint,
    metadata: JsonObject,
    created_at: Timestamp.nullable(),
    /** The state it came from: a run's end has its input, an input the end of the run before it; null for the initial state. */
    parent_checkpoint: Checkpoint.nullable(),
    tasks: z.array(
      z.strictObject({
        id: z.string(),
        name: z.string(),
        error: z.string().nullable(),
        interrupts: z.array(LangGraphInterrupt),
        checkpoint: Checkpoint.nullable(),
        state: z.null(),
      }),
    ),
  })
  .register(ApiSchemas, { id: 'LangGraphThreadState' });
export type LangGraphThreadState = z.infer<typeof LangGraphThreadState>;

/** What updateState answers: the checkpoint the thread now goes on from. */
export const LangGraphUpdateStateResponse = z
  .strictObject({ checkpoint: Checkpoint })
  .register(ApiSchemas, { id: 'LangGraphUpdateStateResponse' });
export type LangGraphUpdateStateResponse = z.infer<typeof LangGraphUpdateStateResponse>;

export const LangGraphThreadStateList = z
  .array(LangGraphThreadState)
  .register(ApiSchemas, { id: 'LangGraphThreadStateList' });

export const LangGraphRunStatus = z.enum([
  'pending',
  'running',
  'error',
  'success',
  'timeout',
  'interrupted',
]);
export type LangGraphRunStatus = z.infer<typeof LangGraphRunStatus>;

export const LangGraphRun = z
  .strictObject({
    /** The turn's id. */
    run_id: Id,
    thread_id: Id,
    assistant_id: Id,
    created_at: Timestamp,
    updated_at: Timestamp,
    status: LangGraphRunStatus,
    metadata: JsonObject,
    multitask_strategy: z.enum(['reject', 'interrupt', 'enqueue']).nullable(),
    kwargs: JsonObject,
    /**
     * Why the run was cancelled (the SDK's `Run.cancel_reason`): the turn's cancelReason
     * (docs/adr/0055) when its status is `interrupted` because it was cancelled; null otherwise.
     */
    cancel_reason: CancelReason.nullable(),
  })
  .register(ApiSchemas, { id: 'LangGraphRun' });
export type LangGraphRun = z.infer<typeof LangGraphRun>;

export const LangGraphRunList = z.array(LangGraphRun).register(ApiSchemas, { id: 'LangGraphRunList' });
