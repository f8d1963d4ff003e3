import IORedis from 'ioredis';
import { createTestEnv, waitFor, type TestEnv } from '@switchboard/testing';
import { newTenant, type Api } from '../support/api';
import { startGateway, startHarness, startHooks, type Running } from '../support/stack';

/**
 * Postgres is the source of truth: a Redis that comes back empty loses no
 * admitted message. The reconciler re-enqueues every unfinished turn.
 */
jest.setTimeout(120_000);

describe('Redis loses every job', () => {
  let env: TestEnv;
  let gateway: Running & { url: string };
  const running: Running[] = [];
  let api: Api;

  beforeAll(async () => {
    env = await createTestEnv();
    gateway = await startGateway(env.config());
    ({ api } = await newTenant(gateway.url, 'test-admin-token-0123456789'));
  });

  /** A session's messages in transcript order: which turn and role each is. */
  const transcript = async (sessionId: string) =>
    (
      await env.db.message.findMany({
        where: { sessionId },
        orderBy: [{ turnSeq: 'asc' }, { position: 'asc' }],
      })
    ).map((m) => ({ turnId: m.turnId, role: m.role }));

  afterAll(async () => {
    await Promise.all(running.map((r) => r.close()));
    await gateway?.close();
    await env?.cleanup();
  });

  it('re-enqueues admitted turns from Postgres and runs them', async () => {
    const agent = await api.post('/v1/agents', { name: 'a', model: 'scripted/echo' });
    const session = await api.post('/v1/sessions', { agentId: agent.body.id });
    const admitted = [];
    for (const content of ['one', 'two', 'three']) {
      admitted.push(await api.post(`/v1/sessions/${session.body.id}/messages`, { content }));
    }
    expect(admitted.map((a) => a.status)).toEqual([202, 202, 202]);

    // Redis restarts empty: every queue key under this test's prefix is gone.
    const redis = new IORedis(env.redisUrl);
    const keys = await redis.keys(`${env.queuePrefix}:*`);
    expect(keys.length).toBeGreaterThan(0);
    await redis.del(...keys);
    redis.disconnect();

    // A harness worker starts; its reconciler finds the turns in Postgres.
    running.push(
      await startHarness(env.config({ RECONCILE_INTERVAL_MS: '500' })),
      await startHooks(env.config()),
    );
    await waitFor(
      async () =>
        (await env.db.turn.count({ where: { sessionId: session.body.id, status: 'completed' } })) === 3,
      { what: 'the three turns completed', timeoutMs: 20_000 },
    );
    const turns = await env.db.turn.findMany({
      where: { sessionId: session.body.id },
      orderBy: { seq: 'asc' },
    });
    expect(turns.map((t) => t.finalText)).toEqual(['You said: one', 'You said: two', 'You said: three']);
    // Each ran once: its input and one answer, however many times the reconciler enqueued it.
    expect(await transcript(session.body.id)).toEqual(
      turns.flatMap((t) => [
        { turnId: t.id, role: 'user' },
        { turnId: t.id, role: 'assistant' },
      ]),
    );
  });

  it('admits with 202 while Redis is unreachable, and the turn runs once it is back', async () => {
    const agent = await api.post('/v1/agents', { name: 'b', model: 'scripted/echo' });
    const session = await api.post('/v1/sessions', { agentId: agent.body.id });
    // A gateway whose Redis is down: a port nobody listens on.
    const cut = await startGateway(env.config({ REDIS_URL: 'redis://127.0.0.1:1' }));
    try {
      const res = await fetch(`${cut.url}/v1/sessions/${session.body.id}/messages`, {
        method: 'POST',
        headers: { authorization: `Bearer ${api.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ content: 'while redis was down' }),
      });
      expect(res.status).toBe(202);
      const { messageId, turnId } = (await res.json()) as { messageId: string; turnId: string };
      // The admission is durable without Redis: the message and its turn are in Postgres. The
      // enqueue gave up after its timeout, and the running harness's reconciler re-enqueues a turn
      // as soon as it is RECONCILE_MIN_AGE_MS old, so the turn may already be running or done here.
      const turn = await env.db.turn.findUniqueOrThrow({ where: { id: turnId } });
      expect(turn).toMatchObject({ sessionId: session.body.id, inputMessageId: messageId });
      expect(['queued', 'running', 'completed']).toContain(turn.status);
      expect(await env.db.message.findUniqueOrThrow({ where: { id: messageId } })).toMatchObject({
        turnId,
        role: 'user',
      });
      await waitFor(
        async () => (await env.db.turn.findUniqueOrThrow({ where: { id: turnId } })).status === 'completed',
        { what: 'the reconciled turn', timeoutMs: 20_000 },
      );
      // It ran once: one turn, its input and one answer.
      const turns = await env.db.turn.findMany({ where: { sessionId: session.body.id } });
      expect(turns.map((t) => [t.id, t.finalText])).toEqual([[turnId, 'You said: while redis was down']]);
      expect(await transcript(session.body.id)).toEqual([
        { turnId, role: 'user' },
        { turnId, role: 'assistant' },
      ]);
    } finally {
      await cut.close();
    }
  });
});
