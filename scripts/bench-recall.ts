/**
 * Memory recall's cost (docs/adr/0022): the latency of one recall (the `memory` context source: a
 * full-text search of one agent's records for the turn's input) over an agent with 1k and one with
 * 50k records, among records of other agents and tenants; then whole turns through the
 * TurnRunner (Postgres persistence, an instant model) with and without recall, in one run.
 *
 *   npm run bench:recall -- [--queries 500] [--turns 300] [--small 1000] [--large 50000] [--noise 20000]
 *
 * Vector memory (docs/adr/0050): `--vector 1000,50000,200000` measures the exact cosine scan and
 * hybrid search (p50/p99) over agents with that many embedded records (256 dimensions, as
 * local/hash-256); `--quality` scores hit@1/hit@5 of fts, vector and hybrid on the labelled corpus
 * test/fixtures/recall-corpus.json with `--embedder <ref>` (default local/hash-256). `--only vector`
 * or `--only quality` skips the rest.
 *
 * Embedding cost per turn (issue 33): `--only cost` (also part of the default run) — the tokens and
 * USD a turn's embedder calls book (recall's query, hybrid; semantic tool selection's input over 20
 * tools, their vectors cached after the first turn) for each corpus question as a turn's input, with
 * openai/text-embedding-3-small against the fake model server (which bills ceil(chars / 4) tokens a
 * text) and with the built-in embedders (0).
 *
 * pgvector (docs/adr/0050, "pgvector"): `--only vector --pglite [--vector 1000,50000]` measures the
 * HNSW path (the statements the store sends where the database has pgvector) in PGlite: Postgres 17 in
 * WASM, one connection in this process, not a server. It needs no Postgres or Redis.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Queue } from 'bullmq';
import { Admission } from '@switchboard/admission';
import { newId, QueueName } from '@switchboard/contracts';
import { poolOf } from '@switchboard/database';
import { NO_CONTEXT, SemanticToolSelector, TurnEngine, type ContextSources } from '@switchboard/engine';
import {
  decodeSourceRef,
  embedPending,
  MemorySearch,
  memoryRecall,
  writeMemory,
  type MemoryWrite,
} from '@switchboard/memory';
import { createLogger, Metrics } from '@switchboard/observability';
import {
  createEmbedderRegistry,
  EmbedderRegistry,
  embeddingCostUsd,
  ProviderRegistry,
  type ModelProvider,
  type ModelResponse,
} from '@switchboard/providers';
import { createRedis } from '@switchboard/queue';
import { Sql, sql, sqlDbFor } from '@switchboard/store';
import {
  createTestEnv,
  crossRealmSafeFetch,
  FakeLlmServer,
  seedSession,
  seedTenant,
} from '@switchboard/testing';
import { ToolRegistry } from '@switchboard/tools';
import { TurnRunner } from '@switchboard/turns';
import globalSetup from '../libs/testing/src/global-setup';

const { values } = parseArgs({
  options: {
    queries: { type: 'string', default: '500' },
    turns: { type: 'string', default: '300' },
    small: { type: 'string', default: '1000' },
    large: { type: 'string', default: '50000' },
    noise: { type: 'string', default: '20000' },
    vector: { type: 'string', default: '1000,50000,200000' },
    'vector-queries': { type: 'string', default: '100' },
    quality: { type: 'boolean', default: true },
    embedder: { type: 'string', default: 'local/hash-256' },
    only: { type: 'string' },
    pglite: { type: 'boolean', default: false },
  },
});
const QUERIES = Number(values.queries);
const TURNS = Number(values.turns);

// --- Synthetic text: a Zipf-distributed vocabulary of pseudo-words, some CJK ------------------------
let seed = 42;
const rand = () => {
  seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
  return seed / 2 ** 31;
};
const SYLLABLES = [
  'ka',
  'to',
  'mi',
  're',
  'su',
  'no',
  'la',
  'vi',
  'de',
  'po',
  'shi',
  'ran',
  'bel',
  'gor',
  'fen',
];
const VOCAB = Array.from({ length: 5000 }, (_, i) => {
  let w = '';
  for (let n = i + 1; n > 0; n = Math.floor(n / SYLLABLES.length)) w += SYLLABLES[n % SYLLABLES.length];
  return w;
});
const CJK = [
  '机器学习',
  '数据分析',
  '东京タワー',
  '会议记录',
  '部署计划',
  '用户偏好',
  '日本語の勉強',
  '项目进度',
];
// Zipf(1): word k drawn with weight 1/k.
const HARMONIC = VOCAB.reduce((s, _, k) => s + 1 / (k + 1), 0);
const word = (): string => {
  let r = rand() * HARMONIC;
  for (let k = 0; k < VOCAB.length; k++) {
    r -= 1 / (k + 1);
    if (r <= 0) return VOCAB[k];
  }
  return VOCAB[VOCAB.length - 1];
};
const sentence = (n: number): string =>
  Array.from({ length: n }, () => (rand() < 0.05 ? CJK[Math.floor(rand() * CJK.length)] : word())).join(' ');

function records(tenantId: string, agentId: string, n: number): MemoryWrite[] {
  return Array.from({ length: n }, (_, i) => ({
    tenantId,
    agentId,
    kind: i % 3 === 0 ? 'episode' : 'fact',
    title: sentence(4),
    // Facts are a sentence or two; episodes a paragraph.
    content: sentence(i % 3 === 0 ? 120 : 25),
    dedupeKey: `bench:${i}`,
    provenance: { source: 'archivist' },
  }));
}

const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
const summary = (ms: number[]) => {
  const s = [...ms].sort((a, b) => a - b);
  return `p50 ${pct(s, 0.5).toFixed(2)} ms  p95 ${pct(s, 0.95).toFixed(2)} ms  p99 ${pct(s, 0.99).toFixed(2)} ms  max ${s[s.length - 1].toFixed(2)} ms`;
};

class Instant implements ModelProvider {
  readonly name = 'instant';
  async complete(): Promise<ModelResponse> {
    return {
      text: 'ok',
      toolCalls: [],
      usage: { inputTokens: 1, outputTokens: 1, cachedTokens: 0 },
      finishReason: 'stop',
    };
  }
}

async function main() {
  if (values.pglite) return vectorLatencyPglite();
  await globalSetup();
  const env = await createTestEnv();
  const redis = createRedis(env.redisUrl);
  const turnsQueue = new Queue(QueueName.Turns, { connection: redis, prefix: env.queuePrefix });
  const postTurn = new Queue(QueueName.PostTurn, { connection: redis, prefix: env.queuePrefix });
  try {
    const sqlDb = sqlDbFor(poolOf(env.db), 'bench');
    const store = new MemorySearch(sqlDb, new EmbedderRegistry());
    if (values.only === 'quality' || (values.only === undefined && values.quality)) await quality(env, sqlDb);
    if (values.only === 'vector' || values.only === undefined) await vectorLatency(env, sqlDb);
    if (values.only === 'cost' || values.only === undefined) await embeddingCostPerTurn(env, sqlDb);
    if (values.only !== undefined) return;
    const small = await seedTenant(env.db, 'small', { model: 'instant/m' });
    const large = await seedTenant(env.db, 'large', { model: 'instant/m' });
    const seedRecords = async (tenantId: string, agentId: string, n: number) => {
      const all = records(tenantId, agentId, n);
      for (let i = 0; i < all.length; i += 500) await writeMemory(sqlDb, all.slice(i, i + 500));
    };
    const t0 = performance.now();
    await seedRecords(small.tenantId, small.agentId, Number(values.small));
    await seedRecords(large.tenantId, large.agentId, Number(values.large));
    // Noise: other agents of the same tenants and other tenants, written the same way.
    const noise = Number(values.noise);
    for (let i = 0; i < 10; i++) {
      await seedRecords(i % 2 ? large.tenantId : newId(), newId(), Math.floor(noise / 10));
    }
    await sqlDb.execute(sql`ANALYZE memory_records`);
    console.log(
      `seeded ${values.small} + ${values.large} records and ${noise} of other agents/tenants in ` +
        `${((performance.now() - t0) / 1000).toFixed(1)} s\n`,
    );

    // --- Recall alone -------------------------------------------------------------------------------
    const inputs = Array.from({ length: QUERIES }, () => `Could you tell me about ${sentence(6)}?`);
    const recallOf = (agent: { tenantId: string; agentId: string }) => {
      const recall = memoryRecall(store, { limit: 5, timeoutMs: 10_000 });
      return async (input: string) => recall({ tenantId: agent.tenantId, agentId: agent.agentId, input });
    };
    for (const [name, agent, n] of [
      ['1k records', small, values.small],
      ['50k records', large, values.large],
    ] as const) {
      const recall = recallOf(agent);
      for (const input of inputs.slice(0, 50)) await recall(input);
      const ms: number[] = [];
      let hits = 0;
      for (const input of inputs) {
        const started = performance.now();
        if (await recall(input)) hits++;
        ms.push(performance.now() - started);
      }
      console.log(`recall, agent with ${name} (${n}): ${summary(ms)}  (${hits}/${inputs.length} with hits)`);
    }

    // --- Turns with and without recall, interleaved --------------------------------------------------
    const logger = createLogger({ service: 'bench', level: 'silent' });
    const admission = new Admission(env.db, turnsQueue, logger);
    const providers = new ProviderRegistry({}, [new Instant()]);
    const recallSources: ContextSources = {
      memory: memoryRecall(store, { limit: 5, timeoutMs: 250 }),
      contextPack: async () => null,
    };
    const runnerWith = (context: ContextSources) =>
      new TurnRunner({
        db: env.db,
        engine: new TurnEngine({ providers, tools: new ToolRegistry([]), context }),
        tools: new ToolRegistry([]),
        postTurnQueue: postTurn,
        logger,
        metrics: new Metrics('bench'),
        workerId: 'bench',
        leaseMs: 30_000,
        defaultModel: 'instant/m',
      });
    const runners = { without: runnerWith(NO_CONTEXT), with: runnerWith(recallSources) };
    const sessions: string[] = [];
    for (let i = 0; i < 2 * TURNS + 40; i++)
      sessions.push(await seedSession(env.db, large.tenantId, large.agentId));
    const turn = async (kind: 'with' | 'without', input: string) => {
      const sessionId = sessions.pop()!;
      const started = performance.now();
      const { turnId } = await admission.admit({
        tenantId: large.tenantId,
        sessionId,
        kind: 'operator_prompt',
        origin: { kind: 'operator' },
        body: { type: 'text', text: input },
        deliverySurface: 'http_public_enqueue',
        admissionContext: 'control_authenticated',
      });
      if ((await runners[kind].handle({ turnId, sessionId, tenantId: large.tenantId, trace: {} })) !== 'done')
        throw new Error('busy');
      return performance.now() - started;
    };
    for (let i = 0; i < 20; i++) {
      await turn('without', inputs[i]);
      await turn('with', inputs[i]);
    }
    const times = { with: [] as number[], without: [] as number[] };
    for (let i = 0; i < TURNS; i++) {
      const input = inputs[i % inputs.length];
      // Alternate which goes first so drift affects both alike.
      for (const kind of i % 2 ? (['with', 'without'] as const) : (['without', 'with'] as const))
        times[kind].push(await turn(kind, input));
    }
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    console.log(`\nturn (admit + run, instant model, agent with ${values.large} records), ${TURNS} each:`);
    console.log(`  without recall: ${summary(times.without)}  mean ${mean(times.without).toFixed(2)} ms`);
    console.log(`  with recall:    ${summary(times.with)}  mean ${mean(times.with).toFixed(2)} ms`);
    console.log(`  ratio with / without (mean): ${(mean(times.with) / mean(times.without)).toFixed(2)}`);
  } finally {
    await turnsQueue.close();
    await postTurn.close();
    await redis.quit();
    await env.cleanup();
  }
}

type Env = Awaited<ReturnType<typeof createTestEnv>>;
type Db = ReturnType<typeof sqlDbFor>;

/**
 * The exact cosine scan and hybrid search at each size: one agent per size, its records written as
 * recall's are, their vectors random unit vectors of 256 dimensions (the scan's cost depends on the
 * count and the dimension, not the values), inserted in SQL.
 */
async function vectorLatency(env: Env, db: Db) {
  const sizes = values.vector
    .split(',')
    .map(Number)
    .filter((n) => n > 0);
  const queries = Number(values['vector-queries']);
  const embedders = new EmbedderRegistry();
  const search = new MemorySearch(db, embedders);
  for (const n of sizes) {
    const agent = await seedTenant(env.db, `vector-${n}`, { model: 'instant/m' });
    await env.db.agent.update({
      where: { id: agent.agentId },
      data: { embedder: 'local/hash-256', memoryVectorsModel: 'local/hash-256' },
    });
    const t0 = performance.now();
    const all = records(agent.tenantId, agent.agentId, n);
    for (let i = 0; i < all.length; i += 1000) await writeMemory(db, all.slice(i, i + 1000));
    await db.execute(sql`
      INSERT INTO memory_embeddings (record_id, tenant_id, agent_id, model, dimensions, embedding)
      SELECT m.id, m.tenant_id, m.agent_id, 'local/hash-256', 256,
        (SELECT array_agg((random() - 0.5)::real) FROM generate_series(1, 256) g WHERE m.id IS NOT NULL)
      FROM memory_records m WHERE m.agent_id = ${agent.agentId}::uuid`);
    await db.execute(sql`ANALYZE memory_records`);
    await db.execute(sql`ANALYZE memory_embeddings`);
    console.log(
      `vector: seeded ${n} records with vectors in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
    );
    const inputs = Array.from({ length: queries }, () => `Could you tell me about ${sentence(6)}?`);
    for (const mode of ['fts', 'vector', 'hybrid'] as const) {
      for (const input of inputs.slice(0, 5)) await search.search({ ...agent, query: input, limit: 5, mode });
      const ms: number[] = [];
      for (const input of inputs) {
        const started = performance.now();
        const r = await search.search({ ...agent, query: input, limit: 5, mode });
        if (r.used !== mode) throw new Error(`${mode} answered as ${r.used}: ${r.warning}`);
        ms.push(performance.now() - started);
      }
      console.log(`  ${mode.padEnd(6)} at ${String(n).padStart(6)} records: ${summary(ms)}`);
    }
  }
  console.log();
}

/**
 * The pgvector path in PGlite: per size, one agent's records (short synthetic text) with random unit
 * vectors of 256 dimensions in `embedding` and `embedding_v`, the set's HNSW index (re)built over all
 * the set's rows after them (m 16, ef_construction 64: pgvector's defaults), then `vectorSearch` (the HNSW statement with
 * ef_search and the iterative scan) and the exact pgvector statement, p50/p99, and the HNSW answers'
 * recall@5 against the exact ones. Sizes run in order on one database, so a later agent's index also
 * holds the earlier agents' vectors; the smallest agent is measured again at the end, inside the
 * largest index (a small agent in a big shared set).
 */
async function vectorLatencyPglite() {
  const { PGlite } = await import('@electric-sql/pglite');
  const { vector } = await import('@electric-sql/pglite/vector');
  const { migrationSql, pgliteRunner } = await import('@switchboard/testing');
  const { ensureHnswIndex, forgetPgvectorSupport, hnswIndexName, nearestSql, pgvectorSupport, vectorSearch } =
    await import('@switchboard/memory');
  const sizes = values.vector
    .split(',')
    .map(Number)
    .filter((n) => n > 0);
  const queries = Number(values['vector-queries']);
  const pg = new PGlite({ extensions: { vector } });
  const db = pgliteRunner(pg);
  await pg.exec('CREATE TABLE agents (id uuid PRIMARY KEY, tenant_id uuid NOT NULL, embedder text)');
  for (const m of [
    '20261124000100_memory',
    '20261207020000_memory_vectors',
    '20261208010000_memory_pgvector',
  ])
    await pg.exec(migrationSql(m));
  await pg.exec(`SET maintenance_work_mem = '1GB'`);
  const support = await pgvectorSupport(db);
  if (!support) throw new Error('PGlite has no pgvector');
  console.log(`pgvector ${support.version} in PGlite (WASM, one connection in this process)`);
  const randomUnit = () => {
    const v = new Float32Array(256);
    let norm = 0;
    for (let i = 0; i < 256; i++) norm += (v[i] = rand() - 0.5) ** 2;
    for (let i = 0; i < 256; i++) v[i] /= Math.sqrt(norm);
    return v;
  };
  const model = 'local/hash-256';
  const measure = async (agent: { tenantId: string; agentId: string }, n: number, label: string) => {
    const qs = Array.from({ length: queries }, randomUnit);
    const plan = await db.transaction(async (tx) => {
      await tx.execute(sql`SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true)`);
      const rows = await tx.rows<{ 'QUERY PLAN': string }>(
        sql`EXPLAIN ${nearestSql({ ...agent, model, vector: qs[0], limit: 5 }, 'hnsw')}`,
      );
      return rows.map((r) => r['QUERY PLAN']).join('\n');
    });
    const usesHnsw = plan.includes(hnswIndexName(model, 256));
    for (const kind of ['hnsw', 'exact'] as const) {
      const ms: number[] = [];
      let found = 0;
      for (const [i, v] of qs.entries()) {
        const q = { ...agent, model, vector: v, limit: 5 };
        const started = performance.now();
        const near =
          kind === 'hnsw' ? await vectorSearch(db, q) : await db.rows<{ id: string }>(nearestSql(q, 'exact'));
        if (i >= 5 || queries <= 5) ms.push(performance.now() - started);
        if (kind === 'hnsw') {
          const exact = new Set((await db.rows<{ id: string }>(nearestSql(q, 'exact'))).map((r) => r.id));
          found += near.filter((r) => exact.has(r.id)).length;
        }
      }
      const recall = kind === 'hnsw' ? `  recall@5 ${(found / (qs.length * 5)).toFixed(3)}` : '';
      const how = kind === 'hnsw' ? (usesHnsw ? ' (plan: HNSW)' : ' (plan: b-tree + sort)') : '';
      console.log(
        `  ${kind.padEnd(5)} at ${String(n).padStart(6)} records${label}: ${summary(ms)}${recall}${how}`,
      );
    }
  };
  const agents: { tenantId: string; agentId: string; n: number }[] = [];
  for (const n of sizes) {
    const agent = { tenantId: newId(), agentId: newId() };
    agents.push({ ...agent, n });
    await db.execute(sql`INSERT INTO agents (id, tenant_id, embedder, memory_vectors_model)
      VALUES (${agent.agentId}::uuid, ${agent.tenantId}::uuid, ${model}, ${model})`);
    // Rows first, the index built over all of them after (much faster than inserting into it).
    await db.execute(sql`DROP INDEX IF EXISTS ${new Sql([hnswIndexName(model, 256)], [])}`);
    forgetPgvectorSupport(db);
    const t0 = performance.now();
    await db.execute(sql`
      INSERT INTO memory_records (id, tenant_id, agent_id, kind, title, content, dedupe_key, search, created_at)
      SELECT gen_random_uuid(), ${agent.tenantId}::uuid, ${agent.agentId}::uuid, 'fact', 'record ' || i,
        'content ' || i, 'bench:' || i, to_tsvector('simple', 'record ' || i), now() - i * interval '1 second'
      FROM generate_series(1, ${n}) i`);
    await db.execute(sql`
      INSERT INTO memory_embeddings (record_id, tenant_id, agent_id, model, dimensions, embedding, embedding_v)
      SELECT id, tenant_id, agent_id, ${model}, 256, v, v::vector FROM (
        SELECT m.id, m.tenant_id, m.agent_id,
          (SELECT array_agg((random() - 0.5)::real) FROM generate_series(1, 256) g WHERE m.id IS NOT NULL) AS v
        FROM memory_records m WHERE m.agent_id = ${agent.agentId}::uuid) s`);
    await db.execute(sql`UPDATE memory_embeddings SET embedding_v = l2_normalize(embedding_v)
      WHERE agent_id = ${agent.agentId}::uuid`);
    const seeded = performance.now();
    await ensureHnswIndex(db, model, 256);
    await db.execute(sql`ANALYZE memory_records, memory_embeddings`);
    console.log(
      `pglite: seeded ${n} records in ${((seeded - t0) / 1000).toFixed(1)} s, index and ANALYZE ${((performance.now() - seeded) / 1000).toFixed(1)} s`,
    );
    await measure(agent, n, '');
  }
  if (agents.length > 1) {
    const total = agents.reduce((s, a) => s + a.n, 0);
    await measure(agents[0], agents[0].n, ` (in a set of ${total})`);
  }
  await pg.close();
  console.log();
}

interface Corpus {
  records: { id: string; kind: 'fact' | 'episode' | 'note'; title: string; content: string }[];
  questions: { q: string; answers: string[]; paraphrase: boolean }[];
}

/** hit@1 and hit@5 of each mode on the labelled corpus, with `--embedder`. */
async function quality(env: Env, db: Db) {
  const corpus = JSON.parse(
    readFileSync(path.resolve(__dirname, '../test/fixtures/recall-corpus.json'), 'utf8'),
  ) as Corpus;
  const embedders = new EmbedderRegistry();
  const ref = values.embedder;
  const agent = await seedTenant(env.db, 'quality', { model: 'instant/m' });
  await env.db.agent.update({ where: { id: agent.agentId }, data: { embedder: ref } });
  await writeMemory(
    db,
    corpus.records.map((r) => ({
      ...agent,
      kind: r.kind,
      title: r.title,
      content: r.content,
      dedupeKey: r.id,
      provenance: { source: 'api' },
    })),
  );
  const done = await embedPending(db, embedders, agent, { maxBatches: 1000 });
  if (!done.done) throw new Error('corpus not embedded');
  const ids = new Map(
    (
      await db.rows<{ id: string; key: string }>(
        sql`SELECT id, dedupe_key AS key FROM memory_records WHERE agent_id = ${agent.agentId}::uuid`,
      )
    ).map((r) => [r.id, r.key]),
  );
  const search = new MemorySearch(db, embedders);
  console.log(
    `quality on ${corpus.questions.length} questions (${corpus.questions.filter((q) => q.paraphrase).length} paraphrases), embedder ${ref}:`,
  );
  // The rank (1–5, else 6) of the first answer per question and mode: hybrid must never rank one lower than fts.
  const ranks = new Map<string, number[]>();
  for (const mode of ['fts', 'vector', 'hybrid'] as const) {
    const score = { all: [0, 0], para: [0, 0], literal: [0, 0] };
    let tokens = 0;
    ranks.set(mode, []);
    for (const question of corpus.questions) {
      const r = await search.search({ ...agent, query: question.q, limit: 5, mode });
      tokens += r.embeddingTokens;
      const keys = r.hits.map((h) => ids.get(decodeSourceRef(h.sourceRef) ?? ''));
      const found = keys.findIndex((k) => question.answers.includes(k ?? ''));
      ranks.get(mode)!.push(found < 0 ? 6 : found + 1);
      const at1 = question.answers.includes(keys[0] ?? '') ? 1 : 0;
      const at5 = keys.some((k) => question.answers.includes(k ?? '')) ? 1 : 0;
      for (const bucket of ['all', question.paraphrase ? 'para' : 'literal'] as const) {
        score[bucket][0] += at1;
        score[bucket][1] += at5;
      }
    }
    const n = corpus.questions.length;
    const np = corpus.questions.filter((q) => q.paraphrase).length;
    const f = (x: number, d: number) => (d === 0 ? '-' : (x / d).toFixed(2));
    console.log(
      `  ${mode.padEnd(6)} hit@1 ${f(score.all[0], n)} hit@5 ${f(score.all[1], n)}` +
        `  (literal ${f(score.literal[0], n - np)}/${f(score.literal[1], n - np)}, paraphrase ${f(score.para[0], np)}/${f(score.para[1], np)})` +
        `  query embedding tokens ${tokens}`,
    );
  }
  const fts = ranks.get('fts')!;
  const worse = ranks
    .get('hybrid')!
    .flatMap((rank, i) =>
      rank > fts[i] ? [`"${corpus.questions[i].q}" (fts ${fts[i]}, hybrid ${rank})`] : [],
    );
  console.log(
    `  hybrid ranks the answer below fts on ${worse.length} of ${fts.length} questions${worse.length ? `: ${worse.join('; ')}` : ''}`,
  );
  console.log();
}

/** What a turn's embedder calls book, per turn: recall's query and tool selection's input (issue 33). */
async function embeddingCostPerTurn(env: Env, db: Db) {
  const corpus = JSON.parse(
    readFileSync(path.resolve(__dirname, '../test/fixtures/recall-corpus.json'), 'utf8'),
  ) as Corpus;
  const server = await FakeLlmServer.start();
  try {
    const embedders = createEmbedderRegistry({
      apiKey: 'bench',
      baseURL: server.openaiBaseUrl,
      fetch: crossRealmSafeFetch,
    });
    const tools = Array.from({ length: 20 }, (_, i) => ({
      name: `tool_${i}`,
      description: sentence(12),
      parameters: { type: 'object', properties: {} },
    }));
    const turns = corpus.questions.map((q) => q.q);
    console.log(
      `embedding cost per turn (${turns.length} turns: recall's query + tool selection over 20 tools):`,
    );
    for (const ref of ['openai/text-embedding-3-small', 'local/hash-256', 'local/words-100d']) {
      const agent = await seedTenant(env.db, `cost-${ref}`, { model: 'instant/m' });
      await env.db.agent.update({ where: { id: agent.agentId }, data: { embedder: ref } });
      await writeMemory(
        db,
        corpus.records.map((r) => ({
          ...agent,
          kind: r.kind,
          title: r.title,
          content: r.content,
          dedupeKey: r.id,
          provenance: { source: 'api' as const },
        })),
      );
      const embedded = await embedPending(db, embedders, agent, { maxBatches: 1000 });
      const search = new MemorySearch(db, embedders);
      const selector = new SemanticToolSelector(embedders);
      let recallTokens = 0;
      let selectionTokens = 0;
      for (const input of turns) {
        recallTokens += (await search.search({ ...agent, query: input, limit: 5, mode: 'hybrid' }))
          .embeddingTokens;
        await selector.choose(tools, input, { maxPerTurn: 5, pinned: [], embedder: ref }, undefined, (s) => {
          selectionTokens += s.inputTokens;
        });
      }
      const perTurn = (recallTokens + selectionTokens) / turns.length;
      const usd = embeddingCostUsd(ref, recallTokens + selectionTokens) / turns.length;
      console.log(
        `  ${ref.padEnd(30)} ${perTurn.toFixed(1)} tokens/turn (recall ${(recallTokens / turns.length).toFixed(1)}, ` +
          `tool selection ${(selectionTokens / turns.length).toFixed(1)}), $${usd.toFixed(8)}/turn ` +
          `($${(usd * 1000).toFixed(4)} per 1k turns); memory-embed job: ${embedded.inputTokens} tokens, ` +
          `$${embeddingCostUsd(ref, embedded.inputTokens).toFixed(8)} for ${corpus.records.length} records`,
      );
    }
  } finally {
    await server.close();
  }
  console.log();
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err instanceof Error ? err.stack : err);
    process.exit(1);
  },
);
