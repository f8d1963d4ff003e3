import type { Agent } from '@prisma/client';
import { Role, TaskState } from '@a2a-js/sdk';
import type {
  AgentCard,
  CancelTaskRequest,
  DeleteTaskPushNotificationConfigRequest,
  GetTaskPushNotificationConfigRequest,
  GetTaskRequest,
  ListTaskPushNotificationConfigsRequest,
  ListTaskPushNotificationConfigsResponse,
  ListTasksRequest,
  ListTasksResponse,
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
  isUuid,
  newId,
  TenantPausedError,
  type TurnResponse,
  cancelCause,
} from '@switchboard/contracts';
import {
  PUSH_CONFIGS_PER_TASK,
  type A2aStore,
  type PushConfigRow,
  type PushWireVersion,
} from '@switchboard/store';
import { refusedNotifyUrl } from '@switchboard/triage';
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
  turnStatusesOfTaskState,
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

/**
 * The JSON-RPC error a message to an agent of a paused tenant (docs/adr/0030) answers with: the
 * stopped agent's neighbour in the implementation-defined range. Nothing is admitted; reads
 * (GetTask, ListTasks, the push configs) still work, as the REST API's do.
 */
export const TENANT_PAUSED_CODE = -32051;

const serverError = (code: number, message: string): JsonRpcTransportError =>
  new JsonRpcTransportError({ jsonrpc: '2.0', id: null, error: { code, message } });

export const agentStopped = (err: AgentStoppedError): JsonRpcTransportError =>
  serverError(AGENT_STOPPED_CODE, err.message);

/** ListTasks' page size when the request names none, and the most it may name (the v1.0 proto's). */
const LIST_PAGE_SIZE = 50;
const LIST_PAGE_MAX = 100;

/** What A2aAgent needs besides the turns: its statements, the SSRF allowlist, the request's version. */
export interface A2aAgentDeps {
  store: A2aStore;
  /** OUTBOUND_WEBHOOK_ALLOW_HOSTS: a push URL is checked as a notify URL is (PATCH /v1/settings). */
  allowHosts: ReadonlySet<string>;
  /** Whether the tenant has a webhook signing secret (deliveries are signed with it). */
  signs: () => Promise<boolean>;
  /** The wire version of this request: a config set through it is delivered in its shape. */
  version: PushWireVersion;
  /**
   * The agents a key limited to agents reaches (docs/adr/0066): a context (session) of another is
   * refused as a missing one. Unset: every agent.
   */
  reach?: string[];
}

/** A header value a client may name: no control characters (no header injection), bounded. */
const HEADER_SAFE = /^[\x20-\x7e]*$/;
const AUTH_SCHEME = /^[A-Za-z][A-Za-z0-9!#$%&'*+.^_`|~-]{0,49}$/;

/** One agent of one tenant, as the SDK's JSON-RPC transport calls it. */
export class A2aAgent implements A2ARequestHandler {
  constructor(
    private readonly turns: AgentTurns,
    private readonly tenantId: string,
    private readonly agent: Agent,
    private readonly card: AgentCard,
    /** Ends every stream of the request (the client left). */
    private readonly gone: AbortSignal,
    private readonly deps: A2aAgentDeps,
  ) {}

  getAgentCard(): Promise<AgentCard> {
    return Promise.resolve(this.card);
  }

  getAuthenticatedExtendedAgentCard(): Promise<AgentCard> {
    return Promise.reject(new ExtendedAgentCardNotConfiguredError('no extended agent card'));
  }

  /** Admits the message; blocks until the task ends (or pauses), unless `returnImmediately`. */
  async sendMessage(params: SendMessageRequest): Promise<Message | Task> {
    const { started, history, inline } = await this.start(params);
    try {
      if (inline) await this.save({ ...inline, taskId: started.turnId });
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
    const { started, history, inline } = await this.start(params);
    try {
      if (inline) await this.save({ ...inline, taskId: started.turnId });
    } catch (err) {
      started.watch.close();
      throw err;
    }
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
      await this.turns.cancel(this.tenantId, turn.id, cancelCause('api_cancel', 'A2A tasks/cancel'));
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

  /**
   * The agent's tasks, newest first (v1.0 ListTasks; v0.3 has no tasks/list): filtered by
   * `contextId`, `status` and `statusTimestampAfter`, `pageSize` 1–100 (50), `pageToken` the
   * previous page's `nextPageToken`; `historyLength` and `includeArtifacts` shape each task.
   */
  async listTasks(params: ListTasksRequest): Promise<ListTasksResponse> {
    const pageSize = params.pageSize ?? LIST_PAGE_SIZE;
    if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > LIST_PAGE_MAX) {
      throw new RequestMalformedError(`pageSize must be an integer from 1 to ${LIST_PAGE_MAX}`);
    }
    if (params.historyLength !== undefined && params.historyLength < 0) {
      throw new RequestMalformedError('historyLength must not be negative');
    }
    let statusAfter: Date | undefined;
    if (params.statusTimestampAfter) {
      statusAfter = new Date(params.statusTimestampAfter);
      if (Number.isNaN(statusAfter.getTime())) {
        throw new RequestMalformedError('statusTimestampAfter is not an ISO 8601 timestamp');
      }
    }
    const before = params.pageToken ? pageCursor(params.pageToken) : undefined;
    const statuses = params.status ? turnStatusesOfTaskState(params.status) : [];
    // A context that is not a session id, or a state no turn is in: no task matches.
    if ((params.contextId && !isUuid(params.contextId)) || (params.status && statuses.length === 0)) {
      return { tasks: [], nextPageToken: '', pageSize, totalSize: 0 };
    }
    const { rows, total } = await this.deps.store.listTurns({
      tenantId: this.tenantId,
      agentId: this.agent.id,
      ...(params.contextId ? { sessionId: params.contextId } : {}),
      statuses,
      ...(statusAfter ? { statusAfter } : {}),
      ...(before ? { before } : {}),
      limit: pageSize + 1,
    });
    const page = rows.slice(0, pageSize);
    const last = page[page.length - 1];
    return {
      tasks: page.map((turn) => {
        const task = taskOf(turn);
        if (params.historyLength !== undefined) {
          task.history = params.historyLength === 0 ? [] : task.history.slice(-params.historyLength);
        }
        if (!params.includeArtifacts) task.artifacts = [];
        return task;
      }),
      nextPageToken:
        rows.length > pageSize && last
          ? Buffer.from(JSON.stringify({ c: last.createdAt, i: last.id })).toString('base64url')
          : '',
      pageSize,
      totalSize: total,
    };
  }

  /**
   * Stores where the task's updates go (v0.3 tasks/pushNotificationConfig/set, v1.0
   * CreateTaskPushNotificationConfig). The URL is checked as a notify URL is (SSRF); the tenant
   * must have a signing secret. Deliveries: docs/adr/0037 (the completion-webhook hook).
   */
  async createTaskPushNotificationConfig(
    params: TaskPushNotificationConfig,
  ): Promise<TaskPushNotificationConfig> {
    const turn = await this.task(params.taskId);
    const config = await this.checkedConfig(params);
    await this.save({ ...config, taskId: turn.id });
    return { ...config, taskId: turn.id };
  }

  async getTaskPushNotificationConfig(
    params: GetTaskPushNotificationConfigRequest,
  ): Promise<TaskPushNotificationConfig> {
    const turn = await this.task(params.taskId);
    // v0.3's get may name no config: the task's first one, as the SDK's own handler answers.
    const row = params.id
      ? await this.deps.store.pushConfig(this.tenantId, turn.id, params.id)
      : (await this.deps.store.pushConfigs(this.tenantId, turn.id))[0];
    const config = row && configOf(row);
    if (!config) {
      throw new TaskNotFoundError(
        `task ${turn.id} has no push notification config ${params.id || ''}`.trim(),
      );
    }
    return config;
  }

  async listTaskPushNotificationConfigs(
    params: ListTaskPushNotificationConfigsRequest,
  ): Promise<ListTaskPushNotificationConfigsResponse> {
    const turn = await this.task(params.taskId);
    const rows = await this.deps.store.pushConfigs(this.tenantId, turn.id);
    return { configs: rows.map(configOf), nextPageToken: '' };
  }

  async deleteTaskPushNotificationConfig(params: DeleteTaskPushNotificationConfigRequest): Promise<void> {
    const turn = await this.task(params.taskId);
    if (!(await this.deps.store.deletePushConfig(this.tenantId, turn.id, params.id))) {
      throw new TaskNotFoundError(`task ${turn.id} has no push notification config ${params.id}`);
    }
  }

  /** A config as a client sent it, checked: every refusal before anything is stored or admitted. */
  private async checkedConfig(
    c: TaskPushNotificationConfig,
  ): Promise<TaskPushNotificationConfig & { id: string }> {
    let url: URL;
    try {
      url = new URL(c.url);
    } catch {
      throw new RequestMalformedError('pushNotificationConfig.url is not a URL');
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') {
      throw new RequestMalformedError('pushNotificationConfig.url must be http(s)');
    }
    if (c.url.length > 2000)
      throw new RequestMalformedError('pushNotificationConfig.url is longer than 2000');
    const id = c.id || newId();
    if (id.length > 100 || !HEADER_SAFE.test(id)) {
      throw new RequestMalformedError('pushNotificationConfig.id must be 1 to 100 printable characters');
    }
    if (c.token && (c.token.length > 1000 || !HEADER_SAFE.test(c.token))) {
      throw new RequestMalformedError(
        'pushNotificationConfig.token must be at most 1000 printable characters',
      );
    }
    const auth = c.authentication;
    if (auth?.scheme || auth?.credentials) {
      if (!AUTH_SCHEME.test(auth.scheme ?? '')) {
        throw new RequestMalformedError(
          'authentication.scheme must be an HTTP auth scheme name (e.g. Bearer)',
        );
      }
      if (!auth.credentials || auth.credentials.length > 2000 || !HEADER_SAFE.test(auth.credentials)) {
        throw new RequestMalformedError(
          'authentication.credentials must be 1 to 2000 printable characters (sent as Authorization: <scheme> <credentials>)',
        );
      }
    }
    const refused = await refusedNotifyUrl(c.url, this.deps.allowHosts);
    if (refused) throw new RequestMalformedError(`pushNotificationConfig.url is refused: ${refused}`);
    if (!(await this.deps.signs())) {
      throw new PushNotificationNotSupportedError(
        "push notifications are signed with the tenant's webhook secret (Standard Webhooks): set notifyUrl " +
          'and notifySecret with PATCH /v1/settings first',
      );
    }
    return { ...c, tenant: '', id, authentication: auth?.scheme ? auth : undefined };
  }

  private async save(config: TaskPushNotificationConfig & { id: string }): Promise<void> {
    const row: PushConfigRow = {
      configId: config.id,
      turnId: config.taskId,
      url: config.url,
      token: config.token || null,
      authScheme: config.authentication?.scheme || null,
      authCredentials: config.authentication?.credentials || null,
    };
    if (!(await this.deps.store.savePushConfig(this.tenantId, this.agent.id, row, this.deps.version))) {
      throw new RequestMalformedError(
        `a task keeps at most ${PUSH_CONFIGS_PER_TASK} push notification configs`,
      );
    }
  }

  /** The tenant's turn of this agent; TaskNotFound otherwise (another tenant's, another agent's). */
  private async task(id: string): Promise<TurnResponse> {
    const turn = await this.turns.turn(this.tenantId, id);
    if (!turn || turn.agentId !== this.agent.id) throw new TaskNotFoundError(`task ${id} not found`);
    return turn;
  }

  /**
   * Admits the message. A push config sent with it (`configuration.taskPushNotificationConfig`) is
   * checked before anything is admitted; the caller stores it for the new task.
   */
  private async start(params: SendMessageRequest): Promise<{
    started: StartedTurn;
    history: Message[];
    inline?: TaskPushNotificationConfig & { id: string };
  }> {
    const message = params.message;
    const text = messageText(message);
    const sent = params.configuration?.taskPushNotificationConfig;
    const inline = sent ? await this.checkedConfig(sent) : undefined;
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
        ...(this.deps.reach ? { reach: this.deps.reach } : {}),
      });
    } catch (err) {
      if (err instanceof SessionRefused) throw new RequestMalformedError(`contextId: ${err.message}`);
      if (err instanceof AgentStoppedError) throw agentStopped(err);
      if (err instanceof TenantPausedError) throw serverError(TENANT_PAUSED_CODE, err.message);
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
    return { started, history: [user], ...(inline ? { inline } : {}) };
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

/** A stored push config as A2A's TaskPushNotificationConfig. */
const configOf = (r: PushConfigRow): TaskPushNotificationConfig => ({
  tenant: '',
  id: r.configId,
  taskId: r.turnId,
  url: r.url,
  token: r.token ?? '',
  authentication:
    r.authScheme !== null ? { scheme: r.authScheme, credentials: r.authCredentials ?? '' } : undefined,
});

/** A ListTasks page token: the last task's creation time and id, base64url JSON. */
function pageCursor(token: string): { createdAt: Date; id: string } {
  try {
    const { c, i } = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as {
      c: unknown;
      i: unknown;
    };
    const createdAt = new Date(String(c));
    if (typeof i === 'string' && isUuid(i) && !Number.isNaN(createdAt.getTime())) return { createdAt, id: i };
  } catch {
    // fall through: not a token this server made
  }
  throw new RequestMalformedError('pageToken is not a token a previous ListTasks answered');
}
