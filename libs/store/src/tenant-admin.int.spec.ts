import { newId } from '@switchboard/contracts';
import { poolOf } from '@switchboard/database';
import { createTestEnv, seedTenantSession, seedTurn, type TestEnv } from '@switchboard/testing';
import { ApprovalStore } from './approval-store';
import { AuditLogRepository, type AuditRow } from './audit-log';
import { SqlDb } from './sql';
import { ApiKeysRepository, TenantsRepository } from './tenants-repository';

/**
 * The operator's statements on real Postgres (docs/adr/0030): the tenant overview (today's spend as
 * the daily cap counts it, unfinished turns by state, paging), the operator's settings merge, pause
 * and resume, and the audit entries each change writes in its own transaction, read back newest
 * first by tenant and action.
 */
jest.setTimeout(120_000);

const DAY_MS = 24 * 3600 * 1000;

describe('tenant administration in the store', () => {
  let env: TestEnv;
  let tenants: TenantsRepository;
  let keys: ApiKeysRepository;
  let audit: AuditLogRepository;

  beforeAll(async () => {
    env = await createTestEnv();
    tenants = new TenantsRepository(env.db);
    keys = new ApiKeysRepository(env.db);
    audit = new AuditLogRepository(env.db);
  });

  afterAll(async () => {
    await env?.cleanup();
  });

  const entries = (tenantId: string) => audit.page({ tenantId, limit: 100 });

  it('shows today’s spend as the cap counts it, and the unfinished turns by state', async () => {
    const s = await seedTenantSession(env.db, 'spender');
    const now = new Date();
    const today = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()));
    await env.db.tenantSpendDaily.createMany({
      data: [
        { tenantId: s.tenantId, day: today, costUsd: '1.5' },
        { tenantId: s.tenantId, day: new Date(today.getTime() - DAY_MS), costUsd: '10' },
      ],
    });
    // Counted: a turn ended today and not rolled up yet, and one still running. Not counted: one rolled
    // up already (it is in the roll-up), one ended yesterday (yesterday's spend).
    await seedTurn(env.db, s, { status: 'completed', costUsd: '0.25', completedAt: now });
    await seedTurn(env.db, s, { status: 'running', costUsd: '0.1' });
    await seedTurn(env.db, s, {
      status: 'completed',
      costUsd: '7',
      completedAt: now,
      spendRolledUpAt: now,
    });
    await seedTurn(env.db, s, {
      status: 'completed',
      costUsd: '3',
      completedAt: new Date(today.getTime() - 3600_000),
    });
    await seedTurn(env.db, s, { status: 'queued' });
    await seedTurn(env.db, s, { status: 'queued' });
    await seedTurn(env.db, s, { status: 'awaiting_approval' });
    await seedTurn(env.db, s, { status: 'awaiting_subagent' });
    await seedTurn(env.db, s, { status: 'failed' });

    const row = await tenants.overview(s.tenantId);
    expect(row).toMatchObject({
      id: s.tenantId,
      name: 'spender',
      paused: false,
      pausedAt: null,
      pauseReason: null,
      spentTodayUsd: '1.85',
      running: 1,
      queued: 2,
      waiting: 2,
    });
    expect(row!.createdAt).toBeInstanceOf(Date);
    expect(await tenants.overview(newId())).toBeUndefined();
  });

  it('shows a tenant without spend or turns as zero', async () => {
    const s = await seedTenantSession(env.db, 'idle');
    expect(await tenants.overview(s.tenantId)).toMatchObject({
      spentTodayUsd: '0',
      running: 0,
      queued: 0,
      waiting: 0,
    });
  });

  it('pages tenants by id, limit + 1 rows', async () => {
    const all = await tenants.overviewPage(undefined, 1000);
    expect(all.map((t) => t.id)).toEqual([...all.map((t) => t.id)].sort());
    const first = await tenants.overviewPage(undefined, 1);
    expect(first).toHaveLength(2);
    const second = await tenants.overviewPage(first[0].id, 1);
    expect(second[0].id).toBe(all[1].id);
    expect(await tenants.overviewPage(all[all.length - 1].id, 10)).toEqual([]);
  });

  it('merges the operator’s settings under the row lock, keeps other keys, and audits the change', async () => {
    const s = await seedTenantSession(env.db, 'limited');
    await tenants.updateSettings(s.tenantId, { blockedTools: ['word_count'] }, 'api_key:k1');
    await tenants.updateOperatorSettings(s.tenantId, { maxConcurrentTurns: 4, share: 2.5 }, 'operator');
    const merged = await tenants.updateOperatorSettings(
      s.tenantId,
      { share: null, dailySpendLimitUsd: 0 },
      'operator',
    );
    expect(merged?.settings).toMatchObject({
      blockedTools: ['word_count'],
      maxConcurrentTurns: 4,
      operatorDailySpendLimitUsd: 0,
    });
    expect(merged?.settings).not.toHaveProperty('share');
    // Concurrent updates of different keys apply one after the other.
    await Promise.all([
      tenants.updateOperatorSettings(s.tenantId, { maxConcurrentTurns: 9 }, 'operator'),
      tenants.updateRateLimits(s.tenantId, { admission: 100 }, 'operator'),
      tenants.updateOperatorSettings(s.tenantId, { share: 3 }, 'operator'),
    ]);
    const { settings } = (await tenants.settings(s.tenantId))!;
    expect(settings).toMatchObject({ maxConcurrentTurns: 9, share: 3, rateLimits: { admission: 100 } });
    const log = await entries(s.tenantId);
    expect(log.map((e) => e.action).sort()).toEqual([
      'tenant.limits_changed',
      'tenant.limits_changed',
      'tenant.limits_changed',
      'tenant.limits_changed',
      'tenant.limits_changed',
      'tenant.settings_changed',
    ]);
    expect(log.find((e) => e.action === 'tenant.settings_changed')).toMatchObject({
      actor: 'api_key:k1',
      targetType: 'tenant',
      targetId: s.tenantId,
      details: { fields: ['blockedTools'] },
    });
    expect(log.map((e) => e.details)).toContainEqual({ changes: { share: null, dailySpendLimitUsd: 0 } });
    expect(log.map((e) => e.details)).toContainEqual({ rateLimits: { admission: 100 } });
  });

  it('writes nothing, audit included, for a tenant that does not exist', async () => {
    const id = newId();
    const before = await env.db.auditEvent.count();
    expect(await tenants.updateOperatorSettings(id, { share: 2 }, 'operator')).toBeUndefined();
    expect(await tenants.updateRateLimits(id, { reads: 1 }, 'operator')).toBeUndefined();
    expect(await tenants.pause(id, null, 'operator')).toEqual({ found: false });
    expect(await tenants.resume(id, 'operator')).toEqual({ found: false });
    expect(await env.db.auditEvent.count()).toBe(before);
  });

  it('pauses and resumes once each, with when and why, and one entry per change', async () => {
    const s = await seedTenantSession(env.db, 'pausable');
    expect(await tenants.pause(s.tenantId, 'runaway loop', 'operator')).toEqual({
      found: true,
      changed: true,
    });
    expect(await tenants.pause(s.tenantId, 'again', 'operator')).toEqual({ found: true, changed: false });
    const paused = await tenants.overview(s.tenantId);
    expect(paused).toMatchObject({ paused: true, pauseReason: 'runaway loop' });
    expect(paused!.pausedAt).toBeInstanceOf(Date);
    expect(await tenants.resume(s.tenantId, 'operator')).toEqual({ found: true, changed: true });
    expect(await tenants.resume(s.tenantId, 'operator')).toEqual({ found: true, changed: false });
    expect(await tenants.overview(s.tenantId)).toMatchObject({
      paused: false,
      pausedAt: null,
      pauseReason: null,
    });
    const log = await entries(s.tenantId);
    expect(log.map((e) => [e.action, e.actor])).toEqual([
      ['tenant.resumed', 'operator'],
      ['tenant.paused', 'operator'],
    ]);
    expect(log[1].details).toEqual({ reason: 'runaway loop' });
    expect(log[0].details).toEqual({ pausedAt: paused!.pausedAt!.toISOString() });
  });

  it('audits a new tenant and its keys without their hashes', async () => {
    const hash = `h-${newId()}`;
    const { tenant, apiKey } = await tenants.createWithKey('audited', { prefix: 'sb_first', hash });
    const second = await keys.create(
      tenant.id,
      { name: 'ci', prefix: 'sb_ci', hash: `h-${newId()}` },
      'api_key:x',
    );
    await keys.revoke(second, 'operator');
    // A key revoked already: no second entry.
    await keys.revoke((await keys.byId(second.id))!, 'operator');
    const log = await entries(tenant.id);
    expect(log.map((e) => [e.action, e.actor, e.targetId])).toEqual([
      ['api_key.revoked', 'operator', second.id],
      ['api_key.created', 'api_key:x', second.id],
      ['tenant.created', 'operator', tenant.id],
    ]);
    expect(log[2].details).toEqual({ name: 'audited', firstKey: { id: apiKey.id, prefix: 'sb_first' } });
    expect(log[1].details).toEqual({ name: 'ci', prefix: 'sb_ci', role: 'admin' });
    const text = JSON.stringify(log);
    expect(text).not.toContain(hash);
    expect(text).not.toContain(second.hash);
  });

  it('audits a person’s approval decision in the decision’s transaction, and no expiry', async () => {
    const s = await seedTenantSession(env.db, 'approver');
    const approvals = new ApprovalStore(new SqlDb(poolOf(env.db)));
    const approval = async () => {
      const turn = await seedTurn(env.db, s, { status: 'awaiting_approval' });
      const row = await env.db.approval.create({
        data: {
          id: newId(),
          tenantId: s.tenantId,
          sessionId: s.sessionId,
          turnId: turn.id,
          callId: 'c1',
          toolName: 'word_count',
          arguments: {},
          sideEffect: 'read_only',
          policy: 'tenant',
          expiresAt: new Date(Date.now() + 3_600_000),
        },
      });
      return { turnId: turn.id, id: row.id };
    };
    const decided = await approval();
    const outcome = await approvals.decide({
      approvalId: decided.id,
      tenantId: s.tenantId,
      verdict: 'approved',
      reason: 'looks right',
      decidedBy: 'k1',
      actor: 'api_key:k1',
      eventId: newId(),
    });
    expect(outcome.kind).toBe('decided');
    // The same decision again is a replay: no second entry.
    await approvals.decide({
      approvalId: decided.id,
      tenantId: s.tenantId,
      verdict: 'approved',
      reason: null,
      decidedBy: 'k1',
      actor: 'api_key:k1',
      eventId: newId(),
    });
    // The reconciler's expiry decides with no actor: not a person's decision, no entry.
    const expired = await approval();
    await approvals.decide({
      approvalId: expired.id,
      tenantId: null,
      verdict: 'expired',
      reason: null,
      decidedBy: 'system',
      eventId: newId(),
    });
    const log = await entries(s.tenantId);
    expect(log).toHaveLength(1);
    expect(log[0]).toMatchObject({
      actor: 'api_key:k1',
      action: 'approval.decided',
      targetType: 'approval',
      targetId: decided.id,
      details: {
        decision: 'approved',
        turnId: decided.turnId,
        toolName: 'word_count',
        callId: 'c1',
        reason: 'looks right',
      },
    });
  });

  it('pages the log newest first by tenant and action; a cursor of another tenant gives nothing', async () => {
    const mine = await seedTenantSession(env.db, 'log-mine');
    const theirs = await seedTenantSession(env.db, 'log-theirs');
    for (let i = 0; i < 5; i++) {
      await tenants.updateOperatorSettings(mine.tenantId, { maxConcurrentTurns: i + 1 }, 'operator');
    }
    await tenants.pause(mine.tenantId, null, 'operator');
    await tenants.updateOperatorSettings(theirs.tenantId, { share: 2 }, 'operator');

    const seen: AuditRow[] = [];
    let before: string | undefined;
    for (;;) {
      const rows = await audit.page({ tenantId: mine.tenantId, beforeId: before, limit: 2 });
      seen.push(...rows.slice(0, 2));
      if (rows.length <= 2) break;
      before = rows[1].id;
    }
    expect(seen.map((e) => e.action)).toEqual([
      'tenant.paused',
      ...Array.from({ length: 5 }, () => 'tenant.limits_changed'),
    ]);
    expect(
      seen.map((e) => (e.details.changes as { maxConcurrentTurns?: number })?.maxConcurrentTurns),
    ).toEqual([undefined, 5, 4, 3, 2, 1]);
    // Newest first by (created_at, id), whatever the ids' order within one millisecond.
    const keys = seen.map((e) => [e.createdAt.getTime(), e.id] as const);
    expect(keys).toEqual([...keys].sort((a, b) => b[0] - a[0] || (a[1] < b[1] ? 1 : -1)));

    const paused = await audit.page({ tenantId: mine.tenantId, action: 'tenant.paused', limit: 10 });
    expect(paused.map((e) => e.action)).toEqual(['tenant.paused']);
    const theirCursor = (await entries(theirs.tenantId))[0].id;
    expect(await audit.page({ tenantId: mine.tenantId, beforeId: theirCursor, limit: 10 })).toEqual([]);
    // The operator's view: every tenant, the other tenant's entry included.
    const all = await audit.page({ limit: 1000 });
    expect(all.map((e) => e.tenantId)).toEqual(expect.arrayContaining([mine.tenantId, theirs.tenantId]));
    expect(await audit.page({ beforeId: theirCursor, limit: 1000 })).not.toContainEqual(
      expect.objectContaining({ id: theirCursor }),
    );
  });
});
