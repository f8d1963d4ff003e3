import { parseHeadlessToolInterruptPayload } from '@langchain/langgraph-sdk';
import { AppError, LangGraphRunRequest, LangGraphUpdateStateRequest } from '@switchboard/contracts';
import {
  assistantOf,
  checkpointEventOf,
  checkpointIdOf,
  clientToolsOfRun,
  decisionsOf,
  interruptOf,
  historyFilterOf,
  LangGraphError,
  messagesOf,
  planRun,
  resumeOf,
  runCheckpointOf,
  runStatusOf,
  stateOf,
  streamModesOf,
  threadOf,
  threadStatusOf,
  toLangGraphErrorAnswer,
  turnStatusesOf,
  updatesOf,
  updateStateOf,
  valuesOf,
  type ApprovalRow,
  type TurnRow,
} from './mapping';

const T0 = new Date('2026-11-27T10:00:00.000Z');
const T1 = new Date('2026-11-27T10:00:05.000Z');
const SESSION = {
  id: '01900000-0000-7000-8000-000000000001',
  agentId: '01900000-0000-7000-8000-00000000000a',
  status: 'active',
  metadata: { topic: 'x' },
  createdAt: T0,
  updatedAt: T0,
};
const turn = (id: string, status: string): TurnRow => ({
  id,
  sessionId: SESSION.id,
  agentId: SESSION.agentId,
  status,
  stopReason: null,
  failure: null,
  createdAt: T0,
  startedAt: T0,
  completedAt: status === 'completed' ? T1 : null,
});
const approval = (id: string, turnId: string): ApprovalRow => ({
  id,
  kind: 'approval',
  clientCallId: null,
  turnId,
  callId: 'call_1',
  toolName: 'word_count',
  arguments: { text: 'a b' },
  sideEffect: 'read_only',
  policy: 'agent',
  expiresAt: T1,
});
const run = (body: Record<string, unknown>) =>
  planRun(LangGraphRunRequest.parse({ assistant_id: 'a', ...body }));
const refused = (f: () => unknown, status: number, detail: RegExp) => {
  try {
    f();
  } catch (err) {
    expect(err).toBeInstanceOf(LangGraphError);
    expect((err as LangGraphError).status).toBe(status);
    expect((err as LangGraphError).detail).toMatch(detail);
    return;
  }
  throw new Error('not refused');
};

describe('LangGraph mapping (docs/adr/0038)', () => {
  it('an agent is an assistant: id, name as graph_id', () => {
    const a = assistantOf({
      id: SESSION.agentId,
      name: 'helper',
      model: 'openai-chat/gpt-4o-mini',
      tools: ['word_count'],
      approvalRequired: [],
      createdAt: T0,
      updatedAt: T1,
    });
    expect(a).toMatchObject({
      assistant_id: SESSION.agentId,
      graph_id: 'helper',
      name: 'helper',
      created_at: T0.toISOString(),
      updated_at: T1.toISOString(),
      version: 1,
    });
  });

  it('maps turn statuses to run statuses and back', () => {
    expect(
      ['queued', 'running', 'awaiting_subagent', 'awaiting_approval', 'completed', 'failed', 'cancelled'].map(
        runStatusOf,
      ),
    ).toEqual(['pending', 'running', 'running', 'interrupted', 'success', 'error', 'interrupted']);
    expect(turnStatusesOf('interrupted')).toEqual(['awaiting_approval', 'awaiting_client_tool', 'cancelled']);
    expect(runStatusOf('awaiting_client_tool')).toBe('interrupted');
    expect(threadStatusOf([turn('c', 'awaiting_client_tool')])).toBe('interrupted');
    expect(turnStatusesOf('running')).toEqual(['running', 'awaiting_subagent']);
    expect(turnStatusesOf('timeout')).toEqual([]);
  });

  it('a thread is busy while a turn runs, interrupted while one waits for approval, error after a failure', () => {
    expect(threadStatusOf([])).toBe('idle');
    expect(threadStatusOf([turn('b', 'completed')])).toBe('idle');
    expect(threadStatusOf([turn('b', 'queued'), turn('a', 'completed')])).toBe('busy');
    expect(threadStatusOf([turn('b', 'queued'), turn('a', 'awaiting_approval')])).toBe('interrupted');
    expect(threadStatusOf([turn('b', 'failed')])).toBe('error');
  });

  it('the transcript as LangChain message dicts: human, ai with tool_calls, tool', () => {
    const messages = messagesOf([
      {
        id: 'm1',
        turnId: 't',
        role: 'user',
        body: { type: 'text', text: 'count' },
        toolCalls: null,
        toolCallId: null,
      },
      {
        id: 'm2',
        turnId: 't',
        role: 'assistant',
        body: { type: 'text', text: '' },
        toolCalls: [{ id: 'call_1', name: 'word_count', arguments: '{"text":"a b"}' }],
        toolCallId: null,
      },
      {
        id: 'm3',
        turnId: 't',
        role: 'tool',
        body: { type: 'text', text: '{"words":2}' },
        toolCalls: null,
        toolCallId: 'call_1',
      },
      {
        id: 'm4',
        turnId: 't',
        role: 'assistant',
        body: { type: 'text', text: 'Two.' },
        toolCalls: [],
        toolCallId: null,
      },
      {
        id: 'm5',
        turnId: 't',
        role: 'user',
        body: { type: 'json', value: { a: 1 } },
        toolCalls: null,
        toolCallId: null,
      },
    ]);
    expect(messages.map((m) => [m.type, m.id, m.content])).toEqual([
      ['human', 'm1', 'count'],
      ['ai', 'm2', ''],
      ['tool', 'm3', '{"words":2}'],
      ['ai', 'm4', 'Two.'],
      ['human', 'm5', '{"a":1}'],
    ]);
    expect(messages[1].tool_calls).toEqual([
      { id: 'call_1', name: 'word_count', args: { text: 'a b' }, type: 'tool_call' },
    ]);
    expect(messages[2].tool_call_id).toBe('call_1');
    expect(updatesOf(messages.slice(1, 4))).toEqual([
      { agent: { messages: [messages[1]] } },
      { tools: { messages: [messages[2]] } },
      { agent: { messages: [messages[3]] } },
    ]);
  });

  it('a pending approval is an interrupt: in values, thread interrupts and the state’s task', () => {
    const paused = turn('t1', 'awaiting_approval');
    const pending = [approval('a1', 't1')];
    const values = valuesOf([], pending);
    expect(values.__interrupt__).toEqual([
      {
        id: 'a1',
        value: expect.objectContaining({
          type: 'approval',
          run_id: 't1',
          tool_call: { id: 'call_1', name: 'word_count', args: { text: 'a b' } },
        }),
      },
    ]);
    expect(valuesOf([], [])).toEqual({ messages: [] });
    const thread = threadOf(SESSION, { latest: [paused], messages: [], pending, graphId: 'helper' });
    expect(thread).toMatchObject({
      status: 'interrupted',
      interrupts: { t1: values.__interrupt__ },
      metadata: { topic: 'x', assistant_id: SESSION.agentId, graph_id: 'helper' },
    });
    const state = stateOf(SESSION, {
      ref: { kind: 'end', turnId: 't1' },
      turn: { ...paused, seq: 2 },
      parent: { kind: 'end', turnId: 't0' },
      messages: [],
      pending,
      paused,
    });
    expect(state.next).toEqual(['tools']);
    expect(state.tasks).toEqual([expect.objectContaining({ id: 't1', interrupts: values.__interrupt__ })]);
    expect(state.checkpoint).toEqual({
      thread_id: SESSION.id,
      checkpoint_ns: '',
      checkpoint_id: 't1',
      checkpoint_map: null,
    });
    expect(state.parent_checkpoint?.checkpoint_id).toBe('t0');
    expect(state.metadata).toMatchObject({ topic: 'x', source: 'loop', step: 2, run_id: 't1' });
    expect(checkpointEventOf(state)).toMatchObject({
      config: { configurable: { checkpoint_id: 't1' } },
      parent_config: { configurable: { checkpoint_id: 't0' } },
      next: ['tools'],
    });
    expect(
      stateOf(SESSION, { ref: null, turn: null, parent: null, messages: [], pending: [], paused: undefined }),
    ).toMatchObject({
      next: [],
      tasks: [],
      checkpoint: { checkpoint_id: null },
      parent_checkpoint: null,
      created_at: null,
      metadata: { source: 'input', step: -1, run_id: null },
    });
  });

  it('a run input and the initial state as checkpoints: next agent, ids derived from the run and the thread', () => {
    const run1 = '01900000-0000-7000-8000-0000000000a1';
    const done = { ...turn(run1, 'completed'), seq: 1 };
    const input = stateOf(SESSION, {
      ref: { kind: 'input', turnId: run1 },
      turn: done,
      parent: { kind: 'initial' },
      messages: [],
      pending: [],
      paused: undefined,
    });
    expect(input).toMatchObject({
      next: ['agent'],
      checkpoint: { checkpoint_id: '01900000-0000-8000-8000-0000000000a1' },
      parent_checkpoint: { checkpoint_id: '01900000-0000-8000-8000-000000000001' },
      metadata: { source: 'input', step: 1, run_id: run1, parents: {} },
      created_at: T0.toISOString(),
      tasks: [{ id: run1, name: 'agent', error: null, interrupts: [], checkpoint: null, state: null }],
    });
    const end = stateOf(SESSION, {
      ref: { kind: 'end', turnId: run1 },
      turn: done,
      parent: { kind: 'input', turnId: run1 },
      messages: [],
      pending: [],
      paused: undefined,
    });
    expect(end).toMatchObject({
      next: [],
      tasks: [],
      checkpoint: { checkpoint_id: run1 },
      parent_checkpoint: { checkpoint_id: input.checkpoint.checkpoint_id },
      metadata: { source: 'loop', step: 1, run_id: run1 },
      created_at: T1.toISOString(),
    });
    const initial = stateOf(SESSION, {
      ref: { kind: 'initial' },
      turn: null,
      parent: null,
      messages: [],
      pending: [],
      paused: undefined,
    });
    expect(initial).toMatchObject({
      next: [],
      values: { messages: [] },
      checkpoint: { checkpoint_id: '01900000-0000-8000-8000-000000000001' },
      parent_checkpoint: null,
      metadata: { source: 'input', step: -1, run_id: null },
      created_at: T0.toISOString(),
    });
  });

  it('reads a checkpoint a request names: a run id of the thread, or none for the current state', () => {
    const id = '01900000-0000-7000-8000-0000000000AB';
    expect(checkpointIdOf(SESSION.id, 'checkpoint', undefined)).toBeNull();
    expect(checkpointIdOf(SESSION.id, 'checkpoint', { thread_id: SESSION.id })).toBeNull();
    expect(checkpointIdOf(SESSION.id, 'checkpoint', { checkpoint_ns: '', checkpoint_id: null })).toBeNull();
    expect(checkpointIdOf(SESSION.id, 'checkpoint', { checkpoint_id: id })).toBe(id.toLowerCase());
    expect(checkpointIdOf(SESSION.id, 'before', id)).toBe(id.toLowerCase());
    expect(checkpointIdOf(SESSION.id, 'before', { configurable: { checkpoint_id: id } })).toBe(
      id.toLowerCase(),
    );
    refused(
      () => checkpointIdOf(SESSION.id, 'checkpoint', { checkpoint_id: 'c' }),
      422,
      /not a checkpoint id/,
    );
    refused(
      () => checkpointIdOf(SESSION.id, 'checkpoint', { thread_id: SESSION.agentId }),
      422,
      /another thread/,
    );
    refused(() => checkpointIdOf(SESSION.id, 'checkpoint', { checkpoint_ns: 'sub:1' }), 422, /subgraph/);
    const body = (b: Partial<LangGraphRunRequest>) => ({ assistant_id: 'a', ...b });
    expect(runCheckpointOf(SESSION.id, body({}))).toBeNull();
    expect(runCheckpointOf(SESSION.id, body({ checkpoint_id: id }))).toBe(id.toLowerCase());
    expect(runCheckpointOf(SESSION.id, body({ checkpoint: { checkpoint_id: id }, checkpoint_id: id }))).toBe(
      id.toLowerCase(),
    );
    refused(
      () =>
        runCheckpointOf(
          SESSION.id,
          body({ checkpoint: { checkpoint_id: id }, checkpoint_id: SESSION.agentId }),
        ),
      422,
      /different checkpoints/,
    );
    // LangGraph's server also reads a runnable config's checkpoint.
    expect(runCheckpointOf(SESSION.id, body({ config: { configurable: { checkpoint_id: id, x: 1 } } }))).toBe(
      id.toLowerCase(),
    );
    expect(runCheckpointOf(SESSION.id, body({ config: { configurable: { user: 'u' } } }))).toBeNull();
    refused(
      () =>
        runCheckpointOf(
          SESSION.id,
          body({ checkpoint_id: id, config: { configurable: { checkpoint_id: SESSION.agentId } } }),
        ),
      422,
      /different checkpoints/,
    );
    refused(
      () => runCheckpointOf(SESSION.id, body({ config: { configurable: { checkpoint_id: 'x' } } })),
      422,
      /config.configurable/,
    );
  });

  it('updateState maps only without values (a fork of a checkpoint); values and other nodes are refused', () => {
    const id = '01900000-0000-7000-8000-0000000000ab';
    const update = (b: Record<string, unknown>) =>
      updateStateOf(SESSION.id, LangGraphUpdateStateRequest.parse(b));
    expect(update({})).toBeNull();
    expect(update({ values: null, checkpoint_id: id, as_node: '__copy__' })).toBe(id);
    expect(
      update({ values: {}, checkpoint: { thread_id: SESSION.id, checkpoint_ns: '', checkpoint_id: id } }),
    ).toBe(id);
    expect(update({ values: { messages: [] }, checkpoint_id: id })).toBe(id);
    refused(
      () => update({ values: { messages: [{ type: 'human', content: 'x' }] } }),
      422,
      /values is not supported/,
    );
    refused(() => update({ values: { topic: 'x' }, checkpoint_id: id }), 422, /values is not supported/);
    refused(() => update({ values: [] }), 422, /values is not supported/);
    refused(() => update({ as_node: 'agent' }), 422, /__copy__/);
    refused(() => update({ checkpoint_id: 'c' }), 422, /not a checkpoint id/);
    refused(
      () => update({ checkpoint_id: id, checkpoint: { checkpoint_id: SESSION.agentId } }),
      422,
      /different/,
    );
    expect(() => LangGraphUpdateStateRequest.parse({ bogus: 1 })).toThrow();
  });

  it('a history metadata filter narrows to a step or a run, or matches none', () => {
    expect(historyFilterOf(SESSION, undefined)).toEqual({ none: false });
    expect(historyFilterOf(SESSION, { source: 'loop', topic: 'x', step: 3, parents: {} })).toEqual({
      none: false,
      seq: 3,
      source: 'loop',
    });
    expect(historyFilterOf(SESSION, { source: 'input', step: -1 })).toEqual({
      none: false,
      seq: -1,
      source: 'input',
    });
    expect(historyFilterOf(SESSION, { run_id: SESSION.agentId })).toEqual({
      none: false,
      turnId: SESSION.agentId,
    });
    expect(historyFilterOf(SESSION, { topic: 'y' })).toEqual({ none: true });
    expect(historyFilterOf(SESSION, { source: 'update' })).toEqual({ none: true });
    expect(historyFilterOf(SESSION, { step: 'one' })).toEqual({ none: true });
  });

  it('a run admits one human message, with its multitask strategy', () => {
    expect(run({ input: { messages: [{ type: 'human', content: 'hi' }] } })).toEqual({
      kind: 'message',
      text: 'hi',
      multitask: 'enqueue',
    });
    expect(
      run({ input: { messages: [{ role: 'user', content: [{ type: 'text', text: 'a' }, 'b'] }] } }),
    ).toMatchObject({
      text: 'a\n\nb',
    });
    expect(run({ input: { messages: ['hey'] }, multitask_strategy: 'interrupt' })).toMatchObject({
      multitask: 'interrupt',
    });
    expect(run({ command: { resume: 'approve' } })).toEqual({ kind: 'resume', resume: 'approve' });
  });

  it('refuses what it cannot honour (422) rather than ignoring it', () => {
    refused(() => run({ input: { messages: ['x'] }, multitask_strategy: 'rollback' }), 422, /rollback/);
    refused(() => run({ input: { messages: ['x'] }, interrupt_before: '*' }), 422, /interrupt_before/);
    refused(() => run({ input: { messages: ['x'] }, after_seconds: 5 }), 422, /after_seconds/);
    refused(() => run({ command: { goto: 'agent' } }), 422, /only `resume`/);
    refused(() => run({ input: { messages: ['x'] }, webhook: 'https://example.com/h' }), 422, /webhook/);
    refused(() => run({ input: { messages: ['x'] }, command: { resume: true } }), 422, /not both/);
    // No input: only a run from a run's input checkpoint takes none (the controller decides).
    expect(run({ input: { messages: [] } })).toEqual({ kind: 'none', multitask: 'enqueue' });
    expect(run({ input: null, multitask_strategy: 'interrupt' })).toEqual({
      kind: 'none',
      multitask: 'interrupt',
    });
    expect(run({})).toMatchObject({ kind: 'none' });
    refused(() => run({ input: { messages: ['a', 'b'] } }), 422, /exactly one/);
    refused(() => run({ input: { messages: [{ type: 'ai', content: 'x' }] } }), 422, /human/);
    refused(() => run({ input: { messages: ['  '] } }), 422, /no text/);
    refused(
      () => run({ input: { messages: [{ type: 'human', content: [{ type: 'image_url' }] }] } }),
      422,
      /text content/,
    );
    // Accepted and ignored: an empty interrupt list, a zero delay.
    expect(run({ input: { messages: ['x'] }, interrupt_before: [], after_seconds: 0 }).kind).toBe('message');
  });

  it('command.resume decides every pending approval: one value, or a map by interrupt id', () => {
    expect(decisionsOf('approve', ['a1', 'a2'])).toEqual([
      { approvalId: 'a1', verdict: 'approved', reason: null },
      { approvalId: 'a2', verdict: 'approved', reason: null },
    ]);
    expect(decisionsOf(false, ['a1'])).toEqual([{ approvalId: 'a1', verdict: 'rejected', reason: null }]);
    expect(decisionsOf({ decision: 'deny', reason: 'no' }, ['a1'])).toEqual([
      { approvalId: 'a1', verdict: 'rejected', reason: 'no' },
    ]);
    expect(decisionsOf({ type: 'accept' }, ['a1'])[0].verdict).toBe('approved');
    expect(decisionsOf({ a1: 'approve', a2: { decision: 'reject', reason: 'r' } }, ['a1', 'a2'])).toEqual([
      { approvalId: 'a1', verdict: 'approved', reason: null },
      { approvalId: 'a2', verdict: 'rejected', reason: 'r' },
    ]);
    refused(() => decisionsOf('approve', []), 409, /no interrupt/);
    refused(() => decisionsOf('maybe', ['a1']), 422, /command.resume/);
    refused(() => decisionsOf({ a1: 'approve' }, ['a1', 'a2']), 422, /every pending/);
    refused(() => decisionsOf({ a1: 'perhaps' }, ['a1']), 422, /command.resume/);
    refused(() => decisionsOf([1], ['a1']), 422, /command.resume/);
  });

  describe('client tools (headless-tool interrupts)', () => {
    const W1 = '0190aaaa-0000-7000-8000-000000000001';
    const W2 = '0190aaaa-0000-7000-8000-000000000002';
    const A1 = '0190aaaa-0000-7000-8000-0000000000a1';
    const call = (id: string) => `call_${id.replace(/-/g, '')}`;
    const wait = (id: string): ApprovalRow => ({
      ...approval(id, 'turn-1'),
      kind: 'client_tool',
      clientCallId: call(id),
      toolName: 'get_weather',
      // As the model wrote them: JSON text.
      arguments: '{"city":"Oslo"}',
    });

    it('a client tool wait is the interrupt the SDK recognises as a headless tool', () => {
      const i = interruptOf(wait(W1));
      expect(i).toMatchObject({
        id: W1,
        value: { type: 'tool', toolCall: { id: call(W1), name: 'get_weather', args: { city: 'Oslo' } } },
      });
      expect(parseHeadlessToolInterruptPayload(i.value)?.toolCall.id).toBe(call(W1));
      expect(parseHeadlessToolInterruptPayload(interruptOf(approval(A1, 'turn-1')).value)).toBeNull();
    });

    it('context.tools: OpenAI function tools or bare {name, description, parameters|schema}', () => {
      const params = { type: 'object', properties: { city: { type: 'string' } } };
      expect(
        clientToolsOfRun({
          context: {
            tools: [
              { type: 'function', function: { name: 'a', description: 'A', parameters: params } },
              { name: 'b', schema: params },
              { name: 'c' },
            ],
          },
        }),
      ).toEqual([
        { name: 'a', description: 'A', parameters: params },
        { name: 'b', description: '', parameters: params },
        { name: 'c', description: '', parameters: { type: 'object', properties: {} } },
      ]);
      expect(clientToolsOfRun({})).toEqual([]);
      expect(clientToolsOfRun({ context: { model: 'x' } })).toEqual([]);
      refused(() => clientToolsOfRun({ context: 'tools' }), 422, /context: must be an object/);
      refused(() => clientToolsOfRun({ context: { tools: {} } }), 422, /context.tools: must be a list/);
      refused(() => clientToolsOfRun({ context: { tools: [1] } }), 422, /context.tools\[0\]/);
      refused(() => clientToolsOfRun({ context: { tools: [{ description: 'x' }] } }), 422, /needs a name/);
      refused(
        () => clientToolsOfRun({ context: { tools: [{ type: 'web_search', name: 'x' }] } }),
        422,
        /only function tools/,
      );
      refused(
        () =>
          clientToolsOfRun({
            context: { tools: Array.from({ length: 129 }, (_, i) => ({ name: `t${i}` })) },
          }),
        422,
        /at most 128/,
      );
    });

    it('command.resume answers client tools in every shape the SDK sends', () => {
      const one = [wait(W1)];
      const results = (r: ReturnType<typeof resumeOf>) => r.results;
      // headlessToolResumeCommand: {[toolCall.id]: result}
      expect(results(resumeOf({ [call(W1)]: { temp: 21 } }, one))).toEqual([
        { callId: call(W1), output: '{"temp":21}' },
      ]);
      // the batch form: {[interrupt id]: {[toolCall.id]: result}}
      expect(results(resumeOf({ [W1]: { [call(W1)]: 'sunny' } }, one))).toEqual([
        { callId: call(W1), output: 'sunny' },
      ]);
      // by interrupt id alone, or the bare result when one call waits
      expect(results(resumeOf({ [W1]: 'sunny' }, one))).toEqual([{ callId: call(W1), output: 'sunny' }]);
      expect(results(resumeOf({ temp: 3 }, one))).toEqual([{ callId: call(W1), output: '{"temp":3}' }]);
      expect(results(resumeOf('rain', one))).toEqual([{ callId: call(W1), output: 'rain' }]);
      // Nothing pending any more: call ids are still an answer (a replay, or refused by the store).
      expect(results(resumeOf({ [call(W1)]: 'sunny' }, []))).toEqual([{ callId: call(W1), output: 'sunny' }]);
      expect(results(resumeOf({ [W1]: { [call(W1)]: 'sunny' } }, []))).toEqual([
        { callId: call(W1), output: 'sunny' },
      ]);
      // Two calls: a map is needed.
      const two = [wait(W1), wait(W2)];
      expect(results(resumeOf({ [call(W1)]: 'a', [W2]: 'b' }, two))).toEqual([
        { callId: call(W1), output: 'a' },
        { callId: call(W2), output: 'b' },
      ]);
      refused(() => resumeOf('rain', two), 422, /client tool calls/);
      // With an approval pending too: one map by interrupt id names both kinds.
      const mixed = [wait(W1), approval(A1, 'turn-1')];
      expect(resumeOf({ [W1]: 'sunny', [A1]: 'approve' }, mixed)).toEqual({
        results: [{ callId: call(W1), output: 'sunny' }],
        decisions: [{ approvalId: A1, verdict: 'approved', reason: null }],
      });
      refused(() => resumeOf({ [call(W1)]: 'sunny' }, mixed), 422, /decide every pending/);
      refused(() => resumeOf('approve', mixed), 422, /client tool calls/);
      // Approvals alone: as before.
      expect(resumeOf('approve', [approval(A1, 'turn-1')])).toEqual({
        results: [],
        decisions: [{ approvalId: A1, verdict: 'approved', reason: null }],
      });
      refused(() => resumeOf('approve', []), 409, /no interrupt/);
    });
  });

  it('stream modes default to values', () => {
    expect([...streamModesOf(undefined)]).toEqual(['values']);
    expect([...streamModesOf('updates')]).toEqual(['updates']);
    expect([...streamModesOf(['values', 'messages-tuple', 'values'])]).toEqual(['values', 'messages-tuple']);
  });

  it('errors in LangGraph’s {detail} shape; a validation failure is 422', () => {
    // The gateway's own mapping of an AppError (the error filter passes it in).
    const native = (e: unknown) => {
      const app = e as AppError;
      return { status: app.status, body: app.toBody(), headers: {} };
    };
    expect(toLangGraphErrorAnswer(new LangGraphError(409, 'busy'), native)).toEqual({
      status: 409,
      body: { detail: 'busy' },
      headers: {},
    });
    expect(
      toLangGraphErrorAnswer(new AppError('validation_failed', 'limit: too small'), native),
    ).toMatchObject({
      status: 422,
      body: { detail: 'limit: too small' },
    });
    expect(
      toLangGraphErrorAnswer(new AppError('unauthorized', 'invalid or revoked API key'), native),
    ).toMatchObject({
      status: 401,
      body: { detail: 'invalid or revoked API key' },
    });
  });
});
