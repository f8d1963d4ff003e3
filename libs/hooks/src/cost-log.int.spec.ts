import { newId, uuid7Time } from '@switchboard/contracts';
import { createDatabase, Prisma } from '@switchboard/database';
import { createLogger, Metrics } from '@switchboard/observability';
import { sqlDbFor, tenantDailySpend } from '@switchboard/store';
import {
  countPoolTransactions,
  createTestEnv,
  hookContext,
  hookJob,
  seedTenantSession,
  seedTurn,
  type TestEnv,
} from '@switchboard/testing';
import type { HookContext } from './context';
import { runCostLog } from './cost-log';

/** The cost-log post-turn hook: one roll-up row per turn, however often it runs. */
jest.setTimeout(120_000);

describe('runCostLog', () => {
  let env: TestEnv;
  let tenantId: string;
  let agentId: string;
  let sessionId: string;
  const logger = createLogger({ service: 'test', level: 'silent' });

  beforeAll(async () => {
    env = await createTestEnv();
    ({ tenantId, agentId, sessionId } = await seedTenantSession(env.db, 'cost'));
  });

  afterAll(async () => {
    await env?.cleanup();
  });

  const ctx = (metrics = new Metrics('test')) => hookContext(env, { metrics });
  const job = (turnId: string, tenant = tenantId) => hookJob('cost-log', turnId, tenant);

  const turn = async (status: string): Promise<string> =>
    (await seedTurn(env.db, { tenantId, agentId, sessionId }, { status })).id;

  interface Entry {
    provider: string;
    model: string;
    inputTokens: number;
    outputTokens: number;
    cachedTokens?: number;
    cacheWriteTokens?: number;
    costUsd: string;
  }

  async function ledger(turnId: string, entries: Entry[]): Promise<void> {
    const base = Date.now() - 60_000;
    await env.db.ledgerEntry.createMany({
      data: entries.map((e, i) => ({
        id: newId(),
        tenantId,
        agentId,
        sessionId,
        turnId,
        turnAt: uuid7Time(turnId),
        key: `${turnId}:${i}:0`,
        provider: e.provider,
        model: e.model,
        inputTokens: e.inputTokens,
        outputTokens: e.outputTokens,
        cachedTokens: e.cachedTokens ?? 0,
        cacheWriteTokens: e.cacheWriteTokens ?? 0,
        costUsd: new Prisma.Decimal(e.costUsd),
        costSource: 'rate_table',
        createdAt: new Date(base + i * 1000),
      })),
    });
  }

  const hookRuns = (turnId: string) => env.db.hookRun.findMany({ where: { turnId } });

  /** The value of one counter series, 0 when it was never incremented. */
  async function counter(c: Metrics['tokens'] | Metrics['costUsd'], labels: Record<string, string>) {
    const { values } = await c.get();
    const hit = values.find((v) =>
      Object.entries(labels).every(([k, val]) => (v.labels as Record<string, unknown>)[k] === val),
    );
    return hit?.value ?? 0;
  }

  it('sums the ledger into the hook_runs row, then answers already_done', async () => {
    const turnId = await turn('completed');
    await ledger(turnId, [
      {
        provider: 'openai',
        model: 'gpt-4o',
        inputTokens: 100,
        outputTokens: 20,
        cachedTokens: 50,
        costUsd: '0.00012345',
      },
      {
        provider: 'anthropic',
        model: 'claude-sonnet-5-5',
        inputTokens: 200,
        outputTokens: 30,
        costUsd: '0.00100001',
      },
      {
        provider: 'openai',
        model: 'gpt-4o',
        inputTokens: 300,
        outputTokens: 40,
        cachedTokens: 5,
        costUsd: '0.00000004',
      },
    ]);

    expect(await runCostLog(ctx(), job(turnId))).toBe('written');

    const runs = await hookRuns(turnId);
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({
      tenantId,
      turnId,
      hook: 'cost-log',
      status: 'completed',
      completedAt: expect.any(Date),
    });
    expect(runs[0].output).toEqual({
      turnId,
      sessionId,
      agentId,
      tenantId,
      status: 'completed',
      providerCalls: 3,
      inputTokens: 600,
      outputTokens: 90,
      cachedTokens: 55,
      costUsd: '0.00112350',
      models: ['gpt-4o', 'claude-sonnet-5-5'],
    });

    expect(await runCostLog(ctx(), job(turnId))).toBe('already_done');
    expect(await hookRuns(turnId)).toHaveLength(1);
  });

  it('is one statement, hence one transaction, per run, written or already done', async () => {
    const turnId = await turn('completed');
    await ledger(turnId, [
      { provider: 'openai', model: 'a', inputTokens: 3, outputTokens: 2, costUsd: '0.01' },
      { provider: 'openai', model: 'b', inputTokens: 5, outputTokens: 1, costUsd: '0.02' },
    ]);
    const { prisma, pool } = createDatabase(env.databaseUrl, { poolSize: 2 });
    const wire = countPoolTransactions(pool);
    try {
      const store = sqlDbFor(pool, 'hooks');
      const counted: HookContext = {
        db: prisma,
        sql: store,
        logger,
        metrics: new Metrics('test'),
      };
      expect(await runCostLog(counted, job(turnId))).toBe('written');
      expect(wire).toMatchObject({ transactions: 1, statements: [expect.stringMatching(/^WITH t AS/)] });
      expect(await runCostLog(counted, job(turnId))).toBe('already_done');
      expect(wire.transactions).toBe(2);
      expect(wire.statements).toHaveLength(2);
      expect(store.counts).toEqual({ transactions: 2, statements: 2 });
    } finally {
      await prisma.$disconnect();
    }
    const [run] = await hookRuns(turnId);
    expect(run.output).toMatchObject({ providerCalls: 2, costUsd: '0.03000000', models: ['a', 'b'] });
  });

  it('adds costs exactly, to 8 decimals, where floating point would drift', async () => {
    const turnId = await turn('completed');
    await ledger(turnId, [
      { provider: 'openai', model: 'm', inputTokens: 1, outputTokens: 1, costUsd: '1234567890.12345678' },
      { provider: 'openai', model: 'm', inputTokens: 1, outputTokens: 1, costUsd: '0.00000001' },
      { provider: 'openai', model: 'm', inputTokens: 1, outputTokens: 1, costUsd: '0.10000000' },
    ]);
    expect(await runCostLog(ctx(), job(turnId))).toBe('written');
    const [run] = await hookRuns(turnId);
    expect(run.output).toMatchObject({ costUsd: '1234567890.22345679', models: ['m'], providerCalls: 3 });
  });

  it('writes a zero line for a turn that made no provider call', async () => {
    const turnId = await turn('cancelled');
    expect(await runCostLog(ctx(), job(turnId))).toBe('written');
    const [run] = await hookRuns(turnId);
    expect(run.output).toMatchObject({
      status: 'cancelled',
      providerCalls: 0,
      inputTokens: 0,
      outputTokens: 0,
      cachedTokens: 0,
      costUsd: '0.00000000',
      models: [],
    });
  });

  it('writes exactly one row when runs for one turn race, and counts metrics once', async () => {
    const turnId = await turn('failed');
    await ledger(turnId, [
      {
        provider: 'openai',
        model: 'gpt-4o-mini',
        inputTokens: 11,
        outputTokens: 7,
        cachedTokens: 3,
        cacheWriteTokens: 4,
        costUsd: '0.25',
      },
      { provider: 'openai', model: 'gpt-4o-mini', inputTokens: 13, outputTokens: 5, costUsd: '0.5' },
    ]);
    const metrics = new Metrics('test');
    const shared = ctx(metrics);

    const results = await Promise.all(Array.from({ length: 8 }, () => runCostLog(shared, job(turnId))));

    expect(results.filter((r) => r === 'written')).toHaveLength(1);
    expect(results.filter((r) => r === 'already_done')).toHaveLength(7);
    expect(await hookRuns(turnId)).toHaveLength(1);
    const labels = { provider: 'openai', model: 'gpt-4o-mini' };
    expect(await counter(metrics.tokens, { ...labels, direction: 'input' })).toBe(24);
    expect(await counter(metrics.tokens, { ...labels, direction: 'output' })).toBe(12);
    expect(await counter(metrics.tokens, { ...labels, direction: 'cached' })).toBe(3);
    expect(await counter(metrics.tokens, { ...labels, direction: 'cache_write' })).toBe(4);
    expect(await counter(metrics.costUsd, labels)).toBeCloseTo(0.75, 10);

    // A later re-run (a retried job) counts nothing more.
    expect(await runCostLog(shared, job(turnId))).toBe('already_done');
    expect(await counter(metrics.tokens, { ...labels, direction: 'input' })).toBe(24);
    expect(await counter(metrics.costUsd, labels)).toBeCloseTo(0.75, 10);
  });

  describe('the tenant spend roll-up (tenant_spend_daily)', () => {
    /** A fresh tenant with an agent and a session, so its roll-up holds only what the test adds. */
    async function freshTenant(name: string) {
      const t = await seedTenantSession(env.db, name);
      let n = 0;
      return {
        tenantId: t.tenantId,
        /** An ended turn with ledger entries at the given times and costs. */
        async turn(
          entries: {
            at: string;
            costUsd: string;
            input?: number;
            output?: number;
            write?: number;
            saved?: string;
          }[],
        ) {
          const { id } = await seedTurn(env.db, t, { seq: ++n, status: 'completed' });
          await env.db.ledgerEntry.createMany({
            data: entries.map((e, i) => ({
              id: newId(),
              tenantId: t.tenantId,
              agentId: t.agentId,
              sessionId: t.sessionId,
              turnId: id,
              turnAt: uuid7Time(id),
              key: `${id}:${i}:0`,
              provider: 'openai',
              model: 'm',
              inputTokens: e.input ?? 10,
              outputTokens: e.output ?? 5,
              cachedTokens: 1,
              cacheWriteTokens: e.write ?? 0,
              costUsd: new Prisma.Decimal(e.costUsd),
              cacheSavedUsd: new Prisma.Decimal(e.saved ?? '0'),
              costSource: 'rate_table',
              createdAt: new Date(e.at),
            })),
          });
          return id;
        },
      };
    }

    const spend = (tenant: string) =>
      env.db.$queryRaw<
        {
          day: string;
          costUsd: string;
          inputTokens: number;
          outputTokens: number;
          cachedTokens: number;
          cacheWriteTokens: number;
          cacheSavedUsd: string;
          providerCalls: number;
          turns: number;
        }[]
      >`SELECT to_char(day, 'YYYY-MM-DD') AS day, cost_usd::text AS "costUsd", input_tokens::int AS "inputTokens",
          output_tokens::int AS "outputTokens", cached_tokens::int AS "cachedTokens",
          cache_write_tokens::int AS "cacheWriteTokens", cache_saved_usd::text AS "cacheSavedUsd",
          provider_calls AS "providerCalls", turns
        FROM tenant_spend_daily WHERE tenant_id = ${tenant}::uuid ORDER BY day`;

    it('adds each turn exactly once, per UTC day of its entries, however runs race or repeat', async () => {
      const t = await freshTenant('spend-race');
      const other = await freshTenant('spend-other');
      // 40 turns with costs that drift in floating point (0.1 + 0.2 ...), 3 entries each, one day.
      const costs = ['0.10000001', '0.20000002', '0.30000003'];
      const turns = await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          t.turn(
            costs.map((c, j) => ({
              at: `2026-11-20T10:${String(i).padStart(2, '0')}:0${j}Z`,
              costUsd: c,
              write: 2,
              saved: '0.01000001',
            })),
          ),
        ),
      );
      const foreign = await other.turn([{ at: '2026-11-20T12:00:00Z', costUsd: '5' }]);

      // Every turn's hook runs 3 times at once, all turns at the same time, plus the other tenant's.
      const runs = await Promise.all([
        ...turns.flatMap((id) => [1, 2, 3].map(() => runCostLog(ctx(), job(id, t.tenantId)))),
        runCostLog(ctx(), job(foreign, other.tenantId)),
      ]);
      expect(runs.filter((r) => r === 'written')).toHaveLength(41);

      const expected = {
        day: '2026-11-20',
        costUsd: '24.00000240',
        inputTokens: 40 * 3 * 10,
        outputTokens: 40 * 3 * 5,
        cachedTokens: 40 * 3,
        cacheWriteTokens: 40 * 3 * 2,
        cacheSavedUsd: '1.20000120',
        providerCalls: 120,
        turns: 40,
      };
      expect(await spend(t.tenantId)).toEqual([expected]);
      expect(await spend(other.tenantId)).toEqual([
        {
          day: '2026-11-20',
          costUsd: '5.00000000',
          inputTokens: 10,
          outputTokens: 5,
          cachedTokens: 1,
          cacheWriteTokens: 0,
          cacheSavedUsd: '0.00000000',
          providerCalls: 1,
          turns: 1,
        },
      ]);
      // The roll-up agrees with the ledger it summarises.
      const [ledger] = await env.db.$queryRaw<{ sum: string }[]>`
        SELECT sum(cost_usd)::numeric(20, 8)::text AS sum FROM ledger_entries WHERE tenant_id = ${t.tenantId}::uuid`;
      expect(ledger.sum).toBe(expected.costUsd);

      // A later re-run of every job adds nothing.
      const again = await Promise.all(turns.map((id) => runCostLog(ctx(), job(id, t.tenantId))));
      expect(new Set(again)).toEqual(new Set(['already_done']));
      expect(await spend(t.tenantId)).toEqual([expected]);
    });

    it('splits a turn across midnight by its entries, counting the turn on the day it ended', async () => {
      const t = await freshTenant('spend-midnight');
      const id = await t.turn([
        // The first call only wrote the cache (saved < 0), the second read it.
        {
          at: '2026-11-21T23:59:59.900Z',
          costUsd: '0.5',
          input: 7,
          output: 3,
          write: 100,
          saved: '-0.00375',
        },
        { at: '2026-11-22T00:00:00.100Z', costUsd: '0.25', input: 2, output: 1, saved: '0.125' },
      ]);
      expect(await runCostLog(ctx(), job(id, t.tenantId))).toBe('written');
      // As GET /v1/usage/daily reads it: per day over an inclusive window, and the totals.
      const read = (from: string, to: string) =>
        tenantDailySpend(ctx().sql, { tenantId: t.tenantId, from, to });
      expect(await read('2026-11-01', '2026-11-30')).toEqual({
        days: [
          expect.objectContaining({
            day: '2026-11-21',
            costUsd: '0.5',
            cacheWriteTokens: 100,
            cacheSavedUsd: '-0.00375',
            turns: 0,
          }),
          expect.objectContaining({
            day: '2026-11-22',
            costUsd: '0.25',
            cacheWriteTokens: 0,
            cacheSavedUsd: '0.125',
            turns: 1,
          }),
        ],
        totals: {
          costUsd: '0.75',
          inputTokens: 9,
          outputTokens: 4,
          cachedTokens: 2,
          cacheWriteTokens: 100,
          cacheSavedUsd: '0.12125',
          providerCalls: 2,
          turns: 1,
        },
      });
      expect((await read('2026-11-22', '2026-11-22')).days.map((d) => d.day)).toEqual(['2026-11-22']);
      expect(await read('2026-10-01', '2026-10-31')).toEqual({
        days: [],
        totals: {
          costUsd: '0',
          inputTokens: 0,
          outputTokens: 0,
          cachedTokens: 0,
          cacheWriteTokens: 0,
          cacheSavedUsd: '0',
          providerCalls: 0,
          turns: 0,
        },
      });
      expect(await spend(t.tenantId)).toEqual([
        {
          day: '2026-11-21',
          costUsd: '0.50000000',
          inputTokens: 7,
          outputTokens: 3,
          cachedTokens: 1,
          cacheWriteTokens: 100,
          cacheSavedUsd: '-0.00375000',
          providerCalls: 1,
          turns: 0,
        },
        {
          day: '2026-11-22',
          costUsd: '0.25000000',
          inputTokens: 2,
          outputTokens: 1,
          cachedTokens: 1,
          cacheWriteTokens: 0,
          cacheSavedUsd: '0.12500000',
          providerCalls: 1,
          turns: 1,
        },
      ]);
      // A turn with no provider call adds no row; a skipped (foreign-tenant) job adds nothing.
      const empty = await t.turn([]);
      expect(await runCostLog(ctx(), job(empty, t.tenantId))).toBe('written');
      const foreign = await t.turn([{ at: '2026-11-22T01:00:00Z', costUsd: '9' }]);
      expect(await runCostLog(ctx(), job(foreign, newId()))).toBe('skipped');
      expect((await spend(t.tenantId)).map((r) => [r.day, r.costUsd, r.turns])).toEqual([
        ['2026-11-21', '0.50000000', 0],
        ['2026-11-22', '0.25000000', 1],
      ]);
    });
  });

  it.each(['queued', 'running', 'awaiting_approval'])(
    'skips a %s turn and writes nothing',
    async (status) => {
      const turnId = await turn(status);
      await ledger(turnId, [
        { provider: 'openai', model: 'x', inputTokens: 1, outputTokens: 1, costUsd: '0.1' },
      ]);
      const metrics = new Metrics('test');
      expect(await runCostLog(ctx(metrics), job(turnId))).toBe('skipped');
      expect(await hookRuns(turnId)).toHaveLength(0);
      expect(await counter(metrics.tokens, { model: 'x', direction: 'input' })).toBe(0);
    },
  );

  it('skips a job whose tenant is not the turn’s, and a turn that does not exist', async () => {
    const turnId = await turn('completed');
    await ledger(turnId, [
      { provider: 'openai', model: 'y', inputTokens: 1, outputTokens: 1, costUsd: '0.1' },
    ]);
    const metrics = new Metrics('test');
    expect(await runCostLog(ctx(metrics), job(turnId, newId()))).toBe('skipped');
    expect(await hookRuns(turnId)).toHaveLength(0);
    expect(await counter(metrics.costUsd, { model: 'y' })).toBe(0);

    expect(await runCostLog(ctx(metrics), job(newId()))).toBe('skipped');

    // The rightful tenant's job still writes it.
    expect(await runCostLog(ctx(metrics), job(turnId))).toBe('written');
    expect(await hookRuns(turnId)).toHaveLength(1);
  });
});
