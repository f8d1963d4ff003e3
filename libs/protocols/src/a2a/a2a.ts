import { AgentCard, Role, TaskState } from '@a2a-js/sdk';
import type { Message, Part, StreamResponse, Task } from '@a2a-js/sdk';
import { RequestMalformedError } from '@a2a-js/sdk/errors';
import { V03PushNotificationSerializer } from '@a2a-js/sdk/compat/v0_3/server';
import { V1PushNotificationSerializer } from '@a2a-js/sdk/server';
import { cancelledText, type TaskTurn, type TurnResponse } from '@switchboard/contracts';

/**
 * A2A over turns (docs/adr/0037): each agent of the tenant is an A2A agent at `/a2a/{agentId}`, a
 * task is a turn (task id = turn id), a context is a session (contextId = session id). The SDK's
 * JSON-RPC transport handler (@a2a-js/sdk/server, v1.0 methods and v0.3's through its compat layer)
 * parses and answers; the gateway's `A2aAgent` (apps/gateway/src/protocols/a2a) is the request
 * handler it calls. This is the mapping: a turn as a task, its status message and artifact, the
 * client's message as text, the agent card. Plain functions.
 */

/** The columns of an agent its card is made of. */
export interface CardAgent {
  name: string;
  instructions: string;
  updatedAt: Date;
}

/** A turn as a task refers to it: the turn (task), its session (context) and its agent. */
export interface TaskRef {
  turnId: string;
  sessionId: string;
  agentId: string;
}

/** The artifact a task's answer streams into. */
export const ANSWER_ARTIFACT_ID = 'answer';

/** Which turn statuses a task state filter means (ListTasks `status`). */
const STATUSES_OF: Partial<Record<TaskState, string[]>> = {
  [TaskState.TASK_STATE_SUBMITTED]: ['queued'],
  [TaskState.TASK_STATE_WORKING]: ['running', 'awaiting_subagent'],
  [TaskState.TASK_STATE_INPUT_REQUIRED]: ['awaiting_approval', 'awaiting_client_tool'],
  [TaskState.TASK_STATE_COMPLETED]: ['completed'],
  [TaskState.TASK_STATE_FAILED]: ['failed'],
  [TaskState.TASK_STATE_CANCELED]: ['cancelled'],
};

/** The turn statuses a task state stands for (ListTasks `status`); [] for a state no turn is ever in (rejected, auth-required). */
export const turnStatusesOfTaskState = (state: TaskState): string[] => STATUSES_OF[state] ?? [];

/** Where a turn stands, in A2A's task states. */
export function taskStateOf(status: string): TaskState {
  switch (status) {
    case 'queued':
      return TaskState.TASK_STATE_SUBMITTED;
    case 'running':
    case 'awaiting_subagent':
      return TaskState.TASK_STATE_WORKING;
    case 'awaiting_approval':
    case 'awaiting_client_tool':
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
export function agentMessage(turn: Pick<TurnResponse, 'id' | 'sessionId'>, text: string): Message {
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

/** What the status message of a turn says: its answer, its failure, why it was cancelled, or why it waits. */
export function statusText(
  turn: Pick<TurnResponse, 'id' | 'status' | 'finalText' | 'failure' | 'stopReason'> &
    Partial<Pick<TurnResponse, 'cancelReason' | 'cancelNote'>>,
): string | undefined {
  switch (turn.status) {
    case 'completed':
      return turn.finalText ?? '';
    case 'failed': {
      const f = turn.failure;
      return `turn ${turn.id} failed (${f ? `${f.kind}: ${f.brief || f.message}` : (turn.stopReason ?? 'failed')})`;
    }
    case 'cancelled':
      // A2A's `canceled` state has no reason field: the status message names it (docs/adr/0055).
      return cancelledText(turn, 'was cancelled');
    case 'awaiting_approval':
      return 'waiting for a person to approve a tool call (Switchboard approvals API)';
    case 'awaiting_client_tool':
      return `waiting for the client's tool results (POST /v1/turns/${turn.id}/client-tool-results)`;
    case 'queued':
    case 'running':
    case 'awaiting_subagent':
      return undefined;
  }
}

/** A turn as an A2A task; `history` holds the client's message when the caller has it. */
export function taskOf(turn: TaskTurn, history: Message[] = []): Task {
  const text = statusText(turn);
  const message = text === undefined ? undefined : agentMessage(turn, text);
  // …and its metadata carries it as data: `cancelReason` (the CancelReason value) and `cancelNote`.
  if (message && turn.status === 'cancelled' && turn.cancelReason) {
    message.metadata = { cancelReason: turn.cancelReason, cancelNote: turn.cancelNote ?? null };
  }
  return {
    id: turn.id,
    contextId: turn.sessionId,
    status: {
      state: taskStateOf(turn.status),
      message,
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
export function submittedTask(t: TaskRef, history: Message[]): Task {
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

/** The A2A protocol version the v0.3 fields of the card name (v0.3's schema: `protocolVersion`). */
export const A2A_V03_PROTOCOL_VERSION = '0.3.0';

/** The agent card (A2A v1.0, with a v0.3 JSON-RPC interface on the same URL). */
export function agentCardOf(agent: CardAgent, url: string): AgentCard {
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
    capabilities: { streaming: true, pushNotifications: true, extensions: [], extendedAgentCard: false },
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

export const statusUpdate = (
  t: Pick<TaskRef, 'turnId' | 'sessionId'>,
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

/**
 * The card as served: the v1.0 proto JSON (`supportedInterfaces`, `securityRequirements`, …) with
 * v0.3's fields beside it (top-level `url`, `protocolVersion`, `preferredTransport`, `security`,
 * and each security scheme's v0.3 `type`/`scheme` next to its v1.0 `httpAuthSecurityScheme`), so a
 * v0.3 client (which reads `url`) and a v1.0 client (which reads `supportedInterfaces`; the SDK's
 * resolver treats a card with them as v1.0) both find the JSON-RPC endpoint. Neither version's
 * schema forbids the other's fields; test fixtures check the card against both (docs/adr/0037).
 */
export function agentCardJson(card: AgentCard): Record<string, unknown> {
  const v1 = AgentCard.toJSON(card) as Record<string, unknown>;
  const v03 =
    card.supportedInterfaces.find((i) => i.protocolVersion === '0.3') ?? card.supportedInterfaces[0];
  const schemes: Record<string, unknown> = {};
  for (const [name, s] of Object.entries(card.securitySchemes)) {
    const v1Scheme = (v1.securitySchemes as Record<string, Record<string, unknown>>)[name];
    schemes[name] =
      s.scheme?.$case === 'httpAuthSecurityScheme'
        ? {
            ...v1Scheme,
            type: 'http',
            scheme: s.scheme.value.scheme.toLowerCase(),
            ...(s.scheme.value.bearerFormat ? { bearerFormat: s.scheme.value.bearerFormat } : {}),
            ...(s.scheme.value.description ? { description: s.scheme.value.description } : {}),
          }
        : v1Scheme;
  }
  return {
    ...v1,
    url: v03.url,
    protocolVersion: A2A_V03_PROTOCOL_VERSION,
    preferredTransport: v03.protocolBinding,
    supportsAuthenticatedExtendedCard: card.capabilities?.extendedAgentCard ?? false,
    securitySchemes: schemes,
    security: card.securityRequirements.map((r) =>
      Object.fromEntries(Object.entries(r.schemes).map(([name, list]) => [name, list.list])),
    ),
  };
}

/** The A2A wire versions a push notification config is delivered in (the version it was set with). */
export type A2aPushVersion = '0.3' | '1.0';

/**
 * The body of an A2A push notification of the task (docs/adr/0037): v1.0 a `StreamResponse` holding
 * the task (proto JSON, `{"task": …}`), v0.3 the task itself (`kind: "task"`), each by the SDK's own
 * push serializer for that version, so the shapes are what that version's clients parse.
 */
export function a2aPushBody(turn: TaskTurn, version: A2aPushVersion): Record<string, unknown> {
  const task = taskOf(turn);
  const event: StreamResponse = { payload: { $case: 'task', value: task } };
  const serializer =
    version === '0.3' ? new V03PushNotificationSerializer() : new V1PushNotificationSerializer();
  return JSON.parse(serializer.serialize(event, task).body) as Record<string, unknown>;
}
