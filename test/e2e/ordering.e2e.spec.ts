import { createTestEnv, spawnApp, waitFor, type AppProcess, type TestEnv } from '@switchboard/testing';
import { newTenant, type Api } from '../support/api';
import { FIXTURES, startGateway, type Running } from '../support/stack';

jest.setTimeout(90_000);

/**
 * Per-session ordering across worker processes: at most one turn of a session
 * runs at a time, and a session's messages run in admission order, while
 * different sessions run in parallel.
 */
describe('per-session ordering with several harness worker processes', () => {
  let env: TestEnv;
  let gateway: Running & { url: string };
  let api: Api;
  const workers: AppProcess[] = [];

  beforeAll(async () => {
    env = await createTestEnv();
    gateway = await startGateway(env.config());
    ({ api } = await newTenant(gateway.url, 'test-admin-token-0123456789'));
    const processEnv = env.processEnv({ SCRIPTED_FIXTURES_DIR: FIXTURES, HARNESS_CONCURRENCY: '8' });
    workers.push(
      ...(await Promise.all([
        spawnApp('harness-worker', processEnv),
        spawnApp('harness-worker', processEnv),
      ])),
    );
  });

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.kill('SIGTERM')));
    await gateway?.close();
    await env?.cleanup();
  });

  it('runs one turn per session at a time, in admission order', async () => {
    const agent = await api.post('/v1/agents', { name: 'paced', model: 'scripted/paced' });
    const sessions = await Promise.all(
      [0, 1, 2, 3].map(
        async () => (await api.post('/v1/sessions', { agentId: agent.body.id })).body.id as string,
      ),
    );
    // Concurrent admissions, within and across sessions: the admission order is the commit order (seq).
    await Promise.all(
      sessions.flatMap((s) =>
        [0, 1, 2, 3, 4].map(async (i) => {
          const r = await api.post(`/v1/sessions/${s}/messages`, { content: `m${i}` });
          expect(r.status).toBe(202);
        }),
      ),
    );

    await waitFor(
      async () => (await env.db.turn.count({ where: { status: 'completed' } })) === sessions.length * 5,
      { what: 'all 20 turns completed', timeoutMs: 60_000 },
    );

    const spans: { start: number; end: number }[] = [];
    for (const s of sessions) {
      const turns = await env.db.turn.findMany({ where: { sessionId: s }, orderBy: { seq: 'asc' } });
      const inputs = await env.db.message.findMany({
        where: { sessionId: s, role: 'user' },
        orderBy: { turnSeq: 'asc' },
      });
      expect(turns.map((t) => t.seq)).toEqual([1, 2, 3, 4, 5]);
      for (let i = 1; i < turns.length; i++) {
        // Never overlapping, and in seq order.
        expect(turns[i].startedAt!.getTime()).toBeGreaterThanOrEqual(turns[i - 1].completedAt!.getTime());
      }
      // Each turn answered its own input.
      turns.forEach((t, i) => expect(t.finalText).toBe(`done: ${(inputs[i].body as { text: string }).text}`));
      // Every turn ran exactly once.
      expect(turns.every((t) => t.runCount === 1)).toBe(true);
      spans.push({
        start: turns[0].startedAt!.getTime(),
        end: turns[turns.length - 1].completedAt!.getTime(),
      });
    }
    // Sessions did run in parallel: some two sessions' busy periods overlap.
    const overlapping = spans.some((a, i) =>
      spans.some((b, j) => i !== j && a.start < b.end && b.start < a.end),
    );
    expect(overlapping).toBe(true);
  });
});
