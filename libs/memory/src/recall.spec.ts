import { memoryRecall, RecallTimeout, renderRecall } from './recall';
import type { RecallSearch } from './recall';
import type { HybridSearchResult } from './search';
import { RANK_CANDIDATES, RECALL_RANK_CANDIDATES, type MemorySearchQuery } from './store';
import type { MemoryHit } from './types';

const hit = (n: number, snippet = `snippet ${n}`): MemoryHit => ({
  sourceRef: `mem_${String(n).padStart(22, 'A')}`,
  kind: 'fact',
  title: `title ${n}`,
  snippet,
  score: 1 / n,
  updatedAt: '2026-11-23T10:00:00.000Z',
  createdAt: '2026-11-23T10:00:00.000Z',
  provenance: { source: 'api' },
  totalChars: 10,
  tags: [],
  path: 'fts',
});

describe('renderRecall', () => {
  it('lists each hit with its ref, kind, title, date and snippet', () => {
    expect(renderRecall([hit(1)])).toBe(
      "Records from this agent's memory that may be relevant (memory_get with a source_ref returns the full text):\n" +
        `- [${hit(1).sourceRef}] fact · title 1 (2026-11-23): snippet 1`,
    );
    expect(renderRecall([])).toBeNull();
  });

  it('stays within its bound, dropping whole lines', () => {
    const text = renderRecall(
      [1, 2, 3, 4, 5].map((n) => hit(n, 'x'.repeat(200))),
      700,
    );
    expect(text?.length).toBeLessThanOrEqual(700);
    expect(text?.split('\n- ')).toHaveLength(3);
  });
});

describe('memoryRecall', () => {
  const result = (hits: MemoryHit[], over: Partial<HybridSearchResult> = {}): HybridSearchResult => ({
    hits,
    mode: 'fts',
    used: 'fts',
    warning: null,
    fallback: null,
    embeddingTokens: 0,
    embedder: null,
    ...over,
  });
  const store = (search: (q: MemorySearchQuery) => Promise<MemoryHit[]>): RecallSearch => ({
    search: async (q) => result(await search(q)),
  });
  const query = { tenantId: 't', agentId: 'a', input: 'what colour' };

  it('renders the hits and reports the outcome', async () => {
    const seen: string[] = [];
    const recall = memoryRecall(
      store(async () => [hit(1)]),
      { limit: 5, timeoutMs: 1000, observe: (o) => seen.push(o) },
    );
    expect(await recall(query)).toContain('title 1');
    expect(seen).toEqual(['hits']);
  });

  it('rejects past its timeout, so the turn goes on without memory', async () => {
    const seen: string[] = [];
    const recall = memoryRecall(
      store(() => new Promise(() => undefined)),
      { limit: 5, timeoutMs: 20, embedTimeoutMs: 0, observe: (o) => seen.push(o) },
    );
    await expect(recall(query)).rejects.toBeInstanceOf(RecallTimeout);
    expect(seen).toEqual(['timeout']);
  });

  it('asks nothing for an agent the claim found without memory, and says so (docs/adr/0032)', async () => {
    const seen: string[] = [];
    const search = jest.fn(async () => [hit(1)]);
    const recall = memoryRecall(store(search), { limit: 5, timeoutMs: 1000, observe: (o) => seen.push(o) });
    expect(await recall({ ...query, hasMemory: false })).toBeNull();
    expect(search).not.toHaveBeenCalled();
    expect(seen).toEqual(['skipped']);
    // Known to have memory, or unknown: it asks.
    expect(await recall({ ...query, hasMemory: true })).toContain('title 1');
    expect(await recall(query)).toContain('title 1');
    expect(search).toHaveBeenCalledTimes(2);
  });

  it('ranks fewer candidates than an explicit search: RECALL_RANK_CANDIDATES unless configured', async () => {
    const search = jest.fn(async (_q: MemorySearchQuery) => [hit(1)]);
    await memoryRecall(store(search), { limit: 5, timeoutMs: 1000 })(query);
    await memoryRecall(store(search), { limit: 5, timeoutMs: 1000, candidates: 40 })(query);
    expect(search.mock.calls.map(([q]) => [q.limit, q.candidates])).toEqual([
      [5, RECALL_RANK_CANDIDATES],
      [5, 40],
    ]);
    expect(RECALL_RANK_CANDIDATES).toBeLessThan(RANK_CANDIDATES);
  });

  it('warns when the embedder failed and answers with full-text; not when the agent has no vectors yet', async () => {
    const warned: string[] = [];
    const failed: RecallSearch = {
      search: async () =>
        result([hit(1)], { mode: 'hybrid', fallback: 'embedder_failed', warning: 'the embedder x/y failed' }),
    };
    const text = await memoryRecall(failed, { limit: 5, timeoutMs: 100 })({
      ...query,
      warn: (source, message) => warned.push(`${source}: ${message}`),
    });
    expect(text).toContain('title 1');
    expect(warned).toEqual(['memory: the embedder x/y failed']);
    const notYet: RecallSearch = {
      search: async () => result([hit(1)], { mode: 'hybrid', fallback: 'no_vectors', warning: 'not yet' }),
    };
    await memoryRecall(notYet, { limit: 5, timeoutMs: 100 })({ ...query, warn: (s) => warned.push(s) });
    expect(warned).toHaveLength(1);
  });

  it('asks nothing when off, without an agent or without input', async () => {
    let asked = 0;
    const s = store(async () => {
      asked++;
      return [hit(1)];
    });
    expect(await memoryRecall(s, { limit: 5, timeoutMs: 0 })(query)).toBeNull();
    expect(await memoryRecall(s, { limit: 5, timeoutMs: 100 })({ ...query, agentId: undefined })).toBeNull();
    expect(await memoryRecall(s, { limit: 5, timeoutMs: 100 })({ ...query, input: '  ' })).toBeNull();
    expect(asked).toBe(0);
  });
});
