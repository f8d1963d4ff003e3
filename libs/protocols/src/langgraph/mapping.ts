import { isUuid, SessionRefused } from '@switchboard/contracts';
import type {
  LangGraphAssistant,
  LangGraphCheckpointConfig,
  LangGraphInterrupt,
  LangGraphRun,
  LangGraphRunRequest,
  LangGraphRunStatus,
  LangGraphStreamMode,
  LangGraphThread,
  LangGraphThreadState,
  LangGraphUpdateStateRequest,
  LangGraphValues,
  ErrorAnswer,
} from '@switchboard/contracts';
import { checkpointIdOfRef, sourceOf, type CheckpointRef } from './checkpoints';
import { LangGraphError } from './errors';

export { LangGraphError } from './errors';

/**
 * The LangGraph Agent Server API's mapping onto Switchboard (docs/adr/0038-langgraph-agent-server-api.md):
 * assistant = agent, thread = session, run = turn, interrupt = approval. Plain functions over rows;
 * the controller does the I/O.
 */

/** Why a run could not go on in the thread it names, as LangGraph says it. */
export const threadRefusal =
  (threadId: string) =>
  (err: unknown): never => {
    if (!(err instanceof SessionRefused)) throw err;
    if (err.reason === 'other_agent') {
      throw new LangGraphError(409, `thread ${threadId} belongs to another assistant (${err.agentId})`);
    }
    if (err.reason === 'session_closed') throw new LangGraphError(409, `thread ${threadId} is closed`);
    throw new LangGraphError(404, `thread ${threadId} not found`);
  };

/**
 * Any thrown value → LangGraph's `{detail}`: the adapter's own errors as they are, everything else as
 * the gateway's one error mapping answers it, same status and headers; a validation failure is 422,
 * as LangGraph's server answers a body it cannot take.
 */
export function toLangGraphErrorAnswer(
  err: unknown,
  native: (err: unknown) => ErrorAnswer,
): { status: number; body: { detail: string }; headers: Record<string, string> } {
  if (err instanceof LangGraphError) return { status: err.status, body: { detail: err.detail }, headers: {} };
  const answer = native(err);
  const { code, message } = answer.body.error;
  return {
    status: code === 'validation_failed' ? 422 : answer.status,
    body: { detail: message },
    headers: answer.headers,
  };
}

/** The columns of an agent the mapping reads. */
export interface AgentRow {
  id: string;
  name: string;
  model: string;
  tools: string[];
  approvalRequired: string[];
  createdAt: Date;
  updatedAt: Date;
}

/** The columns of a session the mapping reads. */
export interface SessionRow {
  id: string;
  agentId: string;
  status: string;
  metadata: unknown;
  createdAt: Date;
  updatedAt: Date;
}

/** The columns of a turn the mapping reads. */
export interface TurnRow {
  id: string;
  sessionId: string;
  agentId: string;
  status: string;
  stopReason: string | null;
  failure: unknown;
  createdAt: Date;
  completedAt: Date | null;
  startedAt: Date | null;
  /** Why it was cancelled (docs/adr/0055), or a cancel requested. */
  cancelReason?: string | null;
}

/** A transcript entry. */
export interface MessageRow {
  id: string;
  turnId: string | null;
  role: string;
  body: unknown;
  toolCalls: unknown;
  toolCallId: string | null;
}

/**
 * A pending wait of a turn: an approval (`kind: 'approval'`), or a call of a tool the client runs
 * (`kind: 'client_tool'`, docs/adr/0047) with the id handed to the client (`call_<hex>`).
 */
export interface ApprovalRow {
  id: string;
  kind: string;
  /** The id the client answers a client tool call by (`clientCallId`); null for an approval. */
  clientCallId: string | null;
  turnId: string;
  callId: string;
  toolName: string;
  arguments: unknown;
  sideEffect: string;
  policy: string;
  expiresAt: Date;
}

const iso = (d: Date) => d.toISOString();

export function assistantOf(agent: AgentRow): LangGraphAssistant {
  return {
    assistant_id: agent.id,
    graph_id: agent.name,
    name: agent.name,
    description: null,
    config: {},
    context: {},
    metadata: { model: agent.model, tools: agent.tools, approval_required: agent.approvalRequired },
    version: 1,
    created_at: iso(agent.createdAt),
    updated_at: iso(agent.updatedAt),
  };
}

/** A turn's status as a run's. A pause for approval is LangGraph's interrupt; a cancelled run is `interrupted` too. */
export function runStatusOf(status: string): LangGraphRunStatus {
  switch (status) {
    case 'queued':
      return 'pending';
    case 'running':
    case 'awaiting_subagent':
      return 'running';
    // Waiting for the client's tool results (docs/adr/0047) is a pause like an approval's: its
    // calls are headless-tool interrupts, answered by `command: {resume}` (ADR 0038).
    case 'awaiting_approval':
    case 'awaiting_client_tool':
    case 'cancelled':
      return 'interrupted';
    case 'completed':
      return 'success';
    default:
      return 'error';
  }
}

/** The run statuses of `?status=` as turn statuses. */
export function turnStatusesOf(status: LangGraphRunStatus): string[] {
  return [
    'queued',
    'running',
    'awaiting_subagent',
    'awaiting_approval',
    'awaiting_client_tool',
    'cancelled',
    'completed',
    'failed',
  ].filter((s) => runStatusOf(s) === status);
}

/** The thread's status from its latest turn: busy while one runs, interrupted while one waits for approval. */
export function threadStatusOf(latest: Pick<TurnRow, 'status'>[]): LangGraphThread['status'] {
  if (latest.some((t) => t.status === 'awaiting_approval' || t.status === 'awaiting_client_tool'))
    return 'interrupted';
  if (latest.some((t) => ['queued', 'running', 'awaiting_subagent'].includes(t.status))) return 'busy';
  return latest[0]?.status === 'failed' ? 'error' : 'idle';
}

export function runOf(
  turn: TurnRow,
  o: { multitask?: LangGraphRun['multitask_strategy']; metadata?: Record<string, unknown> } = {},
): LangGraphRun {
  return {
    run_id: turn.id,
    thread_id: turn.sessionId,
    assistant_id: turn.agentId,
    created_at: iso(turn.createdAt),
    updated_at: iso(turn.completedAt ?? turn.startedAt ?? turn.createdAt),
    status: runStatusOf(turn.status),
    metadata: o.metadata ?? {},
    multitask_strategy: o.multitask ?? null,
    kwargs: {},
    // The SDK's Run.cancel_reason: why a cancelled run was cancelled (docs/adr/0055), null otherwise.
    cancel_reason:
      turn.status === 'cancelled' ? ((turn.cancelReason ?? null) as LangGraphRun['cancel_reason']) : null,
  };
}

/** The text of a message body (`text`, `brief`, or JSON as text). */
export function bodyText(body: unknown): string {
  const b = body as { type?: string; text?: unknown; value?: unknown } | null;
  if (b && typeof b.text === 'string') return b.text;
  if (b && b.type === 'json') return JSON.stringify(b.value);
  return '';
}

function parseArgs(raw: string): Record<string, unknown> {
  try {
    const v = JSON.parse(raw) as unknown;
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : { value: v };
  } catch {
    return {};
  }
}

/** A LangChain message dict (`type` human / ai / tool), as `messages` state holds it. */
export type LangChainMessage = Record<string, unknown> & { type: string; id: string; content: unknown };

/** Transcript entries → LangChain message dicts, in order. */
export function messagesOf(rows: MessageRow[]): LangChainMessage[] {
  return rows.map((m) => {
    const content = bodyText(m.body);
    if (m.role === 'assistant') {
      const calls = Array.isArray(m.toolCalls)
        ? (m.toolCalls as { id: string; name: string; arguments: string }[])
        : [];
      return {
        type: 'ai',
        id: m.id,
        content,
        tool_calls: calls.map((c) => ({
          id: c.id,
          name: c.name,
          args: parseArgs(c.arguments),
          type: 'tool_call',
        })),
        invalid_tool_calls: [],
        additional_kwargs: {},
        response_metadata: {},
      };
    }
    if (m.role === 'tool') {
      return {
        type: 'tool',
        id: m.id,
        content,
        tool_call_id: m.toolCallId ?? '',
        additional_kwargs: {},
        response_metadata: {},
      };
    }
    return { type: 'human', id: m.id, content, additional_kwargs: {}, response_metadata: {} };
  });
}

/** A call's arguments as an object: a client tool's are stored as the model wrote them (JSON text). */
function argsOf(stored: unknown): unknown {
  if (typeof stored !== 'string') return stored ?? {};
  try {
    return JSON.parse(stored) as unknown;
  } catch {
    return stored;
  }
}

/**
 * A pending wait as an interrupt, its id the wait's; resumed by `command: {resume}`. A client tool
 * call is a headless-tool interrupt (the SDK's `HeadlessToolInterrupt`, what LangChain's schema-only
 * tools raise): `{type: 'tool', toolCall: {id, name, args}}`, `toolCall.id` the id it is answered by.
 */
export function interruptOf(a: ApprovalRow): LangGraphInterrupt {
  if (a.kind === 'client_tool') {
    return {
      id: a.id,
      value: {
        type: 'tool',
        toolCall: { id: a.clientCallId ?? a.callId, name: a.toolName, args: argsOf(a.arguments) },
        run_id: a.turnId,
        expires_at: iso(a.expiresAt),
      },
    };
  }
  return {
    id: a.id,
    value: {
      type: 'approval',
      description: `Approve the call of ${a.toolName}?`,
      approval_id: a.id,
      run_id: a.turnId,
      tool_call: { id: a.callId, name: a.toolName, args: a.arguments ?? {} },
      side_effect: a.sideEffect,
      policy: a.policy,
      expires_at: iso(a.expiresAt),
      resume: "command: { resume: 'approve' | 'reject' | { decision, reason } }",
    },
  };
}

/** The thread's values: `{messages}`, with `__interrupt__` while approvals wait. */
export function valuesOf(messages: LangChainMessage[], pending: ApprovalRow[]): LangGraphValues {
  return pending.length > 0 ? { messages, __interrupt__: pending.map(interruptOf) } : { messages };
}

export const threadMetadataOf = (session: SessionRow): Record<string, unknown> => ({
  ...(session.metadata && typeof session.metadata === 'object'
    ? (session.metadata as Record<string, unknown>)
    : {}),
  assistant_id: session.agentId,
});

export function threadOf(
  session: SessionRow,
  o: { latest: TurnRow[]; messages: LangChainMessage[]; pending: ApprovalRow[]; graphId?: string },
): LangGraphThread {
  const updated = o.latest[0] ? (o.latest[0].completedAt ?? o.latest[0].createdAt) : session.updatedAt;
  const interrupts: LangGraphThread['interrupts'] = {};
  for (const a of o.pending) (interrupts[a.turnId] ??= []).push(interruptOf(a));
  return {
    thread_id: session.id,
    created_at: iso(session.createdAt),
    updated_at: iso(session.updatedAt > updated ? session.updatedAt : updated),
    state_updated_at: iso(updated),
    metadata: { ...threadMetadataOf(session), ...(o.graphId ? { graph_id: o.graphId } : {}) },
    status: threadStatusOf(o.latest),
    values: valuesOf(o.messages, o.pending),
    interrupts,
  };
}

/** A turn as a checkpoint: the state at its end (its id) and once its input was in (the id's version-8 twin). */
export interface CheckpointTurn extends TurnRow {
  seq: number;
}

/**
 * A thread's state at one of its checkpoints (docs/adr/0038, time travel): the initial empty state,
 * a run's input (the transcript of the turns it followed plus its human message, before the model
 * ran) or a run's end (through its last entry), with the approvals pending on its line and its
 * parent. `ref` is null only for the current state of a thread that has had no run.
 */
export interface RunSnapshot {
  ref: CheckpointRef | null;
  /** The turn of an `input` or `end` state. */
  turn: CheckpointTurn | null;
  /** The parent checkpoint; null for the initial state. */
  parent: CheckpointRef | null;
  messages: LangChainMessage[];
  pending: ApprovalRow[];
  /** A turn of this state's line that waits for approval (the task `tools` with its interrupts). */
  paused: TurnRow | undefined;
}

/** A checkpoint as LangGraph names it: the thread, the root namespace and the id. */
export const checkpointOf = (threadId: string, id: string | null) => ({
  thread_id: threadId,
  checkpoint_ns: '',
  checkpoint_id: id,
  checkpoint_map: null,
});

/** The metadata every checkpoint of a thread has alike: the thread's, and LangGraph's `parents`. */
const constantMetadataOf = (session: SessionRow): Record<string, unknown> => ({
  ...threadMetadataOf(session),
  parents: {},
});

/**
 * A state's metadata: the thread's, and LangGraph's `source` (`input` for the initial state and a
 * run's input, `loop` for a run's end), `step` (the run's turn seq; -1 for the initial state),
 * `run_id` and `parents`.
 */
export function snapshotMetadataOf(
  session: SessionRow,
  s: Pick<RunSnapshot, 'ref' | 'turn'>,
): Record<string, unknown> {
  return {
    ...constantMetadataOf(session),
    source: s.ref ? sourceOf(s.ref) : 'input',
    step: s.turn?.seq ?? -1,
    run_id: s.turn?.id ?? null,
  };
}

/** A thread's state at a checkpoint (`getState`, one entry of `getHistory`). */
export function stateOf(session: SessionRow, s: RunSnapshot): LangGraphThreadState {
  const kind = s.ref?.kind;
  const paused = kind === 'end' ? s.paused : undefined;
  const task = (name: string, interrupts: LangGraphInterrupt[]) => ({
    id: s.turn!.id,
    name,
    error: null,
    interrupts,
    checkpoint: null,
    state: null,
  });
  return {
    values: valuesOf(s.messages, s.pending),
    next: paused ? ['tools'] : kind === 'input' ? ['agent'] : [],
    checkpoint: checkpointOf(session.id, s.ref ? checkpointIdOfRef(session.id, s.ref) : null),
    metadata: snapshotMetadataOf(session, s),
    created_at:
      kind === 'end'
        ? iso(s.turn!.completedAt ?? s.turn!.createdAt)
        : kind === 'input'
          ? iso(s.turn!.createdAt)
          : kind === 'initial'
            ? iso(session.createdAt)
            : null,
    parent_checkpoint: s.parent ? checkpointOf(session.id, checkpointIdOfRef(session.id, s.parent)) : null,
    tasks: paused
      ? [task('tools', s.pending.filter((a) => a.turnId === paused.id).map(interruptOf))]
      : kind === 'input'
        ? [task('agent', [])]
        : [],
  };
}

/** A state as the `checkpoints` stream mode sends it: its checkpoint as a config, its parent's too. */
export function checkpointEventOf(state: LangGraphThreadState): Record<string, unknown> {
  return {
    config: { configurable: state.checkpoint },
    parent_config: state.parent_checkpoint ? { configurable: state.parent_checkpoint } : null,
    values: state.values,
    metadata: state.metadata,
    next: state.next,
    tasks: state.tasks,
  };
}

/**
 * The checkpoint a request names → its id (a run id of the thread), or null for "the current state"
 * (`{thread_id}` alone or a null id, which is what RemoteGraph sends). Refused (422) when it cannot be
 * one of this thread's: another thread's, a subgraph namespace, an id that is not a run id.
 */
export function checkpointIdOf(
  threadId: string,
  field: string,
  c: LangGraphCheckpointConfig | { configurable: LangGraphCheckpointConfig } | string | null | undefined,
): string | null {
  if (c === null || c === undefined) return null;
  const cfg: LangGraphCheckpointConfig =
    typeof c === 'string' ? { checkpoint_id: c } : 'configurable' in c ? c.configurable : c;
  if (cfg.thread_id !== undefined && cfg.thread_id.toLowerCase() !== threadId.toLowerCase()) {
    throw new LangGraphError(
      422,
      `${field}.thread_id names another thread (${cfg.thread_id}) than ${threadId}`,
    );
  }
  if (cfg.checkpoint_ns) {
    throw new LangGraphError(
      422,
      `${field}.checkpoint_ns: subgraph checkpoints are not supported (a thread has one namespace, '')`,
    );
  }
  const id = cfg.checkpoint_id ?? null;
  if (id !== null && !isUuid(id)) {
    throw new LangGraphError(
      422,
      `${field}: ${JSON.stringify(id)} is not a checkpoint id (a thread's checkpoint ids are its run ids)`,
    );
  }
  return id === null ? null : id.toLowerCase();
}

/**
 * The checkpoint a run starts from — `checkpoint`, `checkpoint_id`, or `config.configurable.checkpoint_id`
 * (what LangGraph's server also reads) — or null for the current one. Where several are given they
 * must name the same.
 */
export function runCheckpointOf(threadId: string, body: LangGraphRunRequest): string | null {
  const configurable = (body.config as { configurable?: unknown } | undefined)?.configurable;
  const fromRunnable =
    configurable && typeof configurable === 'object' && !Array.isArray(configurable)
      ? (configurable as Record<string, unknown>)
      : {};
  const named = [
    checkpointIdOf(threadId, 'checkpoint', body.checkpoint),
    checkpointIdOf(threadId, 'checkpoint_id', body.checkpoint_id ?? null),
    typeof fromRunnable.checkpoint_id === 'string'
      ? checkpointIdOf(threadId, 'config.configurable', {
          checkpoint_id: fromRunnable.checkpoint_id,
          ...(typeof fromRunnable.checkpoint_ns === 'string'
            ? { checkpoint_ns: fromRunnable.checkpoint_ns }
            : {}),
        })
      : null,
  ].filter((id): id is string => id !== null);
  if (new Set(named).size > 1) {
    throw new LangGraphError(
      422,
      'checkpoint, checkpoint_id and config.configurable.checkpoint_id name different checkpoints',
    );
  }
  return named[0] ?? null;
}

/**
 * A history `metadata` filter → what it selects among a thread's states, whose metadata is the
 * thread's (the same for all) plus `parents: {}`, `source` (`input` | `loop`), `step` (the run's
 * turn seq, -1 for the initial state) and `run_id`: `none` when no state can match, else the step,
 * run and source it narrows to.
 */
export function historyFilterOf(
  session: SessionRow,
  filter: Record<string, unknown> | null | undefined,
): { none: true } | { none: false; seq?: number; turnId?: string; source?: 'input' | 'loop' } {
  const constant = constantMetadataOf(session);
  const out: { none: false; seq?: number; turnId?: string; source?: 'input' | 'loop' } = { none: false };
  for (const [key, want] of Object.entries(filter ?? {})) {
    if (key === 'step') {
      if (typeof want !== 'number' || !Number.isInteger(want)) return { none: true };
      out.seq = want;
    } else if (key === 'run_id') {
      if (typeof want !== 'string' || !isUuid(want)) return { none: true };
      out.turnId = want.toLowerCase();
    } else if (key === 'source') {
      if (want !== 'input' && want !== 'loop') return { none: true };
      out.source = want;
    } else if (JSON.stringify(constant[key]) !== JSON.stringify(want)) {
      return { none: true };
    }
  }
  return out;
}

/** What LangGraph's `updateState` may name as the node that wrote: none, or `__copy__` (a fork of the checkpoint). */
const COPY_NODES = new Set(['__copy__']);

/**
 * `updateState` (POST /threads/{id}/state) → the checkpoint it names (null: the current one). It maps
 * only without values: LangGraph's fork of a checkpoint (`values` null, `as_node: '__copy__'`), which
 * makes the thread go on from it. Writing values (messages as a node, a changed state) is refused
 * (422) before anything is written: a thread's state is its transcript, written only by its runs.
 */
export function updateStateOf(threadId: string, body: LangGraphUpdateStateRequest): string | null {
  const v = body.values;
  const empty =
    v === undefined ||
    v === null ||
    (typeof v === 'object' &&
      !Array.isArray(v) &&
      Object.entries(v as Record<string, unknown>).every(
        ([k, x]) => k === 'messages' && Array.isArray(x) && x.length === 0,
      ));
  if (!empty) {
    throw new LangGraphError(
      422,
      "updateState with values is not supported: a Switchboard thread's state is its transcript, written only " +
        'by its runs. Send no values to go on from a checkpoint (LangGraph\'s fork, as_node "__copy__"), then ' +
        'start a run with a human message — or start a run from the checkpoint with the message directly',
    );
  }
  if (body.as_node !== undefined && body.as_node !== null && !COPY_NODES.has(body.as_node)) {
    throw new LangGraphError(
      422,
      `as_node ${JSON.stringify(body.as_node)}: without values only "__copy__" (a fork of the checkpoint) applies`,
    );
  }
  const named = [
    checkpointIdOf(threadId, 'checkpoint', body.checkpoint),
    checkpointIdOf(threadId, 'checkpoint_id', body.checkpoint_id ?? null),
  ].filter((id): id is string => id !== null);
  if (new Set(named).size > 1) {
    throw new LangGraphError(422, 'checkpoint.checkpoint_id and checkpoint_id name different checkpoints');
  }
  return named[0] ?? null;
}

/**
 * What a run asks for: a new human message, the resume of a paused run, or nothing new (`input`
 * null: only a run from a run's input checkpoint takes none — it runs that input again).
 */
export type RunPlan =
  | { kind: 'message'; text: string; multitask: 'enqueue' | 'reject' | 'interrupt' }
  | { kind: 'none'; multitask: 'enqueue' | 'reject' | 'interrupt' }
  | { kind: 'resume'; resume: unknown };

/** Why a run with no input message is refused (unless it starts from a run's input checkpoint). */
export const ONE_MESSAGE =
  'input.messages: send exactly one human message per run (the thread keeps the history), or command.resume';

/** The text of one input message's content (a string, or content parts of which the text ones count). */
function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((p) => {
      if (typeof p === 'string') return p;
      const part = p as { type?: unknown; text?: unknown };
      if (part && part.type === 'text' && typeof part.text === 'string') return part.text;
      throw new LangGraphError(422, 'input.messages: only text content parts are supported');
    })
    .join('\n\n');
}

const HUMAN = new Set(['human', 'user']);

/**
 * A run request → what is admitted. Refused (422) where honouring is impossible and ignoring would
 * mislead: rollback, interrupt_before/after, delayed runs, `command`
 * goto/update, more than one message or one that is not a human's.
 */
export function planRun(body: LangGraphRunRequest): RunPlan {
  if (body.multitask_strategy === 'rollback') {
    throw new LangGraphError(
      422,
      'multitask_strategy rollback is not supported: Switchboard keeps every turn in the transcript ' +
        '(use interrupt to cancel the running run and start this one)',
    );
  }
  for (const key of ['interrupt_before', 'interrupt_after'] as const) {
    const v = body[key];
    if (v !== undefined && (v === '*' || v.length > 0)) {
      throw new LangGraphError(
        422,
        `${key} is not supported: a run pauses only for tool approvals (the agent's approvalRequired)`,
      );
    }
  }
  if (body.after_seconds !== undefined && body.after_seconds > 0) {
    throw new LangGraphError(422, 'after_seconds is not supported: use a schedule (POST /v1/schedules)');
  }
  if (body.webhook !== undefined) {
    throw new LangGraphError(
      422,
      "webhook is not supported: the tenant's completion webhooks (settings notifyUrl) report every ended turn",
    );
  }
  const command = body.command ?? undefined;
  if (command && (command.goto !== undefined || command.update !== undefined)) {
    throw new LangGraphError(422, 'command: only `resume` is supported (goto and update are not)');
  }
  if (command && command.resume !== undefined) {
    if (body.input && body.input.messages.length > 0) {
      throw new LangGraphError(422, 'send either input or command.resume, not both');
    }
    return { kind: 'resume', resume: command.resume };
  }
  const messages = body.input?.messages ?? [];
  if (messages.length === 0) return { kind: 'none', multitask: body.multitask_strategy ?? 'enqueue' };
  if (messages.length !== 1) throw new LangGraphError(422, ONE_MESSAGE);
  const [m] = messages;
  const text =
    typeof m === 'string' ? m : HUMAN.has(m.type ?? m.role ?? 'human') ? contentText(m.content) : null;
  if (text === null) {
    throw new LangGraphError(422, 'input.messages: the message must be a human (user) message');
  }
  if (text.trim() === '') throw new LangGraphError(422, 'input.messages: the message has no text');
  return { kind: 'message', text, multitask: body.multitask_strategy ?? 'enqueue' };
}

export type Verdict = 'approved' | 'rejected';

const APPROVE = new Set(['approve', 'approved', 'accept', 'accepted', 'yes', 'allow', 'continue']);
const REJECT = new Set(['reject', 'rejected', 'deny', 'denied', 'no', 'ignore', 'decline']);

/** One resume value → a decision (and its reason). */
function decisionOf(value: unknown): { verdict: Verdict; reason: string | null } | undefined {
  if (value === true) return { verdict: 'approved', reason: null };
  if (value === false) return { verdict: 'rejected', reason: null };
  if (typeof value === 'string') {
    const v = value.trim().toLowerCase();
    if (APPROVE.has(v)) return { verdict: 'approved', reason: null };
    if (REJECT.has(v)) return { verdict: 'rejected', reason: null };
    return undefined;
  }
  if (value && typeof value === 'object' && !Array.isArray(value)) {
    const o = value as Record<string, unknown>;
    const word = o.decision ?? o.type ?? o.action;
    const inner = typeof word === 'string' || typeof word === 'boolean' ? decisionOf(word) : undefined;
    if (!inner) return undefined;
    const reason = typeof o.reason === 'string' ? o.reason : typeof o.args === 'string' ? o.args : null;
    return { verdict: inner.verdict, reason: reason?.slice(0, 2000) ?? null };
  }
  return undefined;
}

/**
 * `command.resume` → a decision per pending approval: one value for all of them (`'approve'`,
 * `'reject'`, `true`/`false`, `{decision, reason}`, Agent Inbox's `{type: 'accept'|'ignore'}`), or a
 * map by interrupt id (LangGraph's resume of several interrupts), which must name every pending one.
 */
export function decisionsOf(
  resume: unknown,
  pending: string[],
): { approvalId: string; verdict: Verdict; reason: string | null }[] {
  const hint =
    "command.resume: 'approve' or 'reject' (or true/false, {decision: 'approve'|'reject', reason}), or a map " +
    'from interrupt id to one of those';
  if (pending.length === 0) {
    throw new LangGraphError(409, 'the thread has no interrupt to resume: no approval is pending');
  }
  const single = decisionOf(resume);
  if (single) return pending.map((approvalId) => ({ approvalId, ...single }));
  if (resume && typeof resume === 'object' && !Array.isArray(resume)) {
    const byId = resume as Record<string, unknown>;
    const keys = Object.keys(byId);
    if (keys.length > 0 && keys.every((k) => pending.includes(k))) {
      if (keys.length !== pending.length) {
        throw new LangGraphError(
          422,
          `command.resume: decide every pending interrupt (${pending.join(', ')})`,
        );
      }
      return keys.map((approvalId) => {
        const d = decisionOf(byId[approvalId]);
        if (!d) throw new LangGraphError(422, hint);
        return { approvalId, ...d };
      });
    }
  }
  throw new LangGraphError(422, hint);
}

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** The most client tools one run may declare. */
export const MAX_CLIENT_TOOLS = 128;

/**
 * The tools a run declares for the client to run (docs/adr/0038, client tools): `context.tools`, each
 * an OpenAI function tool (`{type: 'function', function: {name, description, parameters}}`, what
 * LangChain's `convertToOpenAITool` gives) or a bare `{name, description, parameters | schema}`.
 * Shapes are checked here (422); names, clashes and schemas by `AgentTurns.clientToolsFor` (400).
 */
export function clientToolsOfRun(
  body: Pick<LangGraphRunRequest, 'context'>,
): { name: string; description: string; parameters: Record<string, unknown> }[] {
  const context = body.context;
  if (context === undefined || context === null) return [];
  if (!isRecord(context)) throw new LangGraphError(422, 'context: must be an object');
  const tools = context.tools;
  if (tools === undefined || tools === null) return [];
  if (!Array.isArray(tools)) {
    throw new LangGraphError(422, 'context.tools: must be a list of tool definitions');
  }
  if (tools.length > MAX_CLIENT_TOOLS) {
    throw new LangGraphError(422, `context.tools: at most ${MAX_CLIENT_TOOLS} tools`);
  }
  return tools.map((t, i) => {
    const at = `context.tools[${i}]`;
    if (!isRecord(t)) throw new LangGraphError(422, `${at}: must be an object`);
    const fn = t.type === 'function' && isRecord(t.function) ? t.function : t;
    if (t.type !== undefined && t.type !== 'function') {
      throw new LangGraphError(
        422,
        `${at}.type: only function tools are supported (got ${JSON.stringify(t.type)})`,
      );
    }
    if (typeof fn.name !== 'string') throw new LangGraphError(422, `${at}.name: a tool needs a name`);
    if (fn.description !== undefined && typeof fn.description !== 'string') {
      throw new LangGraphError(422, `${at}.description: must be a string`);
    }
    const parameters = fn.parameters ?? fn.schema ?? { type: 'object', properties: {} };
    return {
      name: fn.name,
      description: typeof fn.description === 'string' ? fn.description.slice(0, 4000) : '',
      parameters: parameters as Record<string, unknown>,
    };
  });
}

/** What `command.resume` asks for: approval decisions and client tool results (by the ids handed out). */
export interface ResumePlan {
  decisions: { approvalId: string; verdict: Verdict; reason: string | null }[];
  results: { callId: string; output: string }[];
}

/** A client tool call's id as handed out (`clientCallId`). */
const CLIENT_CALL_ID = /^call_[0-9a-f]{32}$/i;

/** A tool's result as the text the model is sent: a string as is, anything else as JSON. */
const outputText = (v: unknown): string => (typeof v === 'string' ? v : (JSON.stringify(v) ?? 'null'));

/** `{[callId]: result}` (the SDK's `headlessToolResumeCommand`) → its call id and result, else undefined. */
function keyedByCall(v: unknown): { callId: string; value: unknown } | undefined {
  if (!isRecord(v)) return undefined;
  const keys = Object.keys(v);
  return keys.length === 1 && CLIENT_CALL_ID.test(keys[0])
    ? { callId: keys[0], value: v[keys[0]] }
    : undefined;
}

/**
 * `command.resume` → client tool results, or undefined when it is not an answer to client tools.
 * The shapes the SDK's headless-tool helpers send: `{[toolCall.id]: result}`, `{[interrupt id]:
 * {[toolCall.id]: result}}` (a batch), `{[interrupt id]: result}`, or the bare result when one call
 * waits and no approval does. Keys naming an answered call are kept (the answer again is a replay).
 */
function clientResultsOf(
  resume: unknown,
  clients: ApprovalRow[],
  approvalIds: string[],
): { callId: string; output: string }[] | undefined {
  if (isRecord(resume)) {
    let out: { callId: string; output: string }[] | undefined = [];
    for (const [key, value] of Object.entries(resume)) {
      const wait = clients.find((c) => c.id === key.toLowerCase());
      const inner = keyedByCall(value);
      if (wait) {
        const callId = wait.clientCallId ?? '';
        const v = inner && inner.callId.toLowerCase() === callId.toLowerCase() ? inner.value : value;
        out.push({ callId, output: outputText(v) });
      } else if (CLIENT_CALL_ID.test(key)) {
        out.push({ callId: key, output: outputText(value) });
      } else if (approvalIds.includes(key.toLowerCase())) {
        continue;
      } else if (isUuid(key) && inner) {
        out.push({ callId: inner.callId, output: outputText(inner.value) });
      } else {
        out = undefined;
        break;
      }
    }
    if (out && out.length > 0) return out;
  }
  if (clients.length === 1 && approvalIds.length === 0) {
    return [{ callId: clients[0].clientCallId ?? '', output: outputText(resume) }];
  }
  return undefined;
}

/**
 * `command.resume` → the decisions for the thread's pending approvals and the results for its
 * pending client tool calls. With both kinds pending the resume is a map by interrupt id (the
 * approvals' values decisions, the client tools' their results) that names every one.
 */
export function resumeOf(resume: unknown, pending: ApprovalRow[]): ResumePlan {
  const approvalIds = pending.filter((a) => a.kind !== 'client_tool').map((a) => a.id);
  const clients = pending.filter((a) => a.kind === 'client_tool');
  const results = clientResultsOf(resume, clients, approvalIds);
  if (results === undefined) {
    if (clients.length > 0) {
      throw new LangGraphError(
        422,
        'command.resume: the thread waits for the results of client tool calls (' +
          clients.map((c) => c.clientCallId).join(', ') +
          '): send {[toolCall.id]: result} for each, or a map from interrupt id to the result',
      );
    }
    return { decisions: decisionsOf(resume, approvalIds), results: [] };
  }
  if (approvalIds.length === 0) return { decisions: [], results };
  const byId = resume as Record<string, unknown>;
  const approvalPart = Object.fromEntries(
    Object.entries(byId).filter(([k]) => approvalIds.includes(k.toLowerCase())),
  );
  if (Object.keys(approvalPart).length === 0) {
    throw new LangGraphError(
      422,
      `command.resume: decide every pending interrupt (${approvalIds.join(', ')}) beside the client tools' results`,
    );
  }
  return { decisions: decisionsOf(approvalPart, approvalIds), results };
}

/**
 * The stream modes asked for (default `values`). `values`, `updates`, `messages-tuple` and `messages`
 * produce events; the others are accepted and produce none (a UI asks for several at once).
 */
export function streamModesOf(mode: LangGraphRunRequest['stream_mode']): Set<LangGraphStreamMode> {
  return new Set<LangGraphStreamMode>(mode === undefined ? ['values'] : Array.isArray(mode) ? mode : [mode]);
}

/** One SSE frame of a run stream. */
export const sseEvent = (event: string, data: unknown): string =>
  `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;

/**
 * The new messages since the last emission, as an `updates` chunk: an AI message is the `agent`
 * node's update, a tool message the `tools` node's (LangGraph's prebuilt ReAct agent's node names).
 */
export function updatesOf(fresh: LangChainMessage[]): Record<string, { messages: LangChainMessage[] }>[] {
  const out: Record<string, { messages: LangChainMessage[] }>[] = [];
  for (const m of fresh) {
    const node = m.type === 'tool' ? 'tools' : m.type === 'ai' ? 'agent' : '__input__';
    const last = out[out.length - 1];
    if (last && last[node]) last[node].messages.push(m);
    else out.push({ [node]: { messages: [m] } });
  }
  return out;
}
