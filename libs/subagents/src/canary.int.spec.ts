import { newId } from '@switchboard/contracts';
import { createTestEnv, seedTenantSession, type SessionIds, type TestEnv } from '@switchboard/testing';
import { AgentsRepository } from './agents-repository';
import { AgentVersionsRepository, type AgentConfig } from './agent-versions';
import {
  canaryBucket,
  candidateIsWorse,
  CanaryRepository,
  createSessionForAgent,
  inCanary,
  sweepCanaries,
} from './canary';

/**
 * The canary on real Postgres (docs/adr/0064): new sessions pinned by a stable hash, the decision sweep
 * over turn_scores rows (inserted directly here: the scoring hook is another part's), rollback re-pinning
 * exactly the canary's candidate sessions, promotion as a new version, stop, refusals that write nothing,
 * and every start and end in the audit log.
 */
jest.setTimeout(120_000);

describe('canary (store)', () => {
  let env: TestEnv;
  let agents: AgentsRepository;
  let versions: AgentVersionsRepository;
  let canaries: CanaryRepository;
  const actor = 'api_key:test';

  beforeAll(async () => {
    env = await createTestEnv();
    agents = new AgentsRepository(env.db);
    versions = new AgentVersionsRepository(env.db);
    canaries = new CanaryRepository(env.db);
  });

  afterAll(async () => {
    await env?.cleanup();
  });

  const agentOf = async (s: SessionIds) => (await agents.find(s.tenantId, s.agentId))!;

  /** An agent with versions 1 (instructions v1) and 2 (instructions v2, current). */
  async function twoVersions(name: string) {
    const s = await seedTenantSession(env.db, name);
    await agents.update(await agentOf(s), { instructions: 'v1' }, { actor });
    const agent = await agents.update(await agentOf(s), { instructions: 'v2' }, { actor });
    // version 1 is the seed's, 2 = 'v1', 3 = 'v2'
    return { s, agent };
  }

  /** `n` scored turns of `version`, each with one score row of `score` (`scorer`), created now. */
  async function score(s: SessionIds, version: number, n: number, value: number, extra: object = {}) {
    await env.db.turnScore.createMany({
      data: Array.from({ length: n }, () => ({
        id: newId(),
        tenantId: s.tenantId,
        agentId: s.agentId,
        agentVersion: version,
        turnId: newId(),
        sessionId: s.sessionId,
        source: 'scorer',
        scorer: 'judge',
        kind: 'llm_judge',
        status: 'scored',
        score: value,
        passed: value >= 0.5,
        ...extra,
      })),
    });
  }

  const audits = (s: SessionIds, action?: string) =>
    env.db.auditEvent.findMany({
      where: { tenantId: s.tenantId, ...(action ? { action } : { action: { startsWith: 'agent.canary' } }) },
      orderBy: { createdAt: 'asc' },
    });

  it('hashes session ids stably and uniformly', () => {
    const ids = Array.from({ length: 20_000 }, () => newId());
    const share = ids.filter((id) => inCanary(id, 20)).length / ids.length;
    expect(share).toBeGreaterThan(0.18);
    expect(share).toBeLessThan(0.22);
    for (const id of ids.slice(0, 100)) expect(canaryBucket(id)).toBe(canaryBucket(id));
    expect(ids.filter((id) => inCanary(id, 0))).toHaveLength(0);
    expect(ids.filter((id) => inCanary(id, 100))).toHaveLength(ids.length);
  });

  it('applies the margin and the minimum once both sides have enough scored turns', () => {
    const c = { margin: 0.1, minScored: 2 };
    const o = (b: number, k: number, nb = 2, nk = 2) => ({
      baselineMean: b,
      candidateMean: k,
      n: { baseline: nb, candidate: nk },
    });
    expect(candidateIsWorse(c, o(0.8, 0.7))).toBe(true);
    expect(candidateIsWorse(c, o(0.7, 0.6))).toBe(true);
    expect(candidateIsWorse(c, o(0.8, 0.75))).toBe(false);
    expect(candidateIsWorse(c, o(0.8, 0.1, 1, 5))).toBe(false);
    expect(candidateIsWorse(c, o(0.8, 0.1, 5, 1))).toBe(false);
  });

  it('pins new sessions to the candidate or the baseline while it runs, to the current version otherwise', async () => {
    const { s, agent } = await twoVersions('canary-pins');
    const create = () =>
      createSessionForAgent(env.db, {
        tenantId: s.tenantId,
        agentId: s.agentId,
        version: agent.version,
        title: null,
        metadata: {},
      });
    expect((await create()).agentVersion).toBe(3);
    const started = await canaries.start(
      agent,
      { candidateVersion: 3, baselineVersion: 2, sharePercent: 50 },
      actor,
    );
    expect(started).toMatchObject({ status: 'running', margin: 0.1, minScored: 20, scorer: null });
    const made = await Promise.all(Array.from({ length: 40 }, () => create()));
    for (const m of made) {
      expect(m.canaryRunId).toBe(started.runId);
      expect(m.agentVersion).toBe(inCanary(m.id, 50) ? 3 : 2);
    }
    expect(new Set(made.map((m) => m.agentVersion))).toEqual(new Set([2, 3]));
    await canaries.stop(s.tenantId, s.agentId, actor);
    const after = await create();
    expect(after.agentVersion).toBe(3);
    expect(after.canaryRunId).toBeNull();
    // Stopping keeps every pin.
    const kept = await env.db.session.findMany({ where: { canaryRunId: started.runId } });
    expect(kept.map((k) => k.agentVersion).sort()).toEqual(made.map((m) => m.agentVersion).sort());
    expect((await audits(s)).map((a) => a.action)).toEqual(['agent.canary_started', 'agent.canary_stopped']);
  });

  it('refuses an unknown version, a candidate equal to the baseline and a second canary, writing nothing', async () => {
    const { s, agent } = await twoVersions('canary-refusals');
    await expect(
      canaries.start(agent, { candidateVersion: 9, sharePercent: 10 }, actor),
    ).rejects.toMatchObject({
      code: 'validation_failed',
    });
    await expect(
      canaries.start(agent, { candidateVersion: 2, baselineVersion: 7, sharePercent: 10 }, actor),
    ).rejects.toMatchObject({ code: 'validation_failed' });
    await expect(
      canaries.start(agent, { candidateVersion: 3, sharePercent: 10 }, actor),
    ).rejects.toMatchObject({
      code: 'validation_failed',
    });
    expect(await canaries.find(s.tenantId, s.agentId)).toBeNull();
    expect(await audits(s)).toHaveLength(0);
    await expect(canaries.stop(s.tenantId, s.agentId, actor)).rejects.toMatchObject({ code: 'not_found' });

    await canaries.start(agent, { candidateVersion: 2, sharePercent: 10 }, actor);
    await expect(
      canaries.start(agent, { candidateVersion: 1, sharePercent: 10 }, actor),
    ).rejects.toMatchObject({
      code: 'conflict',
    });
    expect((await canaries.find(s.tenantId, s.agentId))!.candidateVersion).toBe(2);
    expect(await audits(s)).toHaveLength(1);
    await canaries.stop(s.tenantId, s.agentId, actor);
    await expect(canaries.stop(s.tenantId, s.agentId, actor)).rejects.toMatchObject({ code: 'conflict' });
    await expect(canaries.promote(await agentOf(s), actor)).rejects.toMatchObject({ code: 'conflict' });
    expect(await audits(s)).toHaveLength(2);
  });

  it('rolls a worse candidate back once both sides have minScored, re-pinning its candidate sessions', async () => {
    const { s, agent } = await twoVersions('canary-rollback');
    // A score from before the canary (a perfect candidate score) does not count.
    await score(s, 3, 5, 1);
    await env.db.turnScore.updateMany({
      where: { agentId: s.agentId },
      data: { createdAt: new Date(Date.now() - 60_000) },
    });
    const c = await canaries.start(
      agent,
      { candidateVersion: 3, baselineVersion: 2, sharePercent: 50, minScored: 4, margin: 0.2 },
      actor,
    );
    const sessions = await Promise.all(
      Array.from({ length: 20 }, () =>
        createSessionForAgent(env.db, {
          tenantId: s.tenantId,
          agentId: s.agentId,
          version: 3,
          title: null,
          metadata: {},
        }),
      ),
    );
    const onCandidate = sessions.filter((x) => x.agentVersion === 3);
    expect(onCandidate.length).toBeGreaterThan(0);
    // One candidate session an operator re-pinned to version 1 since: the rollback leaves it alone.
    await env.db.session.update({ where: { id: onCandidate[0].id }, data: { agentVersion: 1 } });
    await env.db.session.updateMany({
      where: { id: { in: onCandidate.map((x) => x.id) } },
      data: { systemPrompt: 'rendered with v2' },
    });

    // Not enough candidate turns yet (3 < 4), however bad: it keeps running, the observation is stored.
    await score(s, 2, 4, 0.9);
    await score(s, 3, 3, 0.2);
    // Skipped and error rows, and rows of another version, do not count.
    await score(s, 3, 5, 0, { status: 'error', score: null });
    await score(s, 1, 5, 0);
    const [first] = (await sweepCanaries(env.db)).filter((r) => r.agentId === s.agentId);
    expect(first.rolledBack).toBe(false);
    expect(first.observed.n).toEqual({ baseline: 4, candidate: 3 });
    const running = (await canaries.find(s.tenantId, s.agentId))!;
    expect(running.status).toBe('running');
    expect(running.observed).toMatchObject({ baselineMean: 0.9, n: { baseline: 4, candidate: 3 } });

    await score(s, 3, 1, 0.6);
    const [second] = (await sweepCanaries(env.db)).filter((r) => r.agentId === s.agentId);
    expect(second.rolledBack).toBe(true);
    const ended = (await canaries.find(s.tenantId, s.agentId))!;
    expect(ended.status).toBe('rolled_back');
    expect(ended.decidedAt).not.toBeNull();
    expect(ended.decision).toMatchObject({
      outcome: 'rolled_back',
      by: 'canary',
      n: { baseline: 4, candidate: 4 },
    });
    const d = ended.decision as { baselineMean: number; candidateMean: number };
    expect(d.baselineMean).toBeCloseTo(0.9);
    expect(d.candidateMean).toBeCloseTo(0.3);

    const now = await env.db.session.findMany({ where: { id: { in: onCandidate.map((x) => x.id) } } });
    for (const x of now) {
      if (x.id === onCandidate[0].id) {
        expect(x.agentVersion).toBe(1);
        expect(x.systemPrompt).toBe('rendered with v2');
      } else {
        expect(x.agentVersion).toBe(2);
        expect(x.systemPrompt).toBeNull();
      }
    }
    const [rolled] = await audits(s, 'agent.canary_rolled_back');
    expect(rolled.actor).toBe('canary');
    expect(rolled.details).toMatchObject({ runId: c.runId, repinnedSessions: onCandidate.length - 1 });
    // A later sweep leaves it be; a new session goes to the current version.
    expect((await sweepCanaries(env.db)).filter((r) => r.agentId === s.agentId)).toEqual([]);
    expect(
      (
        await createSessionForAgent(env.db, {
          tenantId: s.tenantId,
          agentId: s.agentId,
          version: 3,
          title: null,
          metadata: {},
        })
      ).agentVersion,
    ).toBe(3);
  });

  it('keeps a candidate within the margin running, and compares only the named scorer', async () => {
    const { s, agent } = await twoVersions('canary-margin');
    await canaries.start(
      agent,
      { candidateVersion: 3, baselineVersion: 2, sharePercent: 10, minScored: 2, scorer: 'feedback' },
      actor,
    );
    // The judge says the candidate is far worse; feedback (the scorer compared) says it is as good.
    await score(s, 2, 3, 1);
    await score(s, 3, 3, 0);
    await score(s, 2, 2, 0.8, { source: 'feedback', scorer: 'feedback', kind: 'feedback' });
    await score(s, 3, 2, 0.75, { source: 'feedback', scorer: 'feedback', kind: 'feedback' });
    const [r] = (await sweepCanaries(env.db)).filter((x) => x.agentId === s.agentId);
    expect(r.rolledBack).toBe(false);
    expect(r.observed.n).toEqual({ baseline: 2, candidate: 2 });
    expect((await canaries.find(s.tenantId, s.agentId))!.status).toBe('running');
  });

  it('promotes: the candidate configuration becomes the agent as a new version, audited', async () => {
    const { s, agent } = await twoVersions('canary-promote');
    // Candidate 2 ('v1') against baseline 3 ('v2', current).
    await canaries.start(agent, { candidateVersion: 2, sharePercent: 30 }, actor);
    const { canary, agent: promoted } = await canaries.promote(await agentOf(s), actor);
    expect(promoted.version).toBe(4);
    expect(promoted.instructions).toBe('v1');
    expect(canary).toMatchObject({
      status: 'promoted',
      decision: { outcome: 'promoted', by: actor, promotedAs: 4 },
    });
    const v4 = await versions.find(s.tenantId, s.agentId, 4);
    const v2 = await versions.find(s.tenantId, s.agentId, 2);
    expect(v4!.config as AgentConfig).toEqual(v2!.config as AgentConfig);
    expect((await audits(s)).map((a) => a.action)).toEqual(['agent.canary_started', 'agent.canary_promoted']);
    const [created] = await env.db.auditEvent.findMany({
      where: {
        tenantId: s.tenantId,
        action: 'agent.version_created',
        details: { path: ['version'], equals: 4 },
      },
    });
    expect(created.details).toMatchObject({ promotedFrom: 2 });

    // A candidate that is already the current version is promoted without a new version.
    const again = await canaries.start(
      await agentOf(s),
      { candidateVersion: 4, baselineVersion: 3, sharePercent: 5 },
      actor,
    );
    expect(again.runId).not.toBe(canary.runId);
    const second = await canaries.promote(await agentOf(s), actor);
    expect(second.agent.version).toBe(4);
    expect(second.canary.decision).toMatchObject({ promotedAs: 4 });
  });
});
