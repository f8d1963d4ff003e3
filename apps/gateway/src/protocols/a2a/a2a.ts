import type { Agent } from '@prisma/client';
import { Role, TaskState } from '@a2a-js/sdk';
import type {
  AgentCard,
  CancelTaskRequest,
  GetTaskRequest,
  Message,
  Part,
  SendMessageRequest,
  StreamResponse,
  SubscribeToTaskRequest,
  Task,
  TaskPushNotificationConfig,
} from '@a2a-js/sdk';
import {
  ExtendedAgentCardNotConfiguredError,
  JsonRpcTransportError,
  PushNotificationNotSupportedError,
  RequestMalformedError,
  TaskNotCancelableError,
  TaskNotFoundError,
  UnsupportedOperationError,
} from '@a2a-js/sdk/errors';
import type { A2ARequestHandler } from '@a2a-js/sdk/server';
import {
  AgentStoppedError,
  AppError,
  EventType,
  isEnded,
  newId,
  type TurnResponse,
} from '@switchboard/contracts';
import { SessionRefused, type AgentTurns, type StartedTurn } from '@switchboard/agent-turns';
import { RoundText } from '../openai-chat/chat-completions';

/**
 * A2A over turns (docs/adr/0037): each agent of the tenant is an A2A agent at `/a2a/{agentId}`, a
 * task is a turn (task id = turn id), a context is a session (contextId = session id). The SDK's
 * JSON-RPC transport handler (@a2a-js/sdk/server, v1.0 methods and v0.3's through its compat layer)
 * parses and answers; `A2aAgent` is the request handler it calls, plain TypeScript over AgentTurns
 * (the seams chat completions uses), stateless: any replica answers any task.
 */

/**
 * The JSON-RPC error a message to a stopped agent (docs/adr/0031) answers with: a server error in the
 * implementation-defined range (-32000 to -32099, clear of A2A's own -32001 to -32009), the message
 * saying the agent is stopped and how to resume it. The request itself was valid: not -32602.
 */
export const AGENT_STOPPED_CODE = -32050;

export const agentStopped = (err: AgentStoppedError): JsonRpcTransportError =>
  new JsonRpcTransportError({
    jsonrpc: '2.0',
    id: null,
    error: { code: AGENT_STOPPED_CODE, message: err.message },
  });

/** The artifact a task's answer streams into. */
export const ANSWER_ARTIFACT_ID = 'answer';

/** Where a turn stands, in A2A's task states. */
export function taskStateOf(status: string): TaskState {
  switch (status) {
    case 'queued':
      return TaskState.TASK_STATE_SUBMITTED;
    case 'running':
    case 'awaiting_subagent':
      return TaskState.TASK_STATE_WORKING;
    case 'awaiting_approval':
      return TaskState.TASK_STATE_INPUT_REQUIRED;
    case 'completed':
      return TaskState.TASK_STATE_COMPLETED;
    case 'failed':
      return TaskState.TASK_STATE_FAILED;
    case 'cancelled':
      return TaskState.TASK_STATE_CANCELED;
    default:
      return TaskState.TASK_STATE_UNSPECIFIED;
  }
}

export const textPart = (text: string): Part => ({
  content: { $case: 'text', value: text },
  metadata: undefined,
  filename: '',
  mediaType: 'text/plain',
});

/** The agent's message: its answer, or what became of the turn. */
function agentMessage(turn: Pick<TurnResponse, 'id' | 'sessionId'>, text: string): Message {
  return {
    messageId: `${turn.id}:agent`,
    contextId: turn.sessionId,
    taskId: turn.id,
    role: Role.ROLE_AGENT,
    parts: [textPart(text)],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

/** What the status message of a turn says: its answer, its failure, or why it waits. */
export function statusText(turn: TurnResponse): string | undefined {
  switch (turn.status) {
    case 'completed':
      return turn.finalText ?? '';
    case 'failed': {
      const f = turn.failure;
      return `turn ${turn.id} failed (${f ? `${f.kind}: ${f.brief || f.message}` : (turn.stopReason ?? 'failed')})`;
    }
    case 'cancelled':
      return `turn ${turn.id} was cancelled`;
    case 'awaiting_approval':
      return 'waiting for a person to approve a tool call (Switchboard approvals API)';
    case 'queued':
    case 'running':
    case 'awaiting_subagent':
      return undefined;
  }
}

/** A turn as an A2A task; `history` holds the client's message when the caller has it. */
export function taskOf(turn: TurnResponse, history: Message[] = []): Task {
  const text = statusText(turn);
  return {
    id: turn.id,
    contextId: turn.sessionId,
    status: {
      state: taskStateOf(turn.status),
      message: text === undefined ? undefined : agentMessage(turn, text),
      timestamp: turn.completedAt ?? turn.startedAt ?? turn.createdAt,
    },
    artifacts:
      turn.status === 'completed'
        ? [
            {
              artifactId: ANSWER_ARTIFACT_ID,
              name: 'answer',
              description: "The agent's final answer",
              parts: [textPart(turn.finalText ?? '')],
              metadata: undefined,
              extensions: [],
            },
          ]
        : [],
    history: [...history, ...(turn.status === 'completed' ? [agentMessage(turn, turn.finalText ?? '')] : [])],
    metadata: { agentId: turn.agentId, sessionId: turn.sessionId, turnId: turn.id },
  };
}

/** A just-admitted turn, before it is read again: submitted. */
function submittedTask(t: StartedTurn, history: Message[]): Task {
  return {
    id: t.turnId,
    contextId: t.sessionId,
    status: {
      state: TaskState.TASK_STATE_SUBMITTED,
      message: undefined,
      timestamp: new Date().toISOString(),
    },
    artifacts: [],
    history,
    metadata: { agentId: t.agentId, sessionId: t.sessionId, turnId: t.turnId },
  };
}

/** The text of a client's message: its text parts, in order (other parts are refused). */
export function messageText(message: Message | undefined): string {
  if (!message) throw new RequestMalformedError('params.message is required');
  const texts: string[] = [];
  for (const part of message.parts) {
    if (part.content?.$case === 'text') texts.push(part.content.value);
    else if (part.content?.$case === 'data') texts.push(JSON.stringify(part.content.value));
    else {
      throw new RequestMalformedError(
        'only text and data parts are accepted: send files as links in the text',
      );
    }
  }
  const text = texts.join('\n');
  if (text.trim() === '') throw new RequestMalformedError('the message has no text');
  return text;
}

/** The agent card (A2A v1.0, with a v0.3 JSON-RPC interface on the same URL). */
export function agentCardOf(agent: Agent, url: string): AgentCard {
  const instructions = agent.instructions.trim().replace(/\s+/g, ' ');
  return {
    name: agent.name,
    description: instructions
      ? instructions.length > 1000
        ? `${instructions.slice(0, 997)}...`
        : instructions
      : `The Switchboard agent "${agent.name}"`,
    supportedInterfaces: [
      { url, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' },
      { url, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '0.3' },
    ],
    provider: { organization: 'Switchboard', url: 'https://github.com/switchboard' },
    version: agent.updatedAt.toISOString(),
    capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {
      bearer: {
        scheme: {
          $case: 'httpAuthSecurityScheme',
          value: {
            scheme: 'Bearer',
            bearerFormat: 'API key',
            description: "The tenant's Switchboard API key (sb_…)",
          },
        },
      },
    },
    securityRequirements: [{ schemes: { bearer: { list: [] } } }],
    defaultInputModes: ['text/plain', 'application/json'],
    defaultOutputModes: ['text/plain'],
    skills: [
      {
        id: 'chat',
        name: agent.name,
        description: 'Answer a message; a message with the same contextId continues the conversation',
        tags: ['switchboard', 'agent'],
        examples: [],
        inputModes: ['text/plain'],
        outputModes: ['text/plain'],
        securityRequirements: [],
      },
    ],
    signatures: [],
  };
}

const statusUpdate = (
  t: Pick<StartedTurn, 'turnId' | 'sessionId'>,
  state: TaskState,
  message?: Message,
): StreamResponse => ({
  payload: {
    $case: 'statusUpdate',
    value: {
      taskId: t.turnId,
      contextId: t.sessionId,
      status: { state, message, timestamp: new Date().toISOString() },
      metadata: undefined,
    },
  },
});

/** One agent of one tenant, as the SDK's JSON-RPC transport calls it. */
export class A2aAgent implements A2ARequestHandler {
  constructor(
    private readonly turns: AgentTurns,
    private readonly tenantId: string,
    private readonly agent: Agent,
    private readonly card: AgentCard,
    /** Ends every stream of the request (the client left). */
    private readonly gone: AbortSignal,
  ) {}

  getAgentCard(): Promise<AgentCard> {
    return Promise.resolve(this.card);
  }

  getAuthenticatedExtendedAgentCard(): Promise<AgentCard> {
    return Promise.reject(new ExtendedAgentCardNotConfiguredError('no extended agent card'));
  }

  /** Admits the message; blocks until the task ends (or pauses), unless `returnImmediately`. */
  async sendMessage(params: SendMessageRequest): Promise<Message | Task> {
    const { started, history } = await this.start(params);
    try {
      if (params.configuration?.returnImmediately) return submittedTask(started, history);
      const turn =
        (await this.turns.untilEnded(started, { orPaused: true, signal: this.gone })) ??
        (await this.turns.turn(this.tenantId, started.turnId));
      return turn ? taskOf(turn, history) : submittedTask(started, history);
    } finally {
      started.watch.close();
    }
  }

  /** The task, then its progress: working, the answer as artifact chunks, the final status. */
  async *sendMessageStream(params: SendMessageRequest): AsyncGenerator<StreamResponse, void, undefined> {
    const { started, history } = await this.start(params);
    yield { payload: { $case: 'task', value: submittedTask(started, history) } };
    yield* this.follow(started);
  }

  async getTask(params: GetTaskRequest): Promise<Task> {
    return taskOf(await this.task(params.id));
  }

  /** Cancels the turn and waits (bounded) for it to end, as POST /v1/turns/:id/cancel does. */
  async cancelTask(params: CancelTaskRequest): Promise<Task> {
    const turn = await this.task(params.id);
    if (isEnded(turn.status)) {
      throw new TaskNotCancelableError(`task ${turn.id} has ended (${turn.status})`);
    }
    const started: StartedTurn = {
      tenantId: this.tenantId,
      agentId: this.agent.id,
      sessionId: turn.sessionId,
      turnId: turn.id,
      watch: this.turns.watch(turn.sessionId),
      subscribedBeforeAdmission: false,
    };
    try {
      await this.turns.cancel(this.tenantId, turn.id, 'cancelled by an A2A client (tasks/cancel)');
      const ended =
        (await this.turns.untilEnded(started, { signal: this.gone })) ??
        (await this.turns.turn(this.tenantId, turn.id));
      return taskOf(ended ?? turn);
    } finally {
      started.watch.close();
    }
  }

  /** Follows a task that has not ended (SubscribeToTask, v0.3 tasks/resubscribe). */
  async *resubscribe(params: SubscribeToTaskRequest): AsyncGenerator<StreamResponse, void, undefined> {
    const turn = await this.task(params.id);
    if (isEnded(turn.status)) {
      throw new UnsupportedOperationError(`task ${turn.id} has ended (${turn.status}): tasks/get reads it`);
    }
    yield { payload: { $case: 'task', value: taskOf(turn) } };
    yield* this.follow({ sessionId: turn.sessionId, turnId: turn.id });
  }

  listTasks(): Promise<never> {
    return Promise.reject(
      new UnsupportedOperationError(
        'ListTasks is not supported: GET /v1/sessions/{contextId}/turns lists them',
      ),
    );
  }

  createTaskPushNotificationConfig(): Promise<TaskPushNotificationConfig> {
    return Promise.reject(new PushNotificationNotSupportedError('push notifications are not supported'));
  }

  getTaskPushNotificationConfig(): Promise<TaskPushNotificationConfig> {
    return Promise.reject(new PushNotificationNotSupportedError('push notifications are not supported'));
  }

  listTaskPushNotificationConfigs(): Promise<never> {
    return Promise.reject(new PushNotificationNotSupportedError('push notifications are not supported'));
  }

  deleteTaskPushNotificationConfig(): Promise<void> {
    return Promise.reject(new PushNotificationNotSupportedError('push notifications are not supported'));
  }

  /** The tenant's turn of this agent; TaskNotFound otherwise (another tenant's, another agent's). */
  private async task(id: string): Promise<TurnResponse> {
    const turn = await this.turns.turn(this.tenantId, id);
    if (!turn || turn.agentId !== this.agent.id) throw new TaskNotFoundError(`task ${id} not found`);
    return turn;
  }

  private async start(params: SendMessageRequest): Promise<{ started: StartedTurn; history: Message[] }> {
    const message = params.message;
    const text = messageText(message);
    if (message?.taskId) {
      throw new UnsupportedOperationError(
        'a task ends with its turn and is not continued: send the message without taskId, with the same contextId',
      );
    }
    let started: StartedTurn;
    try {
      started = await this.turns.start({
        tenantId: this.tenantId,
        agentId: this.agent.id,
        text,
        ...(message?.contextId ? { sessionId: message.contextId } : {}),
        createdBy: 'a2a',
      });
    } catch (err) {
      if (err instanceof SessionRefused) throw new RequestMalformedError(`contextId: ${err.message}`);
      if (err instanceof AgentStoppedError) throw agentStopped(err);
      if (err instanceof AppError && err.status < 500) throw new RequestMalformedError(err.message);
      throw err;
    }
    const user: Message = {
      ...message!,
      messageId: message?.messageId || newId(),
      contextId: started.sessionId,
      taskId: started.turnId,
      role: Role.ROLE_USER,
    };
    return { started, history: [user] };
  }

  /** Status and artifact updates from the turn's live stream, ending with its final status. */
  private async *follow(
    t: Pick<StartedTurn, 'sessionId' | 'turnId'> & { watch?: StartedTurn['watch'] },
  ): AsyncGenerator<StreamResponse, void, undefined> {
    const chunks: string[] = [];
    let sent = false;
    const text = new RoundText((delta) => chunks.push(delta));
    const artifact = (value: string, lastChunk: boolean): StreamResponse => {
      const update: StreamResponse = {
        payload: {
          $case: 'artifactUpdate',
          value: {
            taskId: t.turnId,
            contextId: t.sessionId,
            artifact: {
              artifactId: ANSWER_ARTIFACT_ID,
              name: 'answer',
              description: "The agent's final answer",
              parts: [textPart(value)],
              metadata: undefined,
              extensions: [],
            },
            append: sent,
            lastChunk,
            metadata: undefined,
          },
        },
      };
      sent = true;
      return update;
    };
    let working = false;
    for await (const item of this.turns.events(t, this.gone)) {
      // Silence (SSE_HEARTBEAT_MS): the state again, so the client (and any proxy) knows the stream lives.
      if (item.kind === 'idle') {
        yield statusUpdate(t, working ? TaskState.TASK_STATE_WORKING : TaskState.TASK_STATE_SUBMITTED);
        continue;
      }
      const e = item.event;
      if (e.type === EventType.TurnStarted || e.type === EventType.ProviderRoundStarted) {
        if (e.type === EventType.ProviderRoundStarted) {
          text.round(typeof e.data.round === 'number' ? e.data.round : 0);
        }
        if (!working) {
          working = true;
          yield statusUpdate(t, TaskState.TASK_STATE_WORKING);
        }
      } else if (e.type === EventType.TextDelta && (item.kind === 'live' || !item.streamed)) {
        text.add(typeof e.data.text === 'string' ? e.data.text : '');
      } else if (e.type === EventType.ApprovalRequested) {
        const paused = await this.turns.turn(this.tenantId, t.turnId);
        if (paused?.status === 'awaiting_approval') {
          yield statusUpdate(
            t,
            TaskState.TASK_STATE_INPUT_REQUIRED,
            agentMessage({ id: t.turnId, sessionId: t.sessionId }, statusText(paused) ?? ''),
          );
          return;
        }
      }
      while (chunks.length > 0) yield artifact(chunks.splice(0).join(''), false);
    }
    if (this.gone.aborted) return;
    const turn = await this.turns.ended(this.tenantId, t.turnId);
    if (!turn) return; // the gateway is shutting down: the stream ends, the task goes on
    if (turn.status === 'completed') {
      text.complete(turn.finalText ?? '');
      yield artifact(chunks.splice(0).join(''), true);
    }
    yield statusUpdate(t, taskStateOf(turn.status), agentMessage(turn, statusText(turn) ?? ''));
  }
}
