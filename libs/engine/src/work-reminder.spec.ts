import { z } from 'zod';
import {
  ProviderRegistry,
  type ChatMessage,
  type ModelProvider,
  type ModelRequest,
  type ModelResponse,
} from '@switchboard/providers';
import { defineTool, ToolRegistry, type ToolDefinition } from '@switchboard/tools';
import type { WorkReminderQuery } from './context';
import { TurnEngine } from './engine';
import { roundsSinceWorkUpdate } from './run/work-reminder';
import { checkpoints, turnInput } from './test-support';

const call = (id: string, name: string) => ({ id, name, arguments: '{}' });
const assistant = (...calls: { id: string; name: string; arguments: string }[]): ChatMessage => ({
  role: 'assistant',
  content: '',
  toolCalls: calls,
});
const tool = (id: string, name: string, ok: boolean): ChatMessage => ({
  role: 'tool',
  toolCallId: id,
  name,
  content: JSON.stringify(ok ? { ok: true, result: null } : { ok: false, error: 'no' }),
});

describe('roundsSinceWorkUpdate', () => {
  it('counts rounds back to the last one with a successful work-item call', () => {
    expect(roundsSinceWorkUpdate([{ role: 'user', content: 'go' }])).toBe(0);
    const history: ChatMessage[] = [
      { role: 'user', content: 'go' },
      assistant(call('a', 'update_work_item')),
      tool('a', 'update_work_item', true),
      assistant(call('b', 'search')),
      tool('b', 'search', true),
      assistant(call('c', 'update_work_item')),
      // A failed update is no update.
      tool('c', 'update_work_item', false),
    ];
    expect(roundsSinceWorkUpdate(history)).toBe(2);
    expect(roundsSinceWorkUpdate(history.slice(0, 3))).toBe(0);
    // None at all: every round counts.
    expect(roundsSinceWorkUpdate([history[0], history[3], history[4]])).toBe(1);
  });
});

describe('the work-item progress reminder in a turn', () => {
  const noop = defineTool({
    name: 'noop',
    description: 'does nothing',
    schema: z.strictObject({}),
    sideEffect: 'read_only',
    timeoutMs: 1_000,
    needsApproval: false,
    execute: async () => 'done',
  }) as ToolDefinition;

  /** A model that calls `noop` for `rounds` rounds, then answers; it records what each round was sent. */
  function model(rounds: number) {
    const sent: ChatMessage[][] = [];
    const provider: ModelProvider = {
      name: 'fake',
      complete: async (req: ModelRequest): Promise<ModelResponse> => {
        sent.push(req.messages);
        const n = sent.length;
        return {
          text: n > rounds ? 'finished' : '',
          toolCalls: n > rounds ? [] : [call(`c${n}`, 'noop')],
          usage: { inputTokens: 1, outputTokens: 1, cachedTokens: 0 },
          finishReason: n > rounds ? 'stop' : 'tool_calls',
        };
      },
    };
    return { sent, provider };
  }

  async function run(o: {
    rounds: number;
    hasWorkItems?: boolean;
    reminder: (q: WorkReminderQuery) => Promise<string | null>;
  }) {
    const { sent, provider } = model(o.rounds);
    const asked: WorkReminderQuery[] = [];
    const engine = new TurnEngine({
      providers: new ProviderRegistry({}, [provider]),
      tools: new ToolRegistry([noop]),
      context: {
        memory: async () => null,
        contextPack: async () => null,
        workReminder: async (q) => (asked.push(q), o.reminder(q)),
      },
    });
    const recorded: string[] = [];
    const cp = checkpoints({
      emit: async (_type, data) => void recorded.push(JSON.stringify(data ?? null)),
    });
    const outcome = await engine.run(
      turnInput({
        agentId: 'agent-1',
        tools: ['noop'],
        ...(o.hasWorkItems === undefined ? {} : { agentHasWorkItems: o.hasWorkItems }),
        turnMessages: [{ role: 'user', content: 'work on it' }],
      }),
      cp,
      new AbortController().signal,
    );
    return { sent, asked, outcome, recorded };
  }

  it('is sent to the provider as the last message when the source says it is due, and nowhere else', async () => {
    // Due after 2 stale rounds, then every 2 rounds (the source owns the thresholds).
    const r = await run({
      rounds: 5,
      hasWorkItems: true,
      reminder: async (q) =>
        q.staleRounds >= 2 && q.roundsSinceReminder >= 2 ? `REMIND after ${q.staleRounds}` : null,
    });
    expect(r.outcome).toMatchObject({ status: 'completed', finalText: 'finished' });
    const reminders = r.sent.map((messages) => {
      const last = messages[messages.length - 1];
      return last.role === 'user' && last.content.startsWith('REMIND') ? last.content : null;
    });
    // Rounds 1 and 2 have no stale rounds to speak of; round 3 (2 stale), then not at 4, again at 5.
    expect(reminders).toEqual([null, null, 'REMIND after 2', null, 'REMIND after 4', null]);
    expect(r.asked.map((q) => q.staleRounds)).toEqual([1, 2, 3, 4, 5]);
    expect(r.asked[0]).toMatchObject({
      tenantId: 'x',
      agentId: 'agent-1',
      turnId: 't',
      roundsSinceReminder: Infinity,
    });
    // Provider-only: the next round's request no longer carries it, and no event mentions it.
    expect(r.sent[3].some((m) => m.role === 'user' && m.content.startsWith('REMIND'))).toBe(false);
    expect(r.recorded.some((d) => d.includes('REMIND'))).toBe(false);
  });

  it('is not asked for an agent without work items, and a failing source costs the round nothing', async () => {
    const none = await run({ rounds: 3, hasWorkItems: false, reminder: async () => 'REMIND' });
    expect(none.asked).toEqual([]);
    const failing = await run({
      rounds: 3,
      reminder: async () => {
        throw new Error('database away');
      },
    });
    expect(failing.outcome).toMatchObject({ status: 'completed' });
    expect(failing.sent.flat().some((m) => m.role === 'user' && m.content.startsWith('REMIND'))).toBe(false);
  });
});
