import { createTestEnv, spawnApp, waitFor, type AppProcess, type TestEnv } from '@switchboard/testing';
import { newTenant, type Api } from '../support/api';
import { FIXTURES, startGateway, startHooks, type Running } from '../support/stack';

jest.setTimeout(120_000);

/**
 * Tenants sharing the harness (docs/adr/0029), with real worker processes: a tenant's concurrency cap
 * holds across processes and survives a killed holder, and a tenant arriving behind another's backlog
 * is served next, not after it.
 */
describe('tenants sharing the harness', () => {
  let env: TestEnv;
  let gateway: Running & { url: string };
  let hooks: Running;
  const workers: AppProcess[] = [];

  beforeAll(async () => {
    env = await createTestEnv();
    gateway = await startGateway(env.config());
    hooks = await startHooks(env.config());
  });

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.kill('SIGKILL')));
    await hooks?.close();
    await gateway?.close();
    await env?.cleanup();
  });

  // Each case starts its own workers and stops them: no case sees another's processes.
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.kill('SIGTERM')));
  });

  const harness = async (extra: Record<string, string> = {}) => {
    const w = await spawnApp('harness-worker', env.processEnv({ SCRIPTED_FIXTURES_DIR: FIXTURES, ...extra }));
    workers.push(w);
    return w;
  };

  /** A tenant with one agent of `model` and `n` sessions, each sent one message; the turn ids. */
  const tenantWithTurns = async (name: string, model: string, n: number) => {
    const { api } = await newTenant(gateway.url, 'test-admin-token-0123456789', name);
    const agent = await api.post('/v1/agents', { name: 'a', model });
    const sessions = await Promise.all(
      Array.from(
        { length: n },
        async () => (await api.post('/v1/sessions', { agentId: agent.body.id })).body.id,
      ),
    );
    return { api, agentId: agent.body.id as string, sessions };
  };

  const send = async (api: Api, sessionId: string, content: string) => {
    const res = await api.post(`/v1/sessions/${sessionId}/messages`, { content });
    expect(res.status).toBe(202);
    return res.body.turnId as string;
  };

  const turnsOf = (ids: string[]) => env.db.turn.findMany({ where: { id: { in: ids } } });

  const allCompleted = (ids: string[], what: string) =>
    waitFor(async () => (await turnsOf(ids)).every((t) => t.status === 'completed'), {
      what,
      timeoutMs: 60_000,
    });

  /** The most of these turns that ran at once, from their start and end times. */
  const mostAtOnce = (turns: { startedAt: Date | null; completedAt: Date | null }[]) => {
    const edges = turns.flatMap((t) => [
      { at: t.startedAt!.getTime(), d: 1 },
      { at: t.completedAt!.getTime(), d: -1 },
    ]);
    // An end and a start at the same millisecond: the end first (the slot was handed over).
    edges.sort((a, b) => a.at - b.at || a.d - b.d);
    let now = 0;
    let most = 0;
    for (const e of edges) most = Math.max(most, (now += e.d));
    return most;
  };

  it('two harness processes never run more of a tenant’s turns at once than its cap; other tenants go on', async () => {
    const cap = { TENANT_MAX_CONCURRENT_TURNS: '2', HARNESS_CONCURRENCY: '4' };
    await harness(cap);
    await harness(cap);
    const a = await tenantWithTurns('capped', 'scripted/steady', 8);
    const b = await tenantWithTurns('neighbour', 'scripted/steady', 2);
    const aTurns = await Promise.all(a.sessions.map((s, i) => send(a.api, s, `a${i}`)));
    const bTurns = await Promise.all(b.sessions.map((s, i) => send(b.api, s, `b${i}`)));
    await allCompleted([...aTurns, ...bTurns], 'every turn of both tenants');

    const ranA = await turnsOf(aTurns);
    expect(mostAtOnce(ranA)).toBe(2);
    // The cap is the tenant's, not the deployment's: B ran while A's backlog waited for its slots.
    const ranB = await turnsOf(bTurns);
    const lastAStart = Math.max(...ranA.map((t) => t.startedAt!.getTime()));
    expect(Math.max(...ranB.map((t) => t.startedAt!.getTime()))).toBeLessThan(lastAStart);
  });

  it('a SIGKILLed holder’s slot is freed: its turn resumes and the queued one runs after it', async () => {
    const cap = { TENANT_MAX_CONCURRENT_TURNS: '1' };
    const first = await harness(cap);
    const t = await tenantWithTurns('killed', 'scripted/slow-after-tool', 2);
    await env.db.agent.update({ where: { id: t.agentId }, data: { tools: ['word_count'] } });
    const t1 = await send(t.api, t.sessions[0], 'count these four words');
    await waitFor(
      async () =>
        (await env.db.event.findFirst({ where: { turnId: t1, type: 'tool_call_completed' } })) ?? undefined,
      { what: 'the first turn’s tool round', timeoutMs: 30_000 },
    );
    // Over the cap while the first turn runs: it waits, queued.
    const t2 = await send(t.api, t.sessions[1], 'and these three');
    const beforeKill = await env.db.event.aggregate({ where: { turnId: t1 }, _max: { seq: true } });
    expect(await first.kill('SIGKILL')).toBeNull();
    expect((await env.db.turn.findUniqueOrThrow({ where: { id: t2 } })).status).toBe('queued');

    await harness(cap);
    await allCompleted([t1, t2], 'both turns after the holder died');
    const [r1, r2] = [t1, t2].map((id) => env.db.turn.findUniqueOrThrow({ where: { id } }));
    const [one, two] = await Promise.all([r1, r2]);
    expect(one.runCount).toBe(2);
    // The cap held through the recovery: the queued turn and the resumed one did not run at once.
    // Which goes first is the chooser's (the freed lease and the queued turn's job may come in
    // either order under load); either the queued turn started once the resumed one had ended, or
    // it ended before the resumed run committed anything.
    const resumed = await env.db.event.findFirstOrThrow({
      where: { turnId: t1, seq: { gt: beforeKill._max.seq ?? 0 } },
      orderBy: { seq: 'asc' },
    });
    const after = two.startedAt!.getTime() >= one.completedAt!.getTime();
    const before = two.completedAt!.getTime() <= resumed.createdAt.getTime();
    expect({ after, before }).not.toEqual({ after: false, before: false });
  });

  it('serves a tenant arriving behind another’s backlog next, not after it (start order)', async () => {
    await harness({ HARNESS_CONCURRENCY: '2' });
    const a = await tenantWithTurns('backlog', 'scripted/steady', 24);
    const b = await tenantWithTurns('late', 'scripted/steady', 2);
    const aTurns = await Promise.all(a.sessions.map((s, i) => send(a.api, s, `a${i}`)));
    const bTurns = await Promise.all(b.sessions.map((s, i) => send(b.api, s, `b${i}`)));
    // Both of B's admissions committed by now (a turn's created_at is its statement's start, earlier
    // than the moment a choice can see it).
    const bAdmitted = Date.now();
    await allCompleted([...aTurns, ...bTurns], 'the backlog and the late tenant');

    const ranA = await turnsOf(aTurns);
    const ranB = await turnsOf(bTurns);
    const bFirst = Math.min(...ranB.map((t) => t.startedAt!.getTime()));
    const bLast = Math.max(...ranB.map((t) => t.startedAt!.getTime()));
    const aStarts = ranA.map((t) => t.startedAt!.getTime());
    // B's first turn takes the next slot that frees after it arrives (two slots: at most two of A's
    // turns may start in the same instant) ...
    expect(aStarts.filter((t) => t > bAdmitted && t < bFirst).length).toBeLessThanOrEqual(2);
    // ... and both of B's turns started while much of A's backlog still waited: in arrival order they
    // would have started after all of it.
    expect(aStarts.filter((t) => t > bLast).length).toBeGreaterThanOrEqual(8);
  });
});
