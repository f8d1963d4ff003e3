/**
 * `maxUsd` budgets on models without a price (ADR 0007): the turn is refused before any model call,
 * fallbacks included, and optional side calls on an unpriced model are skipped instead of run.
 */
import {
  ProviderRegistry,
  type ModelProvider,
  type ModelRequest,
  type ModelResponse,
} from '@switchboard/providers';
import { ToolRegistry } from '@switchboard/tools';
import { canBudget, unpricedModels } from './budget';
import { TurnEngine } from './engine';
import { checkpoints, turnInput } from './test-support';
import { DEFAULT_BUDGET, type RoundRecord, type SideCallRecord, type TurnInput } from './types';

const USAGE = { inputTokens: 1000, outputTokens: 100, cachedTokens: 0 };

/** Answers every call with the same text, under whatever provider name it is registered as. */
class EchoProvider implements ModelProvider {
  readonly requests: ModelRequest[] = [];
  constructor(readonly name: string) {}
  async complete(request: ModelRequest): Promise<ModelResponse> {
    this.requests.push(request);
    return { text: `answer from ${request.model}`, toolCalls: [], usage: USAGE, finishReason: 'stop' };
  }
}

function setup() {
  const openai = new EchoProvider('openai-chat');
  const anthropic = new EchoProvider('anthropic');
  const engine = new TurnEngine({
    providers: new ProviderRegistry({}, [openai, anthropic]),
    tools: new ToolRegistry([]),
  });
  const events: { type: string; data: Record<string, unknown> }[] = [];
  const rounds: RoundRecord[] = [];
  const reflections: SideCallRecord[] = [];
  const cp = checkpoints({
    emit: async (type, data) => void events.push({ type, data }),
    recordRound: async (r) => void rounds.push(r),
    recordReflection: async (_i, _note, call) => void reflections.push(call),
  });
  const run = (input: Partial<TurnInput>) => engine.run(turnInput(input), cp, new AbortController().signal);
  return { openai, anthropic, events, rounds, reflections, run };
}

const budget = { ...DEFAULT_BUDGET, maxUsd: 1 };

describe('unpricedModels', () => {
  it('lists the models of the turn without a price, only under a maxUsd budget', () => {
    const input = turnInput({
      model: 'anthropic/claude-sonnet-4-6',
      fallbackModels: ['openai-chat/llama3.1:8b', 'openai/gpt-5', 'openai-chat/llama3.1:8b'],
      budget,
    });
    expect(unpricedModels(input)).toEqual(['openai-chat/llama3.1:8b']);
    expect(unpricedModels({ ...input, budget: DEFAULT_BUDGET })).toEqual([]);
    expect(unpricedModels({ ...input, prices: { 'openai-chat/*': { input: 0, output: 0 } } })).toEqual([]);
  });

  it('lets a side call run when there is no budget or its model has a price', () => {
    expect(canBudget(turnInput({ budget }), 'openai-chat/llama3.1:8b')).toBe(false);
    expect(canBudget(turnInput({ budget }), 'scripted/demo')).toBe(true);
    expect(canBudget(turnInput(), 'openai-chat/llama3.1:8b')).toBe(true);
  });
});

describe('TurnEngine with a maxUsd budget', () => {
  it('fails fast, before any model call, when the primary model has no price', async () => {
    const h = setup();
    const outcome = await h.run({ model: 'openai-chat/llama3.1:8b', budget });

    expect(outcome).toMatchObject({
      status: 'failed',
      stopReason: 'budget_unenforceable',
      costStatus: 'unpriced',
      iterations: 0,
      failure: {
        kind: 'budget_unenforceable',
        category: 'runtime',
        model: 'openai-chat/llama3.1:8b',
        brief: expect.stringContaining('openai-chat/llama3.1:8b has no known price'),
      },
    });
    expect(h.openai.requests).toHaveLength(0);
    expect(h.events).toEqual([
      {
        type: 'stop_hook_fired',
        data: {
          hook: 'budget',
          reason: 'budget_unenforceable',
          iteration: 0,
          unpricedModels: ['openai-chat/llama3.1:8b'],
        },
      },
    ]);
  });

  it('fails fast when only a fallback model has no price', async () => {
    const h = setup();
    const outcome = await h.run({
      model: 'anthropic/claude-sonnet-4-6',
      fallbackModels: ['openai-chat/llama3.1:8b'],
      budget,
    });

    expect(outcome).toMatchObject({ status: 'failed', stopReason: 'budget_unenforceable' });
    expect(outcome.failure?.message).toBe('no price for openai-chat/llama3.1:8b');
    expect(h.anthropic.requests).toHaveLength(0);
  });

  it('runs an unpriced model when a price override covers it, booking the override', async () => {
    const h = setup();
    const outcome = await h.run({
      model: 'openai-chat/llama3.1:8b',
      budget,
      prices: { 'openai-chat/llama3.1:8b': { input: 2, output: 10 } },
    });

    expect(outcome).toMatchObject({ status: 'completed', stopReason: 'final_answer' });
    expect(h.rounds[0]).toMatchObject({ costSource: 'override', costUsd: (1000 * 2 + 100 * 10) / 1e6 });
  });

  it('runs an unpriced model without a budget, flagged unpriced at zero', async () => {
    const h = setup();
    const outcome = await h.run({ model: 'openai-chat/llama3.1:8b' });

    expect(outcome.status).toBe('completed');
    expect(outcome.costStatus).toBeUndefined();
    expect(h.rounds[0]).toMatchObject({ costSource: 'unpriced', costUsd: 0 });
  });

  it('prices a current model from the table and skips a reflection on an unpriced model', async () => {
    const h = setup();
    const outcome = await h.run({
      model: 'anthropic/claude-sonnet-4-6',
      reflectionModel: 'openai-chat/llama3.1:8b',
      budget: { ...budget, maxReflections: 1 },
      turnMessages: [
        { role: 'user', content: 'go' },
        { role: 'assistant', content: '', toolCalls: [{ id: 'c1', name: 'nope', arguments: '{}' }] },
      ],
    });

    expect(outcome.status).toBe('completed');
    expect(h.rounds[0]).toMatchObject({ costSource: 'rate_table', costUsd: expect.closeTo(0.0045, 12) });
    expect(h.reflections).toEqual([
      expect.objectContaining({
        ok: false,
        error: 'no price for the reflection model under a maxUsd budget',
      }),
    ]);
    expect(h.openai.requests).toHaveLength(0);
  });
});
