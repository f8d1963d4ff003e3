/**
 * The token economy of a conversation (issue 21, docs/adr/0032, docs/adr/0033): a scripted 20-turn
 * coding-agent conversation per provider wire format (Anthropic Messages, OpenAI Responses, OpenAI
 * Chat Completions) through the real harness (admission, TurnRunner, engine with TokenJuice and its
 * originals store, the official SDKs) against the fake model server simulating the providers' prefix
 * caching, with the archivist running as the hooks worker runs it (debounced per session, its session
 * jobs on BullMQ). The tools return the checked-in corpus (libs/tokenjuice/fixtures: an API's JSON
 * list, a failing test log, a git diff with lockfiles, an HTML page, search results, a source file),
 * three at a time in two turns, and the agent compacts them as in production (toolResultCompression
 * `auto`).
 *
 * Per turn: input tokens, cached tokens (read / written), tool-result tokens before and after
 * compaction as the harness recorded them (the tool call's stored outcome against the transcript's
 * tool message), model calls (the turn's rounds, its side calls, post-turn hooks'), USD. Goals: on
 * turns 2–20 at least 60 % of input tokens read from the cache on every provider; tool-result tokens
 * at least 3× fewer over the corpus; at most 1.1 model calls per turn over the run, hooks included.
 *
 *   npm run bench:tokens -- [--turns 20]
 */
import { isDeepStrictEqual, parseArgs } from 'node:util';
import { Queue, Worker, type Job } from 'bullmq';
import { encode } from 'gpt-tokenizer';
import { z } from 'zod';
import { Admission } from '@switchboard/admission';
import { Jobs, QueueName, type PostTurnJob } from '@switchboard/contracts';
import { poolOf, type Db } from '@switchboard/database';
import { TurnEngine } from '@switchboard/engine';
import { archivistSessionDedup, runArchivist, type HookContext } from '@switchboard/hooks';
import { MemorySearch, memoryRecall } from '@switchboard/memory';
import { createLogger, Metrics } from '@switchboard/observability';
import { EmbedderRegistry, ProviderRegistry } from '@switchboard/providers';
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
import { tokenjuiceCorpus, type CorpusEntry } from '@switchboard/tokenjuice';
import { OriginalsStore, tokenjuiceRetrieveTool } from '@switchboard/tokenjuice/store';
import { defineTool, ToolRegistry, type ToolDefinition } from '@switchboard/tools';
import { TurnRunner } from '@switchboard/turns';
import globalSetup from '../libs/testing/src/global-setup';

const { values } = parseArgs({ options: { turns: { type: 'string', default: '20' } } });
const TURNS = Math.min(Number(values.turns), 20);

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
  'invoice rounding total cent ledger decimal charge currency test fixture release rollback commit review owner'.split(
    ' ',
  );
const words = (n: number) =>
  Array.from({ length: n }, () => WORDS[Math.floor(rand() * WORDS.length)]).join(' ');

/**
 * The checked-in corpus (libs/tokenjuice/fixtures) as the tools return it: the API's JSON list and the
 * documentation page through `http_fetch`, the failing test run, the `git log -p` with lockfiles, the
 * search results and the source file through a workspace MCP server's tools.
 */
const CORPUS = tokenjuiceCorpus();
const entry = (file: string): CorpusEntry => CORPUS.find((e) => e.file === file)!;

/**
 * A coding agent's session on a billing bug, 20 operator messages. The corpus arrives in two turns
 * that each ask for three things at once — the model calls the three tools in one round (parallel
 * tool calls), reads the results in the next — as a coding agent gathers what it needs; two
 * messages are bare acknowledgements (the archivist skips them: nothing new).
 */
const CONVERSATION: { text: string; tools?: CorpusEntry[] }[] = [
  {
    text: 'Hi! The nightly invoice job flagged totals that are off by a cent for some tenants. Can you help me dig in?',
  },
  {
    text:
      'Run the contracts and engine unit tests, show me the last two commits with their patches, and grep ' +
      'the store and turns libraries for tenantId so we see where the tenant filter is applied.',
    tools: [
      entry('failing-test-run.log'),
      entry('git-log-patch-with-lockfile.diff'),
      entry('search-results.txt'),
    ],
  },
  { text: 'Which of the failing tests is closest to the rounding problem, and why do you think so?' },
  { text: 'The lockfile change in the second commit bumped a decimal library. Could that be the cause?' },
  {
    text: 'We round with half-even in the ledger but half-up in the invoice renderer, I believe. Check my reasoning.',
  },
  { text: 'thanks, that helps' },
  {
    text:
      'Now pull the charges list from the billing API (limit 120), open libs/subagents/src/tasks.ts, and ' +
      'fetch the bignumber.js documentation page so we can compare its rounding modes.',
    tools: [entry('api-charges-list.json'), entry('source-file.ts.txt'), entry('docs-page.html')],
  },
  { text: 'Which charges in that list failed or look like outliers? Give me their ids.' },
  { text: 'Does ROUND_HALF_EVEN in bignumber.js match what the ledger does on the 8th decimal?' },
  {
    text: 'How does the task service carry the tenant into child turns? Is any query missing the tenant filter?',
  },
  {
    text: 'Draft a fix: one rounding helper used by both the ledger and the renderer, with the mode as a constant.',
  },
  { text: 'What tests should we add so this cannot regress? List them with their expectations.' },
  { text: 'The billing team asks whether refunds go through the same path. Do they?' },
  { text: 'ok, sounds good' },
  { text: `Write the commit message for the fix, mentioning the ${words(3)} and the failing test names.` },
  { text: 'How should we backfill the invoices already sent with the wrong cent?' },
  { text: 'Is a migration needed, or can we recompute totals on read?' },
  { text: 'Summarise the incident for the postmortem: cause, impact, fix, follow-ups.' },
  { text: 'Who should review this? The owners of the ledger and the renderer are different teams.' },
  { text: 'Last thing: what should I tell support to answer tenants who noticed?' },
];

/** The corpus's tools, each answering the call the conversation makes with its corpus entry. */
function corpusTool(name: string, schema: z.ZodObject): ToolDefinition {
  return defineTool({
    name,
    description: `Workspace tool ${name}`,
    schema,
    sideEffect: 'read_only',
    timeoutMs: 5_000,
    needsApproval: false,
    execute: async (args: unknown) => {
      const hit = CORPUS.find((e) => e.tool === name && isDeepStrictEqual(e.args, args));
      if (!hit) throw new Error(`no corpus entry for ${name} ${JSON.stringify(args)}`);
      return hit.value;
    },
  });
}

const CORPUS_TOOLS = [
  corpusTool('http_fetch', z.strictObject({ url: z.string() })),
  corpusTool('workspace__run_command', z.strictObject({ command: z.string() })),
  corpusTool('workspace__git', z.strictObject({ args: z.array(z.string()) })),
  corpusTool('workspace__grep', z.strictObject({ pattern: z.string(), path: z.string() })),
  corpusTool('workspace__read_file', z.strictObject({ path: z.string() })),
];

const INSTRUCTIONS = [
  'You are the coding assistant of a platform team. Answer precisely and briefly, cite identifiers verbatim,',
  'and prefer concrete next steps. Use the workspace tools to read code, run commands and search; use',
  'http_fetch for APIs and documentation. Call independent tools in parallel.',
  ...Array.from({ length: 40 }, (_, i) => `Rule ${i + 1}: ${words(14)}.`),
].join('\n');

/** Tokens as the benchmark counts them (gpt-tokenizer, o200k_base), like `npm run bench:tokenjuice`. */
const tokens = (text: string) => encode(text).length;

/** Who a model request is for: the turn's own round, the summarizer's side call, or the archivist. */
function callerOf(req: RecordedRequest): 'round' | 'summarizer' | 'archivist' {
  if (req.rawBody.includes('You are the archivist')) return 'archivist';
  if (req.rawBody.includes('You are the summarizer sub-agent')) return 'summarizer';
  return 'round';
}

/**
 * The fake model: the archivist gets its JSON; the summarizer writes as much as it may (the start of
 * the evidence, up to the limit it is given: the most it could keep); a turn whose message asks for
 * tools calls them all in one round, then answers once it has their results.
 */
function reply(req: RecordedRequest): ScriptedReply {
  const caller = callerOf(req);
  if (caller === 'archivist') {
    return { kind: 'message', text: JSON.stringify({ facts: [{ title: 'Next step', content: words(20) }] }) };
  }
  const body = req.body as Record<string, unknown>;
  const items = (body['messages'] ?? body['input']) as unknown[];
  const last = JSON.stringify(items[items.length - 1] ?? '');
  if (caller === 'summarizer') {
    const limit = Number(/Write at most (\d+) characters/.exec(req.rawBody)?.[1] ?? 2000);
    const evidence = last.slice(last.indexOf('<evidence'));
    return { kind: 'message', text: evidence.slice(0, limit) };
  }
  const asked = CONVERSATION.find((t) => t.tools && last.includes(JSON.stringify(t.text).slice(1, 40)));
  if (asked && !/tool_result|function_call_output|"role":"tool"/.test(last)) {
    return {
      kind: 'message',
      toolCalls: asked.tools!.map((e) => ({ name: e.tool, arguments: JSON.stringify(e.args) })),
    };
  }
  return { kind: 'message', text: `${words(40)}.` };
}

/** One corpus tool call of a turn, as the harness recorded it. */
interface CallFigures {
  tool: string;
  kind: string;
  /** The payload's UTF-8 bytes before and after TokenJuice (its `tool_result_compacted` event). */
  bytes: string;
  /** The original kept in tool_result_originals (lossy compactions). */
  originalKept: boolean;
  /** The summarizer ran on what TokenJuice left (over the engine's 16 KiB result budget). */
  summarized: boolean;
  before: number;
  after: number;
}

interface TurnFigures {
  input: number;
  cached: number;
  written: number;
  calls: CallFigures[];
  /** The turn's own model rounds. */
  rounds: number;
  /** Side calls inside the turn (the summarizer). */
  sideCalls: number;
  /** Post-turn hooks' model calls (the archivist). */
  hookCalls: number;
  usd: number;
  savedUsd: number;
}

interface RunFigures {
  wire: string;
  rows: TurnFigures[];
  /** The archivist's calls after the last turn, once the session's idle period ran out. */
  idleHookCalls: number;
  idleUsd: number;
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
  // As the harness builds them (apps/harness-worker, libs/platform): originals kept per tenant for
  // `tokenjuice_retrieve`, which the registry offers, so the agent's `auto` mode compacts in full.
  const originals = new OriginalsStore(sqlDbFor(poolOf(env.db), 'tokenjuice'), 168 * 3_600_000);
  const tools = new ToolRegistry([...CORPUS_TOOLS, tokenjuiceRetrieveTool(originals)]);
  const runner = new TurnRunner({
    db: env.db,
    engine: new TurnEngine({
      providers,
      tools,
      context: {
        memory: memoryRecall(new MemorySearch(sqlDb, new EmbedderRegistry()), { limit: 5, timeoutMs: 1000 }),
        contextPack: async () => null,
      },
      tokenjuice: { originals },
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
  const callsSince = (before: number) => {
    const made = llm.requests.slice(before).map(callerOf);
    return (c: ReturnType<typeof callerOf>) => made.filter((m) => m === c).length;
  };
  const hookSpend = async (tenantId: string, where: object) =>
    (
      await env.db.ledgerEntry.findMany({ where: { tenantId, key: { startsWith: 'hook:' }, ...where } })
    ).reduce((n, e) => ({ usd: n.usd + Number(e.costUsd), saved: n.saved + Number(e.cacheSavedUsd) }), {
      usd: 0,
      saved: 0,
    });

  const results: RunFigures[] = [];
  try {
    for (const p of PROVIDERS) {
      const { tenantId, agentId } = await seedTenant(
        env.db,
        p.wire,
        { model: p.model, tools: CORPUS_TOOLS.map((t) => t.name) },
        { settings: { modelRoutes: { summarization: p.archivist } } },
      );
      // The agent's toolResultCompression stays `auto` (the default): `full` for its model.
      await env.db.agent.update({ where: { id: agentId }, data: { instructions: INSTRUCTIONS } });
      const sessionId = await seedSession(env.db, tenantId, agentId);
      const rows: TurnFigures[] = [];
      seed = 7;
      for (const msg of CONVERSATION.slice(0, TURNS)) {
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
        // The archivist as the hooks worker runs it: deferred, or (the afterTurns-th) distilled now.
        await runArchivist(hooks, { turnId, tenantId, hook: 'archivist', trace: {} });
        await until(async () => {
          const pending = await env.db.hookRun.count({
            where: { tenantId, hook: 'archivist', status: 'deferred' },
          });
          return pending < 10 && (await postTurn.getActiveCount()) === 0;
        });
        const count = callsSince(before);
        const t = await env.db.turn.findUniqueOrThrow({ where: { id: turnId } });
        const hook = await hookSpend(tenantId, { turnId });
        rows.push({
          input: t.inputTokens,
          cached: t.cachedTokens,
          written: t.cacheWriteTokens,
          calls: await recordedCalls(env.db, tenantId, turnId),
          rounds: count('round'),
          sideCalls: count('summarizer'),
          hookCalls: count('archivist'),
          usd: Number(t.costUsd) + hook.usd,
          savedUsd: Number(t.cacheSavedUsd) + hook.saved,
        });
      }
      // The session goes idle: its debounced distillation (delayed by idleMs) runs now instead of in
      // ten minutes. Its calls count in the run: they are what the turns cost after them.
      const before = llm.requests.length;
      const spentBefore = await hookSpend(tenantId, {});
      for (const job of await postTurn.getDelayed()) await job.promote();
      await until(
        async () =>
          (await env.db.hookRun.count({ where: { tenantId, hook: 'archivist', status: 'deferred' } })) ===
            0 && (await postTurn.getActiveCount()) === 0,
      );
      results.push({
        wire: p.wire,
        rows,
        idleHookCalls: callsSince(before)('archivist'),
        idleUsd: (await hookSpend(tenantId, {})).usd - spentBefore.usd,
      });
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

/**
 * A turn's tool calls as the harness recorded them: "before" is the result as history held it before
 * TokenJuice (`{"ok":true,"result":…}` of the tool call's stored outcome, which stays whole), "after"
 * the tool message of the transcript — what the model reads, after TokenJuice, the summarizer and the
 * byte budget. The kind and whether the original was kept come from tool_result_originals; whether
 * the summarizer ran from its ledger entry.
 */
async function recordedCalls(db: Db, tenantId: string, turnId: string): Promise<CallFigures[]> {
  const calls = await db.toolCall.findMany({ where: { tenantId, turnId }, orderBy: { startedAt: 'asc' } });
  const messages = await db.message.findMany({ where: { tenantId, turnId, role: 'tool' } });
  const kept = await db.toolResultOriginal.findMany({ where: { tenantId, turnId } });
  const compacted = (
    await db.event.findMany({ where: { tenantId, turnId, type: 'tool_result_compacted' } })
  ).map((e) => e.data as { callId: string; kind: string; originalBytes: number; contentBytes: number });
  const summaries = await db.ledgerEntry.findMany({
    where: { tenantId, turnId, key: { contains: ':summarize:' } },
  });
  return calls.map((c) => {
    const shown = messages.find((m) => m.toolCallId === c.callId)?.body as { text?: string } | undefined;
    if (shown?.text === undefined) throw new Error(`no transcript entry for tool call ${c.callId}`);
    const original = kept.find((o) => o.callId === c.callId);
    const juiced = compacted.find((e) => e.callId === c.callId);
    return {
      tool: c.name,
      kind: juiced?.kind ?? 'not compacted',
      originalKept: original !== undefined,
      bytes: juiced ? `${juiced.originalBytes} → ${juiced.contentBytes}` : '–',
      summarized: summaries.some((e) => e.key.endsWith(`:summarize:${c.callId}`)),
      before: tokens(JSON.stringify({ ok: true, result: c.result })),
      after: tokens(shown.text),
    };
  });
}

async function until(probe: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error('timed out waiting for the archivist');
    await new Promise((r) => setTimeout(r, 20));
  }
}

function report(results: RunFigures[]): void {
  const pct = (a: number, b: number) => (b ? (100 * a) / b : 0).toFixed(0);
  const met = (ok: boolean) => (ok ? 'met' : 'NOT met');
  for (const { wire, rows, idleHookCalls, idleUsd } of results) {
    console.log(`\n## ${wire}\n`);
    console.log(
      '| turn | input tok | cached tok | cache writes | cached % | tool-result tok before → after | model calls: rounds + side + hooks | USD | saved by caching |',
    );
    console.log('| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
    rows.forEach((r, i) => {
      const before = r.calls.reduce((n, c) => n + c.before, 0);
      const after = r.calls.reduce((n, c) => n + c.after, 0);
      console.log(
        `| ${i + 1} | ${r.input} | ${r.cached} | ${r.written} | ${pct(r.cached, r.input)} | ${
          r.calls.length ? `${before} → ${after}` : '–'
        } | ${r.rounds} + ${r.sideCalls} + ${r.hookCalls} | ${r.usd.toFixed(6)} | ${r.savedUsd.toFixed(6)} |`,
      );
    });
    console.log(`| idle | | | | | | 0 + 0 + ${idleHookCalls} | ${idleUsd.toFixed(6)} | |`);

    const calls = rows.flatMap((r) => r.calls);
    console.log(
      '\n| tool call | kind | TokenJuice bytes | original kept | summarizer ran | before tok | after tok | ratio |',
    );
    console.log('| --- | --- | ---: | --- | --- | ---: | ---: | ---: |');
    for (const c of calls) {
      console.log(
        `| ${c.tool} | ${c.kind} | ${c.bytes} | ${c.originalKept ? 'yes' : 'no'} | ${c.summarized ? 'yes' : 'no'} | ${c.before} | ${c.after} | ${(c.before / c.after).toFixed(1)}× |`,
      );
    }

    const later = rows.slice(1);
    const input = later.reduce((n, r) => n + r.input, 0);
    const cached = later.reduce((n, r) => n + r.cached, 0);
    const rounds = rows.reduce((n, r) => n + r.rounds, 0);
    const side = rows.reduce((n, r) => n + r.sideCalls, 0);
    const hookCalls = rows.reduce((n, r) => n + r.hookCalls, 0) + idleHookCalls;
    const total = rounds + side + hookCalls;
    const toolBefore = calls.reduce((n, c) => n + c.before, 0);
    const toolAfter = calls.reduce((n, c) => n + c.after, 0);
    const usd = rows.reduce((n, r) => n + r.usd, 0) + idleUsd;
    const saved = rows.reduce((n, r) => n + r.savedUsd, 0);
    const cachedShare = input ? (100 * cached) / input : 0;
    const turns = rows.length;
    const toolTurns = rows.filter((r) => r.calls.length > 0).length;
    console.log(
      `\n${wire}:\n` +
        `- turns 2–${turns}: ${cached} of ${input} input tokens read from the cache = ${cachedShare.toFixed(1)} % (goal ≥ 60 %: ${met(cachedShare >= 60)})\n` +
        `- tool-result tokens over the corpus (${calls.length} calls): ${toolBefore} → ${toolAfter} = ${(toolBefore / toolAfter).toFixed(1)}× (goal ≥ 3×: ${met(toolBefore >= 3 * toolAfter)})\n` +
        `- model calls: ${total} over ${turns} turns = ${(total / turns).toFixed(2)} per turn, hooks included (goal ≤ 1.1: ${met(total <= 1.1 * turns)}): ` +
        `${rounds} turn rounds (${turns} turns, ${toolTurns} of them calling tools: one more round each), ${side} summarizer side calls, ${hookCalls} archivist calls (${idleHookCalls} after the idle period)\n` +
        `- calls beyond the turns' own rounds: ${side + hookCalls} = ${((side + hookCalls) / turns).toFixed(2)} per turn; post-turn hooks alone ${(hookCalls / turns).toFixed(2)} per turn\n` +
        `- USD ${usd.toFixed(6)}, caching saved ${saved.toFixed(6)} (${pct(saved, usd + saved)} % of what the run would have cost)`,
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
