import { newId } from '@switchboard/contracts';
import { poolOf } from '@switchboard/database';
import { sqlDbFor } from '@switchboard/store';
import { createTestEnv, type TestEnv } from '@switchboard/testing';
import { ToolError, ToolRegistry, type ToolContext } from '@switchboard/tools';
import { EmbedderRegistry } from '@switchboard/providers';
import { MemorySearch } from './search';
import { memoryTools } from './tools';

/** memory_search and memory_get through a tool registry, scoped by the call's tenant and agent. */
jest.setTimeout(120_000);

describe('memory tools', () => {
  let env: TestEnv;
  let registry: ToolRegistry;
  const tenantId = newId();
  const agentId = newId();

  const ctx = (over: Partial<ToolContext> = {}): ToolContext => ({
    tenantId,
    agentId,
    sessionId: newId(),
    turnId: newId(),
    callId: 'c1',
    idempotencyKey: 'k',
    signal: new AbortController().signal,
    resumed: false,
    writeGate: { isOpen: () => true },
    ...over,
  });

  beforeAll(async () => {
    env = await createTestEnv();
    const memory = new MemorySearch(sqlDbFor(poolOf(env.db), 'test'), new EmbedderRegistry());
    const store = memory.store;
    registry = new ToolRegistry(memoryTools(memory));
    await store.write([
      {
        tenantId,
        agentId,
        kind: 'fact',
        title: 'Deploy day',
        content: 'Deploys happen on Thursdays. '.repeat(10),
        dedupeKey: 'd1',
        provenance: { source: 'archivist', turnId: newId() },
      },
    ]);
  });

  afterAll(async () => {
    await env?.cleanup();
  });

  it('are read-only, need no approval and validate their arguments', () => {
    for (const name of ['memory_search', 'memory_get']) {
      const tool = registry.get(name);
      expect(tool?.sideEffect).toBe('read_only');
      expect(tool?.needsApproval).toBe(false);
    }
    const search = registry.get('memory_search');
    expect(search?.schema.safeParse({ query: 'x', limit: 21 }).success).toBe(false);
    expect(search?.schema.safeParse({ query: 'x', kind: 'secret' }).success).toBe(false);
    expect(search?.schema.safeParse({ query: 'x', extra: 1 }).success).toBe(false);
    const get = registry.get('memory_get');
    expect(get?.schema.safeParse({ source_ref: 'mem_x', max_chars: 50_001 }).success).toBe(false);
    expect(get?.schema.safeParse({ source_ref: 'mem_x', max_chars: 0 }).success).toBe(false);
  });

  it('search, then get the exact text by source_ref', async () => {
    const found = (await registry
      .get('memory_search')
      ?.execute({ query: 'when do deploys happen' }, ctx())) as {
      results: { source_ref: string; kind: string; title: string; snippet: string; updated_at: string }[];
    };
    expect(found.results).toHaveLength(1);
    expect(found.results[0]).toMatchObject({ kind: 'fact', title: 'Deploy day' });
    const doc = (await registry
      .get('memory_get')
      ?.execute({ source_ref: found.results[0].source_ref, max_chars: 29 }, ctx())) as Record<
      string,
      unknown
    >;
    expect(doc).toMatchObject({
      content: 'Deploys happen on Thursdays. ',
      truncated: true,
      total_chars: 290,
    });
    expect(doc.provenance).toMatchObject({ source: 'archivist' });
  });

  it("find nothing of another agent's or tenant's, and refuse a call outside an agent", async () => {
    const search = registry.get('memory_search');
    const found = (await search?.execute({ query: 'deploys' }, ctx())) as {
      results: { source_ref: string }[];
    };
    const ref = found.results[0].source_ref;
    expect(await search?.execute({ query: 'deploys' }, ctx({ agentId: newId() }))).toEqual({ results: [] });
    expect(await search?.execute({ query: 'deploys' }, ctx({ tenantId: newId() }))).toEqual({ results: [] });
    await expect(
      registry.get('memory_get')?.execute({ source_ref: ref }, ctx({ agentId: newId() })),
    ).rejects.toMatchObject({ kind: 'not_found' });
    await expect(search?.execute({ query: 'deploys' }, ctx({ agentId: undefined }))).rejects.toBeInstanceOf(
      ToolError,
    );
  });
});
