import {
  ActiveTurnsQuery,
  Budgets,
  UpdateAgentRequest,
  AdminAuditEventsQuery,
  applyTenantUpdate,
  AuditEventsQuery,
  parseOperatorTenantSettings,
  parseTenantSettings,
  PauseTenantRequest,
  ResumeTenantRequest,
  UpdateSettingsRequest,
  UpdateTenantRequest,
} from './api';
import { AppError, TenantPausedError } from './errors';

/** The operator's tenant settings, pause and audit queries (docs/adr/0030). */
describe('UpdateTenantRequest', () => {
  it.each([
    [{ maxConcurrentTurns: 1 }],
    [{ maxConcurrentTurns: 100_000 }],
    [{ share: 0.1 }],
    [{ share: 100 }],
    [{ share: 2.5 }],
    [{ dailySpendLimitUsd: 0 }],
    [{ dailySpendLimitUsd: 12.5 }],
    [{ maxConcurrentTurns: null, share: null, dailySpendLimitUsd: null }],
  ])('accepts %j', (body) => {
    expect(UpdateTenantRequest.parse(body)).toEqual(body);
  });

  it.each([
    ['no field', {}],
    ['an unknown field', { maxTurns: 3 }],
    ['rate limits (their own route)', { rateLimits: { admission: 1 } }],
    ['maxConcurrentTurns 0', { maxConcurrentTurns: 0 }],
    ['maxConcurrentTurns 1.5', { maxConcurrentTurns: 1.5 }],
    ['maxConcurrentTurns as a string', { maxConcurrentTurns: '4' }],
    ['maxConcurrentTurns over 100,000', { maxConcurrentTurns: 100_001 }],
    ['share 0', { share: 0 }],
    ['share 0.09', { share: 0.09 }],
    ['share 100.5', { share: 100.5 }],
    ['share as a string', { share: '1' }],
    ['a negative spend cap', { dailySpendLimitUsd: -1 }],
    ['a spend cap over a million', { dailySpendLimitUsd: 1_000_001 }],
    ['a spend cap as a string', { dailySpendLimitUsd: '5' }],
    ['a spend cap as true', { dailySpendLimitUsd: true }],
  ])('rejects %s', (_name, body) => {
    expect(UpdateTenantRequest.safeParse(body).success).toBe(false);
  });
});

describe('applyTenantUpdate', () => {
  it('replaces what is given, removes what is null, and keeps every other key', () => {
    const stored = {
      modelRoutes: { chat: 'openai/gpt-4o' },
      rateLimits: { admission: 5 },
      maxConcurrentTurns: 3,
      share: 2,
    };
    expect(applyTenantUpdate(stored, { share: null, dailySpendLimitUsd: 0 })).toEqual({
      modelRoutes: { chat: 'openai/gpt-4o' },
      rateLimits: { admission: 5 },
      maxConcurrentTurns: 3,
      // Apart from the tenant's own budget (PATCH /v1/settings), which cannot raise it.
      operatorDailySpendLimitUsd: 0,
    });
    expect(applyTenantUpdate(null, { maxConcurrentTurns: 8 })).toEqual({ maxConcurrentTurns: 8 });
    expect(stored.share).toBe(2);
  });
});

describe('parseOperatorTenantSettings', () => {
  it('gives the defaults for settings without them, or with values out of range', () => {
    const defaults = {
      maxConcurrentTurns: null,
      share: 1,
      dailySpendLimitUsd: null,
      maxActionsPerHour: null,
      transcriptRetentionDays: null,
    };
    expect(parseOperatorTenantSettings({})).toEqual(defaults);
    expect(parseOperatorTenantSettings('nonsense')).toEqual(defaults);
    expect(
      parseOperatorTenantSettings({
        maxConcurrentTurns: 0,
        share: 1000,
        dailySpendLimitUsd: -1,
        maxActionsPerHour: 0,
        transcriptRetentionDays: 0,
      }),
    ).toEqual(defaults);
    expect(
      parseOperatorTenantSettings({
        maxConcurrentTurns: 7,
        share: 0.5,
        operatorDailySpendLimitUsd: 0,
        maxActionsPerHour: 30,
        transcriptRetentionDays: 90,
      }),
    ).toEqual({
      maxConcurrentTurns: 7,
      share: 0.5,
      dailySpendLimitUsd: 0,
      maxActionsPerHour: 30,
      transcriptRetentionDays: 90,
    });
    // The tenant's own budget is not the operator's cap.
    expect(parseOperatorTenantSettings({ dailySpendLimitUsd: 5 }).dailySpendLimitUsd).toBeNull();
  });

  it('keeps an operator’s zero spend cap in the tenant’s own settings view, which cannot set one', () => {
    expect(parseTenantSettings({ dailySpendLimitUsd: 0 }).dailySpendLimitUsd).toBe(0);
    expect(UpdateSettingsRequest.safeParse({ dailySpendLimitUsd: 0 }).success).toBe(false);
  });
});

describe('pause, resume and audit queries', () => {
  it('takes an optional reason of at most 500 characters, nothing else', () => {
    expect(PauseTenantRequest.parse({})).toEqual({});
    expect(PauseTenantRequest.parse({ reason: ' abuse ' })).toEqual({ reason: 'abuse' });
    for (const body of [{ reason: '' }, { reason: 'x'.repeat(501) }, { reason: 5 }, { why: 'x' }]) {
      expect(PauseTenantRequest.safeParse(body).success).toBe(false);
    }
    expect(ResumeTenantRequest.safeParse({ force: true }).success).toBe(false);
  });

  it('filters by a known action, and the operator by a tenant id', () => {
    expect(AuditEventsQuery.parse({ action: 'tenant.paused', limit: '5' })).toEqual({
      action: 'tenant.paused',
      limit: 5,
    });
    expect(AuditEventsQuery.safeParse({ action: 'tenant.gone' }).success).toBe(false);
    expect(AuditEventsQuery.safeParse({ tenantId: '01a20360-0000-7000-8000-000000000000' }).success).toBe(
      false,
    );
    expect(AdminAuditEventsQuery.safeParse({ tenantId: 'not-a-uuid' }).success).toBe(false);
    expect(AdminAuditEventsQuery.parse({ tenantId: '01a20360-0000-7000-8000-000000000000' })).toEqual({
      tenantId: '01a20360-0000-7000-8000-000000000000',
    });
  });

  it('a paused tenant is a 403 tenant_paused in the one error shape', () => {
    const err = new TenantPausedError();
    expect(err).toBeInstanceOf(AppError);
    expect(err.status).toBe(403);
    expect(err.toBody().error.code).toBe('tenant_paused');
  });
});

describe('the hourly side-effect budget settings (docs/adr/0058)', () => {
  it('takes a whole number of 1 to 1,000,000 or null, for an agent and for a tenant', () => {
    for (const ok of [1, 500, 1_000_000, null]) {
      expect(UpdateTenantRequest.safeParse({ maxActionsPerHour: ok }).success).toBe(true);
      expect(UpdateAgentRequest.safeParse({ maxActionsPerHour: ok }).success).toBe(true);
    }
    for (const bad of [0, -1, 1.5, '5', 1_000_001, true]) {
      expect(UpdateTenantRequest.safeParse({ maxActionsPerHour: bad }).success).toBe(false);
      expect(UpdateAgentRequest.safeParse({ maxActionsPerHour: bad }).success).toBe(false);
    }
    expect(applyTenantUpdate({ maxActionsPerHour: 5, share: 2 }, { maxActionsPerHour: null })).toEqual({
      share: 2,
    });
  });

  it('lists only turns that have not ended, by comma-separated statuses', () => {
    expect(ActiveTurnsQuery.parse({ status: 'queued, running' }).status).toEqual(['queued', 'running']);
    expect(ActiveTurnsQuery.parse({}).status).toBeUndefined();
    for (const bad of ['completed', 'running,', 'nope', '']) {
      expect(ActiveTurnsQuery.safeParse({ status: bad }).success).toBe(false);
    }
    expect(ActiveTurnsQuery.safeParse({ agentId: 'x' }).success).toBe(false);
  });

  it('takes stop or summarize at the model-call cap', () => {
    expect(Budgets.safeParse({ onMaxIterations: 'summarize' }).success).toBe(true);
    expect(Budgets.safeParse({ onMaxIterations: 'stop' }).success).toBe(true);
    expect(Budgets.safeParse({ onMaxIterations: 'later' }).success).toBe(false);
  });
});
