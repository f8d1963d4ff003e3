import { randomBytes } from 'node:crypto';
import { newId, type OutboundWebhookJob } from '@switchboard/contracts';
import {
  createTestEnv,
  hookContext,
  hookJob,
  seedTenantSession,
  seedTurn,
  type SessionIds,
  type TestEnv,
} from '@switchboard/testing';
import { COMPLETION_FINAL_TEXT_MAX, runCompletionWebhook } from './completion-webhook';

/** The completion-webhook hook's choices on real Postgres; the send itself is the e2e's. */
jest.setTimeout(120_000);

describe('runCompletionWebhook', () => {
  let env: TestEnv;
  const published: Omit<OutboundWebhookJob, 'trace'>[] = [];
  const secret = `whsec_${randomBytes(32).toString('base64')}`;

  beforeAll(async () => {
    env = await createTestEnv();
  });

  afterAll(async () => {
    await env?.cleanup();
  });

  const ctx = () => hookContext(env, { notify: async (job) => published.push(job) });

  const tenant = (withEndpoint: boolean) =>
    seedTenantSession(
      env.db,
      `t-${newId()}`,
      {},
      withEndpoint ? { settings: { notifyUrl: 'https://receiver.example/hooks', notifySecret: secret } } : {},
    );

  const turn = async (
    t: SessionIds,
    data: { status: string; finalText?: string | null; cancelReason?: string; cancelNote?: string },
  ) => (await seedTurn(env.db, t, { completedAt: new Date(), ...data })).id;

  const run = (turnId: string, tenantId: string) =>
    runCompletionWebhook(ctx(), hookJob('completion-webhook', turnId, tenantId));

  beforeEach(() => {
    published.length = 0;
  });

  it('publishes one job with the webhook id derived from the turn and records the run; a long finalText is cut', async () => {
    const t = await tenant(true);
    const id = await turn(t, { status: 'completed', finalText: 'x'.repeat(COMPLETION_FINAL_TEXT_MAX + 10) });
    expect(await run(id, t.tenantId)).toBe('written');
    // A re-run (a retried or re-published job) finds the hook_runs row and publishes nothing.
    expect(await run(id, t.tenantId)).toBe('already_done');
    expect(published.map((j) => j.webhookId)).toEqual([`msg_turn_${id}`]);
    expect(await env.db.hookRun.findMany({ where: { turnId: id } })).toEqual([
      expect.objectContaining({
        hook: 'completion-webhook',
        status: 'completed',
        output: { webhookId: `msg_turn_${id}`, event: 'turn.completed', turnStatus: 'completed' },
      }),
    ]);
    expect(published[0]).toMatchObject({
      tenantId: t.tenantId,
      event: 'turn.completed',
      payload: { type: 'turn.completed', finalTextTruncated: true, costUsd: '0.00000000' },
    });
    expect((published[0].payload.finalText as string).length).toBe(COMPLETION_FINAL_TEXT_MAX);
  });

  it('skips a tenant without an endpoint, a turn that has not ended, and another tenant’s turn', async () => {
    const quiet = await tenant(false);
    const quietTurn = await turn(quiet, { status: 'completed' });
    expect(await run(quietTurn, quiet.tenantId)).toBe('skipped');
    // The skip is recorded, so the hooks reconcile sees the hook ran.
    expect(await run(quietTurn, quiet.tenantId)).toBe('already_done');
    const loud = await tenant(true);
    const running = await turn(loud, { status: 'running' });
    expect(await run(running, loud.tenantId)).toBe('skipped');
    const other = await turn(quiet, { status: 'failed' });
    expect(await run(other, loud.tenantId)).toBe('skipped');
    // A URL stored without its secret is no endpoint either.
    const half = await seedTenantSession(
      env.db,
      `t-${newId()}`,
      {},
      {
        settings: { notifyUrl: 'https://receiver.example/hooks' },
      },
    );
    const halfTurn = await turn(half, { status: 'cancelled' });
    expect(await run(halfTurn, half.tenantId)).toBe('skipped');
    expect(await run(halfTurn, half.tenantId)).toBe('already_done');
    expect(published).toEqual([]);
    const runs = await env.db.hookRun.findMany({
      where: { turnId: { in: [quietTurn, running, other, halfTurn] } },
      orderBy: { createdAt: 'asc' },
    });
    expect(runs.map((r) => [r.turnId, r.output])).toEqual([
      [quietTurn, { skipped: 'no_endpoint', turnStatus: 'completed' }],
      [halfTurn, { skipped: 'no_endpoint', turnStatus: 'cancelled' }],
    ]);
  });

  it('maps failed and cancelled, with a null finalText', async () => {
    const t = await tenant(true);
    await run(await turn(t, { status: 'failed', finalText: null }), t.tenantId);
    await run(
      await turn(t, { status: 'cancelled', cancelReason: 'operator', cancelNote: 'runaway loop' }),
      t.tenantId,
    );
    expect(published.map((j) => [j.event, j.payload.finalText, j.payload.finalTextTruncated])).toEqual([
      ['turn.failed', null, false],
      ['turn.cancelled', null, false],
    ]);
    // turn.cancelled says why (docs/adr/0055); other ends carry no such field.
    expect(published[0].payload).not.toHaveProperty('cancelReason');
    expect(published[1].payload).toMatchObject({ cancelReason: 'operator', cancelNote: 'runaway loop' });
  });
  /** An A2A push config of the turn (docs/adr/0037), as the gateway stores it. */
  const pushConfig = async (t: SessionIds, turnId: string, configId: string, version: '0.3' | '1.0') => {
    const id = newId();
    await env.db.$executeRaw`
      INSERT INTO a2a_push_configs (id, tenant_id, agent_id, turn_id, config_id, url, protocol_version)
      VALUES (${id}::uuid, ${t.tenantId}::uuid, ${t.agentId}::uuid, ${turnId}::uuid, ${configId},
        'https://peer.example/a2a', ${version})`;
    return id;
  };

  it("publishes the ended task to each A2A push config of the turn, in the config's version, beside the completion webhook", async () => {
    const t = await tenant(true);
    const id = await turn(t, { status: 'completed', finalText: 'the answer' });
    const v03 = await pushConfig(t, id, 'a', '0.3');
    const v1 = await pushConfig(t, id, 'b', '1.0');
    // Another turn's config is not this turn's.
    await pushConfig(t, newId(), 'c', '0.3');
    expect(await run(id, t.tenantId)).toBe('written');
    expect(await run(id, t.tenantId)).toBe('already_done');
    const pushes = published.filter((j) => j.a2aPush);
    expect(pushes.map((j) => [j.webhookId, j.a2aPush]).sort()).toEqual(
      [
        [`msg_a2a_${v03}`, { turnId: id, configId: 'a' }],
        [`msg_a2a_${v1}`, { turnId: id, configId: 'b' }],
      ].sort(),
    );
    const body = (configId: string) => pushes.find((j) => j.a2aPush?.configId === configId)!.payload;
    expect(body('a')).toMatchObject({ kind: 'task', id, status: { state: 'completed' } });
    expect(body('b')).toMatchObject({ task: { id, status: { state: 'TASK_STATE_COMPLETED' } } });
    expect(published.filter((j) => !j.a2aPush).map((j) => j.webhookId)).toEqual([`msg_turn_${id}`]);
    const [run1] = await env.db.hookRun.findMany({ where: { turnId: id } });
    expect((run1.output as { a2aPushes: string[] }).a2aPushes.sort()).toEqual(
      [`msg_a2a_${v03}`, `msg_a2a_${v1}`].sort(),
    );
  });

  it('a tenant without a notify URL still gets its A2A pushes published (the sender finds no secret)', async () => {
    const t = await tenant(false);
    const id = await turn(t, { status: 'cancelled', finalText: null });
    await pushConfig(t, id, 'only', '0.3');
    expect(await run(id, t.tenantId)).toBe('written');
    expect(published.map((j) => j.a2aPush?.configId)).toEqual(['only']);
    expect(published[0].payload).toMatchObject({ kind: 'task', status: { state: 'canceled' } });
  });
});
