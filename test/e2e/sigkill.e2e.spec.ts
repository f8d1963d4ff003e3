import { createTestEnv, spawnApp, waitFor, type AppProcess, type TestEnv } from '@switchboard/testing';
import { newTenant, type Api } from '../support/api';
import { FIXTURES, startGateway, startHooks, type Running } from '../support/stack';

jest.setTimeout(90_000);

/**
 * At-least-once with no duplicates, with real processes: a harness worker is
 * SIGKILLed in the middle of a turn; nothing admitted is lost, the turn
 * completes on a new worker, and the transcript holds no duplicate entry.
 */
describe('a harness worker killed mid-turn', () => {
  let env: TestEnv;
  let gateway: Running & { url: string };
  let hooks: Running;
  let api: Api;
  const workers: AppProcess[] = [];

  beforeAll(async () => {
    env = await createTestEnv();
    const config = env.config();
    gateway = await startGateway(config);
    hooks = await startHooks(config);
    ({ api } = await newTenant(gateway.url, 'test-admin-token-0123456789'));
  });

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.kill('SIGKILL')));
    await hooks?.close();
    await gateway?.close();
    await env?.cleanup();
  });

  const harness = async () => {
    const w = await spawnApp('harness-worker', env.processEnv({ SCRIPTED_FIXTURES_DIR: FIXTURES }));
    workers.push(w);
    return w;
  };

  const turn = (id: string) => env.db.turn.findUniqueOrThrow({ where: { id } });

  it('loses nothing, resumes the turn and duplicates nothing', async () => {
    const agent = await api.post('/v1/agents', {
      name: 'slow',
      model: 'scripted/slow-after-tool',
      tools: ['word_count'],
    });
    const s1 = (await api.post('/v1/sessions', { agentId: agent.body.id })).body.id;
    const s2 = (await api.post('/v1/sessions', { agentId: agent.body.id })).body.id;

    const a = await harness();
    const m1 = await api.post(`/v1/sessions/${s1}/messages`, { content: 'count these four words' });
    const t1 = m1.body.turnId as string;

    // The tool round is committed; the worker is now waiting on the model's second round.
    await waitFor(
      () =>
        env.db.event
          .findFirst({ where: { turnId: t1, type: 'tool_call_completed' } })
          .then((e) => e ?? undefined),
      { what: 'first tool call completed', timeoutMs: 30_000 },
    );
    expect((await turn(t1)).status).toBe('running');
    expect(await a.kill('SIGKILL')).toBeNull();

    // Admissions go on while no harness worker is alive.
    const m2 = await api.post(`/v1/sessions/${s1}/messages`, { content: 'second message' });
    const m3 = await api.post(`/v1/sessions/${s2}/messages`, { content: 'another session' });
    expect([m2.status, m3.status]).toEqual([202, 202]);

    await harness();
    const ids = [t1, m2.body.turnId as string, m3.body.turnId as string];
    await waitFor(async () => (await Promise.all(ids.map(turn))).every((t) => t.status === 'completed'), {
      what: 'all turns completed after restart',
      timeoutMs: 60_000,
    });

    const first = await turn(t1);
    expect(first.runCount).toBe(2);
    expect(first.finalText).toContain('"words":4');

    // The transcript: each turn exactly once, in admission order, no duplicate entries.
    const transcript = await env.db.message.findMany({
      where: { sessionId: s1 },
      orderBy: [{ turnSeq: 'asc' }, { position: 'asc' }],
    });
    expect(transcript.map((m) => [m.turnSeq, m.position, m.role])).toEqual([
      [1, 0, 'user'],
      [1, 1, 'assistant'],
      [1, 2, 'tool'],
      [1, 3, 'assistant'],
      [2, 0, 'user'],
      [2, 1, 'assistant'],
      [2, 2, 'tool'],
      [2, 3, 'assistant'],
    ]);
    expect(new Set(transcript.map((m) => m.body && JSON.stringify(m.body) + m.turnSeq)).size).toBe(
      transcript.length,
    );

    // The tool ran once; the model's rounds were booked once each.
    expect(await env.db.toolCall.count({ where: { turnId: t1 } })).toBe(1);
    expect(await env.db.event.count({ where: { turnId: t1, type: 'tool_call_completed' } })).toBe(1);
    expect((await env.db.ledgerEntry.findMany({ where: { turnId: t1 } })).map((e) => e.key).sort()).toEqual([
      `${t1}:round:0`,
      `${t1}:round:1`,
    ]);
    const started = await env.db.event.findMany({
      where: { turnId: t1, type: 'turn_started' },
      orderBy: { seq: 'asc' },
    });
    expect(started.map((e) => (e.data as { resumed: boolean }).resumed)).toEqual([false, true]);

    // The second message of the session ran only after the first finished.
    const second = await turn(m2.body.turnId);
    expect(second.startedAt!.getTime()).toBeGreaterThanOrEqual(first.completedAt!.getTime());

    // And each finished turn got its post-turn hook exactly once.
    await waitFor(
      async () => (await env.db.hookRun.count({ where: { turnId: { in: ids }, hook: 'cost-log' } })) === 3,
      {
        what: 'cost-log hooks',
      },
    );
  });
});
