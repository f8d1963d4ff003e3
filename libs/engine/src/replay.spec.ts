/**
 * A replay turn's tool calls (docs/adr/0054): read-only calls run again; a side-effecting call with
 * the name and canonical arguments of a completed call of the original is answered from its recorded
 * result (each recorded call once, in order) and never executed; any other side-effecting call waits
 * for a person, and runs only when approved.
 */
import { z } from 'zod';
import {
  ProviderRegistry,
  type ChatMessage,
  type ModelProvider,
  type ModelRequest,
  type ModelResponse,
  type ToolCallRequest,
} from '@switchboard/providers';
import { defineTool, ToolRegistry, type SideEffect, type ToolDefinition } from '@switchboard/tools';
import { TurnEngine } from './engine';
import { checkpoints, turnInput } from './test-support';
import type {
  ApprovalDecision,
  RecordedCall,
  ReplayInput,
  ToolCallMeta,
  ToolOutcome,
  TurnInput,
  TurnOutcome,
} from './types';

/** A model that plays round n when the request holds n assistant messages. */
class Script implements ModelProvider {
  readonly name = 'fake';
  constructor(private readonly rounds: ToolCallRequest[][]) {}
  async complete(r: ModelRequest): Promise<ModelResponse> {
    const calls = this.rounds[r.messages.filter((m) => m.role === 'assistant').length] ?? [];
    return {
      text: calls.length ? '' : 'done',
      toolCalls: calls,
      usage: { inputTokens: 1, outputTokens: 1, cachedTokens: 0 },
      finishReason: calls.length ? 'tool_calls' : 'stop',
    };
  }
}

/** Every real execution of a tool, as `<name>:<canonical args>`. */
const executions: string[] = [];
const make = (name: string, sideEffect: SideEffect, extra: Partial<ToolDefinition> = {}): ToolDefinition =>
  defineTool<z.ZodType>({
    name,
    description: name,
    schema: z.looseObject({}),
    sideEffect,
    timeoutMs: 1000,
    needsApproval: false,
    execute: async (args) => {
      executions.push(`${name}:${JSON.stringify(args)}`);
      return { executed: name };
    },
    ...extra,
  });

const tools = new ToolRegistry([
  make('lookup', 'read_only'),
  make('send_email', 'network'),
  make('write_file', 'local_write'),
  make('drop_table', 'destructive', { needsApproval: true }),
]);
const TOOL_NAMES = ['lookup', 'send_email', 'write_file', 'drop_table'];

const call = (id: string, name: string, args: unknown): ToolCallRequest => ({
  id,
  name,
  arguments: typeof args === 'string' ? args : JSON.stringify(args),
});
const recorded = (id: string, name: string, args: unknown, result: unknown): RecordedCall => ({
  id,
  name,
  arguments: args,
  result,
});

interface Answered {
  meta: ToolCallMeta;
  outcome: ToolOutcome;
}

/** One engine run over a transcript kept in memory, as the runner keeps it in Postgres. */
class Harness {
  turn: ChatMessage[] = [{ role: 'user', content: 'go' }];
  answered: Answered[] = [];
  started: string[] = [];
  events: { type: string; data: Record<string, unknown> }[] = [];

  constructor(private readonly rounds: ToolCallRequest[][]) {}

  async run(overrides: Partial<TurnInput> = {}): Promise<TurnOutcome> {
    const engine = new TurnEngine({ providers: new ProviderRegistry({}, [new Script(this.rounds)]), tools });
    const cp = checkpoints({
      recordRound: async (r) =>
        void this.turn.push({ role: 'assistant', content: r.response.text, toolCalls: r.response.toolCalls }),
      toolStarted: async (m) => void this.started.push(m.call.id),
      recordToolResult: async (meta, outcome, _d, content) => {
        this.answered.push({ meta: { ...meta }, outcome });
        this.turn.push({ role: 'tool', toolCallId: meta.call.id, name: meta.call.name, content });
      },
      emit: async (type, data) => void this.events.push({ type, data: data }),
    });
    return engine.run(
      turnInput({ tools: TOOL_NAMES, turnMessages: [...this.turn], ...overrides }),
      cp,
      new AbortController().signal,
    );
  }

  /** What the model was shown for a call. */
  shown(callId: string): unknown {
    const m = this.turn.find((x) => x.role === 'tool' && x.toolCallId === callId);
    return m?.role === 'tool' ? JSON.parse(m.content) : undefined;
  }

  answer(callId: string): Answered | undefined {
    return this.answered.find((a) => a.meta.call.id === callId);
  }

  eventsOf(callId: string): { type: string; data: Record<string, unknown> }[] {
    return this.events.filter((e) => e.data.callId === callId);
  }
}

const replay = (rec: RecordedCall[], used: string[] = []): { replay: ReplayInput } => ({
  replay: { originalTurnId: 'orig', recorded: rec, used },
});

const decide = (outcome: TurnOutcome, status: ApprovalDecision['status']): ApprovalDecision[] =>
  (outcome.waits ?? []).flatMap((w) =>
    w.kind === 'approval' ? [{ approvalId: w.approvalId, callId: w.callId, status }] : [],
  );

beforeEach(() => (executions.length = 0));

describe('a replay turn answers recorded side effects and runs nothing unapproved (docs/adr/0054)', () => {
  it('a side-effecting call equal to a recorded one is answered from its result, marked, and not executed', async () => {
    const h = new Harness([[call('c1', 'send_email', { to: 'a@example.com', body: 'hi' })]]);
    const outcome = await h.run(
      replay([recorded('o1', 'send_email', { to: 'a@example.com', body: 'hi' }, { messageId: 'm-1' })]),
    );

    expect(outcome).toMatchObject({ status: 'completed', finalText: 'done' });
    expect(executions).toEqual([]);
    // Nothing started: no `running` row is ever written for it.
    expect(h.started).toEqual([]);
    expect(h.answer('c1')).toMatchObject({
      meta: { replayedFromToolCallId: 'o1' },
      outcome: { ok: true, result: { messageId: 'm-1' } },
    });
    expect(h.shown('c1')).toEqual({ ok: true, result: { messageId: 'm-1' } });
    expect(h.eventsOf('c1').map((e) => [e.type, e.data.replayed, e.data.replayedFromToolCallId])).toEqual([
      ['tool_call_started', true, 'o1'],
      ['tool_call_completed', true, 'o1'],
    ]);
  });

  it('arguments are compared as canonical JSON: key order and spacing do not matter, array order and values do', async () => {
    const rec = [
      recorded('o1', 'write_file', { path: '/a', opts: { mode: 1, append: true } }, 'first'),
      recorded('o2', 'write_file', { path: '/b', lines: [1, 2] }, 'second'),
    ];
    const h = new Harness([
      [
        call('c1', 'write_file', '{ "opts": {"append": true, "mode": 1.0}, "path": "/a" }'),
        call('c2', 'write_file', { path: '/b', lines: [2, 1] }),
      ],
    ]);
    const outcome = await h.run(replay(rec));

    expect(h.answer('c1')?.meta.replayedFromToolCallId).toBe('o1');
    expect(outcome.status).toBe('waiting');
    expect(outcome.waits).toEqual([
      expect.objectContaining({
        kind: 'approval',
        callId: 'c2',
        tool: 'write_file',
        policy: 'replay_unrecorded_side_effect',
      }),
    ]);
    expect(executions).toEqual([]);
  });

  it('each recorded call answers once, in order: equal calls take equal recorded calls one by one', async () => {
    const args = { path: '/log', line: 'x' };
    const h = new Harness([[call('c1', 'write_file', args)], [call('c2', 'write_file', args)]]);
    const outcome = await h.run(
      replay([recorded('o1', 'write_file', args, { n: 1 }), recorded('o2', 'write_file', args, { n: 2 })]),
    );

    expect(outcome.status).toBe('completed');
    expect(executions).toEqual([]);
    expect(h.answered.map((a) => [a.meta.call.id, a.meta.replayedFromToolCallId, a.outcome])).toEqual([
      ['c1', 'o1', { ok: true, result: { n: 1 } }],
      ['c2', 'o2', { ok: true, result: { n: 2 } }],
    ]);
  });

  it('a recorded call an earlier run already answered from is not used again: the equal call waits for a person', async () => {
    const args = { to: 'b@example.com' };
    const h = new Harness([[call('c2', 'send_email', args)]]);
    const outcome = await h.run(replay([recorded('o1', 'send_email', args, 'sent')], ['o1']));

    expect(outcome.status).toBe('waiting');
    expect(outcome.waits).toEqual([
      expect.objectContaining({ callId: 'c2', policy: 'replay_unrecorded_side_effect', arguments: args }),
    ]);
    expect(executions).toEqual([]);
    expect(h.started).toEqual([]);
  });

  it('a different side-effecting call waits; rejected it never runs, approved it runs exactly once', async () => {
    const rec = [recorded('o1', 'send_email', { to: 'a@example.com' }, 'sent')];
    const rounds = [[call('c1', 'send_email', { to: 'someone-else@example.com' })]];

    const rejected = new Harness(rounds);
    const waited = await rejected.run(replay(rec));
    expect(waited.status).toBe('waiting');
    const refused = await rejected.run({ ...replay(rec), decisions: decide(waited, 'rejected') });
    expect(refused.status).toBe('completed');
    expect(rejected.shown('c1')).toMatchObject({ ok: false, kind: 'approval_rejected' });
    expect(executions).toEqual([]);

    const approved = new Harness(rounds);
    const waits = await approved.run(replay(rec));
    const done = await approved.run({ ...replay(rec), decisions: decide(waits, 'approved') });
    expect(done.status).toBe('completed');
    expect(executions).toEqual(['send_email:{"to":"someone-else@example.com"}']);
    expect(approved.answer('c1')?.meta.replayedFromToolCallId).toBeUndefined();
    expect(approved.eventsOf('c1').some((e) => e.data.replayed)).toBe(false);
  });

  it('a side-effecting tool the original never called waits too, even one no policy gates', async () => {
    const h = new Harness([[call('c1', 'write_file', { path: '/new' })]]);
    const outcome = await h.run(replay([]));
    expect(outcome.waits).toEqual([
      expect.objectContaining({
        callId: 'c1',
        sideEffect: 'local_write',
        policy: 'replay_unrecorded_side_effect',
      }),
    ]);
    expect(executions).toEqual([]);
  });

  it('read-only calls run again, even with a recorded twin', async () => {
    const args = { q: 'weather' };
    const h = new Harness([[call('c1', 'lookup', args)]]);
    const outcome = await h.run(replay([recorded('o1', 'lookup', args, 'stale')]));

    expect(outcome.status).toBe('completed');
    expect(executions).toEqual(['lookup:{"q":"weather"}']);
    expect(h.shown('c1')).toEqual({ ok: true, result: { executed: 'lookup' } });
    expect(h.answer('c1')?.meta.replayedFromToolCallId).toBeUndefined();
  });

  it('a matched call of a tool that needs approval is answered from the record without a wait', async () => {
    const args = { table: 't' };
    const h = new Harness([[call('c1', 'drop_table', args)]]);
    const outcome = await h.run(replay([recorded('o1', 'drop_table', args, 'dropped')]));
    expect(outcome.status).toBe('completed');
    expect(h.shown('c1')).toEqual({ ok: true, result: 'dropped' });
    expect(executions).toEqual([]);
  });

  it('a name that differs is not a match, whatever the arguments', async () => {
    const args = { path: '/x' };
    const h = new Harness([[call('c1', 'write_file', args)]]);
    const outcome = await h.run(replay([recorded('o1', 'send_email', args, 'sent')]));
    expect(outcome.waits).toEqual([expect.objectContaining({ callId: 'c1', tool: 'write_file' })]);
    expect(executions).toEqual([]);
  });

  it('a round of several calls: matched ones answered, the rest wait, read-only ones run', async () => {
    const h = new Harness([
      [
        call('c1', 'lookup', { q: 1 }),
        call('c2', 'send_email', { to: 'a' }),
        call('c3', 'send_email', { to: 'z' }),
        call('c4', 'write_file', { path: '/a' }),
      ],
    ]);
    const rec = [
      recorded('o1', 'send_email', { to: 'a' }, 'sent a'),
      recorded('o2', 'write_file', { path: '/a' }, 'w'),
    ];
    const outcome = await h.run(replay(rec));

    expect(outcome.status).toBe('waiting');
    expect(outcome.waits?.map((w) => w.callId)).toEqual(['c3']);
    // c4 comes after a waiting call, but it runs nothing: its recorded answer keeps no effect waiting.
    expect(h.answered.map((a) => [a.meta.call.id, a.meta.replayedFromToolCallId ?? null])).toEqual([
      ['c1', null],
      ['c2', 'o1'],
      ['c4', 'o2'],
    ]);
    expect(executions).toEqual(['lookup:{"q":1}']);
  });

  it('outside a replay, side-effecting calls run as they always did', async () => {
    const h = new Harness([[call('c1', 'send_email', { to: 'a' })]]);
    const outcome = await h.run();
    expect(outcome.status).toBe('completed');
    expect(executions).toEqual(['send_email:{"to":"a"}']);
  });
});
