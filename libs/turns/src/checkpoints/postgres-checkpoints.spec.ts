import type { RoundContext } from '@switchboard/engine';
import { createLogger, Metrics } from '@switchboard/observability';
import type { CheckpointWrites, TurnRow, TurnStore } from '@switchboard/store';
import type { SessionLease } from '../lease';
import { PostgresCheckpoints } from './postgres-checkpoints';
import { StoredParts } from './round-context';

const turn = {
  id: '00000000-0000-4000-8000-000000000001',
  tenantId: '00000000-0000-4000-8000-000000000002',
  sessionId: '00000000-0000-4000-8000-000000000003',
} as TurnRow;

const context: RoundContext = {
  round: 0,
  messages: [
    { role: 'system', content: 'You are the agent.' },
    { role: 'user', content: 'hello' },
  ],
  sources: ['system', 'transcript'],
  tools: [],
};

/** The checkpoints on a store that only keeps the statements it is given. */
function checkpoints(roundContexts: boolean | undefined, storedParts?: StoredParts, applied = true) {
  const statements: CheckpointWrites[] = [];
  const store = {
    commitCheckpoint: async (s: CheckpointWrites) => {
      statements.push(s);
      return { applied, released: false, killSwitch: false, cancelRequested: false };
    },
  } as unknown as TurnStore;
  const cp = new PostgresCheckpoints({
    store,
    turn,
    lease: { token: 't', ms: 60_000 } as SessionLease,
    nextPosition: 1,
    historySeqs: [],
    metrics: new Metrics('test'),
    logger: createLogger({ service: 'test', level: 'silent' }),
    retryMs: 0,
    killSwitch: false,
    onCancelRequested: () => undefined,
    ...(roundContexts === undefined ? {} : { roundContexts }),
    ...(storedParts ? { storedParts } : {}),
  });
  return { cp, statements };
}

describe('PostgresCheckpoints: ROUND_CONTEXTS (docs/adr/0045)', () => {
  it('records a round context by default', async () => {
    const { cp, statements } = checkpoints(undefined);
    await cp.recordFailedAttempts([], context);
    expect(statements[0].roundContexts).toHaveLength(1);
    // The system prompt, the (empty) tool list, the user message.
    expect(statements[0].contextParts).toHaveLength(3);
  });

  it('off: neither parts nor rounds are written, and nothing is hashed', async () => {
    const { cp, statements } = checkpoints(false);
    // A context nobody may read: nothing is hashed (or even looked at) when recording is off.
    const untouched = Object.defineProperty({ ...context }, 'messages', {
      get: () => {
        throw new Error('read');
      },
    });
    await cp.recordFailedAttempts([], untouched);
    await cp.recordFailedAttempts([], undefined);
    for (const s of statements) {
      expect(s.roundContexts ?? []).toEqual([]);
      expect(s.contextParts ?? []).toEqual([]);
    }
  });

  it('a checkpoint whose fence failed wrote no parts: they are sent again', async () => {
    const stored = new StoredParts();
    const fenced = checkpoints(true, stored, false);
    await expect(fenced.cp.recordFailedAttempts([], context)).rejects.toThrow('lease lost');
    const later = checkpoints(true, stored);
    await later.cp.recordFailedAttempts([], context);
    expect(later.statements[0].contextParts).toHaveLength(3);
  });

  it("a later turn's run does not send again the parts an earlier run of the process committed", async () => {
    const stored = new StoredParts();
    const first = checkpoints(true, stored);
    await first.cp.recordFailedAttempts([], context);
    expect(first.statements[0].contextParts).toHaveLength(3);
    const later = checkpoints(true, stored);
    const next = {
      ...context,
      round: 0,
      messages: [...context.messages, { role: 'user' as const, content: 'again' }],
    };
    await later.cp.recordFailedAttempts([], next);
    expect(later.statements[0].contextParts?.map((p) => p.content)).toEqual([
      { kind: 'message', message: { role: 'user', content: 'again' } },
    ]);
    expect(later.statements[0].roundContexts?.[0].parts).toHaveLength(4);
    // Another tenant's run sends them all.
    expect(stored.has('another', first.statements[0].contextParts![0].hash)).toBe(false);
  });

  it('StoredParts forgets the oldest past its bound', () => {
    const stored = new StoredParts(2);
    stored.add('t', 'a');
    stored.add('t', 'b');
    stored.add('t', 'c');
    expect([stored.has('t', 'a'), stored.has('t', 'b'), stored.has('t', 'c')]).toEqual([false, true, true]);
  });
});
