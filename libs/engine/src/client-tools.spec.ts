import { z } from 'zod';
import {
  ProviderRegistry,
  type ChatMessage,
  type ModelProvider,
  type ModelRequest,
  type ModelResponse,
  type ToolCallRequest,
} from '@switchboard/providers';
import { defineTool, ToolRegistry } from '@switchboard/tools';
import { TurnEngine } from './engine';
import { waitingStatus } from './run/tool-round';
import { checkpoints, turnInput } from './test-support';
import type { ClientToolResult, TurnInput, TurnOutcome } from './types';

/** Plays round n when the request holds n assistant messages; remembers the tools it was offered. */
class Script implements ModelProvider {
  readonly name = 'fake';
  offered: string[][] = [];
  choices: ModelRequest['toolChoice'][] = [];
  constructor(private readonly rounds: ToolCallRequest[][]) {}
  async complete(r: ModelRequest): Promise<ModelResponse> {
    this.offered.push((r.tools ?? []).map((t) => t.name));
    this.choices.push(r.toolChoice);
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

const ran: string[] = [];
const tools = new ToolRegistry([
  defineTool({
    name: 'read',
    description: 'read',
    schema: z.strictObject({ n: z.int() }),
    sideEffect: 'read_only',
    timeoutMs: 1000,
    needsApproval: false,
    execute: async (a) => (ran.push(`read:${a.n}`), a.n),
  }),
]);
const WEATHER = { name: 'weather', description: 'w', parameters: { type: 'object' } };

/** The engine over an in-memory transcript: a second run resumes from what the first recorded. */
class Harness {
  turn: ChatMessage[] = [{ role: 'user', content: 'go' }];
  started: string[] = [];
  script: Script;
  constructor(rounds: ToolCallRequest[][]) {
    this.script = new Script(rounds);
  }
  run(overrides: Partial<TurnInput> = {}): Promise<TurnOutcome> {
    const engine = new TurnEngine({ providers: new ProviderRegistry({}, [this.script]), tools });
    const cp = checkpoints({
      recordRound: async (r) =>
        void this.turn.push({ role: 'assistant', content: r.response.text, toolCalls: r.response.toolCalls }),
      toolStarted: async (m) => void this.started.push(m.call.id),
      recordToolResult: async (m, _o, _d, content) =>
        void this.turn.push({ role: 'tool', toolCallId: m.call.id, name: m.call.name, content }),
    });
    return engine.run(
      turnInput({ tools: ['read'], clientTools: [WEATHER], turnMessages: [...this.turn], ...overrides }),
      cp,
      new AbortController().signal,
    );
  }
  result(callId: string): unknown {
    const m = this.turn.find((x) => x.role === 'tool' && x.toolCallId === callId);
    return m?.role === 'tool' ? JSON.parse(m.content) : undefined;
  }
}

const answered = (callId: string, output: string): ClientToolResult => ({
  callId,
  status: 'answered',
  output,
});

beforeEach(() => (ran.length = 0));

describe('client-side tools (docs/adr/0047)', () => {
  it("offers the client's tool beside the agent's; its call waits unstarted, then takes the client's output", async () => {
    const h = new Harness([[{ id: 'w1', name: 'weather', arguments: '{"city":"Oslo"}' }]]);
    const first = await h.run();
    expect(h.script.offered[0]).toEqual(['read', 'weather']);
    expect(first.status).toBe('waiting');
    expect(first.stopReason).toBe('awaiting_client_tool');
    expect(first.waits).toEqual([
      {
        kind: 'client_tool',
        waitId: expect.any(String),
        callId: 'w1',
        tool: 'weather',
        arguments: '{"city":"Oslo"}',
      },
    ]);
    expect(h.started).toEqual([]);

    const second = await h.run({ clientResults: [answered('w1', 'snow')] });
    expect(second.status).toBe('completed');
    expect(h.result('w1')).toEqual({ ok: true, result: 'snow' });
    expect(second.finalText).toContain('snow');
  });

  it("a round with both kinds runs the server's call and waits for the client's", async () => {
    const h = new Harness([
      [
        { id: 'r1', name: 'read', arguments: '{"n":3}' },
        { id: 'w1', name: 'weather', arguments: '{}' },
      ],
    ]);
    const first = await h.run();
    expect(ran).toEqual(['read:3']);
    expect(first.waits?.map((w) => w.kind)).toEqual(['client_tool']);
    expect(h.result('r1')).toEqual({ ok: true, result: 3 });
    expect((await h.run({ clientResults: [answered('w1', 'ok')] })).status).toBe('completed');
    expect(ran).toEqual(['read:3']);
  });

  it('a forced tool choice goes with the first round only, across the wait and its resume', async () => {
    const h = new Harness([[{ id: 'w1', name: 'weather', arguments: '{}' }]]);
    const toolChoice = { type: 'tool' as const, name: 'weather' };
    expect((await h.run({ toolChoice })).status).toBe('waiting');
    const out = await h.run({ toolChoice, clientResults: [answered('w1', 'fog')] });
    expect(out.status).toBe('completed');
    expect(h.script.choices).toEqual([toolChoice, undefined]);
    // An earlier turn's assistant messages (the history) do not make the first round a later one.
    const h2 = new Harness([[]]);
    await h2.run({
      toolChoice: { type: 'required' },
      history: [
        { role: 'user', content: 'before' },
        { role: 'assistant', content: 'earlier answer', toolCalls: [] },
      ],
    });
    expect(h2.script.choices).toEqual([{ type: 'required' }]);
  });

  it('an expired wait answers client_tool_timeout and ends the turn failed', async () => {
    const h = new Harness([[{ id: 'w1', name: 'weather', arguments: '{}' }]]);
    await h.run();
    const out = await h.run({ clientResults: [{ callId: 'w1', status: 'expired', output: null }] });
    expect(out).toMatchObject({ status: 'failed', stopReason: 'client_tool_timeout' });
    expect(out.failure?.kind).toBe('client_tool_timeout');
    expect(h.result('w1')).toMatchObject({ ok: false, kind: 'client_tool_timeout', retryable: false });
  });

  it("a client tool named like the agent's own is the agent's", async () => {
    const h = new Harness([[{ id: 'r1', name: 'read', arguments: '{"n":1}' }]]);
    const out = await h.run({ clientTools: [{ ...WEATHER, name: 'read' }] });
    expect(out.status).toBe('completed');
    expect(ran).toEqual(['read:1']);
    expect(h.script.offered[0]).toEqual(['read']);
  });

  it('the waiting status: a person first, then the client, then a child', () => {
    const client = { kind: 'client_tool' as const, waitId: 'a', callId: 'c', tool: 't', arguments: '{}' };
    const task = { kind: 'task' as const, taskId: 't', callId: 'd' };
    expect(waitingStatus([task, client])).toBe('awaiting_client_tool');
    expect(waitingStatus([task])).toBe('awaiting_subagent');
  });
});
