import { newId } from '@switchboard/contracts';
import { createTestEnv, seedTenant, type TestEnv } from '@switchboard/testing';
import { archetype, resolveSubagent } from './archetypes';

/** Sub-agent names resolve on real Postgres: override, materialisation, one row under concurrency. */
jest.setTimeout(120_000);

describe('resolveSubagent', () => {
  let env: TestEnv;
  let tenantId: string;
  let other: string;

  beforeAll(async () => {
    env = await createTestEnv();
    ({ tenantId } = await seedTenant(env.db, 'archetypes'));
    ({ tenantId: other } = await seedTenant(env.db, 'other'));
  });
  afterAll(() => env?.cleanup());

  it('materialises a built-in archetype once, as a built_in row, even under 20 concurrent resolutions', async () => {
    const rows = await Promise.all(
      Array.from({ length: 20 }, () => resolveSubagent(env.db, tenantId, 'researcher')),
    );
    const ids = new Set(rows.map((r) => r?.id));
    expect(ids.size).toBe(1);
    const stored = await env.db.agent.findMany({ where: { tenantId, name: 'researcher' } });
    expect(stored).toHaveLength(1);
    const a = archetype('researcher')!;
    expect(stored[0]).toMatchObject({
      builtIn: true,
      archetype: 'researcher',
      tier: 'worker',
      instructions: a.instructions,
      model: a.model,
      tools: [...a.tools],
      deletedAt: null,
    });
    // Per tenant: another tenant gets its own row.
    const theirs = await resolveSubagent(env.db, other, 'researcher');
    expect(theirs?.tenantId).toBe(other);
    expect(theirs?.id).not.toBe(stored[0].id);
  });

  it('prefers the tenant’s own agent of that name (the override)', async () => {
    await resolveSubagent(env.db, tenantId, 'critic');
    const own = await env.db.agent.create({
      data: {
        id: newId(),
        tenantId,
        name: 'critic',
        tier: 'worker',
        model: 'scripted/echo',
        instructions: 'mine',
      },
    });
    const r = await resolveSubagent(env.db, tenantId, 'critic');
    expect(r?.id).toBe(own.id);
    expect(r?.builtIn).toBe(false);
    // Deleted, it no longer overrides.
    await env.db.agent.update({ where: { id: own.id }, data: { deletedAt: new Date() } });
    expect((await resolveSubagent(env.db, tenantId, 'critic'))?.builtIn).toBe(true);
  });

  it('resolves a tenant agent that is no archetype, and nothing for an unknown name', async () => {
    const own = await env.db.agent.create({
      data: { id: newId(), tenantId, name: 'my_helper', tier: 'worker', model: 'scripted/echo' },
    });
    expect((await resolveSubagent(env.db, tenantId, 'my_helper'))?.id).toBe(own.id);
    expect(await resolveSubagent(env.db, tenantId, 'no_such_agent')).toBeNull();
    // Another tenant's agent is not visible.
    expect(await resolveSubagent(env.db, other, 'my_helper')).toBeNull();
  });

  it('brings a row made by an older definition up to date, keeping its id', async () => {
    const first = await resolveSubagent(env.db, tenantId, 'planner');
    await env.db.agent.update({ where: { id: first!.id }, data: { instructions: 'old prompt', tools: [] } });
    const again = await resolveSubagent(env.db, tenantId, 'planner');
    expect(again?.id).toBe(first!.id);
    expect(again?.instructions).toBe(archetype('planner')!.instructions);
    expect(again?.tools).toEqual([...archetype('planner')!.tools]);
  });

  it('makes a fresh row after the built-in row was deleted', async () => {
    const first = await resolveSubagent(env.db, tenantId, 'summarizer');
    await env.db.agent.update({ where: { id: first!.id }, data: { deletedAt: new Date() } });
    const second = await resolveSubagent(env.db, tenantId, 'summarizer');
    expect(second?.id).not.toBe(first!.id);
    expect(second?.builtIn).toBe(true);
  });
});
