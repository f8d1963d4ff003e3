import { newId } from '@switchboard/contracts';
import { poolOf } from '@switchboard/database';
import { createEmbedderRegistry, embeddingCostUsd, type EmbedderRegistry } from '@switchboard/providers';
import { sql, sqlDbFor, tenantUsage, type SqlDb } from '@switchboard/store';
import {
  createTestEnv,
  crossRealmSafeFetch,
  FakeLlmServer,
  seedTenant,
  type TestEnv,
} from '@switchboard/testing';
import { bookEmbedSpend, embedBatchKey } from './embed-spend';
import { MemoryStore } from './store';
import { embedPending } from './vectors';

/**
 * The memory-embed job's spend in the cost ledger (issue 33) on real Postgres, with `openai/*`
 * embeddings from the fake model server (which bills ceil(chars / 4) tokens a text): one
 * `kind: embedding` entry per batch with no turn, priced at the table's rate, in the tenant's daily
 * roll-up; a retried run books once; the built-in embedders book nothing; GET /v1/usage's read shows
 * the entries under their model.
 */
jest.setTimeout(120_000);

describe('memory-embed spend', () => {
  let env: TestEnv;
  let server: FakeLlmServer;
  let db: SqlDb;
  let embedders: EmbedderRegistry;

  beforeAll(async () => {
    env = await createTestEnv();
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
    await env?.cleanup();
  });

  async function agentWith(name: string, embedder: string, records: number) {
    const a = await seedTenant(env.db, name);
    await env.db.agent.update({ where: { id: a.agentId }, data: { embedder } });
    const store = new MemoryStore(db);
    for (let i = 0; i < records; i++) {
      await store.add({
        tenantId: a.tenantId,
        agentId: a.agentId,
        kind: 'fact',
        title: `Fact ${i}`,
        content: `The deploy window number ${i} is on Thursday.`,
        dedupeKey: `fact-${i}`,
        provenance: { source: 'api' },
      });
    }
    return a;
  }

  const entries = (tenantId: string) =>
    env.db.ledgerEntry.findMany({ where: { tenantId }, orderBy: { createdAt: 'asc' } });
  const daily = (tenantId: string) => env.db.tenantSpendDaily.findMany({ where: { tenantId } });

  it('books each batch once, with no turn, priced as text-embedding-3-small, in the daily roll-up', async () => {
    const a = await agentWith('embed-spend', 'openai/text-embedding-3-small', 3);
    const run = newId();
    const requestsBefore = server.requests.length;
    const r = await embedPending(db, embedders, a, {
      batchSize: 2,
      maxBatches: 10,
      spent: bookEmbedSpend(db, a, run),
    });
    expect(r).toMatchObject({ done: true, embedded: 3 });
    expect(server.requests.length - requestsBefore).toBe(2);
    const booked = await entries(a.tenantId);
    expect(booked).toHaveLength(2);
    const tokens = booked.reduce((n, e) => n + e.inputTokens, 0);
    expect(tokens).toBe(r.inputTokens);
    for (const e of booked) {
      expect(e).toMatchObject({
        kind: 'embedding',
        provider: 'openai',
        model: 'openai/text-embedding-3-small',
        turnId: null,
        sessionId: null,
        agentId: a.agentId,
        outputTokens: 0,
        costSource: 'rate_table',
      });
      expect(Number(e.costUsd)).toBeCloseTo(
        embeddingCostUsd('openai/text-embedding-3-small', e.inputTokens),
        8,
      );
      expect(Number(e.costUsd)).toBeCloseTo((e.inputTokens * 0.02) / 1e6, 10);
      expect(e.key.startsWith(`embed:${a.agentId}:openai/text-embedding-3-small:`)).toBe(true);
    }
    const [day] = await daily(a.tenantId);
    expect(day).toMatchObject({ providerCalls: 2, turns: 0 });
    expect(Number(day.inputTokens)).toBe(tokens);
    expect(Number(day.costUsd)).toBeCloseTo((tokens * 0.02) / 1e6, 10);

    // A retry after the calls whose vectors were never written (the worker died between): the same
    // batches are embedded again under the same keys, and booked once.
    await db.execute(sql`DELETE FROM memory_embeddings WHERE agent_id = ${a.agentId}::uuid`);
    await db.execute(sql`UPDATE agents SET memory_vectors_model = NULL WHERE id = ${a.agentId}::uuid`);
    const again = await embedPending(db, embedders, a, {
      batchSize: 2,
      maxBatches: 10,
      spent: bookEmbedSpend(db, a, run),
    });
    expect(again.embedded).toBe(3);
    expect(await entries(a.tenantId)).toHaveLength(2);
    const [dayAfter] = await daily(a.tenantId);
    expect(dayAfter.providerCalls).toBe(2);
    expect(Number(dayAfter.costUsd)).toBe(Number(day.costUsd));

    // A retry after the vectors were written finds nothing pending: no call, nothing booked.
    const calls = server.requests.length;
    const done = await embedPending(db, embedders, a, { spent: bookEmbedSpend(db, a, run) });
    expect(done).toMatchObject({ done: true, embedded: 0 });
    expect(server.requests.length).toBe(calls);
    expect(await entries(a.tenantId)).toHaveLength(2);

    // GET /v1/usage's read: the embeddings under their model and kind.
    const rows = await tenantUsage(db, {
      tenantId: a.tenantId,
      from: new Date(Date.now() - 3_600_000),
      to: new Date(Date.now() + 60_000),
      groupBy: ['model', 'kind'],
    });
    expect(rows.filter((row) => !row.total)).toEqual([
      expect.objectContaining({
        model: 'openai/text-embedding-3-small',
        kind: 'embedding',
        inputTokens: String(tokens),
        entries: '2',
      }),
    ]);
  });

  it("prices by the tenant's modelPrices over the table", async () => {
    const a = await agentWith('embed-priced', 'openai/text-embedding-3-large', 1);
    await env.db.tenant.update({
      where: { id: a.tenantId },
      data: { settings: { modelPrices: { 'openai/text-embedding-3-large': { input: 1, output: 0 } } } },
    });
    await embedPending(db, embedders, a, { spent: bookEmbedSpend(db, a, newId()) });
    const [e] = await entries(a.tenantId);
    expect(e).toMatchObject({ costSource: 'override', model: 'openai/text-embedding-3-large' });
    expect(Number(e.costUsd)).toBeCloseTo(e.inputTokens / 1e6, 10);
  });

  it('books nothing for the built-in embedders', async () => {
    for (const embedder of ['local/hash-256', 'local/words-100d']) {
      const a = await agentWith(`embed-free-${embedder.slice(6)}`, embedder, 3);
      const r = await embedPending(db, embedders, a, { spent: bookEmbedSpend(db, a, newId()) });
      expect(r).toMatchObject({ done: true, embedded: 3, inputTokens: 0 });
      expect(await entries(a.tenantId)).toEqual([]);
      expect(await daily(a.tenantId)).toEqual([]);
    }
  });

  it('keys a batch by its records: the same records, the same key; others, another', () => {
    const agent = newId();
    expect(embedBatchKey(agent, 'openai/m', ['a', 'b'])).toBe(embedBatchKey(agent, 'openai/m', ['a', 'b']));
    expect(embedBatchKey(agent, 'openai/m', ['a', 'b'])).not.toBe(
      embedBatchKey(agent, 'openai/m', ['a', 'c']),
    );
    expect(embedBatchKey(agent, 'openai/m', ['a'])).not.toBe(embedBatchKey(agent, 'openai/n', ['a']));
  });
});
