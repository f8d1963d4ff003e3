import { DEFAULT_BUDGET, type TurnCheckpoints, type TurnInput } from './types';

/** Test helpers for the engine's specs: a turn input and checkpoints that record nothing unless told. */
export function turnInput(overrides: Partial<TurnInput> = {}): TurnInput {
  return {
    turnId: 't',
    tenantId: 'x',
    sessionId: 's',
    systemPrompt: 'p',
    history: [],
    turnMessages: [{ role: 'user', content: 'go' }],
    model: 'fake/m',
    fallbackModels: [],
    tools: [],
    budget: DEFAULT_BUDGET,
    ...overrides,
  };
}

export function checkpoints(overrides: Partial<TurnCheckpoints> = {}): TurnCheckpoints {
  return {
    recordRound: async () => undefined,
    toolStarted: async () => undefined,
    recordToolResult: async () => undefined,
    recordFailedAttempts: async () => undefined,
    recordReflection: async () => undefined,
    recordCompaction: async () => undefined,
    emit: async () => undefined,
    textDelta: () => undefined,
    ...overrides,
  };
}
