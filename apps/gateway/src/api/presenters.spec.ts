import { Prisma } from '@prisma/client';
import { AuditEventResponse, OperatorTenantResponse, TurnResponse } from '@switchboard/contracts';
import { presentAuditEvent, presentOperatorTenant, presentTurn, type PresentedTurn } from './presenters';

const turn = (costUsd: string): PresentedTurn => ({
  id: '00000000-0000-4000-8000-000000000001',
  sessionId: '00000000-0000-4000-8000-000000000002',
  agentId: '00000000-0000-4000-8000-000000000003',
  inputMessageId: '00000000-0000-4000-8000-000000000004',
  seq: 1,
  status: 'completed',
  priority: 'normal',
  model: 'scripted/default',
  stopReason: 'final_answer',
  finalText: 'ok',
  iterations: 1,
  inputTokens: 1,
  outputTokens: 1,
  cachedTokens: 0,
  cacheWriteTokens: 0,
  costUsd: new Prisma.Decimal(costUsd),
  cacheSavedUsd: new Prisma.Decimal('-0.000125'),
  costStatus: 'priced',
  attempts: [],
  failure: null,
  decision: null,
  finalisationErrors: [],
  createdAt: new Date(0),
  startedAt: null,
  completedAt: null,
  cancelRequestedAt: null,
  cancelReason: null,
  cancelNote: null,
  workItemId: null,
  closure: null,
  continuation: null,
  rewoundAt: null,
  copiedFromTurnId: null,
  replayOfTurnId: null,
  agentVersion: null,
});

describe('presentTurn', () => {
  // decimal.js writes values under 1e-7 in exponent notation: the API's Usd strings never are.
  it.each([
    ['0.00000001', '0.00000001'],
    ['0', '0'],
    ['12.5', '12.5'],
  ])('presents a cost of %s as plain decimal %s', (stored, shown) => {
    const body = presentTurn(turn(stored));
    expect(body.costUsd).toBe(shown);
    expect(TurnResponse.shape.costUsd.safeParse(body.costUsd).success).toBe(true);
  });

  it('shows the cache-write tokens and what caching saved, a negative saving as a plain decimal', () => {
    const body = presentTurn(turn('1'));
    expect(body.usage).toEqual({ inputTokens: 1, outputTokens: 1, cachedTokens: 0, cacheWriteTokens: 0 });
    expect(body.cacheSavedUsd).toBe('-0.000125');
    expect(TurnResponse.safeParse({ ...body, attempts: [], toolCalls: [] }).success).toBe(true);
  });
});

describe('presentOperatorTenant', () => {
  const row = (settings: unknown) => ({
    id: '00000000-0000-4000-8000-000000000001',
    name: 'acme',
    createdAt: new Date(0),
    paused: true,
    pausedAt: new Date(1000),
    pauseReason: 'abuse',
    settings,
    spentTodayUsd: '1.25',
    running: 1,
    queued: 2,
    waiting: 3,
  });

  it('shows the operator’s settings with their defaults, and the live figures', () => {
    const body = presentOperatorTenant(row({ modelRoutes: {}, rateLimits: { admission: 5, bogus: 1 } }));
    expect(OperatorTenantResponse.parse(body)).toEqual({
      id: '00000000-0000-4000-8000-000000000001',
      name: 'acme',
      createdAt: '1970-01-01T00:00:00.000Z',
      paused: true,
      pausedAt: '1970-01-01T00:00:01.000Z',
      pauseReason: 'abuse',
      maxConcurrentTurns: null,
      share: 1,
      dailySpendLimitUsd: null,
      maxActionsPerHour: null,
      transcriptRetentionDays: null,
      rateLimits: { admission: 5 },
      spentTodayUsd: '1.25',
      turns: { running: 1, queued: 2, waiting: 3 },
    });
    expect(
      presentOperatorTenant(row({ maxConcurrentTurns: 4, share: 0.5, operatorDailySpendLimitUsd: 0 })),
    ).toMatchObject({ maxConcurrentTurns: 4, share: 0.5, dailySpendLimitUsd: 0 });
  });

  it('presents an audit entry in its schema', () => {
    const body = presentAuditEvent({
      id: '00000000-0000-4000-8000-000000000002',
      tenantId: null,
      actor: 'operator',
      action: 'tenant.created',
      targetType: 'tenant',
      targetId: 'x',
      details: {},
      createdAt: new Date(0),
    });
    expect(AuditEventResponse.parse(body)).toEqual(body);
  });
});
