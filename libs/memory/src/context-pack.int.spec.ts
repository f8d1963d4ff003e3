import { poolOf } from '@switchboard/database';
import { contextPack, loadContext, type ContextQuery, type ContextSources } from '@switchboard/engine';
import {
  EmbedderRegistry,
  normalize,
  ProviderError,
  type EmbeddingProvider,
  type EmbeddingRequest,
  type EmbeddingResponse,
} from '@switchboard/providers';
import { newId } from '@switchboard/contracts';
import { sqlDbFor, type Sql, type SqlDb, type SqlRunner } from '@switchboard/store';
import { createTestEnv, seedTenant, type TestEnv } from '@switchboard/testing';
import { memoryContext } from './context-pack';
import { memoryRecall } from './recall';
import { MemorySearch } from './search';
import { PREFERENCE_TAG } from './store';
import type { MemoryWrite } from './types';
import { embedPending } from './vectors';

/**
 * The seed's two loads over real Postgres (docs/adr/0052): episodic recall and the context pack's
 * facts and preferences, from one memory search per turn; preferences merged once; nothing of another
 * agent or tenant; an embedder down leaves the pack to full-text with a warning. A test embedder that
 * knows "ship" and "deploy" are one concept stands for one that knows meaning.
 */
jest.setTimeout(120_000);

const CONCEPTS: [RegExp, number][] = [
  [/\b(ship|deploy|release|rollout)\w*/i, 0],
  [/\b(cat|kitten|pet|feline)\w*/i, 1],
  [/\b(french|language)\w*/i, 2],
];

class ConceptEmbedder implements EmbeddingProvider {
  readonly name = 'concepts';
  mode: 'ok' | 'fail' = 'ok';
  calls = 0;
  dimensionsOf(model: string): number | undefined {
    return model === 'v1' ? 4 : undefined;
  }
  embed(r: EmbeddingRequest): Promise<EmbeddingResponse> {
    this.calls++;
    if (this.mode === 'fail') return Promise.reject(new ProviderError('server', 'embedder is down'));
    const vectors = r.texts.map((t) => {
      const v = new Float32Array(4);
      for (const [re, i] of CONCEPTS) if (re.test(t)) v[i] = 1;
      if (v.every((x) => x === 0)) v[3] = 1;
      return normalize(v);
    });
    return Promise.resolve({ vectors, inputTokens: r.texts.length });
  }
}

/** A runner that counts the statements it is given. */
function counting(inner: SqlRunner): { runner: SqlRunner; n: number } {
  const c: { runner: SqlRunner; n: number } = {
    n: 0,
    runner: {
      rows: <R>(q: Sql) => (c.n++, inner.rows<R>(q)),
      first: <R>(q: Sql) => (c.n++, inner.first<R>(q)),
      execute: (q: Sql) => (c.n++, inner.execute(q)),
    },
  };
  return c;
}

describe('memory context (the seed 001 context pack)', () => {
  let env: TestEnv;
  let db: SqlDb;
  let concepts: ConceptEmbedder;
  let embedders: EmbedderRegistry;

  beforeAll(async () => {
    env = await createTestEnv();
    db = sqlDbFor(poolOf(env.db), 'test');
    concepts = new ConceptEmbedder();
    embedders = new EmbedderRegistry();
    embedders.register(concepts);
  });

  afterEach(() => {
    concepts.mode = 'ok';
  });

  afterAll(async () => {
    await env?.cleanup();
  });

  type Scope = { tenantId: string; agentId: string };
  const rec = (a: Scope, title: string, content: string, over: Partial<MemoryWrite> = {}): MemoryWrite => ({
    ...a,
    kind: 'fact',
    title,
    content,
    dedupeKey: `${title}:${content}:${newId()}`,
    provenance: { source: 'api' },
    ...over,
  });

  async function agent(name: string, embedder: string | null): Promise<Scope> {
    const a = await seedTenant(env.db, name);
    if (embedder) await env.db.agent.update({ where: { id: a.agentId }, data: { embedder } });
    return { tenantId: a.tenantId, agentId: a.agentId };
  }

  /** The engine's loadContext over both loads, as the harness worker wires them. */
  function sources(runner: SqlRunner = db): ContextSources {
    const m = memoryContext(new MemorySearch(runner, embedders, { embedTimeoutMs: 500 }), {
      limit: 5,
      timeoutMs: 2_000,
    });
    return { memory: m.episodic, contextPack: contextPack({ memory: m.pack, workItems: async () => null }) };
  }
  const query = (a: Scope, input: string): ContextQuery => ({
    ...a,
    sessionId: newId(),
    turnId: newId(),
    input,
  });

  it('finds a fact for a paraphrased input, the preferences whatever the input, episodes apart', async () => {
    const a = await agent('pack-paraphrase', 'concepts/v1');
    const search = new MemorySearch(db, embedders);
    await search.store.write([
      rec(a, 'Release cadence', 'Deploys happen on Thursdays.'),
      rec(a, 'Answer language', 'The user wants answers in French.', { tags: [PREFERENCE_TAG] }),
      rec(a, 'Rollout chat', 'We talked about the rollout of the shipping service.', { kind: 'episode' }),
      rec(a, 'Pets', 'The user has two cats.'),
    ]);
    expect((await embedPending(db, embedders, a, { batchSize: 10, maxBatches: 10 })).done).toBe(true);

    const before = concepts.calls;
    const ctx = await loadContext(sources(), query(a, 'when do we ship?'));
    // One search for both loads: the query embedded once.
    expect(concepts.calls - before).toBe(1);
    expect(ctx.failed).toEqual([]);
    expect(ctx.warnings).toEqual([]);
    // The episode is episodic recall's; the fact (no shared word with the input) and the preference
    // (nothing to do with it) are the pack's, in one block.
    expect(ctx.memory).toContain('Rollout chat');
    expect(ctx.memory).not.toContain('Release cadence');
    expect(ctx.packSections).toEqual(['preferences', 'facts']);
    expect(ctx.contextPack).toContain('Release cadence: Deploys happen on Thursdays.');
    expect(ctx.contextPack).toContain('Answer language: The user wants answers in French.');
    // Ranked first among the facts (the vector side ranks every record, the unrelated last).
    const facts = ctx.contextPack!.split('\n').filter((l) => l.startsWith('- ') && !l.includes('French'));
    expect(facts[0]).toContain('Release cadence');
    // The same records, the same bytes (a prompt cache sees no difference).
    expect((await loadContext(sources(), query(a, 'when do we ship?'))).contextPack).toBe(ctx.contextPack);
  });

  it('merges a preference both loads return once, and one said twice once', async () => {
    const a = await agent('pack-merge', null);
    const search = new MemorySearch(db, embedders);
    await search.store.write([
      // A note tagged preference: episodic recall finds it by the input, the pack among the preferences.
      rec(a, 'Deploy announcements', 'The user wants every deploy announced in #ops first.', {
        kind: 'note',
        tags: [PREFERENCE_TAG],
      }),
      // The same preference distilled from two turns: two records, one text.
      rec(a, 'Units', 'The user wants distances in kilometres.', { tags: [PREFERENCE_TAG] }),
      rec(a, 'Units again', 'The user wants distances in  kilometres', { tags: [PREFERENCE_TAG] }),
      rec(a, 'Deploy episode', 'The deploy of the billing service went out.', { kind: 'episode' }),
    ]);
    const m = memoryContext(new MemorySearch(db, embedders), { limit: 5, timeoutMs: 2_000 });
    const q = query(a, 'announce the deploy');
    const [episodic, pack] = await Promise.all([m.episodic(q), m.pack(q)]);
    expect(episodic?.preferences.map((p) => p.title)).toEqual(['Deploy announcements']);
    expect(episodic?.text).toContain('Deploy episode');
    expect(episodic?.text).not.toContain('Deploy announcements');
    expect(pack?.preferences.map((p) => p.title)).toContain('Deploy announcements');

    const ctx = await loadContext(sources(), q);
    expect(ctx.contextPack?.match(/announced in #ops/g)).toHaveLength(1);
    expect(ctx.contextPack?.match(/kilometres/g)).toHaveLength(1);
    expect(ctx.packSections).toEqual(['preferences']);
  });

  it('never includes another agent’s or another tenant’s records', async () => {
    const a = await agent('pack-mine', null);
    const sibling = (await env.db.agent.create({
      data: { id: newId(), tenantId: a.tenantId, name: 'sibling', model: 'x/y' },
    })) as { id: string };
    const b = { tenantId: a.tenantId, agentId: sibling.id };
    const c = await agent('pack-theirs', null);
    const search = new MemorySearch(db, embedders);
    await search.store.write([rec(a, 'Mine', 'Our deploy window is Tuesdays.')]);
    for (const other of [b, c]) {
      await search.store.write([
        rec(other, 'Foreign deploy', 'Their deploy window is Fridays.'),
        rec(other, 'Foreign preference', 'They want answers in Klingon.', { tags: [PREFERENCE_TAG] }),
        rec(other, 'Foreign episode', 'A deploy window chat.', { kind: 'episode' }),
      ]);
    }
    const ctx = await loadContext(sources(), query(a, 'deploy window'));
    const all = `${ctx.memory ?? ''}\n${ctx.contextPack ?? ''}`;
    expect(all).toContain('Tuesdays');
    for (const word of ['Fridays', 'Klingon', 'Foreign']) expect(all).not.toContain(word);
  });

  it('an embedder down: the turn still gets the pack from full-text, with one warning', async () => {
    const a = await agent('pack-degraded', 'concepts/v1');
    const search = new MemorySearch(db, embedders);
    await search.store.write([
      rec(a, 'Deploy window', 'Deploys go out on Tuesdays at 14:00 UTC.'),
      rec(a, 'Tone', 'The user likes short answers.', { tags: [PREFERENCE_TAG] }),
    ]);
    expect((await embedPending(db, embedders, a, { batchSize: 10, maxBatches: 10 })).done).toBe(true);
    concepts.mode = 'fail';
    const ctx = await loadContext(sources(), query(a, 'deploy window'));
    expect(ctx.failed).toEqual([]);
    expect(ctx.contextPack).toContain('Deploys go out on Tuesdays');
    expect(ctx.contextPack).toContain('short answers');
    expect(ctx.warnings).toEqual([
      { source: 'memory', message: expect.stringContaining('the embedder concepts/v1 failed') },
    ]);
  });

  it('reads no more than one statement over single-block recall per turn; none without memory', async () => {
    const counts: Record<string, number> = {};
    for (const [name, embedder] of [
      ['fts', null],
      ['hybrid', 'concepts/v1'],
    ] as const) {
      const a = await agent(`pack-count-${name}`, embedder);
      const search = new MemorySearch(db, embedders);
      await search.store.write([
        rec(a, 'Deploy window', 'Deploys go out on Tuesdays.'),
        rec(a, 'Release train', 'Releases ship every second Friday.'),
        rec(a, 'Units', 'The user wants kilometres.', { tags: [PREFERENCE_TAG] }),
        rec(a, 'Deploy chat', 'We talked about the deploy.', { kind: 'episode' }),
      ]);
      if (embedder)
        expect((await embedPending(db, embedders, a, { batchSize: 10, maxBatches: 10 })).done).toBe(true);
      const q = query(a, 'when is the deploy window?');

      const single = counting(db);
      const recall = memoryRecall(new MemorySearch(single.runner, embedders), { limit: 5, timeoutMs: 2_000 });
      expect(await recall(q)).toContain('Deploy window');

      const split = counting(db);
      const two = new MemorySearch(split.runner, embedders);
      await Promise.all([
        two.search({ ...a, query: q.input, limit: 5, kinds: ['episode', 'note'] }),
        two.search({ ...a, query: q.input, limit: 5, kinds: ['fact'] }),
        two.store.preferences({ ...a, limit: 5 }),
      ]);

      const pack = counting(db);
      const ctx = await loadContext(sources(pack.runner), q);
      expect(ctx.contextPack).toContain('Deploy window');
      counts[`${name}: single-block recall`] = single.n;
      counts[`${name}: two kind-filtered searches + preferences`] = split.n;
      counts[`${name}: memory context`] = pack.n;
      expect(pack.n).toBe(single.n + 1);

      const none = counting(db);
      expect(await loadContext(sources(none.runner), { ...q, hasMemory: false })).toMatchObject({
        memory: null,
        contextPack: null,
      });
      expect(none.n).toBe(0);
    }
    // Statements per turn, for the report (docs/adr/0052).
    console.log(counts);
  });
});
