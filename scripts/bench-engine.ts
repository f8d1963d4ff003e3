/**
 * The engine's own overhead, compared in one run with @openai/agents and the
 * Vercel AI SDK (`ai`) running the same agent: one tool call, then an answer,
 * against instant fake models (no network, no I/O). Then the same turn through
 * Switchboard's TurnRunner with its Postgres persistence.
 *
 *   npm run bench:engine -- [--turns 2000]
 */
import { parseArgs } from 'node:util';
import { Queue } from 'bullmq';
import { z } from 'zod';
import { Agent, Runner, setTracingDisabled, tool as agentsTool } from '@openai/agents';
import { generateText, stepCountIs, tool as aiTool } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { Admission } from '@switchboard/admission';
import { QueueName } from '@switchboard/contracts';
import { DEFAULT_BUDGET, TurnEngine, type TurnCheckpoints } from '@switchboard/engine';
import { createLogger, Metrics } from '@switchboard/observability';
import { ProviderRegistry, type ModelProvider, type ModelResponse } from '@switchboard/providers';
import { createRedis } from '@switchboard/queue';
import { createTestEnv, seedSession, seedTenant } from '@switchboard/testing';
import { ToolRegistry, wordCount } from '@switchboard/tools';
import { TurnRunner } from '@switchboard/turns';
import globalSetup from '../libs/testing/src/global-setup';

const { values } = parseArgs({ options: { turns: { type: 'string', default: '2000' } } });
const TURNS = Number(values.turns);
const WARMUP = Math.min(200, Math.floor(TURNS / 5));
const countWords = async ({ text }: { text: string }) => ({ words: text.trim().split(/\s+/).length });

// --- Switchboard's engine, in memory ---------------------------------------------------------------
class Instant implements ModelProvider {
  readonly name = 'instant';
  async complete(req: { messages: { role: string }[] }): Promise<ModelResponse> {
    const afterTool = req.messages[req.messages.length - 1]?.role === 'tool';
    return afterTool
      ? {
          text: 'three words',
          toolCalls: [],
          usage: { inputTokens: 1, outputTokens: 1, cachedTokens: 0 },
          finishReason: 'stop',
        }
      : {
          text: '',
          toolCalls: [{ id: 'c1', name: 'word_count', arguments: '{"text":"a b c"}' }],
          usage: { inputTokens: 1, outputTokens: 1, cachedTokens: 0 },
          finishReason: 'tool_calls',
        };
  }
}
const noop: TurnCheckpoints = {
  recordRound: async () => undefined,
  toolStarted: async () => undefined,
  recordToolResult: async () => undefined,
  recordFailedAttempts: async () => undefined,
  recordReflection: async () => undefined,
  recordCompaction: async () => undefined,
  emit: async () => undefined,
  textDelta: () => undefined,
};
const engine = new TurnEngine({
  providers: new ProviderRegistry({}, [new Instant()]),
  tools: new ToolRegistry([wordCount]),
});
const switchboard = async () => {
  const out = await engine.run(
    {
      turnId: 't',
      tenantId: 'x',
      sessionId: 's',
      systemPrompt: 'Count words.',
      history: [],
      turnMessages: [{ role: 'user', content: 'count a b c' }],
      model: 'instant/m',
      fallbackModels: [],
      tools: ['word_count'],
      budget: DEFAULT_BUDGET,
    },
    noop,
    new AbortController().signal,
  );
  if (out.finalText !== 'three words') throw new Error('switchboard gave a wrong answer');
};

// --- Vercel AI SDK --------------------------------------------------------------------------------
const aiUsage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 1, text: 1, reasoning: 0 },
};
const aiModel = new MockLanguageModelV4({
  doGenerate: async (options) => {
    const afterTool = options.prompt[options.prompt.length - 1]?.role === 'tool';
    return afterTool
      ? {
          content: [{ type: 'text', text: 'three words' }],
          finishReason: { unified: 'stop', raw: undefined },
          usage: aiUsage,
          warnings: [],
        }
      : {
          content: [
            { type: 'tool-call', toolCallId: 'c1', toolName: 'word_count', input: '{"text":"a b c"}' },
          ],
          finishReason: { unified: 'tool-calls', raw: undefined },
          usage: aiUsage,
          warnings: [],
        };
  },
});
const aiTools = {
  word_count: aiTool({
    description: 'Counts words',
    inputSchema: z.object({ text: z.string() }),
    execute: countWords,
  }),
};
const vercel = async () => {
  const r = await generateText({
    model: aiModel,
    system: 'Count words.',
    prompt: 'count a b c',
    tools: aiTools,
    stopWhen: stepCountIs(3),
  });
  if (r.text !== 'three words') throw new Error('ai gave a wrong answer');
  aiModel.doGenerateCalls.length = 0;
};

// --- OpenAI Agents SDK ----------------------------------------------------------------------------
setTracingDisabled(true);
const agentsUsage = { requests: 1, inputTokens: 1, outputTokens: 1, totalTokens: 2 };
const agentsModel = {
  async getResponse(request: { input: unknown }) {
    const items = Array.isArray(request.input) ? (request.input as { type?: string }[]) : [];
    const afterTool = items[items.length - 1]?.type === 'function_call_result';
    return afterTool
      ? {
          usage: agentsUsage,
          output: [
            {
              type: 'message',
              role: 'assistant',
              status: 'completed',
              content: [{ type: 'output_text', text: 'three words' }],
            },
          ],
        }
      : {
          usage: agentsUsage,
          output: [
            {
              type: 'function_call',
              callId: 'c1',
              name: 'word_count',
              arguments: '{"text":"a b c"}',
              status: 'completed',
            },
          ],
        };
  },
  // eslint-disable-next-line require-yield
  async *getStreamedResponse(): AsyncGenerator<never> {
    throw new Error('not streamed in this benchmark');
  },
};
const agent = new Agent({
  name: 'counter',
  instructions: 'Count words.',
  model: agentsModel as never,
  tools: [
    agentsTool({
      name: 'word_count',
      description: 'Counts words',
      parameters: z.object({ text: z.string() }),
      execute: countWords,
    }),
  ],
});
const runner = new Runner({ tracingDisabled: true });
const openaiAgents = async () => {
  const r = await runner.run(agent, 'count a b c');
  if (r.finalOutput !== 'three words') throw new Error('agents gave a wrong answer');
};

async function time(name: string, fn: () => Promise<void>, n: number): Promise<number> {
  for (let i = 0; i < WARMUP; i++) await fn();
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await fn();
  const us = Number(process.hrtime.bigint() - t0) / 1000 / n;
  console.log(
    `${name.padEnd(44)} ${us.toFixed(1).padStart(9)} µs/turn ${(us / 2).toFixed(1).padStart(9)} µs/iteration`,
  );
  return us;
}

async function main() {
  console.log(
    `one tool call then an answer, instant models, ${TURNS} turns each after ${WARMUP} warm-up turns\n`,
  );
  const sb = await time('switchboard TurnEngine (no persistence)', switchboard, TURNS);
  const ai = await time('Vercel AI SDK generateText', vercel, TURNS);
  const ag = await time('@openai/agents Runner.run', openaiAgents, TURNS);
  console.log(
    `\nratios: ai / switchboard = ${(ai / sb).toFixed(2)}, @openai/agents / switchboard = ${(ag / sb).toFixed(2)}`,
  );

  // The same turn with everything Switchboard persists: lease, transcript, ledger, journal, turn row.
  await globalSetup();
  const env = await createTestEnv();
  const redis = createRedis(env.redisUrl);
  const turnsQueue = new Queue(QueueName.Turns, { connection: redis, prefix: env.queuePrefix });
  const postTurn = new Queue(QueueName.PostTurn, { connection: redis, prefix: env.queuePrefix });
  try {
    const logger = createLogger({ service: 'bench', level: 'silent' });
    const { tenantId, agentId } = await seedTenant(env.db, 'bench', {
      model: 'instant/m',
      tools: ['word_count'],
    });
    // A session per turn, made beforehand: this measures one turn, not a transcript that grows.
    const n = Math.max(50, Math.floor(TURNS / 10));
    const sessions: string[] = [];
    for (let i = 0; i < n + WARMUP; i++) sessions.push(await seedSession(env.db, tenantId, agentId));
    const admission = new Admission(env.db, turnsQueue, logger);
    const turnRunner = new TurnRunner({
      db: env.db,
      engine,
      tools: new ToolRegistry([wordCount]),
      postTurnQueue: postTurn,
      logger,
      metrics: new Metrics('bench'),
      workerId: 'bench',
      leaseMs: 30_000,
      defaultModel: 'bench/instant',
    });
    const persisted = async () => {
      const sessionId = sessions.pop()!;
      const { turnId } = await admission.admit({
        tenantId,
        sessionId,
        kind: 'operator_prompt',
        origin: { kind: 'operator' },
        body: { type: 'text', text: 'count a b c' },
        deliverySurface: 'http_public_enqueue',
        admissionContext: 'control_authenticated',
      });
      if ((await turnRunner.handle({ turnId, sessionId, tenantId, trace: {} })) !== 'done')
        throw new Error('busy');
    };
    const withDb = await time('switchboard admit + TurnRunner (Postgres)', persisted, n);
    console.log(`\npersistence costs ${(withDb - sb).toFixed(0)} µs per turn over the in-memory engine`);
  } finally {
    await turnsQueue.close();
    await postTurn.close();
    await redis.quit();
    await env.cleanup();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err instanceof Error ? err.stack : err);
    process.exit(1);
  },
);
