import { z } from 'zod';
import {
  ProviderRegistry,
  type ChatMessage,
  type ModelProvider,
  type ModelRequest,
  type ModelResponse,
  type ToolCallRequest,
} from '@switchboard/providers';
import {
  createHttpFetch,
  defineTool,
  ToolRegistry,
  type SideEffect,
  type ToolDefinition,
} from '@switchboard/tools';
import { TurnEngine } from './engine';
import { defaultApprovalPolicy } from './gates';
import { checkpoints, turnInput } from './test-support';
import type { ApprovalDecision, ToolCallMeta, TurnInput, TurnOutcome } from './types';

/** A model that plays round n when the request holds n assistant messages: a resumed run picks up where it was. */
class Script implements ModelProvider {
  readonly name = 'fake';
  constructor(private readonly rounds: ToolCallRequest[][]) {}
  async complete(r: ModelRequest): Promise<ModelResponse> {
    const calls = this.rounds[r.messages.filter((m) => m.role === 'assistant').length] ?? [];
    const last = r.messages[r.messages.length - 1];
    return {
      text: calls.length ? '' : `done after ${last.role === 'tool' ? last.content : 'nothing'}`,
      toolCalls: calls,
      usage: { inputTokens: 1, outputTokens: 1, cachedTokens: 0 },
      finishReason: calls.length ? 'tool_calls' : 'stop',
    };
  }
}

const effects: string[] = [];
const make = (name: string, sideEffect: SideEffect, needsApproval = false): ToolDefinition =>
  defineTool({
    name,
    description: name,
    schema: z.strictObject({ n: z.int() }),
    sideEffect,
    timeoutMs: 1000,
    needsApproval,
    execute: async (args) => (effects.push(`${name}:${args.n}`), args.n * 2),
  });

const tools = new ToolRegistry([
  make('read', 'read_only'),
  make('send', 'network'),
  make('pay', 'destructive', true),
]);
const c = (id: string, name: string, n: unknown) => ({ id, name, arguments: JSON.stringify({ n }) });

/**
 * One run of the engine over a transcript kept in memory as the runner keeps it in Postgres: each
 * recorded round and tool result joins the turn, so a second run resumes from what the first committed.
 */
class Harness {
  turn: ChatMessage[] = [{ role: 'user', content: 'go' }];
  started: string[] = [];
  events: string[] = [];

  constructor(private readonly rounds: ToolCallRequest[][]) {}

  async run(overrides: Partial<TurnInput> = {}): Promise<TurnOutcome> {
    const engine = new TurnEngine({ providers: new ProviderRegistry({}, [new Script(this.rounds)]), tools });
    const cp = checkpoints({
      recordRound: async (r) =>
        void this.turn.push({ role: 'assistant', content: r.response.text, toolCalls: r.response.toolCalls }),
      toolStarted: async (m: ToolCallMeta) => void this.started.push(m.call.id),
      recordToolResult: async (m, _o, _d, content) =>
        void this.turn.push({ role: 'tool', toolCallId: m.call.id, name: m.call.name, content }),
      emit: async (type, data) =>
        void this.events.push(`${type}:${typeof data.callId === 'string' ? data.callId : ''}`),
    });
    return engine.run(
      turnInput({ tools: ['read', 'send', 'pay'], turnMessages: [...this.turn], ...overrides }),
      cp,
      new AbortController().signal,
    );
  }

  result(callId: string): unknown {
    const m = this.turn.find((x) => x.role === 'tool' && x.toolCallId === callId);
    return m?.role === 'tool' ? JSON.parse(m.content) : undefined;
  }
}

const decide = (outcome: TurnOutcome, status: ApprovalDecision['status'], reason?: string) =>
  (outcome.waits ?? []).flatMap((w) =>
    w.kind === 'approval' ? [{ approvalId: w.approvalId, callId: w.callId, status, reason }] : [],
  );

beforeEach(() => (effects.length = 0));

describe('approvals as waits (docs/adr/0013)', () => {
  it('a gated call ends the run waiting, unstarted; the approved call then runs exactly once', async () => {
    const h = new Harness([[c('p', 'pay', 5)]]);
    const first = await h.run();
    expect(first.status).toBe('waiting');
    expect(first.waits).toEqual([
      {
        kind: 'approval',
        approvalId: expect.any(String),
        callId: 'p',
        tool: 'pay',
        arguments: { n: 5 },
        sideEffect: 'destructive',
        policy: 'tool',
      },
    ]);
    // Nothing of the call is recorded: a resumed run must not take it for a started, unrecorded call.
    expect(effects).toEqual([]);
    expect(h.started).toEqual([]);
    expect(h.events.filter((e) => e.startsWith('tool_call'))).toEqual([]);

    const second = await h.run({ decisions: decide(first, 'approved') });
    expect(second).toMatchObject({ status: 'completed', stopReason: 'final_answer' });
    expect(effects).toEqual(['pay:5']);
    expect(h.started).toEqual(['p']);
    expect(h.result('p')).toEqual({ ok: true, result: 10 });
    expect(h.events.filter((e) => e.startsWith('tool_call'))).toEqual([
      'tool_call_started:p',
      'tool_call_completed:p',
    ]);
  });

  it('parallel gated calls each get their own wait; calls that need none still run', async () => {
    const h = new Harness([[c('r', 'read', 1), c('a', 'pay', 1), c('b', 'pay', 2)]]);
    const first = await h.run();
    expect(first.status).toBe('waiting');
    expect(first.waits?.map((w) => w.callId)).toEqual(['a', 'b']);
    expect(new Set(first.waits?.map((w) => (w.kind === 'approval' ? w.approvalId : w.callId))).size).toBe(2);
    expect(effects).toEqual(['read:1']);

    const second = await h.run({ decisions: decide(first, 'approved') });
    expect(second.status).toBe('completed');
    expect(effects).toEqual(['read:1', 'pay:1', 'pay:2']);
  });

  it('a side-effecting call after a waiting one is held, not run ahead of it', async () => {
    const h = new Harness([[c('a', 'pay', 1), c('s', 'send', 2)]]);
    const first = await h.run();
    expect(first.waits?.map((w) => w.callId)).toEqual(['a']);
    expect(effects).toEqual([]);
    await h.run({ decisions: decide(first, 'approved') });
    expect(effects).toEqual(['pay:1', 'send:2']);
  });

  it('a rejected call gives the model a classified, non-retryable result, and the turn goes on', async () => {
    const h = new Harness([[c('p', 'pay', 5)]]);
    const first = await h.run();
    const second = await h.run({ decisions: decide(first, 'rejected', 'too expensive') });
    expect(second.status).toBe('completed');
    expect(effects).toEqual([]);
    expect(h.result('p')).toMatchObject({
      ok: false,
      kind: 'approval_rejected',
      message: expect.stringContaining('too expensive'),
      retryable: false,
      tool_name: 'pay',
    });
    expect(second.finalText).toContain('approval_rejected');
  });

  it('an expired approval gives the model an ApprovalExpired result', async () => {
    const h = new Harness([[c('p', 'pay', 5)]]);
    const first = await h.run();
    await h.run({ decisions: decide(first, 'expired') });
    expect(effects).toEqual([]);
    expect(h.result('p')).toMatchObject({ ok: false, kind: 'approval_expired', retryable: false });
  });

  it('a second run with the decision and an already recorded result does not run the call again', async () => {
    const h = new Harness([[c('p', 'pay', 5)]]);
    const first = await h.run();
    const decisions = decide(first, 'approved');
    await h.run({ decisions });
    // A redelivered job runs the finished turn's transcript again: the call is answered, nothing runs.
    await h.run({ decisions });
    expect(effects).toEqual(['pay:5']);
  });
});

describe('the default approval policy', () => {
  const ctx = (tool: ToolDefinition, approval?: TurnInput['approval']) => ({
    tenantId: 'x',
    sessionId: 's',
    turnId: 't',
    call: c('1', tool.name, 1),
    tool,
    approval,
  });
  const none = { agent: [], tenant: [], untrustedInput: false };

  it('asks for tools that declare it, and for tools the agent or the tenant lists', () => {
    expect(defaultApprovalPolicy(ctx(make('pay', 'destructive', true), none))).toBe('tool');
    expect(defaultApprovalPolicy(ctx(make('read', 'read_only'), { ...none, agent: ['read'] }))).toBe('agent');
    expect(defaultApprovalPolicy(ctx(make('send', 'network'), { ...none, tenant: ['send'] }))).toBe('tenant');
    expect(defaultApprovalPolicy(ctx(make('send', 'network'), none))).toBeNull();
  });

  it('asks for every side effect of a turn triggered by untrusted content, never for a read', () => {
    const untrusted = { ...none, untrustedInput: true };
    for (const effect of ['local_write', 'network', 'destructive'] as const) {
      expect(defaultApprovalPolicy(ctx(make('w', effect), untrusted))).toBe('untrusted_input');
    }
    expect(defaultApprovalPolicy(ctx(make('read', 'read_only'), untrusted))).toBeNull();
    // http_fetch is `network`: a fetched URL can carry data out, so an untrusted turn asks first.
    const httpFetch = createHttpFetch();
    expect(defaultApprovalPolicy(ctx(httpFetch, untrusted))).toBe('untrusted_input');
    expect(defaultApprovalPolicy(ctx(httpFetch, none))).toBeNull();
  });

  it('gates a side-effecting call of an untrusted turn in the engine', async () => {
    const h = new Harness([[c('s', 'send', 1)]]);
    const first = await h.run({ approval: { ...none, untrustedInput: true } });
    expect(first.waits).toEqual([expect.objectContaining({ callId: 's', policy: 'untrusted_input' })]);
    expect(effects).toEqual([]);
  });
});
