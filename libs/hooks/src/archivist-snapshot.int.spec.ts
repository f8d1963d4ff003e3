import { newId, uuid7Time } from '@switchboard/contracts';
import type { SqlRunner } from '@switchboard/store';
import {
  createTestEnv,
  hookContext,
  seedEndedTurn,
  seedTenantSession,
  type TestEnv,
} from '@switchboard/testing';
import { loadTurnSnapshot, loadTurnSnapshots, SnapshotCache } from './archivist-snapshot';

jest.setTimeout(120_000);

/** The turn snapshot the archivist and the episodic index read: once per post-turn job, once per session run. */
describe('turn snapshots', () => {
  let env: TestEnv;
  let sql: SqlRunner;

  beforeAll(async () => {
    env = await createTestEnv();
    sql = hookContext(env).sql;
  });

  afterAll(async () => {
    await env?.cleanup();
  });

  /** `sql` with its reads counted. */
  function counted(): { runner: SqlRunner; reads: () => number } {
    let n = 0;
    const runner: SqlRunner = {
      ...sql,
      rows: (q) => {
        n++;
        return sql.rows(q);
      },
      first: (q) => {
        n++;
        return sql.first(q);
      },
    };
    return { runner, reads: () => n };
  }

  it('one job reads its turn once for every hook, each hook seeing its own run status', async () => {
    const s = await seedTenantSession(env.db, 'snap');
    const turn = await seedEndedTurn(env.db, s, { status: 'completed', input: 'q', answer: 'done' });
    await env.db.hookRun.create({
      data: {
        id: newId(),
        tenantId: s.tenantId,
        turnId: turn.id,
        turnAt: uuid7Time(turn.id),
        hook: 'archivist',
        status: 'deferred',
        output: {},
      },
    });
    const job = { turnId: turn.id, tenantId: s.tenantId };
    const { runner, reads } = counted();
    const cache = new SnapshotCache();
    const [archivist, episodic] = await Promise.all([
      loadTurnSnapshot(runner, job, 'archivist', cache),
      loadTurnSnapshot(runner, job, 'episodic-index', cache),
    ]);
    expect(reads()).toBe(1);
    expect(archivist).toMatchObject({ turnId: turn.id, done: true, runStatus: 'deferred' });
    expect(episodic).toMatchObject({ turnId: turn.id, done: false, runStatus: null });
    expect(episodic?.assistant.text).toBe('done');
    // Without a cache each call reads.
    await loadTurnSnapshot(runner, job, 'archivist');
    expect(reads()).toBe(2);
  });

  it("another tenant's turn is not found, and a failed read is not kept", async () => {
    const s = await seedTenantSession(env.db, 'mine');
    const other = await seedTenantSession(env.db, 'other');
    const turn = await seedEndedTurn(env.db, s, { status: 'completed', input: 'q', answer: 'x' });
    const cache = new SnapshotCache();
    expect(
      await loadTurnSnapshot(sql, { turnId: turn.id, tenantId: other.tenantId }, 'archivist', cache),
    ).toBeNull();
    expect(await loadTurnSnapshots(sql, other.tenantId, [turn.id], 'archivist')).toEqual([]);

    const failing: SqlRunner = { ...sql, rows: () => Promise.reject(new Error('connection lost')) };
    const job = { turnId: turn.id, tenantId: s.tenantId };
    await expect(loadTurnSnapshot(failing, job, 'archivist', cache)).rejects.toThrow('connection lost');
    expect(await loadTurnSnapshot(sql, job, 'archivist', cache)).toMatchObject({ turnId: turn.id });
  });

  it('a session run reads every deferred turn at once, oldest first, ended ones only', async () => {
    const s = await seedTenantSession(env.db, 'session');
    const first = await seedEndedTurn(env.db, s, { status: 'completed', input: 'q', answer: 'one' });
    const second = await seedEndedTurn(env.db, s, { status: 'failed', input: 'q' });
    const third = await seedEndedTurn(env.db, s, { status: 'completed', input: 'q', answer: 'three' });
    const running = await env.db.turn.update({ where: { id: third.id }, data: { status: 'running' } });
    const { runner, reads } = counted();
    const snaps = await loadTurnSnapshots(runner, s.tenantId, [second.id, running.id, first.id], 'archivist');
    expect(reads()).toBe(1);
    expect(snaps.map((x) => x.turnId)).toEqual([first.id, second.id]);
    expect(snaps.map((x) => x.status)).toEqual(['completed', 'failed']);
  });
});
