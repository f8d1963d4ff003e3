import { Jobs, TenantPausedError, type TurnJob } from '@switchboard/contracts';
import { poolOf } from '@switchboard/database';
import { TurnEngine } from '@switchboard/engine';
import { ProviderRegistry } from '@switchboard/providers';
import { sqlDbFor, TenantsRepository, TurnStore } from '@switchboard/store';
import { ToolRegistry } from '@switchboard/tools';
import {
  operatorPrompt,
  seedSession,
  seedTenant,
  startHarness,
  type HarnessFixture,
} from '@switchboard/testing';
import { reconcileTurns } from './reconciler';
import { TurnRunner } from './runner';
import { TenantPause } from './tenant-pause';

/**
 * The operator's pause against real Postgres and Redis (docs/adr/0030): a paused tenant's admission
 * is refused in its statement, its claims hold its turns (queued stays queued, the job completes),
 * the reconciler leaves them alone, and the resume wakes one job per session, after which they run.
 */
jest.setTimeout(120_000);

describe('tenant pause and resume', () => {
  let h: HarnessFixture;
  let tenants: TenantsRepository;
  let store: TurnStore;
  let pauses: TenantPause;
  let runner: TurnRunner;

  beforeAll(async () => {
    h = await startHarness();
    tenants = new TenantsRepository(h.env.db);
    store = new TurnStore(sqlDbFor(poolOf(h.env.db), 'test'));
    pauses = new TenantPause(tenants, store, h.turnsQueue, h.logger);
    runner = new TurnRunner({
      ...h.runnerDeps(),
      engine: new TurnEngine({ providers: new ProviderRegistry({}), tools: new ToolRegistry([]) }),
      tools: new ToolRegistry([]),
      defaultModel: 'scripted/echo',
    });
  });

  afterAll(() => h?.close());

  const statuses = async (ids: string[]) =>
    (await h.env.db.turn.findMany({ where: { id: { in: ids } }, orderBy: { seq: 'asc' } })).map(
      (t) => t.status,
    );
  const jobOf = (turnId: string, sessionId: string, tenantId: string): TurnJob =>
    Jobs.turn.schema.parse({ turnId, sessionId, tenantId, trace: {} });

  it('refuses admission while paused and writes nothing; a replay of an earlier admission still answers', async () => {
    const { tenantId, agentId } = await seedTenant(h.env.db, 'refused');
    const sessionId = await seedSession(h.env.db, tenantId, agentId);
    const first = await h.admission.admit(
      operatorPrompt({ tenantId, sessionId }, 'before', { idempotencyKey: 'k1' }),
    );
    await tenants.pause(tenantId, 'abuse report', 'operator');
    const before = await h.env.db.message.count({ where: { sessionId } });
    await expect(h.admission.admit(operatorPrompt({ tenantId, sessionId }, 'during'))).rejects.toBeInstanceOf(
      TenantPausedError,
    );
    await expect(
      h.admission.admit(operatorPrompt({ tenantId, sessionId }, 'during', { multitask: 'reject' })),
    ).rejects.toMatchObject({ code: 'tenant_paused', status: 403 });
    // A new session through the chat-completions import is refused too: no session is left behind.
    const imported = '01a20360-0000-7000-8000-00000000abcd';
    await expect(
      h.admission.importSession({
        sessionId: imported,
        tenantId,
        agentId,
        metadata: {},
        history: [{ role: 'user', text: 'earlier' }],
        kind: 'operator_prompt',
        origin: { kind: 'operator' },
        deliverySurface: 'http_public_enqueue',
        admissionContext: 'control_authenticated',
        messageMetadata: {},
      }),
    ).rejects.toBeInstanceOf(TenantPausedError);
    expect(await h.env.db.session.count({ where: { id: imported } })).toBe(0);
    expect(await h.env.db.message.count({ where: { sessionId } })).toBe(before);
    expect(await h.env.db.event.count({ where: { sessionId, type: 'message_admitted' } })).toBe(1);
    // The retry of the admission made before the pause is a replay: it writes nothing either.
    const replay = await h.admission.admit(
      operatorPrompt({ tenantId, sessionId }, 'before', { idempotencyKey: 'k1' }),
    );
    expect(replay).toMatchObject({ turnId: first.turnId, replayed: true });
  });

  it('keeps a paused tenant’s turns queued, and runs them once resumed', async () => {
    const { tenantId, agentId } = await seedTenant(h.env.db, 'kept');
    const a = await seedSession(h.env.db, tenantId, agentId);
    const b = await seedSession(h.env.db, tenantId, agentId);
    const a1 = await h.admission.admit(operatorPrompt({ tenantId, sessionId: a }, 'a one'));
    const a2 = await h.admission.admit(operatorPrompt({ tenantId, sessionId: a }, 'a two'));
    const b1 = await h.admission.admit(operatorPrompt({ tenantId, sessionId: b }, 'b one'));
    expect(await pauses.pause(tenantId, null, 'operator')).toEqual({ found: true, changed: true });
    // Paused again: nothing changes.
    expect(await pauses.pause(tenantId, 'again', 'operator')).toEqual({ found: true, changed: false });

    // The claims leave them queued: the jobs complete, the sessions' leases are free.
    expect(await runner.handle(jobOf(a1.turnId, a, tenantId))).toBe('done');
    expect(await runner.handle(jobOf(b1.turnId, b, tenantId))).toBe('done');
    expect(await statuses([a1.turnId, a2.turnId, b1.turnId])).toEqual(['queued', 'queued', 'queued']);
    const sessions = await h.env.db.session.findMany({ where: { id: { in: [a, b] } } });
    expect(sessions.map((s) => s.leaseToken)).toEqual([null, null]);
    // The reconciler leaves a paused tenant's turns alone.
    for (const id of [a1.turnId, a2.turnId, b1.turnId]) await (await h.turnsQueue.getJob(id))?.remove();
    await reconcileTurns(h.env.db, h.turnsQueue, h.logger);
    for (const id of [a1.turnId, a2.turnId, b1.turnId]) expect(await h.turnsQueue.getJob(id)).toBeUndefined();

    // Resume: one wake-up job per session, for its next turn in drain order.
    const resumed = await pauses.resume(tenantId, 'operator');
    expect(resumed).toEqual({ found: true, changed: true, woken: 2 });
    const woken = await h.turnsQueue.getJobs(['prioritized', 'waiting']);
    expect(
      woken
        .filter((j) => (j.data as TurnJob).tenantId === tenantId)
        .map((j) => j.id)
        .sort(),
    ).toEqual([a1.turnId, b1.turnId].sort());
    expect(await runner.handle(jobOf(a1.turnId, a, tenantId))).toBe('done');
    expect(await runner.handle(jobOf(b1.turnId, b, tenantId))).toBe('done');
    expect(await statuses([a1.turnId, a2.turnId, b1.turnId])).toEqual([
      'completed',
      'completed',
      'completed',
    ]);
    // Resumed again: nothing to change, nothing left to wake.
    expect(await pauses.resume(tenantId, 'operator')).toEqual({ found: true, changed: false, woken: 0 });
  });

  it('answers found: false for a tenant that does not exist', async () => {
    const id = '01a20360-0000-7000-8000-0000000000ff';
    expect(await pauses.pause(id, null, 'operator')).toEqual({ found: false });
    expect(await pauses.resume(id, 'operator')).toEqual({ found: false });
  });
});
