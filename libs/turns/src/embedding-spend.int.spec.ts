import { z } from 'zod';
import { contextPack, TurnEngine } from '@switchboard/engine';
import {
  embedPending,
  MEMORY_SEARCH_TOOL,
  memoryContext,
  MemorySearch,
  MemoryStore,
  memoryTools,
} from '@switchboard/memory';
import { poolOf } from '@switchboard/database';
import {
  createEmbedderRegistry,
  ProviderRegistry,
  type EmbedderRegistry,
  type ModelProvider,
  type ModelRequest,
  type ModelResponse,
} from '@switchboard/providers';
import { sqlDbFor, type SqlDb } from '@switchboard/store';
import { defineTool, ToolRegistry, type ToolDefinition } from '@switchboard/tools';
import {
  crossRealmSafeFetch,
  FakeLlmServer,
  operatorPrompt,
  seedTenantSession,
  startHarness,
  type HarnessFixture,
  type TestEnv,
} from '@switchboard/testing';
import { TurnRunner } from './runner';

/**
 * A turn's embedder calls in its cost (issue 33), on real Postgres with `openai/*` embeddings from
 * the fake model server: recall's query and semantic tool selection's input and tools are each
 * booked once as a `kind: embedding` ledger line of the turn, priced at the table's rate, and
 * counted in the turn's tokens and cost; an agent on a built-in embedder books none.
 */
jest.setTimeout(120_000);

const USAGE = { inputTokens: 100, outputTokens: 10, cachedTokens: 0 };

class Model implements ModelProvider {
  readonly name = 'openai-chat';
  readonly requests: ModelRequest[] = [];
  async complete(request: ModelRequest): Promise<ModelResponse> {
    this.requests.push(request);
    return { text: 'done', toolCalls: [], usage: USAGE, finishReason: 'stop' };
  }
}

const tool = (name: string, description: string) =>
  defineTool({
    name,
    description,
    schema: z.strictObject({}),
    sideEffect: 'read_only',
    timeoutMs: 2_000,
    needsApproval: false,
    execute: async () => 'ok',
  }) as ToolDefinition;

const TOOLS = [
  tool('deploy_service', 'Deploys a service to production'),
  tool('feed_cat', 'Feeds the cat'),
  tool('paint_wall', 'Paints a wall a colour'),
];

describe('a turn’s embedding spend', () => {
  let h: HarnessFixture;
  let env: TestEnv;
  let server: FakeLlmServer;
  let db: SqlDb;
  let embedders: EmbedderRegistry;
  const model = new Model();

  beforeAll(async () => {
    h = await startHarness();
    env = h.env;
    server = await FakeLlmServer.start();
    db = sqlDbFor(poolOf(env.db), 'test');
    embedders = createEmbedderRegistry({
      apiKey: 'k',
      baseURL: server.openaiBaseUrl,
      fetch: crossRealmSafeFetch,
      dimensions: { 'text-embedding-3-small': 64 },
    });
  });

  afterAll(async () => {
    await server?.close();
    await h?.close();
  });

  const runner = () => {
    // The harness's sources (apps/harness-worker): episodic recall and the pack from one search.
    const memory = memoryContext(new MemorySearch(db, embedders), { limit: 4, timeoutMs: 5_000 });
    return new TurnRunner({
      ...h.runnerDeps({ turnsQueue: undefined }),
      engine: new TurnEngine({
        providers: new ProviderRegistry({}, [model]),
        tools: new ToolRegistry(TOOLS),
        embedders,
        context: { memory: memory.episodic, contextPack: contextPack({ memory: memory.pack }) },
      }),
      tools: new ToolRegistry(TOOLS),
      defaultModel: 'openai-chat/m',
    });
  };

  async function agentWith(name: string, embedder: string) {
    const ids = await seedTenantSession(env.db, name, {
      model: 'openai-chat/m',
      tools: TOOLS.map((t) => t.name),
    });
    await env.db.agent.update({
      where: { id: ids.agentId },
      data: { embedder, toolSelection: { maxPerTurn: 1 } },
    });
    await new MemoryStore(db).add({
      tenantId: ids.tenantId,
      agentId: ids.agentId,
      kind: 'fact',
      title: 'Release days',
      content: 'Deploys happen on Thursdays.',
      dedupeKey: 'release',
      provenance: { source: 'api' },
    });
    expect(await embedPending(db, embedders, ids)).toMatchObject({ done: true, embedded: 1 });
    return ids;
  }

  async function turn(ids: { tenantId: string; sessionId: string }, text: string) {
    const { turnId } = await h.admission.admit(operatorPrompt(ids, text));
    expect(
      await runner().handle({ turnId, sessionId: ids.sessionId, tenantId: ids.tenantId, trace: {} }),
    ).toBe('done');
    return env.db.turn.findUniqueOrThrow({ where: { id: turnId } });
  }

  it('books recall and tool selection once each, in the turn’s cost', async () => {
    const ids = await agentWith('turn-embed', 'openai/text-embedding-3-small');
    const before = server.requests.filter((r) => r.endpoint === 'openai.embeddings').length;
    const t = await turn(ids, 'When do we deploy the service?');
    expect(t.status).toBe('completed');
    // Recall's query, then tool selection's input and tools: two embeddings calls.
    const calls = server.requests.filter((r) => r.endpoint === 'openai.embeddings').slice(before);
    expect(calls).toHaveLength(2);
    // Recall found the record (its evidence went to the model), tool selection offered one tool.
    expect(JSON.stringify(model.requests.at(-1)!.messages)).toContain('Deploys happen on Thursdays');
    expect(model.requests.at(-1)!.tools.map((x) => x.name)).toEqual(['deploy_service']);

    const ledger = await env.db.ledgerEntry.findMany({ where: { turnId: t.id }, orderBy: { key: 'asc' } });
    expect(ledger.map((e) => [e.key, e.kind])).toEqual([
      [`${t.id}:embed:recall:1`, 'embedding'],
      [`${t.id}:embed:tool_selection:1`, 'embedding'],
      [`${t.id}:round:0`, 'chat'],
    ]);
    const embeds = ledger.filter((e) => e.kind === 'embedding');
    const expectedTokens = calls.map((c) =>
      ((c.body as { input: string[] }).input ?? []).reduce((n, s) => n + Math.ceil(s.length / 4), 0),
    );
    expect(embeds.map((e) => e.inputTokens)).toEqual(expectedTokens);
    for (const e of embeds) {
      expect(e).toMatchObject({
        provider: 'openai',
        model: 'openai/text-embedding-3-small',
        sessionId: ids.sessionId,
        outputTokens: 0,
        costSource: 'rate_table',
      });
      expect(Number(e.costUsd)).toBeCloseTo((e.inputTokens * 0.02) / 1e6, 10);
    }
    // The turn's totals count them with its round.
    const embedTokens = expectedTokens.reduce((a, b) => a + b, 0);
    expect(t.inputTokens).toBe(USAGE.inputTokens + embedTokens);
    const ledgerUsd = ledger.reduce((n, e) => n + Number(e.costUsd), 0);
    expect(Number(t.costUsd)).toBeCloseTo(ledgerUsd, 8);
  });

  it('books a memory_search call’s query embedding once, keyed by its call', async () => {
    const ids = await agentWith('turn-embed-search', 'openai/text-embedding-3-small');
    const search = memoryTools(new MemorySearch(db, embedders));
    // A model that searches its memory once, then answers.
    const searching: ModelProvider = {
      name: 'openai-chat',
      async complete(request: ModelRequest): Promise<ModelResponse> {
        const searched = request.messages.some((m) => m.role === 'tool');
        return searched
          ? { text: 'done', toolCalls: [], usage: USAGE, finishReason: 'stop' }
          : {
              text: '',
              toolCalls: [
                {
                  id: 'call_search',
                  name: MEMORY_SEARCH_TOOL,
                  arguments: JSON.stringify({ query: 'ship day' }),
                },
              ],
              usage: USAGE,
              finishReason: 'tool_calls',
            };
      },
    };
    // Its one tool: no selection (one tool is within maxPerTurn), so the only embedding is the search's.
    await env.db.agent.update({ where: { id: ids.agentId }, data: { tools: [MEMORY_SEARCH_TOOL] } });
    const { turnId } = await h.admission.admit(operatorPrompt(ids, 'Look it up'));
    const registry = new ToolRegistry(search);
    const outcome = await new TurnRunner({
      ...h.runnerDeps({ turnsQueue: undefined }),
      engine: new TurnEngine({
        providers: new ProviderRegistry({}, [searching]),
        tools: registry,
        embedders,
      }),
      tools: registry,
      defaultModel: 'openai-chat/m',
    }).handle({ turnId, sessionId: ids.sessionId, tenantId: ids.tenantId, trace: {} });
    expect(outcome).toBe('done');
    const t = await env.db.turn.findUniqueOrThrow({ where: { id: turnId } });
    expect(t.status).toBe('completed');
    const ledger = await env.db.ledgerEntry.findMany({ where: { turnId, kind: 'embedding' } });
    expect(ledger.map((e) => e.key)).toEqual([`${turnId}:embed:memory_search:call_search`]);
    expect(ledger[0]).toMatchObject({ model: 'openai/text-embedding-3-small', outputTokens: 0 });
    expect(ledger[0].inputTokens).toBe(Math.ceil('ship day'.length / 4));
    expect(Number(ledger[0].costUsd)).toBeCloseTo((ledger[0].inputTokens * 0.02) / 1e6, 10);
  });

  it('books nothing for a built-in embedder', async () => {
    const ids = await agentWith('turn-embed-free', 'local/hash-256');
    const t = await turn(ids, 'When do we deploy the service?');
    expect(t.status).toBe('completed');
    const ledger = await env.db.ledgerEntry.findMany({ where: { turnId: t.id } });
    expect(ledger.map((e) => e.kind)).toEqual(['chat']);
  });
});
