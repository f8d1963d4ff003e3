import type { Admission } from '@switchboard/admission';
import { newId } from '@switchboard/contracts';
import { poolOf } from '@switchboard/database';
import { TurnEngine } from '@switchboard/engine';
import { Metrics } from '@switchboard/observability';
import {
  ProviderRegistry,
  type ChatMessage,
  type ModelProvider,
  type ModelRequest,
  type ModelResponse,
} from '@switchboard/providers';
import { sqlDbFor } from '@switchboard/store';
import {
  seedTenantSession,
  cancelLeftovers,
  startHarness,
  type HarnessFixture,
  type TestEnv,
} from '@switchboard/testing';
import { markerId, tokenjuiceCorpus } from '@switchboard/tokenjuice';
import { OriginalsStore, tokenjuiceRetrieveTool } from '@switchboard/tokenjuice/store';
import { ToolRegistry, type ToolDefinition } from '@switchboard/tools';
import { z } from 'zod';
import { TurnRunner } from './runner';

/**
 * TokenJuice through the real harness (TurnRunner, engine, Postgres; docs/adr/0033): a tool returns a
 * large test log, history holds the compacted form with its marker, the model calls
 * tokenjuice_retrieve and gets the exact original, whole and by line and byte range; another tenant's
 * turn asking for that marker gets not_found; a `hint:coding` agent (auto → light) and an agent set to
 * `off` keep the log as it was, and nothing is stored for them.
 */
jest.setTimeout(120_000);

const USAGE = { inputTokens: 10, outputTokens: 5, cachedTokens: 0 };
const log = tokenjuiceCorpus().find((e) => e.file === 'failing-test-run.log')!;
const original = (log.value as { content: { text: string }[] }).content[0].text;

/**
 * Round 1: `run_tests`, or, when the user's message names a marker, three retrievals of it. After
 * run_tests: three retrievals of the marker its result shows (whole, lines 9–12, bytes 100–299).
 * After retrievals: done. Every request is kept.
 */
const requests: ChatMessage[][] = [];
class Model implements ModelProvider {
  readonly name = 'openai-chat';
  async complete(r: ModelRequest): Promise<ModelResponse> {
    requests.push(structuredClone(r.messages));
    const last = r.messages[r.messages.length - 1];
    const retrieve = (marker: string) => ({
      text: '',
      toolCalls: [
        { id: 'r1', name: 'tokenjuice_retrieve', arguments: JSON.stringify({ marker }) },
        {
          id: 'r2',
          name: 'tokenjuice_retrieve',
          arguments: JSON.stringify({ marker, startLine: 9, endLine: 12 }),
        },
        {
          id: 'r3',
          name: 'tokenjuice_retrieve',
          arguments: JSON.stringify({ marker, startByte: 100, endByte: 300 }),
        },
      ],
      usage: USAGE,
      finishReason: 'tool_calls' as const,
    });
    if (last.role === 'user') {
      const asked = /tj:[0-9a-f]{24}/.exec(last.content)?.[0];
      if (asked) return retrieve(asked);
      return {
        text: '',
        toolCalls: [{ id: 'c1', name: 'run_tests', arguments: '{"command":"npm test"}' }],
        usage: USAGE,
        finishReason: 'tool_calls',
      };
    }
    if (last.role === 'tool' && last.name === 'run_tests') {
      const shown = /⟦tj:([0-9a-f]{24})⟧/.exec(last.content)?.[1];
      if (shown) return retrieve(`tj:${shown}`);
    }
    return { text: 'done', toolCalls: [], usage: USAGE, finishReason: 'stop' };
  }
}

const runTests: ToolDefinition = {
  name: 'run_tests',
  description: 'Runs the tests',
  schema: z.strictObject({ command: z.string() }),
  sideEffect: 'read_only',
  timeoutMs: 2_000,
  needsApproval: false,
  execute: async () => log.value,
};

describe('TokenJuice through the harness', () => {
  let h: HarnessFixture;
  let env: TestEnv;
  let admission: Admission;
  let runner: TurnRunner;

  beforeAll(async () => {
    h = await startHarness();
    ({ env, admission } = h);
    const originals = new OriginalsStore(sqlDbFor(poolOf(env.db), 'tokenjuice'), 3_600_000);
    const tools = new ToolRegistry([runTests, tokenjuiceRetrieveTool(originals, { maxBytes: 64 * 1024 })]);
    runner = new TurnRunner({
      ...h.runnerDeps({ metrics: new Metrics('tokenjuice') }),
      engine: new TurnEngine({
        providers: new ProviderRegistry({}, [new Model()]),
        tools,
        toolResultMaxBytes: 128 * 1024,
        tokenjuice: { originals },
      }),
      tools,
      defaultModel: 'openai-chat/default',
    });
  });

  beforeEach(async () => {
    requests.length = 0;
    await cancelLeftovers(env.db);
  });

  afterAll(() => h?.close());

  async function turn(ids: { tenantId: string; sessionId: string }, text: string) {
    const { turnId } = await admission.admit({
      ...ids,
      kind: 'operator_prompt',
      origin: { kind: 'operator' },
      body: { type: 'text', text },
      deliverySurface: 'http_public_enqueue',
      admissionContext: 'control_authenticated',
    });
    expect(await runner.handle({ turnId, sessionId: ids.sessionId, tenantId: ids.tenantId, trace: {} })).toBe(
      'done',
    );
    expect((await env.db.turn.findUniqueOrThrow({ where: { id: turnId } })).status).toBe('completed');
    const messages = await env.db.message.findMany({ where: { turnId, role: 'tool' } });
    const byCall = new Map(messages.map((m) => [m.toolCallId!, (m.body as { text: string }).text]));
    return { turnId, byCall };
  }

  const retrieved = (content: string) =>
    JSON.parse(content) as { ok: boolean; result?: Record<string, unknown>; kind?: string; message?: string };

  async function agent(name: string, model: string, compression?: string) {
    const ids = await seedTenantSession(env.db, name, { model, tools: ['run_tests'] });
    if (compression) {
      await env.db.agent.update({ where: { id: ids.agentId }, data: { toolResultCompression: compression } });
    }
    return ids;
  }

  it('compacts the log in history; tokenjuice_retrieve returns the exact original, whole and by range; another tenant gets not_found', async () => {
    const a = await agent('tj-a', 'openai-chat/m');
    const { turnId, byCall } = await turn(a, 'run the tests');
    const id = markerId(original);

    // History holds the compacted log with its marker, and the model saw exactly that.
    const compacted = byCall.get('c1')!;
    expect(
      compacted.startsWith(`⟦tj:${id}⟧ run_tests returned ${Buffer.byteLength(original)} bytes of log`),
    ).toBe(true);
    expect(compacted).toContain('● agent request limits › refuses a budget of 101 iterations');
    expect(compacted).toContain('Tests:       3 failed, 245 passed, 248 total');
    expect(Buffer.byteLength(compacted) * 3).toBeLessThan(Buffer.byteLength(original));
    expect(requests[1].find((m) => m.role === 'tool')?.content).toBe(compacted);
    // tokenjuice_retrieve was offered (the agent names only run_tests).
    const events = await env.db.event.findMany({ where: { turnId }, orderBy: { seq: 'asc' } });
    expect(events.find((e) => e.type === 'tool_result_compacted')?.data).toEqual({
      callId: 'c1',
      tool: 'run_tests',
      kind: 'log',
      mode: 'full',
      lossy: true,
      marker: `tj:${id}`,
      originalBytes: Buffer.byteLength(original),
      contentBytes: Buffer.byteLength(compacted),
    });

    // The original whole, then lines 9–12, then bytes 100–299.
    const whole = retrieved(byCall.get('r1')!);
    expect(whole.result).toMatchObject({
      marker: `tj:${id}`,
      tool: 'run_tests',
      kind: 'log',
      truncated: false,
    });
    expect(whole.result!.content).toBe(original);
    const lines = retrieved(byCall.get('r2')!);
    expect(lines.result!.content).toBe(`${original.split('\n').slice(8, 12).join('\n')}\n`);
    expect(lines.result!.range).toMatchObject({ startLine: 9, endLine: 12 });
    const bytes = retrieved(byCall.get('r3')!);
    expect(bytes.result!.content).toBe(Buffer.from(original).subarray(100, 300).toString());
    // Retrievals are never compacted again.
    expect(events.filter((e) => e.type === 'tool_result_compacted')).toHaveLength(1);

    const rows = await env.db.toolResultOriginal.findMany({ where: { id } });
    expect(rows).toEqual([
      expect.objectContaining({ tenantId: a.tenantId, turnId, callId: 'c1', kind: 'log' }),
    ]);
    expect(rows[0].content).toBe(original);

    // Another tenant's turn asking for the same marker: not found, and nothing of A's is shown.
    const b = await agent('tj-b', 'openai-chat/m');
    const other = await turn(b, `please read tj:${id}`);
    for (const call of ['r1', 'r2', 'r3']) {
      const r = retrieved(other.byCall.get(call)!);
      expect(r).toMatchObject({ ok: false, kind: 'not_found' });
      expect(other.byCall.get(call)).not.toContain('agent request limits');
    }
  });

  it.each([
    ['a hint:coding agent (auto is light)', 'hint:coding', undefined],
    ['an agent set to off', 'openai-chat/m', 'off'],
    ['an agent set to light', 'openai-chat/m', 'light'],
  ])('%s keeps the log as it was and stores nothing', async (_name, model, compression) => {
    const before = await env.db.toolResultOriginal.count();
    const ids = await agent(`tj-${newId().slice(0, 8)}`, model, compression);
    const { turnId, byCall } = await turn(ids, 'run the tests');
    expect(byCall.get('c1')).toBe(JSON.stringify({ ok: true, result: log.value }));
    expect(await env.db.toolResultOriginal.count()).toBe(before);
    // No marker, so no retrieval: and the tool is not offered in these modes.
    expect(byCall.has('r1')).toBe(false);
    const events = await env.db.event.findMany({ where: { turnId, type: 'tool_result_compacted' } });
    expect(events).toHaveLength(0);
  });
});
