import { randomUUID } from 'node:crypto';
import { poolOf } from '@switchboard/database';
import {
  createTestEnv,
  seedSession,
  seedTenant,
  seedTurn,
  type SessionIds,
  type TestEnv,
} from '@switchboard/testing';
import { SqlDb } from '../sql';
import { pickAndClaim, pickStatement, type PickNext } from './pick';
import { sql } from '../sql';
import { HOLDS_SESSION, HOLDS_SESSION_STATUSES, UNFINISHED, WAITING, WAITING_STATUSES } from './statuses';

/** The fair choice and its claim (docs/adr/0029) on real Postgres. */
jest.setTimeout(120_000);

describe('pickAndClaim', () => {
  let env: TestEnv;
  let db: SqlDb;

  beforeAll(async () => {
    env = await createTestEnv();
    db = new SqlDb(poolOf(env.db), { component: 'test' });
  });

  afterAll(async () => {
    await env?.cleanup();
  });

  // The choice looks at every tenant: each test starts with nothing unfinished and nothing leased.
  beforeEach(async () => {
    await env.db.turn.updateMany({
      where: {
        status: {
          in: ['queued', 'running', 'awaiting_approval', 'awaiting_subagent', 'awaiting_client_tool'],
        },
      },
      data: { status: 'cancelled' },
    });
    await env.db.session.updateMany({ data: { leaseToken: null, leaseOwner: null, leaseExpiresAt: null } });
  });

  const ask = (over: Partial<PickNext> = {}): PickNext => ({
    owner: 'test',
    lease: { token: randomUUID(), ms: 30_000 },
    defaultCap: 0,
    ...over,
  });

  const tenant = async (name: string, settings: Record<string, unknown> = {}) => {
    const { tenantId, agentId } = await seedTenant(env.db, name, {}, { settings: settings as never });
    return {
      tenantId,
      agentId,
      session: async (): Promise<SessionIds> => ({
        tenantId,
        agentId,
        sessionId: await seedSession(env.db, tenantId, agentId),
      }),
    };
  };

  /** A queued turn admitted `agoMs` ago. */
  const queued = (s: SessionIds, agoMs = 0, priority = 'normal') =>
    seedTurn(env.db, s, { status: 'queued', priority, createdAt: new Date(Date.now() - agoMs) });

  /** A turn that started and was interrupted: `running`, run once, no lease of its own here. */
  const running = (s: SessionIds) =>
    seedTurn(env.db, s, { status: 'running', startedAt: new Date(), runCount: 1 });

  const hold = (sessionId: string, ms = 30_000) =>
    env.db.session.update({
      where: { id: sessionId },
      data: { leaseToken: randomUUID(), leaseOwner: 'other', leaseExpiresAt: new Date(Date.now() + ms) },
    });

  it('sends one statement text with and without a job’s own turn, so both share a prepared plan', () => {
    const own = { turnId: randomUUID(), sessionId: randomUUID(), tenantId: randomUUID() };
    const text = (p: PickNext) => pickStatement({ ...p, skipLocked: true }).toQuery().text;
    expect(text(ask())).toBe(text(ask({ own })));
  });

  it('reads the job’s own turn and claims nothing when nothing is runnable', async () => {
    const a = await tenant('own');
    const s = await a.session();
    const t = await seedTurn(env.db, s, { status: 'completed' });
    const result = await pickAndClaim(db, ask({ own: { turnId: t.id, ...s } }));
    expect(result).toEqual({ ownStatus: 'completed' });
  });

  it('serves the tenant with fewer slots in use first, whatever arrived first', async () => {
    const a = await tenant('a');
    const b = await tenant('b');
    // A's backlog came first; one of A's sessions is already running.
    const held = await a.session();
    await queued(held, 5_000);
    await hold(held.sessionId);
    for (let i = 0; i < 3; i++) await queued(await a.session(), 4_000 - i);
    const bs = await b.session();
    const bt = await queued(bs, 0);

    const first = await pickAndClaim(db, ask());
    expect(first.claimed).toMatchObject({ tenantId: b.tenantId, sessionId: bs.sessionId, capped: false });
    expect(first.claimed?.claim).toMatchObject({ leased: true, contended: true });
    expect(first.claimed?.claim.next?.turn).toMatchObject({ id: bt.id, status: 'running' });
    // Now one slot each: the tenant waiting longest (A) goes next.
    const second = await pickAndClaim(db, ask());
    expect(second.claimed?.tenantId).toBe(a.tenantId);
  });

  it('among tenants with as many slots in use, serves the smaller backlog first, then the longest waiting', async () => {
    const heavy = await tenant('heavy-backlog');
    for (let i = 0; i < 5; i++) await queued(await heavy.session(), 10_000 - i);
    const light = await tenant('light-backlog');
    const ls = await light.session();
    await queued(ls, 0);
    expect((await pickAndClaim(db, ask())).claimed?.sessionId).toBe(ls.sessionId);
  });

  it('weighs slots by share', async () => {
    const a = await tenant('heavy', { share: 3 });
    const b = await tenant('light');
    for (let i = 0; i < 2; i++) await hold((await a.session()).sessionId);
    await queued(await a.session(), 1_000);
    await hold((await b.session()).sessionId);
    await queued(await b.session(), 0);
    // A: 2 slots / share 3 < B: 1 slot / share 1.
    expect((await pickAndClaim(db, ask())).claimed?.tenantId).toBe(a.tenantId);
  });

  it('skips a tenant at its cap, its own setting over the default, and counts an expired lease as free', async () => {
    const capped = await tenant('capped', { maxConcurrentTurns: 1 });
    const held = await capped.session();
    await hold(held.sessionId);
    await queued(await capped.session(), 10_000);
    expect((await pickAndClaim(db, ask({ defaultCap: 5 }))).claimed).toBeUndefined();
    // The holder died: once its lease expired the slot is free again.
    await hold(held.sessionId, -1);
    const result = await pickAndClaim(db, ask({ defaultCap: 5 }));
    expect(result.claimed).toMatchObject({ tenantId: capped.tenantId, capped: true });
    expect(result.claimed?.claim.leased).toBe(true);
  });

  it('applies the deployment default cap to a tenant without one', async () => {
    const t = await tenant('default-cap');
    await hold((await t.session()).sessionId);
    await queued(await t.session());
    expect((await pickAndClaim(db, ask({ defaultCap: 1 }))).claimed).toBeUndefined();
    expect((await pickAndClaim(db, ask({ defaultCap: 2 }))).claimed?.tenantId).toBe(t.tenantId);
  });

  it('never lets two claims at once take a capped tenant’s last slot', async () => {
    const t = await tenant('race', { maxConcurrentTurns: 2 });
    for (let i = 0; i < 10; i++) await queued(await t.session(), 1_000 + i);
    const live = () =>
      env.db.session.count({
        where: { tenantId: t.tenantId, leaseToken: { not: null }, leaseExpiresAt: { gt: new Date() } },
      });
    // Rounds of ten workers choosing at once: never more than the cap, and the cap reached.
    for (let round = 0; round < 3; round++) {
      await Promise.all(Array.from({ length: 10 }, () => pickAndClaim(db, ask())));
      expect(await live()).toBeLessThanOrEqual(2);
    }
    expect(await live()).toBe(2);
  });

  it('holds back a paused tenant and a session whose turn waits', async () => {
    const paused = await tenant('paused');
    await env.db.tenant.update({ where: { id: paused.tenantId }, data: { killSwitch: true } });
    await queued(await paused.session());
    const waiting = await tenant('waiting');
    const ws = await waiting.session();
    await seedTurn(env.db, ws, { status: 'awaiting_approval', startedAt: new Date() });
    await queued(ws);
    expect((await pickAndClaim(db, ask())).claimed).toBeUndefined();
  });

  it('puts a higher band first, but not ahead of a lower band’s turn waiting longer than the head start', async () => {
    const t = await tenant('bands');
    const normal = await t.session();
    await queued(normal, 5_000, 'normal');
    const next = await t.session();
    await queued(next, 0, 'next');
    expect((await pickAndClaim(db, ask())).claimed?.sessionId).toBe(next.sessionId);

    const background = await t.session();
    await queued(background, 25_000, 'background');
    const later = await t.session();
    await queued(later, 0, 'normal');
    // 25 s of waiting outweighs the normal band's 10 s head start: background does not starve.
    expect((await pickAndClaim(db, ask())).claimed?.sessionId).toBe(background.sessionId);
  });

  it('puts the job’s own session first within its band, but not ahead of a higher band (docs/adr/0080)', async () => {
    // `turns` jobs carry no BullMQ priority: a background turn's job may be fetched first, and its
    // session must not go ahead of the tenant's normal turn admitted after it.
    const t = await tenant('own-band');
    const background = await t.session();
    const bg = await queued(background, 1_000, 'background');
    const normal = await t.session();
    await queued(normal, 0, 'normal');
    const own = { turnId: bg.id, sessionId: background.sessionId, tenantId: t.tenantId };
    expect((await pickAndClaim(db, ask({ own }))).claimed?.sessionId).toBe(normal.sessionId);

    // Within its band the job's own session goes first, ahead of an older turn (by less than half a
    // band's head start).
    const u = await tenant('own-first');
    const older = await u.session();
    await queued(older, 3_000, 'normal');
    const mine = await u.session();
    const m = await queued(mine, 0, 'normal');
    const ownNormal = { turnId: m.id, sessionId: mine.sessionId, tenantId: u.tenantId };
    expect((await pickAndClaim(db, ask({ own: ownNormal }))).claimed?.sessionId).toBe(mine.sessionId);
  });

  it('resumes an interrupted turn (started, its lease expired) before one that has not started', async () => {
    const t = await tenant('resume');
    const fresh = await t.session();
    await queued(fresh, 10_000);
    const crashed = await t.session();
    const interrupted = await running(crashed);
    await hold(crashed.sessionId, -1);
    const result = await pickAndClaim(db, ask());
    expect(result.claimed?.sessionId).toBe(crashed.sessionId);
    expect(result.claimed?.claim.next).toMatchObject({ turn: { id: interrupted.id }, resumed: true });
  });

  it('resumes an interrupted turn whose freed session nobody holds, whoever chooses (its job may have come at the cap)', async () => {
    const t = await tenant('freed', { maxConcurrentTurns: 1 });
    const queuedOne = await t.session();
    await queued(queuedOne, 10_000);
    // The sweep freed its lease; its own job came while the tenant was at its cap and found nothing.
    const crashed = await t.session();
    const interrupted = await running(crashed);
    const result = await pickAndClaim(db, ask());
    expect(result.claimed?.claim.next).toMatchObject({ turn: { id: interrupted.id }, resumed: true });
  });

  it('reads whether the agent has any memory record in the claim itself, per agent and tenant (docs/adr/0032)', async () => {
    const a = await tenant(`mem-${randomUUID()}`);
    const s1 = await a.session();
    await queued(s1);
    const before = await pickAndClaim(db, ask());
    expect(before.claimed?.claim.next?.agent.hasMemory).toBe(false);
    // Written by another process (the hooks worker, the memory API): the next claim sees it.
    await env.db
      .$executeRaw`INSERT INTO memory_records (id, tenant_id, agent_id, kind, title, content, dedupe_key, search)
      VALUES (${randomUUID()}::uuid, ${a.tenantId}::uuid, ${a.agentId}::uuid, 'fact', 't', 'c', ${randomUUID()},
              to_tsvector('simple', 't c'))`;
    await env.db.turn.updateMany({ where: { sessionId: s1.sessionId }, data: { status: 'completed' } });
    await env.db.session.updateMany({ data: { leaseToken: null, leaseOwner: null, leaseExpiresAt: null } });
    await queued(s1);
    const after = await pickAndClaim(db, ask());
    expect(after.claimed?.claim.next?.agent.hasMemory).toBe(true);
    // Its prompt cache is its own session's.
    expect(after.claimed?.claim.next?.turn.cacheSessionId).toBe(s1.sessionId);
  });

  it('reads whether the agent ever had a work item in the claim itself (docs/adr/0031)', async () => {
    const a = await tenant(`work-${randomUUID()}`);
    const s1 = await a.session();
    await queued(s1);
    const before = await pickAndClaim(db, ask());
    expect(before.claimed?.claim.next?.agent.hasWorkItems).toBe(false);
    // A completed item counts too: the projection shows recently closed items.
    await env.db.workItem.create({
      data: {
        id: randomUUID(),
        tenantId: a.tenantId,
        agentId: a.agentId,
        objective: 'o',
        state: 'completed',
        createdBy: 'operator',
      },
    });
    await env.db.turn.updateMany({ where: { sessionId: s1.sessionId }, data: { status: 'completed' } });
    await env.db.session.updateMany({ data: { leaseToken: null, leaseOwner: null, leaseExpiresAt: null } });
    await queued(s1);
    const after = await pickAndClaim(db, ask());
    expect(after.claimed?.claim.next?.agent.hasWorkItems).toBe(true);
  });

  it('gives a child turn on its parent’s agent its parent’s session for the prompt cache, another agent’s its own', async () => {
    const a = await tenant(`cache-${randomUUID()}`);
    const parentSession = await a.session();
    const parent = await seedTurn(env.db, parentSession, { status: 'awaiting_subagent' });
    const child = async (agentId: string) => {
      const childSession: SessionIds = {
        tenantId: a.tenantId,
        agentId,
        sessionId: await seedSession(env.db, a.tenantId, agentId),
      };
      const taskId = randomUUID();
      await env.db.task.create({
        data: {
          id: taskId,
          tenantId: a.tenantId,
          agentId,
          parentTurnId: parent.id,
          parentSessionId: parentSession.sessionId,
          sessionId: childSession.sessionId,
          callId: randomUUID(),
        },
      });
      await seedTurn(env.db, childSession, { status: 'queued', taskId });
      const claimed = await pickAndClaim(db, ask());
      await env.db.turn.updateMany({
        where: { sessionId: childSession.sessionId },
        data: { status: 'completed' },
      });
      await env.db.session.updateMany({ data: { leaseToken: null, leaseOwner: null, leaseExpiresAt: null } });
      return {
        cacheSessionId: claimed.claimed?.claim.next?.turn.cacheSessionId,
        own: childSession.sessionId,
      };
    };
    const same = await child(a.agentId);
    expect(same.cacheSessionId).toBe(parentSession.sessionId);
    const otherAgent = (
      await env.db.agent.create({
        data: { id: randomUUID(), tenantId: a.tenantId, name: 'other', model: 'scripted/echo' },
      })
    ).id;
    const other = await child(otherAgent);
    expect(other.cacheSessionId).toBe(other.own);
  });

  it('looks at a band’s oldest queued turns only; a younger one past them runs by its own job (ADR 0081)', async () => {
    const t = await tenant('window');
    // 70 sessions each running a turn under a live lease with a follow-up queued behind it: more
    // than a band's window (64), all older than the fresh session's turn.
    await env.db.$executeRaw`
      WITH s AS (
        INSERT INTO sessions (id, tenant_id, agent_id, updated_at, lease_token, lease_owner, lease_expires_at)
        SELECT gen_random_uuid(), ${t.tenantId}::uuid, ${t.agentId}::uuid, now(), gen_random_uuid(), 'other',
          now() + interval '1 minute'
        FROM generate_series(1, 70)
        RETURNING id)
      INSERT INTO turns (id, tenant_id, session_id, agent_id, seq, input_message_id, status, started_at, created_at)
      SELECT gen_random_uuid(), ${t.tenantId}::uuid, s.id, ${t.agentId}::uuid, k.seq, gen_random_uuid(),
        CASE k.seq WHEN 1 THEN 'running' ELSE 'queued' END, CASE k.seq WHEN 1 THEN now() END,
        now() - interval '1 minute' + k.seq * interval '1 second'
      FROM s CROSS JOIN (VALUES (1), (2)) AS k(seq)`;
    const fresh = await t.session();
    const young = await queued(fresh);

    // Another job's choice sees only the follow-ups, none runnable: it claims nothing.
    expect((await pickAndClaim(db, ask())).claimed).toBeUndefined();
    // The young turn's own job looks at its session directly.
    const own = { turnId: young.id, sessionId: fresh.sessionId, tenantId: t.tenantId };
    expect((await pickAndClaim(db, ask({ own }))).claimed?.claim.next).toMatchObject({
      turn: { id: young.id },
    });
  });

  it("reads a session's unfinished and waiting turns from one partial index, not its history (ADR 0083)", async () => {
    // Every "does this session hold an unfinished / a waiting turn" probe reads the index only when
    // its predicate covers the statuses the probe asks for; else it reads every turn of the session.
    const [row] = await env.db.$queryRaw<{ pred: string }[]>`
      SELECT pg_get_expr(i.indpred, i.indrelid) AS pred FROM pg_index i
      JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname = 'turns_holding_session_idx'`;
    for (const status of HOLDS_SESSION_STATUSES) expect(row.pred).toContain(`'${status}'`);
    // A session with a long history: the planner takes the partial index for each status set the
    // statements interpolate, as a prepared statement's generic plan too.
    // Another session's queued backlog makes the probe's other candidates (the tenants' unfinished
    // turns) as large as a busy database's.
    const t = await tenant('long-history');
    const long = await t.session();
    const busy = await t.session();
    const bulk = (s: SessionIds, status: string, n: number) => env.db.$executeRaw`
      INSERT INTO turns (id, tenant_id, session_id, agent_id, seq, input_message_id, status)
      SELECT gen_random_uuid(), ${s.tenantId}::uuid, ${s.sessionId}::uuid, ${s.agentId}::uuid,
        g, gen_random_uuid(), ${status} FROM generate_series(1, ${n}::int) g`;
    await bulk(long, 'completed', 2000);
    await bulk(busy, 'queued', 500);
    await env.db.$executeRawUnsafe('ANALYZE turns');
    const client = await poolOf(env.db).connect();
    try {
      await client.query('SET plan_cache_mode = force_generic_plan');
      for (const set of [UNFINISHED, WAITING, HOLDS_SESSION]) {
        const probe = sql`SELECT 1 FROM turns WHERE session_id = ${long.sessionId}::uuid AND status IN ${set}`;
        const q = probe.toQuery();
        const plan = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${q.text}`, q.values);
        expect(plan.rows.map((r) => r['QUERY PLAN']).join('\n')).toContain('turns_holding_session_idx');
      }
    } finally {
      client.release();
      await env.db.turn.deleteMany({ where: { sessionId: busy.sessionId } });
    }
    // And each waiting status holds its session back from the choice.
    for (const status of WAITING_STATUSES) {
      const s = await t.session();
      await seedTurn(env.db, s, { status });
      await queued(s);
    }
    expect((await pickAndClaim(db, ask())).claimed).toBeUndefined();
  });
});
