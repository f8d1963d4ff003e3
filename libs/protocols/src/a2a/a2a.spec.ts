import { AgentCard, Role, TaskState, type Message } from '@a2a-js/sdk';
import type { TurnResponse } from '@switchboard/contracts';
import { a2aPushBody, agentCardOf, messageText, taskOf, taskStateOf, textPart, type CardAgent } from './a2a';

const turn = (over: Partial<TurnResponse>): TurnResponse =>
  ({
    id: 't1',
    sessionId: 's1',
    agentId: 'a1',
    status: 'completed',
    finalText: 'the answer',
    stopReason: 'final_answer',
    failure: null,
    createdAt: '2026-01-01T00:00:00.000Z',
    startedAt: '2026-01-01T00:00:01.000Z',
    completedAt: '2026-01-01T00:00:02.000Z',
    ...over,
  }) as TurnResponse;

const message = (parts: Message['parts']): Message => ({
  messageId: 'm1',
  contextId: '',
  taskId: '',
  role: Role.ROLE_USER,
  parts,
  metadata: undefined,
  extensions: [],
  referenceTaskIds: [],
});

describe('A2A task states', () => {
  it('maps every turn status', () => {
    expect(
      [
        'queued',
        'running',
        'awaiting_subagent',
        'awaiting_approval',
        'awaiting_client_tool',
        'completed',
        'failed',
        'cancelled',
      ].map(taskStateOf),
    ).toEqual([
      TaskState.TASK_STATE_SUBMITTED,
      TaskState.TASK_STATE_WORKING,
      TaskState.TASK_STATE_WORKING,
      TaskState.TASK_STATE_INPUT_REQUIRED,
      TaskState.TASK_STATE_INPUT_REQUIRED,
      TaskState.TASK_STATE_COMPLETED,
      TaskState.TASK_STATE_FAILED,
      TaskState.TASK_STATE_CANCELED,
    ]);
  });
});

describe('a turn as a task', () => {
  it('completed: the answer as the status message and the answer artifact; task = turn, context = session', () => {
    const task = taskOf(turn({}));
    expect(task).toMatchObject({
      id: 't1',
      contextId: 's1',
      status: { state: TaskState.TASK_STATE_COMPLETED },
    });
    expect(task.status?.message?.parts).toEqual([textPart('the answer')]);
    expect(task.artifacts.map((a) => a.parts)).toEqual([[textPart('the answer')]]);
    expect(task.status?.timestamp).toBe('2026-01-01T00:00:02.000Z');
  });

  it('failed: why, and no artifact; running: no message', () => {
    const failed = taskOf(
      turn({
        status: 'failed',
        finalText: null,
        failure: { kind: 'budget', brief: 'maxUsd', message: 'x' } as TurnResponse['failure'],
      }),
    );
    expect(failed.status?.message?.parts).toEqual([textPart('turn t1 failed (budget: maxUsd)')]);
    expect(failed.artifacts).toEqual([]);
    expect(taskOf(turn({ status: 'running', completedAt: null })).status?.message).toBeUndefined();
  });
});

describe('a client message', () => {
  it('its text and data parts, in order; files and empty messages are refused', () => {
    expect(
      messageText(
        message([
          textPart('plan a trip'),
          { ...textPart(''), content: { $case: 'data', value: { days: 3 } } },
        ]),
      ),
    ).toBe('plan a trip\n{"days":3}');
    expect(() => messageText(message([]))).toThrow('no text');
    expect(() =>
      messageText(message([{ ...textPart(''), content: { $case: 'url', value: 'https://x/y.pdf' } }])),
    ).toThrow('only text and data parts');
    expect(() => messageText(undefined)).toThrow('required');
  });
});

describe('the agent card', () => {
  it('names the agent, its JSON-RPC endpoint (v1.0 and v0.3) and the bearer scheme, as v1.0 JSON', () => {
    const agent = {
      id: 'a1',
      name: 'travel',
      instructions: 'Plan trips.',
      updatedAt: new Date('2026-01-01T00:00:00Z'),
    } as unknown as CardAgent;
    const json = AgentCard.toJSON(agentCardOf(agent, 'https://sb.example/a2a/a1')) as Record<string, unknown>;
    expect(json).toMatchObject({
      name: 'travel',
      description: 'Plan trips.',
      supportedInterfaces: [
        { url: 'https://sb.example/a2a/a1', protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
        { url: 'https://sb.example/a2a/a1', protocolBinding: 'JSONRPC', protocolVersion: '0.3' },
      ],
      capabilities: { streaming: true, pushNotifications: true },
      securitySchemes: { bearer: { httpAuthSecurityScheme: { scheme: 'Bearer', bearerFormat: 'API key' } } },
      securityRequirements: [{ schemes: { bearer: {} } }],
    });
  });
});

describe('A2A push notification bodies', () => {
  it('v1.0: a StreamResponse holding the task (proto JSON); v0.3: the task itself (kind: task)', () => {
    const done = turn({ status: 'completed', finalText: 'the answer' });
    expect(a2aPushBody(done, '1.0')).toMatchObject({
      task: {
        id: 't1',
        contextId: 's1',
        status: { state: 'TASK_STATE_COMPLETED' },
        artifacts: [{ artifactId: 'answer', parts: [{ text: 'the answer' }] }],
      },
    });
    expect(a2aPushBody(done, '0.3')).toMatchObject({
      kind: 'task',
      id: 't1',
      contextId: 's1',
      status: { state: 'completed' },
      artifacts: [{ artifactId: 'answer', parts: [{ kind: 'text', text: 'the answer' }] }],
    });
    expect(a2aPushBody(turn({ status: 'cancelled', finalText: null }), '0.3')).toMatchObject({
      status: { state: 'canceled' },
    });
  });
});
