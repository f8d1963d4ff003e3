import { randomBytes } from 'node:crypto';
import { newId } from '@switchboard/contracts';
import { poolOf, setContentCipher } from '@switchboard/database';
import { LocalKeyRing, TenantCipher } from '@switchboard/platform';
import {
  createTestEnv,
  seedTenantSession,
  seedTurn,
  type SessionIds,
  type TestEnv,
} from '@switchboard/testing';
import { agentScoreAggregates, writeFeedback } from './score-store';
import { sqlDbFor, type SqlDb } from './sql';

/**
 * Score aggregates and feedback (docs/adr/0062) on real Postgres, rows inserted directly: only rows
 * `scored` with a score count; the pass rate is over rows with `passed` set; per version, day, scorer
 * and source; feedback is refused for another tenant's turn and for one still running.
 */
jest.setTimeout(60_000);

describe('score store', () => {
  let env: TestEnv;
  let db: SqlDb;
  let t: SessionIds;

  beforeAll(async () => {
    env = await createTestEnv();
    db = sqlDbFor(poolOf(env.db), 'test');
    t = await seedTenantSession(env.db, `t-${newId()}`);
  });

  afterAll(async () => {
    await env?.cleanup();
  });

  async function score(
    turnId: string,
    row: {
      version: number | null;
      scorer: string;
      status?: string;
      score?: number | null;
      passed?: boolean | null;
      source?: string;
      at?: Date;
    },
  ) {
    // One scorer scores a turn once: each row on a turn of its own unless told.
    const own = turnId || (await seedTurn(env.db, t, { status: 'completed', completedAt: new Date() })).id;
    await env.db.turnScore.create({
      data: {
        id: newId(),
        tenantId: t.tenantId,
        agentId: t.agentId,
        agentVersion: row.version,
        turnId: own,
        sessionId: t.sessionId,
        source: row.source ?? 'scorer',
        scorer: row.scorer,
        kind: row.source === 'feedback' ? 'feedback' : 'rule',
        status: row.status ?? 'scored',
        score: row.score === undefined ? 1 : row.score,
        passed: row.passed === undefined ? true : row.passed,
        ...(row.status === 'skipped' ? { reason: 'evaluation_budget', score: null, passed: null } : {}),
        ...(row.at ? { createdAt: row.at } : {}),
      },
    });
  }

  it('aggregates per version, UTC day, scorer and source, counting only scored rows with a score', async () => {
    const turn = '';
    const day1 = new Date('2026-11-30T23:30:00Z');
    const day2 = new Date('2026-12-01T00:30:00Z');
    await score(turn, { version: 1, scorer: 'a', score: 1, passed: true, at: day1 });
    await score(turn, { version: 1, scorer: 'b', score: 0.5, passed: false, at: day1 });
    await score(turn, { version: 1, scorer: 'b', score: 0.7, passed: null, at: day1 });
    await score(turn, { version: 1, scorer: 'b', status: 'skipped', at: day1 });
    await score(turn, { version: 1, scorer: 'c', status: 'skipped', at: day1 });
    await score(turn, { version: 2, scorer: 'a', score: 0, passed: false, at: day2 });
    await score(turn, { version: 2, scorer: 'a', score: 1, passed: true, at: day2 });
    await score(turn, {
      version: 2,
      scorer: 'feedback',
      source: 'feedback',
      score: 0.25,
      passed: null,
      at: day2,
    });
    await score(turn, { version: null, scorer: 'a', score: 0.5, passed: true, at: day2 });

    const all = await agentScoreAggregates(db, {
      tenantId: t.tenantId,
      agentId: t.agentId,
      from: new Date('2026-11-30T00:00:00Z'),
      to: new Date('2026-12-02T00:00:00Z'),
    });
    expect(all).toEqual([
      {
        version: null,
        day: '2026-12-01',
        scorer: 'a',
        source: 'scorer',
        count: 1,
        meanScore: 0.5,
        passRate: 1,
      },
      { version: 1, day: '2026-11-30', scorer: 'a', source: 'scorer', count: 1, meanScore: 1, passRate: 1 },
      { version: 1, day: '2026-11-30', scorer: 'b', source: 'scorer', count: 2, meanScore: 0.6, passRate: 0 },
      {
        version: 2,
        day: '2026-12-01',
        scorer: 'a',
        source: 'scorer',
        count: 2,
        meanScore: 0.5,
        passRate: 0.5,
      },
      {
        version: 2,
        day: '2026-12-01',
        scorer: 'feedback',
        source: 'feedback',
        count: 1,
        meanScore: 0.25,
        passRate: null,
      },
    ]);
    const oneDay = await agentScoreAggregates(db, {
      tenantId: t.tenantId,
      agentId: t.agentId,
      from: new Date('2026-12-01T00:00:00Z'),
      to: new Date('2026-12-02T00:00:00Z'),
      scorer: 'a',
    });
    expect(oneDay.map((r) => [r.version, r.count])).toEqual([
      [null, 1],
      [2, 2],
    ]);
    // Another tenant sees nothing of this agent.
    expect(
      await agentScoreAggregates(db, { tenantId: newId(), agentId: t.agentId, from: day1, to: new Date() }),
    ).toEqual([]);
  });

  it("writes feedback on an ended turn only, copying its version; another tenant's turn is not found", async () => {
    const ended = (
      await seedTurn(env.db, t, { status: 'completed', completedAt: new Date(), agentVersion: 3 })
    ).id;
    const running = (await seedTurn(env.db, t, { status: 'running' })).id;
    const base = {
      score: 1,
      passed: true,
      label: 'good',
      value: 4,
      comment: 'nice',
      rating: 'up' as const,
      givenBy: 'u',
    };
    const written = await writeFeedback(db, { ...base, tenantId: t.tenantId, turnId: ended });
    expect(written).toMatchObject({
      outcome: 'written',
      score: {
        turnId: ended,
        scorer: 'feedback',
        source: 'feedback',
        kind: 'feedback',
        score: 1,
        passed: true,
        label: 'good',
        value: 4,
        comment: 'nice',
        givenBy: 'u',
      },
    });
    const row = await env.db.turnScore.findFirstOrThrow({ where: { turnId: ended, source: 'feedback' } });
    expect(row).toMatchObject({ agentVersion: 3, agentId: t.agentId, sessionId: t.sessionId });
    expect(await writeFeedback(db, { ...base, tenantId: t.tenantId, turnId: running })).toEqual({
      outcome: 'not_ended',
      status: 'running',
    });
    expect(await writeFeedback(db, { ...base, tenantId: newId(), turnId: ended })).toEqual({
      outcome: 'not_found',
    });
    expect(await env.db.turnScore.count({ where: { turnId: { in: [ended, running] } } })).toBe(1);
  });

  it("seals an encrypting tenant's feedback comment (docs/adr/0067)", async () => {
    const s = await seedTenantSession(env.db, `sealed-${newId()}`);
    await env.db.tenant.update({
      where: { id: s.tenantId },
      data: { settings: { encryption: { mode: 'on' } } },
    });
    const ended = (await seedTurn(env.db, s, { status: 'completed', completedAt: new Date() })).id;
    setContentCipher(
      new TenantCipher(env.db, LocalKeyRing.fromSpec(`k1:${randomBytes(32).toString('base64')}`)),
    );
    try {
      const written = await writeFeedback(db, {
        tenantId: s.tenantId,
        turnId: ended,
        score: 0,
        passed: false,
        label: null,
        value: null,
        comment: 'the answer named the wrong city',
        rating: 'down',
        givenBy: 'u',
      });
      expect(written).toMatchObject({
        outcome: 'written',
        score: { comment: 'the answer named the wrong city' },
      });
      const raw = await env.db.turnScore.findFirstOrThrow({ where: { turnId: ended } });
      expect(raw.details).toEqual({ comment: expect.stringMatching(/^sbe1\.t\./), rating: 'down' });
    } finally {
      setContentCipher(undefined);
    }
  });
});
