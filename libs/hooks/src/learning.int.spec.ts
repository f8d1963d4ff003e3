import { newId } from '@switchboard/contracts';
import { randomBytes } from 'node:crypto';
import { createDatabase, poolOf, setContentCipher } from '@switchboard/database';
import { writeMemory } from '@switchboard/memory';
import { LocalKeyRing, TenantCipher } from '@switchboard/platform';
import { createLogger, Metrics } from '@switchboard/observability';
import { agentLearningStatus, agentToolStatus, sql, sqlDbFor } from '@switchboard/store';
import {
  countPoolTransactions,
  createTestEnv,
  hookContext,
  hookJob,
  seedTenantSession,
  seedTurn,
  transcriptMessage,
  type TestEnv,
} from '@switchboard/testing';
import type { HookContext } from './context';
import { runLearning } from './learning';

/** The learning post-turn hook: per agent and tool, each ended turn's tool calls counted exactly once. */
jest.setTimeout(120_000);

describe('runLearning', () => {
  let env: TestEnv;
  const logger = createLogger({ service: 'test', level: 'silent' });

  beforeAll(async () => {
    env = await createTestEnv();
  });

  afterAll(async () => {
    await env?.cleanup();
  });

  const ctx = () => hookContext(env);
  const job = (turnId: string, tenantId: string) => hookJob('learning', turnId, tenantId);

  interface Call {
    name: string;
    status: 'completed' | 'failed' | 'running';
    ms: number;
    at: string;
    kind?: string;
  }

  async function agent(name: string) {
    const t = await seedTenantSession(env.db, name);
    const { sessionId } = t;
    let seq = 0;
    return {
      ...t,
      /** An ended turn (status given) with these tool calls. */
      async turn(calls: Call[], status = 'completed') {
        const { id } = await seedTurn(env.db, t, { seq: ++seq, status });
        await env.db.toolCall.createMany({
          data: calls.map((c, i) => ({
            id: newId(),
            tenantId: t.tenantId,
            sessionId,
            turnId: id,
            callId: `call_${i}`,
            name: c.name,
            arguments: {},
            sideEffect: 'read_only',
            status: c.status,
            idempotencyKey: `${id}:call_${i}`,
            error:
              c.status === 'failed'
                ? { ok: false, kind: c.kind ?? 'execution_failed', message: 'x', retryable: false }
                : undefined,
            startedAt: new Date(Date.parse(c.at) - c.ms),
            completedAt: c.status === 'running' ? null : new Date(c.at),
            durationMs: c.status === 'running' ? null : c.ms,
          })),
        });
        return id;
      },
    };
  }

  it('adds a turn’s calls per tool, then answers already_done and adds nothing', async () => {
    const a = await agent('learn');
    const turnId = await a.turn([
      { name: 'http_fetch', status: 'completed', ms: 120, at: '2026-11-20T10:00:01.000Z' },
      { name: 'http_fetch', status: 'failed', ms: 30, at: '2026-11-20T10:00:02.000Z', kind: 'timeout' },
      { name: 'http_fetch', status: 'failed', ms: 50, at: '2026-11-20T10:00:03.000Z', kind: 'http_error' },
      { name: 'word_count', status: 'completed', ms: 2, at: '2026-11-20T10:00:04.000Z' },
      // Cut short by a cancel: never finished, not counted.
      { name: 'word_count', status: 'running', ms: 0, at: '2026-11-20T10:00:05.000Z' },
    ]);

    expect(await runLearning(ctx(), job(turnId, a.tenantId))).toBe('written');
    const run = await env.db.hookRun.findFirstOrThrow({
      where: { turnId, hook: 'learning' },
    });
    expect(run).toMatchObject({ tenantId: a.tenantId, status: 'completed' });
    expect(run.output).toEqual({
      agentId: a.agentId,
      tools: [
        {
          tool: 'http_fetch',
          calls: 3,
          failures: 2,
          failuresByKind: { timeout: 1, http_error: 1 },
          totalLatencyMs: 200,
          maxLatencyMs: 120,
        },
        { tool: 'word_count', calls: 1, failures: 0, failuresByKind: {}, totalLatencyMs: 2, maxLatencyMs: 2 },
      ],
    });
    const status = [
      {
        tool: 'http_fetch',
        calls: 3,
        failures: 2,
        failuresByKind: { timeout: 1, http_error: 1 },
        failureRate: 0.6667,
        avgLatencyMs: 67,
        maxLatencyMs: 120,
        lastUsedAt: '2026-11-20T10:00:03.000Z',
        lastFailedAt: '2026-11-20T10:00:03.000Z',
        lastFailureKind: 'http_error',
      },
      {
        tool: 'word_count',
        calls: 1,
        failures: 0,
        failuresByKind: {},
        failureRate: 0,
        avgLatencyMs: 2,
        maxLatencyMs: 2,
        lastUsedAt: '2026-11-20T10:00:04.000Z',
        lastFailedAt: null,
        lastFailureKind: null,
      },
    ];
    const sql = ctx().sql;
    expect(await agentToolStatus(sql, { tenantId: a.tenantId, agentId: a.agentId })).toEqual(status);

    expect(await runLearning(ctx(), job(turnId, a.tenantId))).toBe('already_done');
    expect(await agentToolStatus(sql, { tenantId: a.tenantId, agentId: a.agentId })).toEqual(status);
    // Another tenant cannot read the agent's statistics.
    expect(await agentToolStatus(sql, { tenantId: newId(), agentId: a.agentId })).toEqual([]);
  });

  it('is one statement per run', async () => {
    const a = await agent('learn-one');
    const turnId = await a.turn([{ name: 'x', status: 'completed', ms: 1, at: '2026-11-20T10:00:00Z' }]);
    const { prisma, pool } = createDatabase(env.databaseUrl, { poolSize: 2 });
    const wire = countPoolTransactions(pool);
    try {
      const counted: HookContext = {
        db: prisma,
        sql: sqlDbFor(pool, 'hooks'),
        logger,
        metrics: new Metrics('t'),
      };
      expect(await runLearning(counted, job(turnId, a.tenantId))).toBe('written');
      expect(await runLearning(counted, job(turnId, a.tenantId))).toBe('already_done');
      expect(wire.transactions).toBe(2);
      expect(wire.statements).toHaveLength(2);
    } finally {
      await prisma.$disconnect();
    }
  });

  it('sums exactly when many turns of one agent and their repeats run at once', async () => {
    const a = await agent('learn-race');
    const kinds = ['timeout', 'http_error', 'invalid_arguments'];
    let calls = 0;
    let failures = 0;
    let totalMs = 0;
    const byKind: Record<string, number> = {};
    const turns = await Promise.all(
      Array.from({ length: 30 }, (_, i) => {
        const list: Call[] = Array.from({ length: 1 + (i % 4) }, (_, j) => {
          const failed = (i + j) % 3 === 0;
          const kind = kinds[(i + j) % kinds.length];
          calls++;
          totalMs += 10 + i + j;
          if (failed) {
            failures++;
            byKind[kind] = (byKind[kind] ?? 0) + 1;
          }
          return {
            name: 'http_fetch',
            status: failed ? 'failed' : 'completed',
            ms: 10 + i + j,
            at: new Date(Date.UTC(2026, 10, 20, 11, 0, i, j)).toISOString(),
            kind,
          };
        });
        return a.turn(list, i % 5 === 0 ? 'cancelled' : 'completed');
      }),
    );

    const runs = await Promise.all(
      turns.flatMap((id) => [1, 2, 3].map(() => runLearning(ctx(), job(id, a.tenantId)))),
    );
    expect(runs.filter((r) => r === 'written')).toHaveLength(30);
    expect(await env.db.hookRun.count({ where: { turnId: { in: turns }, hook: 'learning' } })).toBe(30);

    const [stat] = await agentToolStatus(ctx().sql, { tenantId: a.tenantId, agentId: a.agentId });
    expect(stat).toMatchObject({
      tool: 'http_fetch',
      calls,
      failures,
      failuresByKind: byKind,
      maxLatencyMs: 10 + 29 + 1,
      avgLatencyMs: Math.round(totalMs / calls),
      lastUsedAt: new Date(Date.UTC(2026, 10, 20, 11, 0, 29, 1)).toISOString(),
    });
    const row = await env.db.agentToolStat.findUniqueOrThrow({
      where: { agentId_tool: { agentId: a.agentId, tool: 'http_fetch' } },
    });
    expect(Number(row.totalLatencyMs)).toBe(totalMs);
  });

  it('skips a turn not ended, another tenant’s job and a missing turn, writing nothing', async () => {
    const a = await agent('learn-skip');
    const running = await a.turn(
      [{ name: 'x', status: 'completed', ms: 1, at: '2026-11-20T10:00:00Z' }],
      'running',
    );
    const done = await a.turn([{ name: 'x', status: 'completed', ms: 1, at: '2026-11-20T10:00:00Z' }]);
    expect(await runLearning(ctx(), job(running, a.tenantId))).toBe('skipped');
    expect(await runLearning(ctx(), job(done, newId()))).toBe('skipped');
    expect(await runLearning(ctx(), job(newId(), a.tenantId))).toBe('skipped');
    expect(await env.db.hookRun.count({ where: { turnId: { in: [running, done] } } })).toBe(0);
    expect(await env.db.agentToolStat.count({ where: { agentId: a.agentId } })).toBe(0);
    // A turn with no tool calls still records its run (and no statistics).
    const none = await a.turn([]);
    expect(await runLearning(ctx(), job(none, a.tenantId))).toBe('written');
    expect(await env.db.agentToolStat.count({ where: { agentId: a.agentId } })).toBe(0);
  });

  it('keeps the user profile from the preference records only for an agent with learning on, moving its version only on a change (docs/adr/0059)', async () => {
    const a = await agent('learn-profile');
    const status = () =>
      agentLearningStatus(ctx().sql, { tenantId: a.tenantId, agentId: a.agentId, limit: 5 });
    const pref = (content: string, at: string) =>
      ctx().sql.first(sql`
        INSERT INTO memory_records (id, tenant_id, agent_id, kind, title, content, dedupe_key, tags, created_at, search)
        VALUES (${newId()}::uuid, ${a.tenantId}::uuid, ${a.agentId}::uuid, 'fact', 'Preference', ${content},
          ${newId()}, ARRAY['preference'], ${at}::timestamptz, to_tsvector('simple', ${content}))
        RETURNING id`);
    await pref('Prefers metric units.', '2026-11-20T10:00:00Z');
    await pref('prefers metric units.  ', '2026-11-20T10:01:00Z');
    await pref('Answers in German.', '2026-11-20T10:02:00Z');
    // Off: nothing is kept.
    expect(await runLearning(ctx(), job(await a.turn([]), a.tenantId))).toBe('written');
    expect((await status()).userProfile).toBeNull();

    await env.db.agent.update({ where: { id: a.agentId }, data: { memory: { learning: true } } });
    expect(await runLearning(ctx(), job(await a.turn([]), a.tenantId))).toBe('written');
    const first = (await status()).userProfile;
    expect(first).toMatchObject({ content: '- Answers in German.\n- prefers metric units.', version: 1 });
    // Same preferences: the record does not move.
    expect(await runLearning(ctx(), job(await a.turn([]), a.tenantId))).toBe('written');
    expect((await status()).userProfile).toEqual(first);
    await pref('Short answers.', '2026-11-20T10:03:00Z');
    expect(await runLearning(ctx(), job(await a.turn([]), a.tenantId))).toBe('written');
    expect((await status()).userProfile).toMatchObject({
      content: '- Short answers.\n- Answers in German.\n- prefers metric units.',
      version: 2,
    });
    // Another tenant reads nothing.
    expect(await agentLearningStatus(ctx().sql, { tenantId: newId(), agentId: a.agentId, limit: 5 })).toEqual(
      {
        reflections: [],
        userProfile: null,
      },
    );
  });

  it('keeps reflections and the profile of an encrypted tenant: read opened, written sealed, moved only on a change (docs/adr/0067)', async () => {
    const cipher = new TenantCipher(
      env.db,
      LocalKeyRing.fromSpec(`k1:${randomBytes(32).toString('base64')}`),
    );
    setContentCipher(cipher);
    try {
      const a = await agent('learn-sealed');
      await env.db.tenant.update({
        where: { id: a.tenantId },
        data: { settings: { encryption: { mode: 'on' } } },
      });
      await env.db.agent.update({ where: { id: a.agentId }, data: { memory: { learning: true } } });
      const pref = (content: string) =>
        writeMemory(ctx().sql, [
          {
            tenantId: a.tenantId,
            agentId: a.agentId,
            kind: 'fact',
            title: 'Preference',
            content,
            dedupeKey: newId(),
            provenance: { source: 'api' },
            tags: ['preference'],
          },
        ]);
      await pref('Prefers  haiku replies.');
      const turnId = await a.turn([]);
      const turn = await env.db.turn.findUniqueOrThrow({ where: { id: turnId } });
      const note = transcriptMessage(a, { id: turnId, seq: turn.seq }, 1, 'assistant', '');
      await env.db.message.create({
        data: {
          ...note,
          metadata: { reflection: 0 },
          body: (await cipher.sealJson(a.tenantId, {
            type: 'text',
            text: '<reflection>\nAsk about the ferret before answering.\n</reflection>',
          })) as string,
        },
      });
      expect(await runLearning(ctx(), job(turnId, a.tenantId))).toBe('written');
      const status = () =>
        agentLearningStatus(ctx().sql, { tenantId: a.tenantId, agentId: a.agentId, limit: 5 });
      const first = await status();
      expect(first.reflections.map((r) => r.text)).toEqual(['Ask about the ferret before answering.']);
      expect(first.userProfile).toMatchObject({ content: '- Prefers haiku replies.', version: 1 });
      // Stored sealed: neither the reflection nor the profile is in clear.
      const { rows } = await poolOf(env.db).query(
        `SELECT text FROM agent_reflections WHERE tenant_id = $1
         UNION ALL SELECT content FROM agent_user_profiles WHERE tenant_id = $1`,
        [a.tenantId],
      );
      expect(rows).toHaveLength(2);
      for (const r of rows as { text: string }[]) expect(r.text).toMatch(/^sbe1\.t\./);
      // Same preferences: the profile does not move (its plaintext is compared, not its sealed form).
      expect(await runLearning(ctx(), job(await a.turn([]), a.tenantId))).toBe('written');
      expect((await status()).userProfile).toEqual(first.userProfile);
      await pref('Short answers.');
      expect(await runLearning(ctx(), job(await a.turn([]), a.tenantId))).toBe('written');
      expect((await status()).userProfile).toMatchObject({
        content: '- Short answers.\n- Prefers haiku replies.',
        version: 2,
      });
    } finally {
      setContentCipher(undefined);
    }
  });
});
