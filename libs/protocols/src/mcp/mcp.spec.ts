import type { TurnResponse } from '@switchboard/contracts';
import {
  type ToolAgent,
  agentTools,
  parseToolArguments,
  progressMessage,
  toolNameOf,
  toolResultOf,
} from './mcp';

const agent = (name: string, id: string, instructions = ''): ToolAgent =>
  ({ id, name, instructions, createdAt: new Date(), updatedAt: new Date() }) as unknown as ToolAgent;

const turn = (over: Partial<TurnResponse>): TurnResponse =>
  ({
    id: 't1',
    sessionId: 's1',
    agentId: 'a1',
    status: 'completed',
    finalText: 'the answer',
    stopReason: 'final_answer',
    failure: null,
    ...over,
  }) as TurnResponse;

describe('MCP tool names', () => {
  it('keeps MCP’s characters, turns runs of others into one underscore, trims and cuts to 128', () => {
    expect(toolNameOf('Research helper!')).toBe('Research_helper');
    expect(toolNameOf('billing.v2-bot')).toBe('billing.v2-bot');
    expect(toolNameOf('  ünïcode  agent ')).toBe('n_code_agent');
    expect(toolNameOf('x'.repeat(200))).toHaveLength(128);
    expect(toolNameOf('!!!')).toBe('');
  });

  it('gives a repeated name to the first (most recent) agent, the others a suffix of their id', () => {
    const tools = agentTools([
      agent('helper', '0190aaaa-bbbb-7ccc-8ddd-000000000001'),
      agent('helper', '0190ffff-bbbb-7ccc-8ddd-000000000002'),
      agent('help er', '0190eeee-bbbb-7ccc-8ddd-000000000003'),
      agent('???', '0190dddd-bbbb-7ccc-8ddd-000000000004', 'Does things.'),
    ]);
    expect(tools.map((t) => t.tool.name)).toEqual(['helper', 'helper_0190ffff', 'help_er', 'agent']);
    expect(tools[3].tool.description).toContain('Its instructions: Does things.');
    expect(tools[0].tool.inputSchema).toMatchObject({ required: ['message'] });
    expect(tools[0].agentId).toBe('0190aaaa-bbbb-7ccc-8ddd-000000000001');
  });
});

describe('tool arguments', () => {
  it('takes a message and an optional session id; anything else is an error for the caller', () => {
    expect(parseToolArguments({ message: 'hi' })).toEqual({ message: 'hi' });
    expect(parseToolArguments({ message: 'hi', session_id: 's' })).toEqual({ message: 'hi', sessionId: 's' });
    expect(parseToolArguments({ message: ' ' })).toEqual({ error: expect.stringContaining('message') });
    expect(parseToolArguments(undefined)).toEqual({ error: expect.stringContaining('message') });
    expect(parseToolArguments({ message: 'hi', session_id: 3 })).toEqual({
      error: expect.stringContaining('session_id'),
    });
    expect(parseToolArguments({ message: 'hi', model: 'x' })).toEqual({
      error: 'unknown argument(s): model',
    });
  });
});

describe('tool results', () => {
  it('a completed turn: its text, and the session and turn to continue with', () => {
    expect(toolResultOf(turn({}))).toEqual({
      content: [{ type: 'text', text: 'the answer' }],
      structuredContent: { session_id: 's1', turn_id: 't1', status: 'completed' },
    });
  });

  it('a failed, cancelled, paused or unfinished turn is a tool error (isError), not a protocol error', () => {
    const failed = toolResultOf(
      turn({
        status: 'failed',
        finalText: null,
        failure: { kind: 'provider', brief: 'upstream 500', message: 'x' } as TurnResponse['failure'],
      }),
    );
    expect(failed).toMatchObject({
      isError: true,
      content: [{ text: 'turn t1 failed (provider: upstream 500)' }],
    });
    expect(toolResultOf(turn({ status: 'cancelled' }))).toMatchObject({ isError: true });
    expect(toolResultOf(turn({ status: 'awaiting_approval' }))).toMatchObject({
      isError: true,
      structuredContent: { status: 'awaiting_approval' },
    });
    expect(toolResultOf(turn({ status: 'running' }))).toMatchObject({
      isError: true,
      content: [{ text: expect.stringContaining('GET /v1/turns/t1') }],
    });
  });
});

describe('progress messages', () => {
  it('names rounds and tools; text is collected for the caller to summarise; other events are skipped', () => {
    let text = '';
    const add = (t: string) => (text += t);
    expect(progressMessage('provider_round_started', { round: 0 }, add)).toBe('model round 1');
    expect(progressMessage('tool_call_started', { name: 'web_search' }, add)).toBe('calling tool web_search');
    expect(progressMessage('tool_call_completed', { name: 'web_search' }, add)).toBe('tool web_search done');
    expect(progressMessage('text_delta', { text: 'hel' }, add)).toBe('');
    expect(progressMessage('text_delta', { text: '' }, add)).toBeUndefined();
    expect(progressMessage('usage_recorded', {}, add)).toBeUndefined();
    expect(text).toBe('hel');
  });
});
