import { randomUUID } from 'node:crypto';
import { newId } from '@switchboard/contracts';
import { createDatabase, poolOf, type Db } from '@switchboard/database';
import { TurnEngine } from '@switchboard/engine';
import { Metrics } from '@switchboard/observability';
import {
  ProviderRegistry,
  type ModelProvider,
  type ModelRequest,
  type ModelResponse,
} from '@switchboard/providers';
import { recordCostLog, sql, sqlDbFor, tenantCapUsd } from '@switchboard/store';
import { ToolRegistry } from '@switchboard/tools';
import {
  countPoolTransactions,
  operatorPrompt,
  seedSession,
  seedTenant,
  startHarness,
  wordCountTool,
  type HarnessFixture,
  type TestEnv,
} from '@switchboard/testing';
import { TurnRunner } from './runner';

/**
 * The tenant's daily spend cap (SPEC §13, docs/adr/0026 addendum) against real Postgres: read in the
 * claim and every checkpoint, it stops a turn before its first model call when nothing is left, and a
 * running turn where its spend reaches what is left; spend not rolled up yet counts, once.
 */
jest.setTimeout(120_000);

/** 10 input + 5 output tokens at $1000 per million each: $0.015 a round. */
const USAGE = { inputTokens: 10, outputTokens: 5, cachedTokens: 0 };
const ROUND_USD = 0.015;
const PRICES = {
  'capped/simple': { input: 1000, output: 1000 },
  'capped/loop': { input: 1000, output: 1000 },
};

/** `simple`: a word_count call, then an answer. `loop`: a word_count call every round. */
class Capped implements ModelProvider {
  readonly name = 'capped';
  /** The input text of every turn a request was made for. */
  readonly calls: string[] = [];
  async complete(request: ModelRequest): Promise<ModelResponse> {
    const input =
      request.messages.find((m) => m.role === 'user' && m.content.startsWith('t:'))?.content ?? '';
    this.calls.push(input);
    const answered = request.messages.at(-1)?.role === 'tool';
    return answered && request.model === 'simple'
      ? { text: 'done', toolCalls: [], usage: USAGE, finishReason: 'stop' }
      : {
          text: '',
          toolCalls: [{ id: `c${this.calls.length}`, name: 'word_count', arguments: '{"text":"a b"}' }],
          usage: USAGE,
          finishReason: 'tool_calls',
        };
  }
}

describe('the tenant daily spend cap', () => {
  let h: HarnessFixture;
  let env: TestEnv;
  const tools = new ToolRegistry([wordCountTool]);
  const provider = new Capped();
  const engine = new TurnEngine({ providers: new ProviderRegistry({}, [provider]), tools });

  const runner = (db: Db, metrics = new Metrics('cap')) =>
    new TurnRunner({
      ...h.runnerDeps({ db, metrics, workerId: 'cap' }),
      engine,
      tools,
      defaultModel: 'capped/simple',
      prices: PRICES,
    });

  beforeAll(async () => {
    h = await startHarness();
    env = h.env;
  });

  afterAll(() => h?.close());

  const tenant = (name: string, limit: number | undefined, model = 'capped/simple') =>
    seedTenant(
      env.db,
      name,
      { model, tools: ['word_count'] },
      limit !== undefined ? { settings: { dailySpendLimitUsd: limit } } : {},
    );

  /** Admits `text` into a new session of the tenant and runs it to its end. */
  async function run(t: { tenantId: string; agentId: string }, text: string, db: Db = env.db) {
    const sessionId = await seedSession(env.db, t.tenantId, t.agentId);
    const { turnId } = await h.admission.admit(operatorPrompt({ tenantId: t.tenantId, sessionId }, text));
    expect(await runner(db).handle({ turnId, sessionId, tenantId: t.tenantId, trace: {} })).toBe('done');
    const turn = await env.db.turn.findUniqueOrThrow({ where: { id: turnId } });
    const events = await env.db.event.findMany({ where: { turnId }, orderBy: { seq: 'asc' } });
    return { turn, events, calls: provider.calls.filter((c) => c === text).length };
  }

  const rollUp = (tenantId: string, turnId: string) =>
    recordCostLog(sqlDbFor(poolOf(env.db), 'hooks'), { id: newId(), turnId, tenantId });

  it('changes nothing for a tenant without a cap: the simple turn is still four transactions, one statement each', async () => {
    const t = await tenant('uncapped', undefined);
    const { prisma, pool } = createDatabase(env.databaseUrl, { poolSize: 2 });
    const sent = countPoolTransactions(pool);
    try {
      const r = await run(t, 't:uncapped', prisma);
      expect(r.turn).toMatchObject({ status: 'completed', stopReason: 'final_answer' });
      expect(r.calls).toBe(2);
    } finally {
      await prisma.$disconnect();
    }
    expect(sent.transactions).toBeLessThanOrEqual(4);
    expect(sent.statements).toHaveLength(sent.transactions);
  });

  it('runs neither spend sub-select for a tenant without a cap (the CASE short-circuits them)', async () => {
    const free = await tenant('explain-free', undefined);
    const capped = await tenant('explain-capped', 1);
    const db = sqlDbFor(poolOf(env.db), 'test');
    const plan = async (tenantId: string) => {
      const [row] = await db.rows<{ 'QUERY PLAN': unknown }>(sql`
        EXPLAIN (ANALYZE, COSTS OFF, FORMAT JSON)
        SELECT ${tenantCapUsd(sql`tn`, sql`${newId()}::uuid`)} FROM tenants tn WHERE tn.id = ${tenantId}::uuid`);
      return JSON.stringify(row['QUERY PLAN']);
    };
    // Each sub-plan node of the JSON plan carries its loop count: 0 loops is "never executed".
    const loops = (p: string) => [...p.matchAll(/"Actual Loops":\s*(\d+)/g)].map((m) => Number(m[1]));
    const freePlan = await plan(free.tenantId);
    expect(freePlan).toContain('turns_spend_not_rolled_up_idx');
    expect(
      loops(freePlan)
        .slice(1)
        .every((n) => n === 0),
    ).toBe(true);
    expect(
      loops(await plan(capped.tenantId))
        .slice(1)
        .some((n) => n > 0),
    ).toBe(true);
  });

  it('stops the next turn before any model call once earlier turns (rolled up or not) reached the cap', async () => {
    // Each simple turn costs two rounds; the cap allows one turn and a half.
    const t = await tenant('capped', 3 * ROUND_USD);
    const first = await run(t, 't:first');
    expect(first.turn).toMatchObject({ status: 'completed', stopReason: 'final_answer' });
    expect(Number(first.turn.costUsd)).toBeCloseTo(2 * ROUND_USD, 8);
    // The second starts with one round left and stops at its check after it: spend of the first,
    // not rolled up yet, counts from the turn row.
    const second = await run(t, 't:second');
    expect(second.calls).toBe(1);
    expect(second.turn).toMatchObject({ status: 'completed', stopReason: 'tenant_budget_exhausted' });

    // Rolled up, the first turn counts once: from the roll-up, no longer from its row.
    expect(await rollUp(t.tenantId, first.turn.id)).toMatchObject({ kind: 'written' });
    const third = await run(t, 't:third');
    expect(third.calls).toBe(0);
    expect(third.turn).toMatchObject({
      status: 'completed',
      stopReason: 'tenant_budget_exhausted',
      iterations: 0,
    });
    expect(third.turn.costUsd.toNumber()).toBe(0);
    expect(third.events.map((e) => e.type)).toEqual([
      'message_admitted',
      'turn_started',
      'stop_hook_fired',
      'turn_completed',
    ]);
    expect(third.events[2].data).toMatchObject({ hook: 'tenant_budget', reason: 'tenant_budget_exhausted' });
    // Raising the cap by one turn's spend lets exactly the next turn through: nothing counted twice.
    await env.db.tenant.update({
      where: { id: t.tenantId },
      data: { settings: { dailySpendLimitUsd: 5 * ROUND_USD } },
    });
    await rollUp(t.tenantId, second.turn.id);
    const fourth = await run(t, 't:fourth');
    expect(fourth.turn).toMatchObject({ status: 'completed', stopReason: 'final_answer' });
    expect(fourth.calls).toBe(2);
    const day = await env.db.tenantSpendDaily.findFirstOrThrow({ where: { tenantId: t.tenantId } });
    expect(day.costUsd.toNumber()).toBeCloseTo(3 * ROUND_USD, 8);
  });

  it('stops a running turn where its spend reaches the cap, like its own maxUsd', async () => {
    const t = await tenant('looping', 2.5 * ROUND_USD, 'capped/loop');
    const r = await run(t, 't:loop');
    // Rounds 1 and 2 leave less than the cap spent; round 3 crosses it; the check after it stops.
    expect(r.calls).toBe(3);
    expect(r.turn).toMatchObject({ status: 'completed', stopReason: 'tenant_budget_exhausted' });
    expect(r.events.filter((e) => e.type === 'stop_hook_fired').map((e) => e.data)).toEqual([
      expect.objectContaining({ hook: 'tenant_budget', reason: 'tenant_budget_exhausted' }),
    ]);
  });

  it('holds the smaller of the operator’s cap and the tenant’s own budget: a tenant cannot raise the operator’s', async () => {
    const seeded = (name: string, settings: Record<string, number>) =>
      seedTenant(env.db, name, { model: 'capped/simple', tools: ['word_count'] }, { settings });
    // The operator's zero under a generous budget of the tenant's own: nothing runs.
    const held = await run(
      await seeded('held', { operatorDailySpendLimitUsd: 0, dailySpendLimitUsd: 1000 }),
      't:held',
    );
    expect(held.calls).toBe(0);
    expect(held.turn).toMatchObject({ status: 'completed', stopReason: 'tenant_budget_exhausted' });
    // The tenant's own budget below a generous operator cap holds too (one round's worth).
    const own = await run(
      await seeded('own', { operatorDailySpendLimitUsd: 1000, dailySpendLimitUsd: 0.5 * ROUND_USD }),
      't:own',
    );
    expect(own.calls).toBe(1);
    expect(own.turn).toMatchObject({ status: 'completed', stopReason: 'tenant_budget_exhausted' });
  });

  it('sees spend of the tenant’s turns still in flight, and no other tenant’s', async () => {
    const a = await tenant('in-flight', 4 * ROUND_USD);
    const b = await tenant('neighbour', 4 * ROUND_USD);
    const c = await tenant('no-cap', undefined);
    // A turn of `a` still running (or interrupted) with spend on its row.
    const busy = await run(a, 't:busy');
    await env.db.turn.update({
      where: { id: busy.turn.id },
      data: { status: 'running', completedAt: null, costUsd: 3 * ROUND_USD },
    });
    // Running on another worker: its session is leased (else the next job would resume it).
    await env.db.session.update({
      where: { id: busy.turn.sessionId },
      data: {
        leaseToken: randomUUID(),
        leaseOwner: 'elsewhere',
        leaseExpiresAt: new Date(Date.now() + 60_000),
      },
    });
    const blocked = await run(a, 't:blocked');
    expect(blocked.turn.stopReason).toBe('tenant_budget_exhausted');
    expect(blocked.calls).toBe(1);
    // Neither a tenant with its own cap nor one without is touched by a's spend.
    expect((await run(b, 't:b')).turn.stopReason).toBe('final_answer');
    expect((await run(c, 't:c')).turn.stopReason).toBe('final_answer');
    // A turn that ended before today (its hook never ran) is not today's spend.
    await env.db.turn.update({
      where: { id: busy.turn.id },
      data: { status: 'completed', completedAt: new Date(Date.now() - 2 * 24 * 3600 * 1000) },
    });
    await env.db.turn.update({ where: { id: blocked.turn.id }, data: { costUsd: 0 } });
    expect((await run(a, 't:after')).turn.stopReason).toBe('final_answer');
  });
});
