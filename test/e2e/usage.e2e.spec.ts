import { randomUUID } from 'node:crypto';
import { uuid7Time } from '@switchboard/contracts';
import { Prisma } from '@switchboard/database';
import { createTestEnv, FakeLlmServer, scripted, waitFor, type TestEnv } from '@switchboard/testing';
import { newTenant, type Api } from '../support/api';
import { startStack } from '../support/stack';

const ADMIN = 'test-admin-token-0123456789';

/**
 * GET /v1/usage (issue 13) through the HTTP API: its sums are the ledger's — equal to what the turns
 * report — per day, agent, session and model; exact to the last of the ledger's 8 decimals under
 * concurrent writes; scoped to the tenant; and its query is validated.
 */
describe('usage from the cost ledger', () => {
  let env: TestEnv;
  let llm: FakeLlmServer;
  let stack: Awaited<ReturnType<typeof startStack>>;
  let api: Api;
  const started = new Date(Date.now() - 60_000);

  beforeAll(async () => {
    env = await createTestEnv();
    llm = await FakeLlmServer.start();
    stack = await startStack(env.config(llm.providerEnv));
    ({ api } = await newTenant(stack.url, ADMIN, 'usage'));
  });

  afterAll(async () => {
    await stack?.close();
    await llm?.close();
    await env?.cleanup();
  });

  const window = () => `from=${started.toISOString()}&to=${new Date(Date.now() + 60_000).toISOString()}`;

  async function newAgent(model: string): Promise<string> {
    const res = await api.post('/v1/agents', { name: 'usage', model });
    expect(res.status).toBe(201);
    return res.body.id;
  }

  async function newSession(agentId: string): Promise<string> {
    const res = await api.post('/v1/sessions', { agentId });
    expect(res.status).toBe(201);
    return res.body.id;
  }

  /** Admits one message and waits for its turn to complete. */
  async function runTurn(sessionId: string) {
    const admitted = await api.post(`/v1/sessions/${sessionId}/messages`, { content: 'hello' });
    expect(admitted.status).toBe(202);
    return waitFor(async () => {
      const r = await api.get(`/v1/turns/${admitted.body.turnId}`);
      if (r.body.status === 'failed') throw new Error(`turn failed: ${JSON.stringify(r.body.failure)}`);
      return r.body.status === 'completed' ? r.body : undefined;
    });
  }

  const sum = (turns: { costUsd: string }[]) =>
    turns.reduce((acc, t) => acc.plus(t.costUsd), new Prisma.Decimal(0)).toFixed();
  const saved = (turns: { cacheSavedUsd: string }[]) =>
    turns.reduce((acc, t) => acc.plus(t.cacheSavedUsd), new Prisma.Decimal(0)).toFixed();

  it('sums what the turns report, per agent, session, model and day, and only for the tenant', async () => {
    // A priced model (rate table) and one whose cost the provider reports.
    const agentA = await newAgent('openai-chat/gpt-5');
    const agentB = await newAgent('openai-chat/acme-local-7b');
    const [s1, s2, s3] = [await newSession(agentA), await newSession(agentA), await newSession(agentB)];
    llm.enqueue(
      scripted.text('one', { usage: { input: 1_234, output: 56 } }),
      scripted.text('two', { usage: { input: 777, output: 3, cached: 100 } }),
      scripted.text('three', { usage: { input: 10, output: 1 } }),
      scripted.text('four', { usage: { input: 500, output: 20 }, costUsd: 0.00012345 }),
    );
    const t1 = await runTurn(s1);
    const t2 = await runTurn(s1);
    const t3 = await runTurn(s2);
    const t4 = await runTurn(s3);
    const turns = [t1, t2, t3, t4];

    const res = await api.get(`/v1/usage?${window()}&groupBy=agent,session,model`);
    expect(res.status).toBe(200);
    const tokens = (
      ts: typeof turns,
      k: 'inputTokens' | 'outputTokens' | 'cachedTokens' | 'cacheWriteTokens',
    ) => ts.reduce((n, t) => n + t.usage[k], 0);
    expect(res.body.totals).toEqual({
      inputTokens: tokens(turns, 'inputTokens'),
      outputTokens: tokens(turns, 'outputTokens'),
      cachedTokens: tokens(turns, 'cachedTokens'),
      cacheWriteTokens: tokens(turns, 'cacheWriteTokens'),
      costUsd: sum(turns),
      cacheSavedUsd: saved(turns),
      entries: 4,
    });
    // The 100 cached tokens of the second turn, at gpt-5's cached rate: a saving, shown on the turn too.
    expect(Number(t2.cacheSavedUsd)).toBeGreaterThan(0);
    expect(res.body.totals.cacheSavedUsd).toBe(t2.cacheSavedUsd);
    expect(res.body.totals.inputTokens).toBe(1_234 + 777 + 10 + 500);
    expect(Number(res.body.totals.costUsd)).toBeGreaterThan(0.00012345);
    expect(res.body.groupBy).toEqual(['agent', 'session', 'model']);
    const bySession = (sessionId: string, ts: typeof turns) => ({
      agentId: ts[0].agentId,
      sessionId,
      model: ts[0].model,
      inputTokens: tokens(ts, 'inputTokens'),
      outputTokens: tokens(ts, 'outputTokens'),
      cachedTokens: tokens(ts, 'cachedTokens'),
      cacheWriteTokens: tokens(ts, 'cacheWriteTokens'),
      costUsd: sum(ts),
      cacheSavedUsd: saved(ts),
      entries: ts.length,
    });
    expect(res.body.groups).toEqual(
      [bySession(s1, [t1, t2]), bySession(s2, [t3]), bySession(s3, [t4])].sort((a, b) =>
        `${a.agentId}${a.sessionId}`.localeCompare(`${b.agentId}${b.sessionId}`),
      ),
    );

    const byAgent = await api.get(`/v1/usage?${window()}&groupBy=agent`);
    expect(byAgent.body.groups.map((g: any) => [g.agentId, g.costUsd, g.entries]).sort()).toEqual(
      [
        [agentA, sum([t1, t2, t3]), 3],
        [agentB, sum([t4]), 1],
      ].sort(),
    );
    expect(byAgent.body.groups[0]).not.toHaveProperty('sessionId');
    const byModel = await api.get(`/v1/usage?${window()}&groupBy=model`);
    expect(byModel.body.groups.map((g: any) => [g.model, g.costUsd])).toEqual([
      ['openai-chat/acme-local-7b', '0.00012345'],
      ['openai-chat/gpt-5', sum([t1, t2, t3])],
    ]);
    // The default grouping: UTC days, which together make the totals.
    const byDay = await api.get(`/v1/usage?${window()}`);
    expect(byDay.body.groupBy).toEqual(['day']);
    expect(byDay.body.totals).toEqual(res.body.totals);
    for (const g of byDay.body.groups) expect(g.day).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(sum(byDay.body.groups)).toBe(res.body.totals.costUsd);

    // Another tenant: nothing, even with the same window.
    const { api: other } = await newTenant(stack.url, ADMIN, 'other');
    const theirs = await other.get(`/v1/usage?${window()}&groupBy=agent`);
    expect(theirs.status).toBe(200);
    expect(theirs.body).toMatchObject({
      totals: { inputTokens: 0, outputTokens: 0, cachedTokens: 0, costUsd: '0', entries: 0 },
      groups: [],
    });
    // A window before the turns: nothing either.
    const before = await api.get(
      `/v1/usage?from=2020-01-01T00:00:00Z&to=2020-02-01T00:00:00Z&groupBy=day,agent,session,model`,
    );
    expect(before.body.totals.entries).toBe(0);
  });

  it('sums concurrent ledger writes exactly, and reads a consistent snapshot while they land', async () => {
    const { api: tenantApi, tenantId } = await newTenant(stack.url, ADMIN, 'exact');
    const [agentId, sessionId] = [randomUUID(), randomUUID()];
    const entry = (i: number, createdAt?: Date, turnId = randomUUID()) => ({
      id: randomUUID(),
      tenantId,
      agentId,
      sessionId,
      turnId,
      turnAt: uuid7Time(turnId),
      key: `usage-e2e:${tenantId}:${i}`,
      provider: 'fake',
      model: 'fake/tiny',
      inputTokens: 1,
      outputTokens: 2,
      costUsd: new Prisma.Decimal('0.00000001'),
      costSource: 'provider',
      ...(createdAt ? { createdAt } : {}),
    });
    const reads: { costUsd: string; entries: number }[] = [];
    let writing = true;
    const reader = (async () => {
      while (writing) {
        const r = await tenantApi.get(`/v1/usage?${window()}`);
        expect(r.status).toBe(200);
        reads.push(r.body.totals);
      }
    })();
    await Promise.all(Array.from({ length: 200 }, (_, i) => env.db.ledgerEntry.create({ data: entry(i) })));
    writing = false;
    await reader;

    const res = await tenantApi.get(`/v1/usage?${window()}&groupBy=session`);
    expect(res.body.totals).toEqual({
      inputTokens: 200,
      outputTokens: 400,
      cachedTokens: 0,
      cacheWriteTokens: 0,
      costUsd: '0.000002',
      cacheSavedUsd: '0',
      entries: 200,
    });
    expect(res.body.groups).toEqual([{ sessionId, ...res.body.totals }]);
    // Every read while the writes landed was one snapshot: its cost is exactly its entries' sum.
    expect(reads.length).toBeGreaterThan(0);
    for (const t of reads)
      expect(t.costUsd).toBe(new Prisma.Decimal('0.00000001').times(t.entries).toFixed());

    // Day buckets are UTC days: the last millisecond of a day and the first of the next split.
    await env.db.ledgerEntry.create({ data: entry(1000, new Date('2026-01-01T23:59:59.999Z')) });
    await env.db.ledgerEntry.create({ data: entry(1001, new Date('2026-01-02T00:00:00.000Z')) });
    await env.db.ledgerEntry.create({ data: entry(1002, new Date('2026-01-02T00:00:00.000+01:00')) });
    const days = await tenantApi.get('/v1/usage?from=2026-01-01T00:00:00Z&to=2026-01-03T00:00:00Z');
    expect(days.body.groups.map((g: any) => [g.day, g.entries, g.costUsd])).toEqual([
      ['2026-01-01', 2, '0.00000002'],
      ['2026-01-02', 1, '0.00000001'],
    ]);
    // `to` is exclusive.
    const until = await tenantApi.get('/v1/usage?from=2026-01-01T00:00:00Z&to=2026-01-02T00:00:00Z');
    expect(until.body.totals.entries).toBe(2);
  });

  it('GET /v1/usage/daily rolls up cached reads, cache writes and what caching saved, as GET /v1/usage sums them', async () => {
    // A tenant of its own: its roll-up holds only these turns.
    const { api: own } = await newTenant(stack.url, ADMIN, 'usage-daily-cache');
    const agent = await own.post('/v1/agents', { name: 'cache', model: 'anthropic/claude-sonnet-4-6' });
    expect(agent.status).toBe(201);
    const session = await own.post('/v1/sessions', { agentId: agent.body.id });
    // Anthropic's wire: the first call writes the prefix to the cache (priced above the input rate:
    // a negative saving), the second reads it (a saving).
    llm.enqueue(
      scripted.text('wrote', { usage: { input: 2_400, output: 12, cacheWrite: 2_000 } }),
      scripted.text('read', { usage: { input: 2_500, output: 9, cached: 2_000 } }),
    );
    const turns = [];
    for (const content of ['first', 'second']) {
      const admitted = await own.post(`/v1/sessions/${session.body.id}/messages`, { content });
      expect(admitted.status).toBe(202);
      turns.push(
        await waitFor(async () => {
          const r = await own.get(`/v1/turns/${admitted.body.turnId}`);
          if (r.body.status === 'failed') throw new Error(`turn failed: ${JSON.stringify(r.body.failure)}`);
          return r.body.status === 'completed' ? r.body : undefined;
        }),
      );
    }
    expect(turns.map((t) => t.usage)).toEqual([
      { inputTokens: 2_400, outputTokens: 12, cachedTokens: 0, cacheWriteTokens: 2_000 },
      { inputTokens: 2_500, outputTokens: 9, cachedTokens: 2_000, cacheWriteTokens: 0 },
    ]);
    expect(Number(turns[0].cacheSavedUsd)).toBeLessThan(0);
    expect(Number(turns[1].cacheSavedUsd)).toBeGreaterThan(0);

    // The cost-log hook adds each ended turn to the roll-up shortly after it ends.
    const daily = await waitFor(async () => {
      const r = await own.get('/v1/usage/daily');
      expect(r.status).toBe(200);
      return r.body.totals.turns === 2 ? r.body : undefined;
    });
    const ledger = await own.get(`/v1/usage?${window()}`);
    const expected = {
      costUsd: sum(turns),
      inputTokens: 4_900,
      outputTokens: 21,
      cachedTokens: 2_000,
      cacheWriteTokens: 2_000,
      cacheSavedUsd: saved(turns),
      providerCalls: 2,
      turns: 2,
    };
    expect(daily.totals).toEqual(expected);
    expect(daily.days).toEqual([{ day: new Date().toISOString().slice(0, 10), ...expected }]);
    // The same figures, named alike, as GET /v1/usage sums them from the ledger.
    const { entries, ...sums } = ledger.body.totals;
    expect(entries).toBe(2);
    expect(sums).toEqual({
      costUsd: expected.costUsd,
      inputTokens: expected.inputTokens,
      outputTokens: expected.outputTokens,
      cachedTokens: expected.cachedTokens,
      cacheWriteTokens: expected.cacheWriteTokens,
      cacheSavedUsd: expected.cacheSavedUsd,
    });
  });

  it('defaults to the last 30 days grouped by day', async () => {
    const res = await api.get('/v1/usage');
    expect(res.status).toBe(200);
    expect(res.body.groupBy).toEqual(['day']);
    expect(Date.parse(res.body.to) - Date.parse(res.body.from)).toBe(30 * 24 * 3600 * 1000);
    expect(Math.abs(Date.parse(res.body.to) - Date.now())).toBeLessThan(60_000);
  });

  it.each([
    ['an unknown groupBy', 'groupBy=tenant'],
    ['an empty groupBy', 'groupBy='],
    ['a dimension twice', 'groupBy=day,day'],
    ['a trailing comma', 'groupBy=day,'],
    ['groupBy twice', 'groupBy=day&groupBy=agent'],
    ['a date without time', 'from=2026-01-01'],
    ['a timestamp without offset', 'from=2026-01-01T00:00:00'],
    ['not a timestamp', 'to=yesterday'],
    ['from after to', 'from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z'],
    ['from equal to to', 'from=2026-01-01T00:00:00Z&to=2026-01-01T00:00:00Z'],
    ['a window over 366 days', 'from=2024-01-01T00:00:00Z&to=2025-01-02T00:00:01Z'],
    ['an unknown field', 'tenantId=00000000-0000-0000-0000-000000000000'],
  ])('answers 400 to %s', async (_, query) => {
    const res = await api.get(`/v1/usage?${query}`);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('validation_failed');
  });

  it('needs an API key', async () => {
    const res = await api.withKey('sb_not-a-key').get('/v1/usage');
    expect(res.status).toBe(401);
  });
});
