import { createTestEnv, FakeLlmServer, waitFor, type TestEnv } from '@switchboard/testing';
import { newTenant, type Api } from '../support/api';
import { startStack } from '../support/stack';

/**
 * The same end-to-end path with the real `openai` SDK (Chat Completions,
 * streaming, tool calls) against a local server that speaks its wire format.
 */
describe('the message path through the openai SDK', () => {
  let env: TestEnv;
  let llm: FakeLlmServer;
  let stack: Awaited<ReturnType<typeof startStack>>;
  let api: Api;

  beforeAll(async () => {
    env = await createTestEnv();
    llm = await FakeLlmServer.start();
    stack = await startStack(env.config(llm.providerEnv));
    ({ api } = await newTenant(stack.url, 'test-admin-token-0123456789'));
  });

  afterAll(async () => {
    await stack?.close();
    await llm?.close();
    await env?.cleanup();
  });

  it('runs a tool call and a second model round, and books the usage', async () => {
    llm.enqueue(
      {
        kind: 'message',
        toolCalls: [{ id: 'call_abc', name: 'word_count', arguments: '{"text":"alpha beta gamma"}' }],
        usage: { input: 120, output: 15, cached: 20 },
      },
      { kind: 'message', text: 'There are three words.', usage: { input: 160, output: 8 }, costUsd: 0.0042 },
    );
    const agent = await api.post('/v1/agents', {
      name: 'gpt',
      model: 'openai-chat/gpt-4o-mini',
      instructions: 'Use tools.',
      tools: ['word_count'],
    });
    const session = await api.post('/v1/sessions', { agentId: agent.body.id });
    const admitted = await api.post(`/v1/sessions/${session.body.id}/messages`, {
      content: 'how many words?',
    });

    const turn = await waitFor(async () => {
      const r = await api.get(`/v1/turns/${admitted.body.turnId}`);
      return ['completed', 'failed'].includes(r.body.status) ? r.body : undefined;
    });
    expect(turn.status).toBe('completed');
    expect(turn.finalText).toBe('There are three words.');
    expect(turn.toolCalls).toEqual([
      expect.objectContaining({
        callId: 'call_abc',
        name: 'word_count',
        result: { words: 3, characters: 16 },
      }),
    ]);
    expect(turn.usage).toEqual({ inputTokens: 280, outputTokens: 23, cachedTokens: 20, cacheWriteTokens: 0 });

    // What went over the wire.
    const [first, second] = llm.requests.filter((r) => r.endpoint === 'openai.chat.completions');
    expect(first.stream).toBe(true);
    expect(first.headers.authorization).toBe('Bearer sk-test');
    const body1 = first.body as {
      model: string;
      messages: { role: string; content: string }[];
      tools: unknown[];
    };
    expect(body1.model).toBe('gpt-4o-mini');
    expect(body1.messages.map((m) => m.role)).toEqual(['system', 'user']);
    expect(body1.messages[0].content).toContain('Use tools.');
    // The agent's tool, then tokenjuice_retrieve, offered to every agent that compacts tool results
    // (docs/adr/0033).
    expect(body1.tools).toEqual([
      expect.objectContaining({
        type: 'function',
        function: expect.objectContaining({ name: 'word_count' }),
      }),
      expect.objectContaining({
        type: 'function',
        function: expect.objectContaining({ name: 'tokenjuice_retrieve' }),
      }),
    ]);
    const body2 = second.body as { messages: Record<string, unknown>[] };
    expect(body2.messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool']);
    expect(body2.messages[2].tool_calls).toEqual([
      {
        id: 'call_abc',
        type: 'function',
        function: { name: 'word_count', arguments: '{"text":"alpha beta gamma"}' },
      },
    ]);
    expect(body2.messages[3]).toMatchObject({ role: 'tool', tool_call_id: 'call_abc' });
    expect(JSON.parse(body2.messages[3].content as string)).toEqual({
      ok: true,
      result: { words: 3, characters: 16 },
    });

    // The ledger: the rate table for the first round, the provider-reported amount for the second.
    const ledger = await env.db.ledgerEntry.findMany({ where: { turnId: turn.id }, orderBy: { key: 'asc' } });
    expect(ledger.map((e) => [e.costSource, e.inputTokens, e.outputTokens, e.cachedTokens])).toEqual([
      ['rate_table', 120, 15, 20],
      ['provider', 160, 8, 0],
    ]);
    expect(Number(ledger[1].costUsd)).toBeCloseTo(0.0042, 8);
    // gpt-4o-mini: 100 uncached input at $0.15/M, 20 cached at $0.075/M, 15 output at $0.60/M.
    expect(Number(ledger[0].costUsd)).toBeCloseTo((100 * 0.15 + 20 * 0.075 + 15 * 0.6) / 1e6, 10);
  });

  it('a new agent has no tools unless it names them; an unknown name is refused at creation', async () => {
    const refused = await api.post('/v1/agents', { name: 'x', tools: ['word_count', 'rm_rf'] });
    expect(refused.status).toBe(400);
    expect(refused.body.error.details.issues[0]).toMatchObject({
      path: 'tools',
      message: 'unknown tools: rm_rf',
      available: expect.arrayContaining(['word_count', 'http_fetch']),
    });

    const agent = await api.post('/v1/agents', { name: 'bare', model: 'openai-chat/gpt-4o-mini' });
    expect(agent.status).toBe(201);
    expect(agent.body.tools).toEqual([]);
    // The model calls a registered tool anyway: the agent does not have it, so it never runs.
    llm.enqueue(
      { kind: 'message', toolCalls: [{ id: 'call_x', name: 'word_count', arguments: '{"text":"a b"}' }] },
      { kind: 'message', text: 'No tools here.' },
    );
    const before = llm.requests.length;
    const session = await api.post('/v1/sessions', { agentId: agent.body.id });
    const admitted = await api.post(`/v1/sessions/${session.body.id}/messages`, { content: 'count a b' });
    const turn = await waitFor(async () => {
      const r = await api.get(`/v1/turns/${admitted.body.turnId}`);
      return ['completed', 'failed'].includes(r.body.status) ? r.body : undefined;
    });
    expect(turn.status).toBe('completed');
    const [first] = llm.requests.slice(before);
    expect((first.body as { tools?: unknown[] }).tools ?? []).toEqual([]);
    expect(turn.toolCalls).toEqual([
      expect.objectContaining({
        name: 'word_count',
        status: 'failed',
        error: expect.objectContaining({ kind: 'unknown_tool' }),
      }),
    ]);
  });

  it('sends the first turn’s system prompt byte for byte on later turns, even after the agent changes', async () => {
    const agent = await api.post('/v1/agents', {
      name: 'stable',
      model: 'openai-chat/gpt-4o-mini',
      instructions: 'v1',
    });
    const session = await api.post('/v1/sessions', { agentId: agent.body.id });
    const before = llm.requests.length;
    for (const [i, content] of ['one', 'two', 'three'].entries()) {
      llm.enqueue({ kind: 'message', text: `answer ${i}` });
      if (i === 1) await api.patch(`/v1/agents/${agent.body.id}`, { instructions: 'v2 changes everything' });
      const admitted = await api.post(`/v1/sessions/${session.body.id}/messages`, { content });
      await waitFor(
        async () => (await api.get(`/v1/turns/${admitted.body.turnId}`)).body.status === 'completed',
      );
    }
    const bodies = llm.requests.slice(before).map((r) => r.rawBody);
    expect(bodies).toHaveLength(3);
    const systemOf = (raw: string) =>
      (JSON.parse(raw) as { messages: { role: string; content: string }[] }).messages[0];
    expect(systemOf(bodies[0]).role).toBe('system');
    expect(Buffer.from(systemOf(bodies[2]).content)).toEqual(Buffer.from(systemOf(bodies[0]).content));
    expect(systemOf(bodies[0]).content).toContain('v1');
    // Turn 3 carries turns 1 and 2 as history after the same prefix.
    const third = JSON.parse(bodies[2]) as { messages: { role: string; content: string }[] };
    expect(third.messages.map((m) => [m.role, m.content]).slice(1)).toEqual([
      ['user', 'one'],
      ['assistant', 'answer 0'],
      ['user', 'two'],
      ['assistant', 'answer 1'],
      ['user', 'three'],
    ]);
  });

  it('fails the turn with a failure artifact when the provider refuses the key', async () => {
    llm.enqueue({ kind: 'error', status: 401 });
    const agent = await api.post('/v1/agents', { name: 'denied', model: 'openai-chat/gpt-4o-mini' });
    const session = await api.post('/v1/sessions', { agentId: agent.body.id });
    const admitted = await api.post(`/v1/sessions/${session.body.id}/messages`, { content: 'hello' });
    const turn = await waitFor(async () => {
      const r = await api.get(`/v1/turns/${admitted.body.turnId}`);
      return ['completed', 'failed'].includes(r.body.status) ? r.body : undefined;
    });
    expect(turn.status).toBe('failed');
    expect(turn.failure).toMatchObject({
      kind: 'provider_error',
      category: 'transport',
      failureKind: 'auth',
      provider: 'openai-chat',
      status: 401,
      brief: expect.any(String),
    });
    // 401 is never retried.
    expect(turn.attempts).toEqual([
      expect.objectContaining({ failureKind: 'auth', outcome: 'fail_fast_aborted', status: 401, attempt: 1 }),
    ]);
    const events = await api.get(`/v1/sessions/${session.body.id}/events`);
    expect(events.body.data.at(-1).type).toBe('turn_failed');
  });
});
