import { Prisma } from '@prisma/client';
import { TurnResponse } from '@switchboard/contracts';
import { presentTurn, type PresentedTurn } from './presenters';

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
  costUsd: new Prisma.Decimal(costUsd),
  costStatus: 'priced',
  attempts: [],
  failure: null,
  decision: null,
  finalisationErrors: [],
  createdAt: new Date(0),
  startedAt: null,
  completedAt: null,
  cancelRequestedAt: null,
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
});
