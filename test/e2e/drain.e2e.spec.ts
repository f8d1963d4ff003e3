import { createTestEnv, spawnApp, waitFor, type TestEnv } from '@switchboard/testing';
import { newTenant, type Api } from '../support/api';
import { FIXTURES, startGateway, type Running } from '../support/stack';

jest.setTimeout(120_000);

/** SIGTERM drains: a worker asked to stop finishes the turn it is running, then exits cleanly. */
describe('a harness worker stopped with SIGTERM', () => {
  let env: TestEnv;
  let gateway: Running & { url: string };
  let api: Api;

  beforeAll(async () => {
    env = await createTestEnv();
    gateway = await startGateway(env.config());
    ({ api } = await newTenant(gateway.url, 'test-admin-token-0123456789'));
  });

  afterAll(async () => {
    await gateway?.close();
    await env?.cleanup();
  });

  it('finishes the running turn before it exits', async () => {
    const worker = await spawnApp('harness-worker', env.processEnv({ SCRIPTED_FIXTURES_DIR: FIXTURES }));
    try {
      const agent = await api.post('/v1/agents', { name: 'slow', model: 'scripted/slow' });
      const session = await api.post('/v1/sessions', { agentId: agent.body.id });
      const admitted = await api.post(`/v1/sessions/${session.body.id}/messages`, {
        content: 'take your time',
      });
      await waitFor(
        async () =>
          (await env.db.turn.findUniqueOrThrow({ where: { id: admitted.body.turnId } })).status === 'running',
        { what: 'the turn to start' },
      );

      expect(await worker.kill('SIGTERM')).toBe(0);

      // The worker had exited by now; the turn was completed by it, not by anyone later.
      const turn = await env.db.turn.findUniqueOrThrow({ where: { id: admitted.body.turnId } });
      expect(turn.status).toBe('completed');
      expect(turn.runCount).toBe(1);
      expect(turn.finalText).toBe('slow reply to take your time');
      expect(worker.output()).toContain('draining');
    } finally {
      await worker.kill('SIGKILL');
    }
  });
});
