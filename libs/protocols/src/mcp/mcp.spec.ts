import type { TurnResponse } from '@switchboard/contracts';
import {
  type ToolAgent,
  agentTools,
  CLIENT_TOOL_CALL_META,
  clientToolElicitation,
  clientToolOutput,
  clientToolWaitResult,
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

describe('client tools', () => {
  const weather = { name: 'get_weather', description: 'The weather', inputSchema: { type: 'object' } };

  it('client_tools: MCP Tool objects become declarations (inputSchema → parameters); malformed ones are errors', () => {
    expect(parseToolArguments({ message: 'hi', client_tools: [weather, { name: 'ping' }] })).toEqual({
      message: 'hi',
      clientTools: [
        { name: 'get_weather', description: 'The weather', parameters: { type: 'object' } },
        { name: 'ping', description: '', parameters: { type: 'object', properties: {} } },
      ],
    });
    expect(parseToolArguments({ message: 'hi', client_tools: [] })).toEqual({ message: 'hi' });
    expect(parseToolArguments({ message: 'hi', client_tools: {} })).toEqual({
      error: expect.stringContaining('client_tools: an array'),
    });
    expect(parseToolArguments({ message: 'hi', client_tools: [{ name: 3 }] })).toEqual({
      error: 'client_tools[0].name: a string is required',
    });
    expect(parseToolArguments({ message: 'hi', client_tools: [{ ...weather, description: 1 }] })).toEqual({
      error: 'client_tools[0].description: a string is expected',
    });
    expect(parseToolArguments({ message: 'hi', client_tools: [{ ...weather, inputSchema: [] }] })).toEqual({
      error: 'client_tools[0].inputSchema: a JSON Schema object is expected',
    });
  });

  const call = { callId: 'call_abc', name: 'get_weather', arguments: '{"city":"Paris"}' };

  it('asks for a call with a form elicitation: an output string, the call in _meta', () => {
    expect(clientToolElicitation(call)).toEqual({
      mode: 'form',
      message: expect.stringContaining('"get_weather" with the arguments {"city":"Paris"}'),
      requestedSchema: {
        type: 'object',
        properties: { output: expect.objectContaining({ type: 'string' }) },
        required: ['output'],
      },
      _meta: {
        [CLIENT_TOOL_CALL_META]: { call_id: 'call_abc', name: 'get_weather', arguments: { city: 'Paris' } },
      },
    });
    // Arguments that are not JSON are handed over as written.
    expect(
      clientToolElicitation({ ...call, arguments: '{oops' })._meta[CLIENT_TOOL_CALL_META].arguments,
    ).toBe('{oops');
  });

  it("reads an elicitation result as the tool's output; declined or cancelled tells the model; others are errors", () => {
    expect(clientToolOutput({ action: 'accept', content: { output: 'sunny' } })).toEqual({ output: 'sunny' });
    expect(clientToolOutput({ action: 'decline' })).toEqual({
      output: '{"error":"the client did not run the tool (decline)"}',
    });
    expect(clientToolOutput({ action: 'cancel' })).toEqual({ output: expect.stringContaining('(cancel)') });
    expect(clientToolOutput({ action: 'accept', content: { output: 3 } })).toEqual({
      error: expect.stringContaining('content.output'),
    });
    expect(clientToolOutput({ action: 'accept' })).toEqual({
      error: expect.stringContaining('content.output'),
    });
    expect(clientToolOutput({ action: 'maybe' })).toEqual({ error: 'unknown action "maybe"' });
    expect(clientToolOutput({ role: 'assistant', content: {} })).toEqual({
      error: expect.stringContaining('not an elicitation result'),
    });
    expect(clientToolOutput('x')).toEqual({ error: expect.stringContaining('not an elicitation result') });
  });

  it('the fallback result names the calls and the route that answers them', () => {
    const result = clientToolWaitResult(turn({ status: 'awaiting_client_tool', finalText: null }), [call]);
    expect(result).toMatchObject({
      isError: true,
      content: [{ text: expect.stringContaining('POST their outputs to /v1/turns/t1/client-tool-results') }],
      structuredContent: {
        session_id: 's1',
        turn_id: 't1',
        status: 'awaiting_client_tool',
        client_tool_calls: [{ call_id: 'call_abc', name: 'get_weather', arguments: { city: 'Paris' } }],
      },
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
    expect(progressMessage('client_tool_requested', { name: 'get_weather' }, add)).toBe(
      'waiting for the client to run get_weather',
    );
    expect(progressMessage('usage_recorded', {}, add)).toBeUndefined();
    expect(text).toBe('hel');
  });
});
