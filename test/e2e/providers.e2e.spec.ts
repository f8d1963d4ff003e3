import { createTestEnv, FakeLlmServer, scripted, waitFor, type TestEnv } from '@switchboard/testing';
import { newTenant, type Api } from '../support/api';
import { startStack } from '../support/stack';

/**
 * The whole path through the HTTP API with the real `@anthropic-ai/sdk` and the
 * OpenAI Responses API, chosen by the tenant's model routes: the agent names
 * hints, the tenant maps them to providers, and a refused key on one provider
 * falls back to the other within the same round.
 */
describe('model routes across the Anthropic and OpenAI Responses SDKs', () => {
  let env: TestEnv;
  let llm: FakeLlmServer;
  let stack: Awaited<ReturnType<typeof startStack>>;
  let api: Api;

  beforeAll(async () => {
    env = await createTestEnv();
    llm = await FakeLlmServer.start();
    stack = await startStack(env.config(llm.providerEnv));
    ({ api } = await newTenant(stack.url, 'test-admin-token-0123456789'));
    const routes = await api.patch('/v1/settings', {
      modelRoutes: { coding: 'anthropic/claude-sonnet-5-5', reasoning: 'openai/gpt-4.1' },
    });
    expect(routes.status).toBe(200);
  });

  afterAll(async () => {
    await stack?.close();
    await llm?.close();
    await env?.cleanup();
  });

  const finished = (turnId: string) =>
    waitFor(async () => {
      const r = await api.get(`/v1/turns/${turnId}`);
      return ['completed', 'failed'].includes(r.body.status) ? r.body : undefined;
    });

  it('resolves hints per tenant and falls back from Anthropic to OpenAI Responses mid-turn', async () => {
    llm.enqueue(
      scripted.toolCall(
        'word_count',
        { text: 'one two' },
        { id: 'toolu_1', usage: { input: 90, output: 12 } },
      ),
      scripted.error(401),
      scripted.text('Two words.', { usage: { input: 140, output: 5 } }),
    );
    const agent = await api.post('/v1/agents', {
      name: 'routed',
      model: 'hint:coding',
      fallbackModels: ['hint:reasoning'],
      tools: ['word_count'],
    });
    expect(agent.body.model).toBe('hint:coding');
    const session = await api.post('/v1/sessions', { agentId: agent.body.id });
    const before = llm.requests.length;
    const admitted = await api.post(`/v1/sessions/${session.body.id}/messages`, {
      content: 'count: one two',
    });

    const turn = await finished(admitted.body.turnId);
    // The turn names the model that answered: the fallback, for the last round.
    expect(turn).toMatchObject({
      status: 'completed',
      finalText: 'Two words.',
      model: 'openai/gpt-4.1',
      costStatus: 'priced',
    });
    // Round 0 on Anthropic; round 1: Anthropic refuses the key, OpenAI Responses answers.
    expect(
      turn.attempts.map((a: Record<string, unknown>) => [a.round, a.model, a.outcome, a.advancedToFallback]),
    ).toEqual([
      [0, 'anthropic/claude-sonnet-5-5', 'succeeded', false],
      [1, 'anthropic/claude-sonnet-5-5', 'fail_fast_aborted', true],
      [1, 'openai/gpt-4.1', 'succeeded', false],
    ]);
    expect(turn.attempts[1]).toMatchObject({
      failureKind: 'auth',
      status: 401,
      transportDiagnostics: { stage: 'http_status', provider: 'anthropic', status: 401 },
    });
    const wire = llm.requests.slice(before);
    expect(wire.map((r) => [r.endpoint, (r.body as { model: string }).model, r.stream])).toEqual([
      ['anthropic.messages', 'claude-sonnet-5-5', true],
      ['anthropic.messages', 'claude-sonnet-5-5', true],
      ['openai.responses', 'gpt-4.1', true],
    ]);
    // The configured key reaches Anthropic (this SDK version sends it as a bearer token).
    expect([wire[0].headers['x-api-key'], wire[0].headers.authorization]).toContain('Bearer sk-ant-test');
    // The fallback sends the whole turn in the Responses shape: the Anthropic tool call and its result.
    const input = (wire[2].body as { input: { type?: string; role?: string; call_id?: string }[] }).input;
    expect(input.map((i) => i.type ?? i.role)).toEqual(['user', 'function_call', 'function_call_output']);
    expect(input[1]).toMatchObject({ call_id: 'toolu_1' });

    // Each provider call into the ledger, under the model that served it.
    const ledger = await env.db.ledgerEntry.findMany({ where: { turnId: turn.id }, orderBy: { key: 'asc' } });
    expect(ledger.map((e) => [e.provider, e.model, e.inputTokens])).toEqual([
      ['anthropic', 'anthropic/claude-sonnet-5-5', 90],
      ['openai', 'openai/gpt-4.1', 140],
    ]);
    const started = await api.get(`/v1/sessions/${session.body.id}/events`);
    expect(started.body.data.find((e: { type: string }) => e.type === 'turn_started').data).toMatchObject({
      model: 'anthropic/claude-sonnet-5-5',
      route: 'hint:coding',
    });
  });

  it('context length exceeded fails the turn with a failure artifact and brief, and no fallback', async () => {
    llm.enqueue(scripted.anthropicPromptTooLong());
    const agent = await api.post('/v1/agents', {
      name: 'long',
      model: 'hint:coding',
      fallbackModels: ['hint:reasoning'],
    });
    const session = await api.post('/v1/sessions', { agentId: agent.body.id });
    const before = llm.requests.length;
    const admitted = await api.post(`/v1/sessions/${session.body.id}/messages`, {
      content: 'a very long thing',
    });

    const turn = await finished(admitted.body.turnId);
    expect(turn).toMatchObject({
      status: 'failed',
      stopReason: 'context_length_exceeded',
      failure: {
        kind: 'context_length_exceeded',
        model: 'anthropic/claude-sonnet-5-5',
        brief: expect.stringContaining('context window of anthropic/claude-sonnet-5-5'),
      },
    });
    expect(turn.attempts).toEqual([
      expect.objectContaining({
        failureKind: 'context_length',
        disposition: 'terminal',
        advancedToFallback: false,
      }),
    ]);
    expect(llm.requests.length - before).toBe(1);
    const events = await api.get(`/v1/sessions/${session.body.id}/events`);
    expect(events.body.data.at(-1)).toMatchObject({
      type: 'turn_failed',
      data: { stopReason: 'context_length_exceeded', failure: { kind: 'context_length_exceeded' } },
    });
  });
});
