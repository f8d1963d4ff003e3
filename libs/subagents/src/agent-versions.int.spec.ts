import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { newId } from '@switchboard/contracts';
import { poolOf } from '@switchboard/database';
import { claimNext, forkSession, SessionsRepository, SqlDb, sql } from '@switchboard/store';
import {
  createTestEnv,
  seedTenantSession,
  seedTurn,
  type SessionIds,
  type TestEnv,
} from '@switchboard/testing';
import { AgentsRepository } from './agents-repository';
import { AgentVersionsRepository, diffConfigs, type AgentConfig } from './agent-versions';

/**
 * Versioned agent configuration on real Postgres (docs/adr/0061): one version per change that changes
 * something, version 1 for every insert and by the migration's backfill, rollback as a new version, the
 * diff, and the claim laying a pinned version's configuration over the agent row.
 */
jest.setTimeout(120_000);

describe('agent versions (store)', () => {
  let env: TestEnv;
  let db: SqlDb;
  let agents: AgentsRepository;
  let versions: AgentVersionsRepository;
  let sessions: SessionsRepository;
  const by = { actor: 'api_key:test' };

  beforeAll(async () => {
    env = await createTestEnv();
    db = new SqlDb(poolOf(env.db));
    agents = new AgentsRepository(env.db);
    versions = new AgentVersionsRepository(env.db);
    sessions = new SessionsRepository(env.db);
  });

  afterAll(async () => {
    await env?.cleanup();
  });

  const agentOf = async (s: SessionIds) => (await agents.find(s.tenantId, s.agentId))!;
  const all = async (s: SessionIds) => (await versions.page(s.tenantId, s.agentId, undefined, 50)).rows;

  it('writes version 1 on insert, one version per change that changes something, and audits them', async () => {
    const s = await seedTenantSession(env.db, 'versions-writes');
    expect((await all(s)).map((v) => v.version)).toEqual([1]);

    let agent = await agents.update(await agentOf(s), { instructions: 'v2 instructions' }, by);
    expect(agent.version).toBe(2);
    // The same value again, and a change of an unversioned field (name): no version.
    agent = await agents.update(agent, { instructions: 'v2 instructions' }, by);
    agent = await agents.update(agent, { name: 'renamed' }, by);
    expect(agent.version).toBe(2);
    agent = await agents.update(agent, { budgets: { maxUsd: 1 }, tools: ['word_count'] }, by);
    expect(agent.version).toBe(3);

    const rows = await all(s);
    expect(rows.map((v) => v.version)).toEqual([3, 2, 1]);
    expect(rows[0].createdBy).toBe('api_key:test');
    expect((rows[1].config as AgentConfig).instructions).toBe('v2 instructions');
    expect((await agentOf(s)).version).toBe(3);
    const audits = await env.db.auditEvent.findMany({
      where: { tenantId: s.tenantId, action: 'agent.version_created' },
    });
    expect(audits).toHaveLength(2);

    const diff = diffConfigs(rows[2].config as AgentConfig, rows[0].config as AgentConfig);
    expect(diff).toEqual([
      { path: 'instructions', before: '', after: 'v2 instructions' },
      { path: 'tools', before: [], after: ['word_count'] },
      { path: 'budgets.maxUsd', before: null, after: 1 },
    ]);
  });

  it('rolls back as a new version equal to the old one, audited', async () => {
    const s = await seedTenantSession(env.db, 'versions-rollback');
    let agent = await agents.update(
      await agentOf(s),
      { instructions: 'second', model: 'scripted/other' },
      by,
    );
    const v1 = (await versions.find(s.tenantId, s.agentId, 1))!;
    agent = await agents.rollback(
      agent,
      { version: 1, config: v1.config as AgentConfig },
      { ...by, note: 'undo' },
    );
    expect(agent.version).toBe(3);
    expect(agent.instructions).toBe('');
    expect(agent.model).toBe('scripted/echo');
    const v3 = (await versions.find(s.tenantId, s.agentId, 3))!;
    expect(v3.config).toEqual(v1.config);
    expect(v3.note).toBe('undo');
    // Rolling back to what it already is still writes a version (a rollback is always recorded).
    agent = await agents.rollback(agent, { version: 3, config: v3.config as AgentConfig }, by);
    expect(agent.version).toBe(4);
    const audit = await env.db.auditEvent.findMany({
      where: { tenantId: s.tenantId, action: 'agent.rolled_back' },
    });
    expect(audit.map((a) => a.details)).toEqual(
      expect.arrayContaining([expect.objectContaining({ version: 3, rolledBackTo: 1, note: 'undo' })]),
    );
  });

  it("backfills version 1 of an agent that has none from the migration's own statement", async () => {
    const s = await seedTenantSession(env.db, 'versions-backfill');
    await env.db.agentVersion.deleteMany({ where: { agentId: s.agentId } });
    const migration = readFileSync(
      join(__dirname, '../../../prisma/migrations/20261211000000_agent_versions/migration.sql'),
      'utf8',
    );
    const backfill = migration.slice(
      migration.indexOf('INSERT INTO agent_versions (tenant_id, agent_id, version, config, created_at'),
    );
    await env.db.$executeRawUnsafe(backfill);
    const rows = await all(s);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ version: 1, note: 'backfilled', createdBy: null });
    expect(rows[0].config).toMatchObject({
      instructions: '',
      model: 'scripted/echo',
      tools: [],
      budgets: {},
    });
  });

  it('lays the pinned version over the agent row in the claim, and records the version on the turn', async () => {
    const s = await seedTenantSession(env.db, 'versions-claim');
    await agents.update(await agentOf(s), { instructions: 'first words', model: 'scripted/one' }, by);
    // The session pinned to v2, then the agent changed to v3.
    await sessions.pin(s.tenantId, s.sessionId, 2);
    await agents.update(await agentOf(s), { instructions: 'third words', model: 'scripted/three' }, by);

    const claim = async (ids: SessionIds) => {
      const turn = await seedTurn(env.db, ids, {});
      const r = await claimNext(db, {
        sessionId: ids.sessionId,
        turnId: turn.id,
        tenantId: ids.tenantId,
        owner: 'test',
        lease: { token: newId(), ms: 10_000 },
      });
      await env.db.turn.update({
        where: { id: turn.id },
        data: { status: 'completed', completedAt: new Date() },
      });
      await env.db.session.update({
        where: { id: ids.sessionId },
        data: { leaseToken: null, leaseOwner: null },
      });
      return { load: r.next!, turnId: turn.id };
    };
    const pinned = await claim(s);
    expect(pinned.load.agent).toMatchObject({
      version: 2,
      instructions: 'first words',
      model: 'scripted/one',
    });
    expect(pinned.load.turn.agentVersion).toBe(2);
    expect((await env.db.turn.findUnique({ where: { id: pinned.turnId } }))!.agentVersion).toBe(2);

    // A fork keeps the pin; a re-pin to the latest runs on v3.
    const fork = await forkSession(db, {
      tenantId: s.tenantId,
      sessionId: s.sessionId,
      turnId: pinned.turnId,
      position: 'before',
    });
    expect((await env.db.session.findUnique({ where: { id: fork.sessionId } }))!.agentVersion).toBe(2);
    await sessions.pin(s.tenantId, s.sessionId, null);
    const latest = await claim(s);
    expect(latest.load.agent).toMatchObject({
      version: 3,
      instructions: 'third words',
      model: 'scripted/three',
    });
    expect(latest.load.turn.agentVersion).toBe(3);

    // An unknown version is refused, nothing written; another tenant's session is not found.
    await expect(sessions.pin(s.tenantId, s.sessionId, 99)).rejects.toMatchObject({
      code: 'validation_failed',
    });
    expect((await env.db.session.findUnique({ where: { id: s.sessionId } }))!.agentVersion).toBeNull();
    expect(await sessions.pin(newId(), s.sessionId, 1)).toBeNull();
    const count = await db.first<{ n: number }>(
      sql`SELECT count(*)::int AS n FROM agent_versions WHERE agent_id = ${s.agentId}::uuid`,
    );
    expect(count?.n).toBe(3);
  });
});
