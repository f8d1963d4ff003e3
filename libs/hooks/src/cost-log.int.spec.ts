import { newId } from '@switchboard/contracts';
import { createDatabase, poolOf, Prisma } from '@switchboard/database';
import { createLogger, Metrics } from '@switchboard/observability';
import { sqlDbFor } from '@switchboard/store';
import { countPoolTransactions, createTestEnv, seedTenant, type TestEnv } from '@switchboard/testing';
import { runCostLog, type HookContext } from './cost-log';

/** The cost-log post-turn hook: one roll-up row per turn, however often it runs. */
jest.setTimeout(30_000);

describe('runCostLog', () => {
  let env: TestEnv;
  let tenantId: string;
  let agentId: string;
  let sessionId: string;
  let seq = 0;
  const logger = createLogger({ service: 'test', level: 'silent' });

  beforeAll(async () => {
    env = await createTestEnv();
    ({ tenantId, agentId } = await seedTenant(env.db, 'cost'));
    sessionId = newId();
    await env.db.session.create({ data: { id: sessionId, tenantId, agentId } });
  });

  afterAll(async () => {
    await env?.cleanup();
  });

  const ctx = (metrics = new Metrics('test')): HookContext => ({
    db: env.db,
    sql: sqlDbFor(poolOf(env.db), 'hooks', metrics),
    logger,
    metrics,
  });
  const job = (turnId: string, tenant = tenantId) => ({
    turnId,
    tenantId: tenant,
    hook: 'cost-log' as const,
    trace: {},
  });

  async function turn(status: string): Promise<string> {
    const id = newId();
    await env.db.turn.create({
      data: { id, tenantId, sessionId, agentId, seq: ++seq, inputMessageId: newId(), status },
    });
    return id;
  }

  interface Entry {
    provider: string;
    model: string;
    inputTokens: number;
    outputTokens: number;
    cachedTokens?: number;
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
        key: `${turnId}:${i}:0`,
        provider: e.provider,
        model: e.model,
        inputTokens: e.inputTokens,
        outputTokens: e.outputTokens,
        cachedTokens: e.cachedTokens ?? 0,
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
      const counted: HookContext = {
        db: prisma,
        sql: sqlDbFor(pool, 'hooks'),
        logger,
        metrics: new Metrics('test'),
      };
      expect(await runCostLog(counted, job(turnId))).toBe('written');
      expect(wire).toMatchObject({ transactions: 1, statements: [expect.stringMatching(/^WITH t AS/)] });
      expect(await runCostLog(counted, job(turnId))).toBe('already_done');
      expect(wire.transactions).toBe(2);
      expect(wire.statements).toHaveLength(2);
      expect(counted.sql.counts).toEqual({ transactions: 2, statements: 2 });
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
    expect(await counter(metrics.costUsd, labels)).toBeCloseTo(0.75, 10);

    // A later re-run (a retried job) counts nothing more.
    expect(await runCostLog(shared, job(turnId))).toBe('already_done');
    expect(await counter(metrics.tokens, { ...labels, direction: 'input' })).toBe(24);
    expect(await counter(metrics.costUsd, labels)).toBeCloseTo(0.75, 10);
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
