import type { Metrics } from '@switchboard/observability';
import { METRICS } from '@switchboard/platform';
import { createTestEnv, FakeLlmServer, scripted, waitFor, type TestEnv } from '@switchboard/testing';
import { newTenant, type Api } from '../support/api';
import { startStack } from '../support/stack';

/**
 * Costs that are never silently zero (ADR 0007), through the HTTP API and the real SDKs against the
 * fake LLM server: current models are priced from the maintained table so `maxUsd` budgets fire; a
 * budget on a model without a price is refused before any model call; an unpriced call is flagged on
 * the turn and in a metric; a tenant's own price makes a model budgetable; and the turn names the
 * model that answered, the fallback included.
 */
describe('costs and budgets', () => {
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

  /** Admits one message to a new session of a new agent and waits for the turn to end. */
  async function runTurn(agent: Record<string, unknown>, content = 'count: one two three') {
    const created = await api.post('/v1/agents', { name: 'costs', ...agent });
    expect(created.status).toBe(201);
    const session = await api.post('/v1/sessions', { agentId: created.body.id });
    const admitted = await api.post(`/v1/sessions/${session.body.id}/messages`, { content });
    expect(admitted.status).toBe(202);
    const turn = await waitFor(async () => {
      const r = await api.get(`/v1/turns/${admitted.body.turnId}`);
      return ['completed', 'failed'].includes(r.body.status) ? r.body : undefined;
    });
    const ledger = await env.db.ledgerEntry.findMany({ where: { turnId: turn.id }, orderBy: { key: 'asc' } });
    return { turn, ledger, sessionId: session.body.id as string };
  }

  const unpricedCalls = async (provider: string, model: string) => {
    const metrics = stack.harness.app.get<Metrics>(METRICS);
    const { values } = await metrics.unpricedCalls.get();
    return values.find((v) => v.labels.provider === provider && v.labels.model === model)?.value ?? 0;
  };

  it('refuses a maxUsd budget on an unpriced model before calling it', async () => {
    const before = llm.requests.length;
    const { turn, ledger, sessionId } = await runTurn({
      model: 'openai-chat/acme-local-7b',
      budgets: { maxUsd: 0.5 },
    });

    expect(turn).toMatchObject({
      status: 'failed',
      stopReason: 'budget_unenforceable',
      costStatus: 'unpriced',
      costUsd: '0',
      iterations: 0,
      failure: {
        kind: 'budget_unenforceable',
        model: 'openai-chat/acme-local-7b',
        brief: expect.stringContaining('openai-chat/acme-local-7b has no known price'),
      },
    });
    expect(llm.requests.length).toBe(before);
    expect(ledger).toEqual([]);
    const events = await api.get(`/v1/sessions/${sessionId}/events`);
    const types = events.body.data.map((e: { type: string }) => e.type);
    expect(types).toContain('stop_hook_fired');
    expect(types.at(-1)).toBe('turn_failed');
  });

  it('refuses the budget when only a fallback model is unpriced', async () => {
    const before = llm.requests.length;
    const { turn } = await runTurn({
      model: 'openai/gpt-5',
      fallbackModels: ['openai-chat/acme-local-7b'],
      budgets: { maxUsd: 0.5 },
    });

    expect(turn).toMatchObject({
      status: 'failed',
      stopReason: 'budget_unenforceable',
      costStatus: 'unpriced',
    });
    expect(llm.requests.length).toBe(before);
  });

  it('prices gpt-5 from the table, so a maxUsd budget stops the turn after the round that spent it', async () => {
    // The only reply: a second round (the budget not firing) would find the script empty.
    llm.enqueue(
      scripted.toolCall(
        'word_count',
        { text: 'one two three' },
        { usage: { input: 100_000, output: 1_000 } },
      ),
    );
    const before = llm.requests.length;
    const { turn, ledger } = await runTurn({
      model: 'openai-chat/gpt-5',
      tools: ['word_count'],
      budgets: { maxUsd: 0.01 },
    });

    // 100k input at $1.25/M + 1k output at $10/M.
    expect(turn).toMatchObject({ status: 'completed', stopReason: 'max_usd', costStatus: 'priced' });
    expect(Number(turn.costUsd)).toBeCloseTo(0.135, 8);
    expect(turn.toolCalls).toHaveLength(1);
    expect(llm.requests.length - before).toBe(1);
    expect(ledger.map((e) => [e.model, e.costSource, Number(e.costUsd)])).toEqual([
      ['openai-chat/gpt-5', 'rate_table', 0.135],
    ]);
  });

  it('names the fallback that answered as the turn’s model', async () => {
    llm.enqueue(
      scripted.error(401),
      scripted.text('From the fallback.', { usage: { input: 2_000, output: 100 } }),
    );
    const { turn, ledger } = await runTurn({
      model: 'anthropic/claude-sonnet-5-5',
      fallbackModels: ['openai/gpt-5'],
      budgets: { maxUsd: 1 },
    });

    expect(turn).toMatchObject({
      status: 'completed',
      finalText: 'From the fallback.',
      model: 'openai/gpt-5',
      costStatus: 'priced',
      decision: expect.objectContaining({ model: 'openai/gpt-5' }),
    });
    expect(Number(turn.costUsd)).toBeCloseTo((2_000 * 1.25 + 100 * 10) / 1e6, 10);
    expect(ledger.map((e) => [e.provider, e.model])).toEqual([['openai', 'openai/gpt-5']]);
  });

  it('flags an unpriced call on the turn, the ledger and the metric when there is no budget', async () => {
    llm.enqueue(scripted.text('Local answer.', { usage: { input: 50, output: 5 } }));
    const counted = await unpricedCalls('openai-chat', 'openai-chat/acme-local-7b');
    const { turn, ledger } = await runTurn({ model: 'openai-chat/acme-local-7b' });

    expect(turn).toMatchObject({ status: 'completed', costStatus: 'unpriced', costUsd: '0' });
    expect(ledger.map((e) => e.costSource)).toEqual(['unpriced']);
    expect(await unpricedCalls('openai-chat', 'openai-chat/acme-local-7b')).toBe(counted + 1);
  });

  it('takes the provider-reported cost when there is one', async () => {
    llm.enqueue(scripted.text('Gateway answer.', { usage: { input: 50, output: 5 }, costUsd: 0.0123 }));
    const { turn, ledger } = await runTurn({ model: 'openai-chat/acme-local-7b' });

    expect(turn).toMatchObject({ status: 'completed', costStatus: 'provider_reported', costUsd: '0.0123' });
    expect(ledger.map((e) => e.costSource)).toEqual(['provider']);
  });

  it('lets a tenant price a model itself, which makes its budget enforceable', async () => {
    const patched = await api.patch('/v1/settings', {
      modelPrices: { 'openai-chat/acme-local-13b': { input: 10, output: 100 } },
    });
    expect(patched.status).toBe(200);
    expect(patched.body.modelPrices).toEqual({ 'openai-chat/acme-local-13b': { input: 10, output: 100 } });
    llm.enqueue(scripted.text('Priced by the tenant.', { usage: { input: 1_000, output: 100 } }));

    const { turn, ledger } = await runTurn({ model: 'openai-chat/acme-local-13b', budgets: { maxUsd: 1 } });

    expect(turn).toMatchObject({ status: 'completed', stopReason: 'final_answer', costStatus: 'priced' });
    expect(Number(turn.costUsd)).toBeCloseTo((1_000 * 10 + 100 * 100) / 1e6, 10);
    expect(ledger.map((e) => e.costSource)).toEqual(['override']);
  });
});
