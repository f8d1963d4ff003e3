import { z } from 'zod';
import {
  EmbedderRegistry,
  LocalEmbeddingProvider,
  ProviderError,
  ProviderRegistry,
  type EmbeddingProvider,
  type EmbeddingRequest,
  type ModelProvider,
  type ModelRequest,
  type ModelResponse,
  type ToolCallRequest,
  type ToolSpec,
} from '@switchboard/providers';
import { defineTool, ToolRegistry } from '@switchboard/tools';
import { TurnEngine } from './engine';
import { checkpoints, turnInput } from './test-support';
import {
  DEFAULT_EMBEDDER,
  SemanticToolSelector,
  offeredTools,
  type ToolSelectionSettings,
} from './tool-selection';

const spec = (name: string, description: string): ToolSpec => ({
  name,
  description,
  parameters: { type: 'object' },
});
const TOOLS: ToolSpec[] = [
  spec('calendar_create_event', 'Schedule a meeting or appointment on the calendar'),
  spec('weather_forecast', 'Get the weather forecast: rain, temperature, wind'),
  spec('send_email', 'Send an email message to a recipient'),
  spec('search_flights', 'Find airline flights and plane tickets between cities'),
  spec('currency_convert', 'Convert an amount of money between currencies'),
  spec('translate_text', 'Translate text into another language'),
  spec('restaurant_booking', 'Reserve a table at a restaurant for dinner'),
  spec('stock_quote', 'Current share price of a company on the stock market'),
];
const names = (tools: readonly { name: string }[]) => tools.map((t) => t.name);

/** Counts what each embed call was asked, over the built-in embedders. */
class CountingEmbedder implements EmbeddingProvider {
  readonly name = 'local';
  readonly calls: string[][] = [];
  private readonly local = new LocalEmbeddingProvider();
  fail = false;
  dimensionsOf(model: string) {
    return this.local.dimensionsOf(model);
  }
  embed(request: EmbeddingRequest) {
    this.calls.push(request.texts);
    if (this.fail) return Promise.reject(new ProviderError('connection', 'embedder down'));
    return this.local.embed(request);
  }
}

describe('SemanticToolSelector', () => {
  const settings = (o: Partial<ToolSelectionSettings> = {}): ToolSelectionSettings => ({
    maxPerTurn: 3,
    pinned: [],
    embedder: DEFAULT_EMBEDDER,
    ...o,
  });

  it('offers the tools most similar to the input, in their original order', async () => {
    const selector = new SemanticToolSelector(new EmbedderRegistry());
    const chosen = await selector.choose(
      TOOLS,
      'will it rain in Paris tomorrow, and is there a cheap plane?',
      settings(),
    );
    expect(chosen.size).toBe(3);
    expect(chosen.has('weather_forecast')).toBe(true);
    expect(chosen.has('search_flights')).toBe(true);
    const offered = offeredTools(TOOLS, chosen, new Set());
    // The turn's order, not the score's.
    expect(names(offered)).toEqual(names(TOOLS).filter((n) => chosen.has(n)));
  });

  it('always keeps pinned tools and tools the turn called; byte-identical for the same input', async () => {
    const selector = new SemanticToolSelector(new EmbedderRegistry());
    const s = settings({ pinned: ['stock_quote', 'no_such_tool'] });
    const input = 'book me dinner for two at an italian place';
    const chosen = await selector.choose(TOOLS, input, s);
    expect(chosen.has('stock_quote')).toBe(true);
    expect(chosen.has('restaurant_booking')).toBe(true);
    expect(chosen.has('no_such_tool')).toBe(false);
    expect(chosen.size).toBe(3);
    const offered = offeredTools(TOOLS, chosen, new Set(['currency_convert']));
    expect(names(offered)).toContain('currency_convert');
    expect(offered).toHaveLength(4);

    // Another selector (another process), the cache cold: the same bytes.
    const again = await new SemanticToolSelector(new EmbedderRegistry()).choose(TOOLS, input, s);
    expect(JSON.stringify(offeredTools(TOOLS, again, new Set()))).toBe(
      JSON.stringify(offeredTools(TOOLS, chosen, new Set())),
    );
    // Pinned filling every slot: only the pinned ones, no embedding.
    const counting = new CountingEmbedder();
    const only = await new SemanticToolSelector(new EmbedderRegistry([counting])).choose(
      TOOLS,
      input,
      settings({ maxPerTurn: 1, pinned: ['send_email'] }),
    );
    expect([...only]).toEqual(['send_email']);
    expect(counting.calls).toEqual([]);
  });

  it('offers everything when the tools fit, without embedding', async () => {
    const counting = new CountingEmbedder();
    const selector = new SemanticToolSelector(new EmbedderRegistry([counting]));
    const chosen = await selector.choose(TOOLS, 'anything', settings({ maxPerTurn: 8 }));
    expect(chosen.size).toBe(8);
    expect(counting.calls).toEqual([]);
    expect(names(offeredTools(TOOLS, undefined, new Set()))).toEqual(names(TOOLS));
  });

  it('embeds each tool once, and again only when its name or description changes', async () => {
    const counting = new CountingEmbedder();
    const selector = new SemanticToolSelector(new EmbedderRegistry([counting]));
    await selector.choose(TOOLS, 'first', settings());
    await selector.choose(TOOLS, 'second', settings());
    const changed = TOOLS.map((t) =>
      t.name === 'send_email' ? { ...t, description: 'Send a text message' } : t,
    );
    await selector.choose(changed, 'third', settings());
    expect(counting.calls.map((c) => c.length)).toEqual([1 + TOOLS.length, 1, 2]);
    expect(counting.calls[2]).toEqual(['third', 'send email: Send a text message']);
    expect(selector.cachedCount).toBe(TOOLS.length + 1);
  });

  it('tells what a billing embedder charged, and nothing for a free one (issue 33)', async () => {
    const billing = new CountingEmbedder();
    billing.embed = async (request: EmbeddingRequest) => ({
      ...(await new LocalEmbeddingProvider().embed(request)),
      inputTokens: request.texts.length * 7,
    });
    const spent: { embedder: string; inputTokens: number }[] = [];
    const selector = new SemanticToolSelector(new EmbedderRegistry([billing]));
    await selector.choose(TOOLS, 'first', settings(), undefined, (s) => spent.push(s));
    await selector.choose(TOOLS, 'second', settings(), undefined, (s) => spent.push(s));
    expect(spent).toEqual([
      { embedder: DEFAULT_EMBEDDER, inputTokens: (1 + TOOLS.length) * 7 },
      { embedder: DEFAULT_EMBEDDER, inputTokens: 7 },
    ]);
    const free: unknown[] = [];
    await new SemanticToolSelector(new EmbedderRegistry()).choose(TOOLS, 'x', settings(), undefined, (s) =>
      free.push(s),
    );
    expect(free).toEqual([]);
  });

  it('refuses an unknown embedder and passes an embedder failure on', async () => {
    const selector = new SemanticToolSelector(new EmbedderRegistry());
    await expect(selector.choose(TOOLS, 'x', settings({ embedder: 'local/nope' }))).rejects.toThrow(
      ProviderError,
    );
    const counting = new CountingEmbedder();
    counting.fail = true;
    await expect(
      new SemanticToolSelector(new EmbedderRegistry([counting])).choose(TOOLS, 'x', settings()),
    ).rejects.toThrow('embedder down');
  });
});

/** Remembers the tools each round was offered; calls `first` in round 1, then answers. */
class Recorder implements ModelProvider {
  readonly name = 'fake';
  readonly offered: string[][] = [];
  constructor(private readonly first: ToolCallRequest[]) {}
  async complete(r: ModelRequest): Promise<ModelResponse> {
    this.offered.push(names(r.tools ?? []));
    const calls = this.offered.length === 1 ? this.first : [];
    return {
      text: calls.length ? '' : 'done',
      toolCalls: calls,
      usage: { inputTokens: 1, outputTokens: 1, cachedTokens: 0 },
      finishReason: calls.length ? 'tool_calls' : 'stop',
    };
  }
}

describe('the engine with tool selection', () => {
  const registry = new ToolRegistry(
    TOOLS.map((t) =>
      defineTool({
        name: t.name,
        description: t.description,
        schema: z.strictObject({}),
        sideEffect: 'read_only',
        timeoutMs: 1000,
        needsApproval: false,
        execute: async () => 'ok',
      }),
    ),
  );
  const run = async (
    provider: Recorder,
    selection: ToolSelectionSettings | undefined,
    embedders?: EmbedderRegistry,
  ) => {
    const events: { type: string; data: unknown }[] = [];
    const engine = new TurnEngine({
      providers: new ProviderRegistry({}, [provider]),
      tools: registry,
      embedders,
    });
    const outcome = await engine.run(
      turnInput({
        tools: names(TOOLS),
        turnMessages: [{ role: 'user', content: 'what is the weather forecast for tomorrow?' }],
        ...(selection ? { toolSelection: selection } : {}),
      }),
      checkpoints({ emit: async (type, data) => void events.push({ type, data }) }),
      new AbortController().signal,
    );
    return { outcome, events };
  };

  it('offers each round the chosen tools plus the ones the turn called, in order', async () => {
    const provider = new Recorder([{ id: 'c1', name: 'stock_quote', arguments: '{}' }]);
    const { outcome } = await run(provider, {
      maxPerTurn: 2,
      pinned: ['send_email'],
      embedder: DEFAULT_EMBEDDER,
    });
    expect(outcome.status).toBe('completed');
    expect(provider.offered[0]).toEqual(['weather_forecast', 'send_email']);
    // The model called a tool it was not offered but may call: it stays offered for the turn.
    expect(provider.offered[1]).toEqual(['weather_forecast', 'send_email', 'stock_quote']);
  });

  it('offers every tool without a selection, and when the embedder fails (with a warning event)', async () => {
    const plain = new Recorder([]);
    await run(plain, undefined);
    expect(plain.offered[0]).toEqual(names(TOOLS));

    const failing = new CountingEmbedder();
    failing.fail = true;
    const provider = new Recorder([]);
    const { outcome, events } = await run(
      provider,
      { maxPerTurn: 2, pinned: [], embedder: DEFAULT_EMBEDDER },
      new EmbedderRegistry([failing]),
    );
    expect(outcome.status).toBe('completed');
    expect(provider.offered[0]).toEqual(names(TOOLS));
    expect(events).toContainEqual({
      type: 'context_degraded',
      data: {
        source: 'tool_selection',
        message: `the embedder ${DEFAULT_EMBEDDER} failed (embedder down): every tool offered`,
      },
    });
  });
});
