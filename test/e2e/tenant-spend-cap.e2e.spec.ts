import { createTestEnv, FakeLlmServer, scripted, waitFor, type TestEnv } from '@switchboard/testing';
import { newTenant, type Api } from '../support/api';
import { startStack } from '../support/stack';

/**
 * The tenant's daily spend cap (SPEC §13, docs/adr/0026 addendum) through real processes (gateway,
 * turn and hooks workers) and the fake LLM: the cap set with PATCH /v1/settings, turns run until it
 * is spent, and the next message's turn ends with `tenant_budget_exhausted` without a request to
 * the model, whether the earlier turns' spend is still on their rows or already rolled up by the
 * cost-log hook; GET /v1/usage/daily agrees; another tenant runs on.
 */
jest.setTimeout(120_000);

/** gpt-5 from the maintained table: 100k input at $1.25/M + 1k output at $10/M = $0.135 a round. */
const ROUND = { usage: { input: 100_000, output: 1_000 } };
const ROUND_USD = 0.135;

describe('tenant daily spend cap', () => {
  let env: TestEnv;
  let llm: FakeLlmServer;
  let stack: Awaited<ReturnType<typeof startStack>>;
  let api: Api;

  beforeAll(async () => {
    env = await createTestEnv();
    llm = await FakeLlmServer.start();
    stack = await startStack(env.config(llm.providerEnv));
    ({ api } = await newTenant(stack.url, 'test-admin-token-0123456789', 'capped'));
  });

  afterAll(async () => {
    await stack?.close();
    await llm?.close();
    await env?.cleanup();
  });

  /** One message to a new session of `agentId`; waits for its turn to end. */
  async function message(client: Api, agentId: string, content: string) {
    const session = await client.post('/v1/sessions', { agentId });
    const admitted = await client.post(`/v1/sessions/${session.body.id}/messages`, { content });
    expect(admitted.status).toBe(202);
    const turn = await waitFor(async () => {
      const r = await client.get(`/v1/turns/${admitted.body.turnId}`);
      return ['completed', 'failed'].includes(r.body.status) ? r.body : undefined;
    });
    const events = await client.get(`/v1/sessions/${session.body.id}/events`);
    return {
      turn,
      types: events.body.data.map((e: { type: string }) => e.type) as string[],
      events: events.body,
    };
  }

  it('stops the turn after the cap is spent before it calls the model, and the daily usage agrees', async () => {
    const set = await api.patch('/v1/settings', { dailySpendLimitUsd: 2 * ROUND_USD });
    expect(set.status).toBe(200);
    expect(set.body.dailySpendLimitUsd).toBe(0.27);
    expect((await api.get('/v1/settings')).body.dailySpendLimitUsd).toBe(0.27);
    const agent = await api.post('/v1/agents', { name: 'capped', model: 'openai-chat/gpt-5' });
    expect(agent.status).toBe(201);

    // Two turns of one round each spend the cap exactly.
    for (const content of ['first', 'second']) {
      llm.enqueue(scripted.text(`answer to ${content}`, ROUND));
      const { turn } = await message(api, agent.body.id, content);
      expect(turn).toMatchObject({ status: 'completed', stopReason: 'final_answer', costStatus: 'priced' });
      expect(Number(turn.costUsd)).toBeCloseTo(ROUND_USD, 8);
    }

    // Nothing left, whether the cost-log hook rolled the two up yet or not: no model request.
    const before = llm.requests.length;
    const third = await message(api, agent.body.id, 'third');
    expect(third.turn).toMatchObject({
      status: 'completed',
      stopReason: 'tenant_budget_exhausted',
      costUsd: '0',
      iterations: 0,
    });
    expect(third.types).toEqual(['message_admitted', 'turn_started', 'stop_hook_fired', 'turn_completed']);
    expect(third.events.data[2].data).toMatchObject({
      hook: 'tenant_budget',
      reason: 'tenant_budget_exhausted',
    });
    expect(llm.requests.length).toBe(before);

    // The roll-up (what GET /v1/usage/daily reads) holds both turns' spend, the cap (a turn without
    // a provider call adds no spend and is not counted).
    const today = new Date().toISOString().slice(0, 10);
    const daily = await waitFor(async () => {
      const r = await api.get('/v1/usage/daily');
      return r.body.totals?.turns === 2 ? r.body : undefined;
    });
    expect(Number(daily.totals.costUsd)).toBeCloseTo(2 * ROUND_USD, 8);
    expect(daily.days).toEqual([expect.objectContaining({ day: today, turns: 2 })]);

    // Rolled up, the spend still counts (once): the next turn stops too.
    const fourth = await message(api, agent.body.id, 'fourth');
    expect(fourth.turn.stopReason).toBe('tenant_budget_exhausted');
    expect(llm.requests.length).toBe(before);
    // The chat completions facade's turn too: answered like any stop hook's end (finish_reason length).
    const completion = await api.post('/v1/chat/completions', {
      model: 'capped',
      messages: [{ role: 'user', content: 'fifth?' }],
    });
    expect(completion.status).toBe(200);
    expect(completion.body.choices[0]).toMatchObject({ finish_reason: 'length', message: { content: '' } });
    const facadeTurn = await api.get(`/v1/turns/${completion.body.id.replace('chatcmpl-', '')}`);
    expect(facadeTurn.body.stopReason).toBe('tenant_budget_exhausted');
    expect(llm.requests.length).toBe(before);

    // Another tenant is not touched; and raising the cap lets this tenant's next turn run.
    const other = await newTenant(stack.url, 'test-admin-token-0123456789', 'other');
    const otherAgent = await other.api.post('/v1/agents', { name: 'free', model: 'openai-chat/gpt-5' });
    llm.enqueue(scripted.text('other answer', ROUND));
    expect((await message(other.api, otherAgent.body.id, 'other')).turn.stopReason).toBe('final_answer');
    expect((await api.patch('/v1/settings', { dailySpendLimitUsd: 1 })).status).toBe(200);
    llm.enqueue(scripted.text('answer to fifth', ROUND));
    expect((await message(api, agent.body.id, 'fifth')).turn.stopReason).toBe('final_answer');
    // null removes the cap.
    const removed = await api.patch('/v1/settings', { dailySpendLimitUsd: null });
    expect(removed.body.dailySpendLimitUsd).toBeNull();
  });
});
