import { randomBytes, randomUUID } from 'node:crypto';
import { createRedis, type RedisConnection } from '@switchboard/queue';
import { testRedisUrl, waitFor } from '@switchboard/testing';
import { ActionBudget } from './action-budget';

jest.setTimeout(30_000);

/**
 * The hourly side-effect budget on a real Redis (docs/adr/0058): two connections stand for two
 * harness processes; the script decides and counts in one step, so they never overshoot together.
 */
describe('ActionBudget', () => {
  let a: RedisConnection;
  let b: RedisConnection;
  const prefix = `test-${randomBytes(4).toString('hex')}`;

  beforeAll(() => {
    a = createRedis(testRedisUrl());
    b = createRedis(testRedisUrl());
  });

  afterAll(async () => {
    const keys = await a.keys(`${prefix}:*`);
    if (keys.length > 0) await a.del(...keys);
    a.disconnect();
    b.disconnect();
  });

  const budgets = (windowMs: number) => [
    new ActionBudget(a, { prefix, windowMs }),
    new ActionBudget(b, { prefix, windowMs }),
  ];

  it('is exact across two processes asking at once: exactly the limit is counted', async () => {
    const [one, two] = budgets(60_000);
    const tenantId = randomUUID();
    const agentId = randomUUID();
    const asks = Array.from({ length: 40 }, (_, i) =>
      (i % 2 === 0 ? one : two).reserve({
        tenantId,
        agentId,
        callKey: `turn:${i}`,
        agentLimit: 7,
        tenantLimit: null,
      }),
    );
    const decisions = await Promise.all(asks);
    expect(decisions.filter((d) => d.allowed)).toHaveLength(7);
    const refused = decisions.find((d) => !d.allowed);
    expect(refused).toMatchObject({ allowed: false, scope: 'agent', limit: 7, windowMs: 60_000 });
    expect(refused && !refused.allowed && refused.retryAfterMs).toBeGreaterThan(0);
    expect(refused && !refused.allowed && refused.retryAfterMs).toBeLessThanOrEqual(60_000);
    expect(await one.used(tenantId, agentId)).toBe(7);
    // Every call counts for the tenant too, even without a tenant limit.
    expect(await two.used(tenantId)).toBe(7);
  });

  it("counts a call once however often it is asked, and refuses on the tenant's window across agents", async () => {
    const [one, two] = budgets(60_000);
    const tenantId = randomUUID();
    const ask = (budget: ActionBudget, agentId: string, callKey: string) =>
      budget.reserve({ tenantId, agentId, callKey, agentLimit: null, tenantLimit: 2 });
    expect(await ask(one, 'agent-a', 't1:c1')).toEqual({ allowed: true });
    // A resumed run starting the same call again is not counted again.
    expect(await ask(two, 'agent-a', 't1:c1')).toEqual({ allowed: true });
    expect(await ask(two, 'agent-b', 't2:c1')).toEqual({ allowed: true });
    expect(await ask(one, 'agent-c', 't3:c1')).toMatchObject({ allowed: false, scope: 'tenant', limit: 2 });
    expect(await one.used(tenantId)).toBe(2);
  });

  it('frees a slot when the oldest call leaves the rolling window', async () => {
    const [one, two] = budgets(1500);
    const tenantId = randomUUID();
    const ask = (budget: ActionBudget, callKey: string) =>
      budget.reserve({ tenantId, agentId: 'agent-a', callKey, agentLimit: 1, tenantLimit: null });
    expect(await ask(one, 'c1')).toEqual({ allowed: true });
    const refused = await ask(two, 'c2');
    expect(refused).toMatchObject({ allowed: false, scope: 'agent' });
    // No sleep of a guessed length: ask until the window lets it through (about 1.5 s).
    await waitFor(async () => (await ask(two, 'c2')).allowed, { timeoutMs: 5000, intervalMs: 100 });
    expect(await one.used(tenantId, 'agent-a')).toBe(1);
  });
});
