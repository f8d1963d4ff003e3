import type { Agent } from '@prisma/client';
import { Role, TaskState } from '@a2a-js/sdk';
import type {
  AgentCard,
  CancelTaskRequest,
  GetTaskRequest,
  Message,
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
import {
  agentMessage,
  ANSWER_ARTIFACT_ID,
  messageText,
  RoundText,
  statusText,
  statusUpdate,
  submittedTask,
  taskOf,
  taskStateOf,
  textPart,
} from '@switchboard/protocols';

/**
 * A2A over turns (docs/adr/0037): `A2aAgent` is the request handler the SDK's JSON-RPC transport
 * handler (@a2a-js/sdk/server) calls, plain TypeScript over AgentTurns; the wire mapping (tasks,
 * messages, the agent card) is in `@switchboard/protocols` (a2a/).
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
