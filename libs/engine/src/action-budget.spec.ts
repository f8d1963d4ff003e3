import { z } from 'zod';
import {
  ProviderRegistry,
  type ModelProvider,
  type ModelRequest,
  type ModelResponse,
  type ToolCallRequest,
} from '@switchboard/providers';
import { defineTool, ToolRegistry, type SideEffect, type ToolDefinition } from '@switchboard/tools';
import { TurnEngine } from './engine';
import { classifyToolFailure } from './failures';
import type { ActionBudgetVerdict, ActionLimits, GateContext, ToolGates } from './gates';
import { SUMMARY_AT_CAP_PROMPT } from './run/loop';
import { checkpoints, turnInput } from './test-support';
import type { ToolOutcome, TurnCheckpoints, TurnInput } from './types';

/** A model that asks for the given rounds of calls, then answers; it records what it was asked. */
class Script implements ModelProvider {
  readonly name = 'fake';
  readonly requests: ModelRequest[] = [];
  private i = 0;
  constructor(
    private readonly rounds: ToolCallRequest[][],
    private readonly final = 'done',
  ) {}
  async complete(r: ModelRequest): Promise<ModelResponse> {
    this.requests.push(r);
    const calls = r.toolChoice?.type === 'none' ? [] : (this.rounds[this.i++] ?? []);
    const summary = r.toolChoice?.type === 'none';
    return {
      text: summary ? 'summary: sent twice, one left' : calls.length ? `round ${this.i}` : this.final,
      // A model that calls a tool although none may be called: the engine drops the call.
      toolCalls: summary ? [{ id: 'x', name: 'send', arguments: '{"n":9}' }] : calls,
      usage: { inputTokens: 1, outputTokens: 1, cachedTokens: 0 },
      finishReason: calls.length ? 'tool_calls' : 'stop',
    };
  }
}

const runs: string[] = [];
const make = (name: string, sideEffect: SideEffect): ToolDefinition =>
  defineTool({
    name,
    description: name,
    schema: z.strictObject({ n: z.int() }),
    sideEffect,
    timeoutMs: 1000,
    needsApproval: false,
    execute: async (args) => (runs.push(`${name}:${args.n}`), args.n),
  });
const tools = new ToolRegistry([
  make('read', 'read_only'),
  make('send', 'network'),
  make('rm', 'destructive'),
]);
const c = (id: string, name: string, n: number) => ({ id, name, arguments: JSON.stringify({ n }) });

/** An in-memory budget of `cap` calls, counting call ids like the Redis one. */
function budget(cap: number) {
  const counted = new Set<string>();
  const asked: { ctx: GateContext; limits: ActionLimits }[] = [];
  const gate: ToolGates['actionBudget'] = async (ctx, limits) => {
    asked.push({ ctx, limits });
    const key = `${ctx.turnId}:${ctx.call.id}`;
    if (counted.has(key)) return { allowed: true };
    if (counted.size >= cap) {
      const refused: ActionBudgetVerdict = {
        allowed: false,
        scope: 'agent',
        limit: cap,
        windowMs: 3_600_000,
        retryAfterMs: 1500,
      };
      return refused;
    }
    counted.add(key);
    return { allowed: true };
  };
  return { gate, asked, counted };
}

async function run(
  rounds: ToolCallRequest[][],
  gates: ToolGates,
  input: Partial<TurnInput> = {},
  provider = new Script(rounds),
) {
  runs.length = 0;
  const outcomes = new Map<string, ToolOutcome>();
  const events: { type: string; data: Record<string, unknown> }[] = [];
  const cp: TurnCheckpoints = checkpoints({
    recordToolResult: async (m, o) => void outcomes.set(m.call.id, o),
    emit: async (type, data) => void events.push({ type, data }),
  });
  const engine = new TurnEngine({ providers: new ProviderRegistry({}, [provider]), tools, gates });
  const outcome = await engine.run(
    turnInput({ tools: ['read', 'send', 'rm'], agentId: 'agent-1', ...input }),
    cp,
    new AbortController().signal,
  );
  return { outcome, outcomes, events, provider };
}

describe('the hourly side-effect budget gate (docs/adr/0058)', () => {
  it('counts side-effecting calls only, and refuses the next one with a classified tool error', async () => {
    const b = budget(2);
    const { outcome, outcomes, events } = await run(
      [
        [c('r1', 'read', 1)],
        [c('s1', 'send', 1)],
        [c('s2', 'rm', 2)],
        [c('s3', 'send', 3)],
        [c('r2', 'read', 4)],
      ],
      { actionBudget: b.gate },
      { actionLimits: { agent: 2, tenant: null } },
    );
    // Read-only calls are never asked about; the third side-effecting call is not run.
    expect(b.asked.map((a) => a.ctx.call.id)).toEqual(['s1', 's2', 's3']);
    expect(runs).toEqual(['read:1', 'send:1', 'rm:2', 'read:4']);
    expect(b.asked[0]).toMatchObject({ ctx: { agentId: 'agent-1' }, limits: { agent: 2, tenant: null } });
    const refused = outcomes.get('s3');
    expect(refused).toMatchObject({
      ok: false,
      kind: 'action_budget_exceeded',
      retryable: false,
      details: { scope: 'agent', limit: 2, windowMs: 3_600_000, retryAfterMs: 1500 },
    });
    expect(refused && !refused.ok && refused.message).toMatch(
      /budget of 2 side-effecting tool calls per hour/,
    );
    expect(classifyToolFailure(refused as Extract<ToolOutcome, { ok: false }>)).toMatchObject({
      class: 'BlockedByPolicy',
      category: 'blocked_by_policy',
      recoverable: false,
    });
    // Journaled, and the turn goes on: a refusal is a tool result, not a turn failure.
    expect(events.find((e) => e.type === 'action_budget_exceeded')?.data).toEqual({
      callId: 's3',
      name: 'send',
      scope: 'agent',
      limit: 2,
      windowMs: 3_600_000,
      retryAfterMs: 1500,
    });
    const completed = events.find((e) => e.type === 'tool_call_completed' && e.data.callId === 's3');
    expect(completed?.data).toMatchObject({ ok: false, failure: { kind: 'action_budget_exceeded' } });
    expect(outcome).toMatchObject({ status: 'completed', stopReason: 'final_answer' });
  });

  it('does not count a call a person must approve first, nor one the approval rejected', async () => {
    const b = budget(5);
    await run(
      [[c('s1', 'send', 1)]],
      { actionBudget: b.gate },
      {
        approval: { agent: ['send'], tenant: [], untrustedInput: false },
        decisions: [{ approvalId: 'a', callId: 's1', status: 'rejected' }],
      },
    );
    expect(b.asked).toEqual([]);
    expect(runs).toEqual([]);
  });

  it('lets a call through when the budget cannot be read and no budget is set; refuses it when one is', async () => {
    const down: ToolGates = { actionBudget: () => Promise.reject(new Error('redis away')) };
    const open = await run([[c('s1', 'send', 1)]], down);
    expect(open.outcomes.get('s1')).toEqual({ ok: true, result: 1 });
    const closed = await run([[c('s1', 'send', 1)]], down, { actionLimits: { agent: null, tenant: 10 } });
    expect(closed.outcomes.get('s1')).toMatchObject({
      ok: false,
      kind: 'action_budget_unavailable',
      retryable: true,
    });
    expect(runs).toEqual([]);
  });
});

describe('the summarising call at the model-call cap (docs/adr/0058)', () => {
  const rounds = [[c('s1', 'send', 1)], [c('s2', 'send', 2)], [c('s3', 'send', 3)]];

  it('by default ends on the last round text, as before', async () => {
    const { outcome, provider } = await run(
      rounds,
      {},
      { budget: { ...turnInput().budget, maxIterations: 2 } },
    );
    expect(outcome).toMatchObject({
      status: 'completed',
      stopReason: 'max_iterations',
      finalText: 'round 2',
    });
    expect(provider.requests).toHaveLength(2);
  });

  it('with onMaxIterations summarize makes one tool-less call and ends on its text', async () => {
    const { outcome, provider, outcomes } = await run(
      rounds,
      {},
      { budget: { ...turnInput().budget, maxIterations: 2, onMaxIterations: 'summarize' } },
    );
    expect(provider.requests).toHaveLength(3);
    const last = provider.requests[2];
    expect(last.toolChoice).toEqual({ type: 'none' });
    // The tools stay described (the transcript's calls stay valid); the instruction comes last.
    expect(last.tools.map((t) => t.name)).toEqual(['read', 'send', 'rm']);
    expect(last.messages[last.messages.length - 1]).toEqual({ role: 'user', content: SUMMARY_AT_CAP_PROMPT });
    expect(outcome).toMatchObject({
      status: 'completed',
      stopReason: 'max_iterations',
      finalText: 'summary: sent twice, one left',
    });
    // The call the model made anyway was dropped, never run.
    expect(outcomes.has('x')).toBe(false);
    expect(runs).toEqual(['send:1', 'send:2']);
  });

  it('does not summarise when another hook stopped the turn', async () => {
    const { outcome, provider } = await run(
      rounds,
      {},
      { budget: { ...turnInput().budget, maxToolCalls: 1, onMaxIterations: 'summarize' } },
    );
    expect(outcome).toMatchObject({ stopReason: 'max_tool_calls', finalText: 'round 1' });
    expect(provider.requests).toHaveLength(1);
  });
});
