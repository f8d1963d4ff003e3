/**
 * The token economy of a conversation (issue 21, docs/adr/0032): a scripted 20-turn conversation per
 * provider wire format (Anthropic Messages, OpenAI Responses, OpenAI Chat Completions) through the
 * real harness (admission, TurnRunner, engine, the official SDKs) against the fake model server
 * simulating the providers' prefix caching, with the archivist running as the hooks worker runs it
 * (debounced per session, its session jobs on BullMQ). Every sixth-ish turn calls a tool whose output
 * is one of the kinds of the corpus (an API's JSON list, a failing test log, a diff with a lockfile,
 * an HTML page, search results, a source file).
 *
 * Per turn: input tokens, cached tokens (read / written), tool-result tokens before and after
 * compaction, model calls (the turn's rounds and post-turn hooks'), USD. Goals: on turns 2–20 at
 * least 60 % of input tokens read from the cache on every provider; at most 1.1 model calls per turn
 * over the run, hooks included.
 *
 *   npm run bench:tokens -- [--turns 20]
 */
import { parseArgs } from 'node:util';
import { Queue, Worker, type Job } from 'bullmq';
import { z } from 'zod';
import { Admission } from '@switchboard/admission';
import { Jobs, QueueName, type PostTurnJob } from '@switchboard/contracts';
import { poolOf } from '@switchboard/database';
import { TurnEngine } from '@switchboard/engine';
import { archivistSessionDedup, runArchivist, type HookContext } from '@switchboard/hooks';
import { memoryRecall, MemoryStore } from '@switchboard/memory';
import { createLogger, Metrics } from '@switchboard/observability';
import { ProviderRegistry } from '@switchboard/providers';
import { consume, createRedis, publish } from '@switchboard/queue';
import { sqlDbFor } from '@switchboard/store';
import {
  createTestEnv,
  FakeLlmServer,
  hookContext,
  seedSession,
  seedTenant,
  type RecordedRequest,
  type ScriptedReply,
} from '@switchboard/testing';
import { defineTool, ToolRegistry, type ToolDefinition } from '@switchboard/tools';
import { TurnRunner } from '@switchboard/turns';
import globalSetup from '../libs/testing/src/global-setup';

const { values } = parseArgs({ options: { turns: { type: 'string', default: '20' } } });
const TURNS = Number(values.turns);

/** The wire formats, each with a model the maintained price table knows. */
const PROVIDERS = [
  {
    wire: 'Anthropic Messages',
    model: 'anthropic/claude-sonnet-4-6',
    archivist: 'anthropic/claude-haiku-4-5',
  },
  { wire: 'OpenAI Responses', model: 'openai/gpt-4.1', archivist: 'openai/gpt-4.1-mini' },
  { wire: 'OpenAI Chat Completions', model: 'openai-chat/gpt-4.1', archivist: 'openai-chat/gpt-4.1-mini' },
] as const;

// --- The conversation ---------------------------------------------------------------------------------
let seed = 7;
const rand = () => {
  seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
  return seed / 2 ** 31;
};
const WORDS =
  'deploy service latency budget region tenant queue worker release rollback metric alert owner ticket'.split(
    ' ',
  );
const words = (n: number) =>
  Array.from({ length: n }, () => WORDS[Math.floor(rand() * WORDS.length)]).join(' ');

/** Tool outputs of each kind the corpus has, generated (deterministic, realistic in shape and size). */
const TOOL_OUTPUTS: Record<string, () => string> = {
  json_list: () =>
    JSON.stringify(
      Array.from({ length: 60 }, (_, i) => ({
        id: 1000 + i,
        name: `service-${i}`,
        status: i % 17 === 3 ? 'error' : 'ok',
        latencyMs: 40 + ((i * 37) % 200),
        region: ['eu-west-3', 'us-east-1', 'ap-south-1'][i % 3],
        owner: `team-${i % 7}`,
      })),
    ),
  test_log: () =>
    [
      ...Array.from({ length: 120 }, (_, i) => `PASS src/module-${i}.spec.ts (${(i % 9) + 1}.${i % 10}s)`),
      'FAIL src/billing/invoice.spec.ts',
      '  ● invoice › rounds totals to the cent',
      '    expect(received).toBe(expected)',
      '    Expected: "10.00"  Received: "9.99"',
      'Tests: 1 failed, 540 passed, 541 total',
    ].join('\n'),
  diff: () =>
    [
      'diff --git a/src/queue.ts b/src/queue.ts',
      '@@ -10,7 +10,9 @@ export function publish() {',
      '-  const delay = 0;',
      '+  const delay = options.delay ?? 0;',
      '+  const dedup = options.deduplication;',
      'diff --git a/package-lock.json b/package-lock.json',
      ...Array.from(
        { length: 150 },
        (_, i) =>
          `+    "node_modules/pkg-${i}": { "version": "1.${i}.0", "integrity": "sha512-${'x'.repeat(40)}" },`,
      ),
    ].join('\n'),
  html: () =>
    `<html><head><style>${'.c{color:red}'.repeat(80)}</style></head><body>${Array.from(
      { length: 40 },
      (_, i) => `<div class="row"><span>Release ${i}</span><p>${words(18)}</p></div>`,
    ).join('')}</body></html>`,
  search: () =>
    Array.from({ length: 80 }, (_, i) => `src/area-${i % 9}/file-${i}.ts:${10 + i}: ${words(10)}`).join('\n'),
  source: () =>
    Array.from(
      { length: 25 },
      (_, i) =>
        `export function handler${i}(input: Input): Output {\n${'  const x = compute(input);\n'.repeat(6)}  return x;\n}\n`,
    ).join('\n'),
};
const KINDS = Object.keys(TOOL_OUTPUTS);

/** Turn i's user message: every third turn (from the second) asks for a tool output of the next kind. */
function userMessage(i: number): { text: string; kind?: string } {
  if (i % 3 === 1) {
    const kind = KINDS[Math.floor(i / 3) % KINDS.length];
    return {
      text: `Please fetch the ${kind} for the ${words(4)} and tell me what matters. [tool:${kind}]`,
      kind,
    };
  }
  return { text: `About the ${words(6)}: ${words(30)}. What should we do next?` };
}

/**
 * The hook the TokenJuice compaction (issue 21 part 2) fills: a tool result's text as it enters
 * history. Until then every result enters whole: "after" equals "before".
 */
const compactToolResult: (tool: string, text: string) => string = (_tool, text) => text;

const corpusTool = defineTool({
  name: 'corpus_fetch',
  description: 'Fetches a document of the given kind',
  schema: z.strictObject({ kind: z.string() }),
  sideEffect: 'read_only',
  timeoutMs: 5_000,
  needsApproval: false,
  execute: async ({ kind }) =>
    compactToolResult('corpus_fetch', (TOOL_OUTPUTS[kind] ?? (() => 'unknown kind'))()),
}) as ToolDefinition;

const INSTRUCTIONS = [
  'You are the operations assistant of a platform team. Answer precisely and briefly, cite identifiers verbatim,',
  'and prefer concrete next steps. '.repeat(1),
  ...Array.from({ length: 40 }, (_, i) => `Rule ${i + 1}: ${words(14)}.`),
].join('\n');

const tokens = (chars: number) => Math.ceil(chars / 4);

/** The fake model: the archivist gets its JSON; a turn asking for a tool calls it once, then answers. */
function reply(req: RecordedRequest): ScriptedReply {
  const raw = req.rawBody;
  if (raw.includes('You are the archivist')) {
    return { kind: 'message', text: JSON.stringify({ facts: [{ title: 'Next step', content: words(20) }] }) };
  }
  const body = req.body as Record<string, unknown>;
  const items = (body['messages'] ?? body['input']) as unknown[];
  const last = JSON.stringify(items[items.length - 1] ?? '');
  const asked = /\[tool:(\w+)\]/.exec(last);
  if (asked && !/tool_result|function_call_output|"role":"tool"/.test(last)) {
    return {
      kind: 'message',
      toolCalls: [{ name: 'corpus_fetch', arguments: JSON.stringify({ kind: asked[1] }) }],
    };
  }
  return { kind: 'message', text: `${words(40)}.` };
}

interface TurnFigures {
  input: number;
  cached: number;
  written: number;
  toolBefore: number;
  toolAfter: number;
  calls: number;
  hookCalls: number;
  usd: number;
  savedUsd: number;
}

async function main() {
  await globalSetup();
  const env = await createTestEnv();
  const llm = await FakeLlmServer.start();
  llm.simulatePromptCache();
  llm.setDefault(reply);
  const redis = createRedis(env.redisUrl);
  const turnsQueue = new Queue(QueueName.Turns, { connection: redis, prefix: env.queuePrefix });
  const postTurn = new Queue(QueueName.PostTurn, { connection: redis, prefix: env.queuePrefix });
  const logger = createLogger({ service: 'bench', level: 'silent' });
  const providers = new ProviderRegistry({
    openaiApiKey: 'sk-bench',
    openaiBaseUrl: llm.openaiBaseUrl,
    anthropicApiKey: 'sk-ant-bench',
    anthropicBaseUrl: llm.anthropicBaseUrl,
  });
  const sqlDb = sqlDbFor(poolOf(env.db), 'bench');
  const tools = new ToolRegistry([corpusTool]);
  const runner = new TurnRunner({
    db: env.db,
    engine: new TurnEngine({
      providers,
      tools,
      context: {
        memory: memoryRecall(new MemoryStore(sqlDb), { limit: 5, timeoutMs: 1000 }),
        contextPack: async () => null,
      },
    }),
    tools,
    postTurnQueue: postTurn,
    logger,
    metrics: new Metrics('bench'),
    workerId: 'bench',
    leaseMs: 30_000,
    defaultModel: 'scripted/echo',
  });
  const admission = new Admission(env.db, turnsQueue, logger);
  const hooks: HookContext = hookContext(env, {
    models: { providers, defaultModel: 'scripted/echo' },
    deferArchivist: (j, delayMs) =>
      publish(postTurn, Jobs.postTurn, j, {
        delay: delayMs,
        deduplication: archivistSessionDedup(j.sessionId!),
      }),
  });
  const workerConnection = createRedis(env.redisUrl);
  const worker = new Worker(
    QueueName.PostTurn,
    async (job: Job) => {
      // Only the archivist's session jobs: the per-turn hooks run inline below.
      const data = job.data as PostTurnJob;
      if (!data.sessionId) return 'ignored';
      return consume(Jobs.postTurn, job, (d: PostTurnJob) => runArchivist(hooks, d));
    },
    { connection: workerConnection, prefix: env.queuePrefix },
  );

  const results: { wire: string; rows: TurnFigures[] }[] = [];
  try {
    for (const p of PROVIDERS) {
      const { tenantId, agentId } = await seedTenant(
        env.db,
        p.wire,
        { model: p.model, tools: ['corpus_fetch'] },
        { settings: { modelRoutes: { summarization: p.archivist } } },
      );
      await env.db.agent.update({ where: { id: agentId }, data: { instructions: INSTRUCTIONS } });
      const sessionId = await seedSession(env.db, tenantId, agentId);
      const rows: TurnFigures[] = [];
      seed = 7;
      for (let i = 0; i < TURNS; i++) {
        const msg = userMessage(i);
        const before = llm.requests.length;
        const { turnId } = await admission.admit({
          tenantId,
          sessionId,
          kind: 'operator_prompt',
          origin: { kind: 'operator' },
          body: { type: 'text', text: msg.text },
          deliverySurface: 'http_public_enqueue',
          admissionContext: 'control_authenticated',
        });
        if ((await runner.handle({ turnId, sessionId, tenantId, trace: {} })) !== 'done')
          throw new Error('busy');
        const turnCalls = llm.requests.length - before;
        // The archivist as the hooks worker runs it: deferred, or (the afterTurns-th) distilled now.
        await runArchivist(hooks, { turnId, tenantId, hook: 'archivist', trace: {} });
        await until(async () => {
          const pending = await env.db.hookRun.count({
            where: { tenantId, hook: 'archivist', status: 'deferred' },
          });
          return pending < 10 && (await postTurn.getActiveCount()) === 0;
        });
        const t = await env.db.turn.findUniqueOrThrow({ where: { id: turnId } });
        const hookEntries = await env.db.ledgerEntry.findMany({
          where: { tenantId, turnId, key: { startsWith: 'hook:' } },
        });
        const calls = await env.db.toolCall.findMany({ where: { turnId } });
        // The result as the model reads it: a string result is its text.
        const toolChars = calls.reduce(
          (n, c) => n + (typeof c.result === 'string' ? c.result : JSON.stringify(c.result ?? '')).length,
          0,
        );
        rows.push({
          input: t.inputTokens,
          cached: t.cachedTokens,
          written: t.cacheWriteTokens,
          toolBefore: msg.kind ? tokens(TOOL_OUTPUTS[msg.kind]().length) : 0,
          toolAfter: tokens(toolChars),
          calls: turnCalls,
          hookCalls: llm.requests.length - before - turnCalls,
          usd: Number(t.costUsd) + hookEntries.reduce((n, e) => n + Number(e.costUsd), 0),
          savedUsd: Number(t.cacheSavedUsd) + hookEntries.reduce((n, e) => n + Number(e.cacheSavedUsd), 0),
        });
      }
      results.push({ wire: p.wire, rows });
    }
  } finally {
    await worker.close();
    await workerConnection.quit();
    await turnsQueue.close();
    await postTurn.close();
    await redis.quit();
    await llm.close();
    await env.cleanup();
  }
  report(results);
}

async function until(probe: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error('timed out waiting for the archivist');
    await new Promise((r) => setTimeout(r, 20));
  }
}

function report(results: { wire: string; rows: TurnFigures[] }[]): void {
  const pad = (v: string | number, n: number) => String(v).padStart(n);
  for (const { wire, rows } of results) {
    console.log(`\n## ${wire}\n`);
    console.log(
      '| turn | input tok | cached tok | cache writes | cached % | tool-result tok before → after (TokenJuice: not wired) | model calls (turn + hooks) | USD | saved by caching |',
    );
    console.log('| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
    rows.forEach((r, i) => {
      console.log(
        `| ${i + 1} | ${r.input} | ${r.cached} | ${r.written} | ${r.input ? ((100 * r.cached) / r.input).toFixed(0) : 0} | ${
          r.toolBefore ? `${r.toolBefore} → ${r.toolAfter}` : '–'
        } | ${r.calls} + ${r.hookCalls} | ${r.usd.toFixed(6)} | ${r.savedUsd.toFixed(6)} |`,
      );
    });
    const later = rows.slice(1);
    const input = later.reduce((n, r) => n + r.input, 0);
    const cached = later.reduce((n, r) => n + r.cached, 0);
    const calls = rows.reduce((n, r) => n + r.calls + r.hookCalls, 0);
    const hookCalls = rows.reduce((n, r) => n + r.hookCalls, 0);
    const rounds = rows.reduce((n, r) => n + r.calls, 0);
    const toolBefore = rows.reduce((n, r) => n + r.toolBefore, 0);
    const toolAfter = rows.reduce((n, r) => n + r.toolAfter, 0);
    const usd = rows.reduce((n, r) => n + r.usd, 0);
    const saved = rows.reduce((n, r) => n + r.savedUsd, 0);
    const cachedShare = input ? (100 * cached) / input : 0;
    console.log(
      `\n${wire}: turns 2–${rows.length}: ${pad(cached, 7)} of ${input} input tokens cached = ${cachedShare.toFixed(1)} % ` +
        `(goal ≥ 60 %: ${cachedShare >= 60 ? 'met' : 'NOT met'}); model calls ${calls} over ${rows.length} turns = ` +
        `${(calls / rows.length).toFixed(2)} per turn (${rounds} turn rounds, ${hookCalls} archivist); hooks add ` +
        `${(hookCalls / rows.length).toFixed(2)} per turn (goal ≤ 0.10: ${hookCalls / rows.length <= 0.1 ? 'met' : 'NOT met'}); ` +
        `tool-result tokens ${toolBefore} → ${toolAfter}; USD ${usd.toFixed(6)}, caching saved ${saved.toFixed(6)} ` +
        `(${((100 * saved) / (usd + saved)).toFixed(0)} % of what the run would have cost)`,
    );
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err instanceof Error ? err.stack : err);
    process.exit(1);
  },
);
