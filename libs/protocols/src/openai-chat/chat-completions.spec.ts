import {
  AppError,
  ChatCompletionRequest,
  newId,
  unsupportedChatParameter,
  type TurnResponse,
} from '@switchboard/contracts';
import {
  chatToolChoice,
  chatClientTools,
  completionOf,
  createdAt,
  endedTurnError,
  finishReason,
  OpenAiError,
  planConversation,
  requestedSessionId,
  RoundText,
  toOpenAiErrorAnswer,
  toolCallsCompletion,
  trailingToolResults,
} from './chat-completions';

const request = (change: Record<string, unknown>) =>
  ChatCompletionRequest.parse({ model: 'a', messages: [{ role: 'user', content: 'hi' }], ...change });

// A cast: the turn's fields grow with other features; these are the ones the mapping reads.
const turn = (change: Partial<TurnResponse>): TurnResponse =>
  ({
    id: newId(),
    sessionId: newId(),
    agentId: newId(),
    inputMessageId: newId(),
    seq: 1,
    status: 'completed',
    priority: 'normal',
    model: 'openai-chat/gpt-4o-mini',
    stopReason: 'final_answer',
    finalText: 'done',
    iterations: 1,
    usage: { inputTokens: 10, outputTokens: 3, cachedTokens: 2 },
    costUsd: '0',
    costStatus: 'priced',
    attempts: [],
    failure: null,
    decision: null,
    finalisationErrors: [],
    toolCalls: [],
    createdAt: new Date().toISOString(),
    startedAt: null,
    completedAt: null,
    ...change,
  }) as TurnResponse;

describe('planConversation', () => {
  it('admits the last user message; earlier user and assistant messages are history; system ones are left out', () => {
    const plan = planConversation(
      request({
        messages: [
          { role: 'system', content: 'be a pirate' },
          { role: 'user', content: 'one' },
          { role: 'assistant', content: null },
          {
            role: 'assistant',
            content: [
              { type: 'text', text: 'first' },
              { type: 'refusal', refusal: 'no' },
            ],
          },
          { role: 'developer', content: 'terse' },
          {
            role: 'user',
            content: [
              { type: 'text', text: 'two' },
              { type: 'text', text: 'three' },
            ],
          },
        ],
      }).messages,
    );
    expect(plan).toEqual({
      prompt: 'two\n\nthree',
      history: [
        { role: 'user', text: 'one' },
        { role: 'assistant', text: 'first' },
      ],
    });
  });

  it('refuses a conversation that does not end with a user message with text', () => {
    for (const messages of [
      [{ role: 'system', content: 'x' }],
      [
        { role: 'user', content: 'x' },
        { role: 'assistant', content: 'y' },
      ],
      [{ role: 'user', content: ' \n' }],
    ]) {
      expect(() => planConversation(request({ messages }).messages)).toThrow(OpenAiError);
    }
  });
});

describe('client-side tools (docs/adr/0047)', () => {
  it('takes the trailing tool messages as results, nothing when the conversation ends otherwise', () => {
    const messages = request({
      messages: [
        { role: 'user', content: 'hi' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'call_a', type: 'function', function: { name: 'f', arguments: '{}' } }],
        },
        { role: 'tool', tool_call_id: 'call_a', content: 'A' },
        { role: 'tool', tool_call_id: 'call_b', content: [{ type: 'text', text: 'B' }] },
      ],
    }).messages;
    expect(trailingToolResults(messages)).toEqual([
      { callId: 'call_a', output: 'A' },
      { callId: 'call_b', output: 'B' },
    ]);
    expect(trailingToolResults([...messages, { role: 'user', content: 'next' }])).toBeUndefined();
  });

  it('declares the request tools, none with tool_choice none; a waiting turn hands its calls out', () => {
    const tools = [{ type: 'function' as const, function: { name: 'f', description: 'd' } }];
    expect(chatClientTools({ tools })).toEqual([
      { name: 'f', description: 'd', parameters: { type: 'object', properties: {} } },
    ]);
    expect(chatClientTools({ tools, tool_choice: 'none' })).toEqual([]);
    const done = completionOf(turn({}), 'helper');
    const out = toolCallsCompletion(
      turn({ status: 'awaiting_client_tool', finalText: null }),
      [{ callId: 'call_1', name: 'f', arguments: '{"a":1}' }],
      'helper',
    );
    expect(done.choices[0].finish_reason).toBe('stop');
    expect(out.choices[0]).toEqual({
      index: 0,
      message: {
        role: 'assistant',
        content: null,
        refusal: null,
        tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }],
      },
      logprobs: null,
      finish_reason: 'tool_calls',
    });
  });
});

describe('unsupportedChatParameter', () => {
  it('lets the harmless spellings of the defaults through', () => {
    expect(
      unsupportedChatParameter(
        request({
          n: 1,
          tool_choice: 'none',
          tools: [],
          response_format: { type: 'text' },
          modalities: ['text'],
          logprobs: false,
          temperature: 0,
          max_tokens: 10,
        }),
      ),
    ).toBeUndefined();
  });

  it("maps tool_choice to the turn's forced choice: required and a named function; auto and none force nothing", () => {
    expect(chatToolChoice({ tool_choice: 'required' })).toEqual({ type: 'required' });
    expect(chatToolChoice({ tool_choice: { type: 'function', function: { name: 'lookup' } } })).toEqual({
      type: 'tool',
      name: 'lookup',
    });
    expect(chatToolChoice({ tool_choice: 'auto' })).toBeUndefined();
    expect(chatToolChoice({ tool_choice: 'none' })).toBeUndefined();
    expect(chatToolChoice({})).toBeUndefined();
    const body = ChatCompletionRequest.parse({
      model: 'a',
      messages: [{ role: 'user', content: 'hi' }],
      tool_choice: 'required',
    });
    expect(unsupportedChatParameter(body)).toBeUndefined();
  });

  it.each([
    [{ functions: [{ name: 'f' }] }, 'functions', 'unsupported_parameter'],
    [{ function_call: { name: 'f' } }, 'function_call', 'unsupported_parameter'],
    [{ n: 2 }, 'n', 'unsupported_value'],
    [{ top_logprobs: 2 }, 'logprobs', 'unsupported_parameter'],
    [{ audio: { voice: 'x' } }, 'audio', 'unsupported_parameter'],
    [{ modalities: ['text', 'audio'] }, 'modalities', 'unsupported_value'],
    [
      { messages: [{ role: 'assistant', content: null, function_call: { name: 'f' } }] },
      'messages[0].function_call',
      'unsupported_parameter',
    ],
    [
      { messages: [{ role: 'user', content: [{ type: 'input_audio', input_audio: {} }] }] },
      'messages[0].content[0].type',
      'unsupported_value',
    ],
  ])('refuses %j', (change, param, code) => {
    expect(unsupportedChatParameter(request(change))).toMatchObject({ param, code });
  });
});

describe('requestedSessionId', () => {
  it('reads the header or metadata.session_id, which must agree', () => {
    expect(requestedSessionId(undefined, undefined)).toBeUndefined();
    expect(requestedSessionId(' s1 ', null)).toBe('s1');
    expect(requestedSessionId(undefined, { session_id: 's2' })).toBe('s2');
    expect(requestedSessionId('s3', { session_id: 's3' })).toBe('s3');
    expect(() => requestedSessionId('s1', { session_id: 's2' })).toThrow(OpenAiError);
    expect(() => requestedSessionId(['a', 'b'], undefined)).toThrow(OpenAiError);
  });
});

describe('completions from turns', () => {
  it('maps stop reasons: a final answer stops, a budget is length', () => {
    expect(finishReason('final_answer')).toBe('stop');
    for (const r of ['max_iterations', 'max_tool_calls', 'max_usd', 'deadline', 'kill_switch']) {
      expect(finishReason(r)).toBe('length');
    }
  });

  it('derives id and created from the turn (a UUIDv7 carries its time)', () => {
    const before = Math.floor(Date.now() / 1000);
    const t = turn({});
    const c = completionOf(t, 'helper');
    expect(c.id).toBe(`chatcmpl-${t.id}`);
    expect(createdAt(t.id)).toBeGreaterThanOrEqual(before);
    expect(c.usage).toEqual({
      prompt_tokens: 10,
      completion_tokens: 3,
      total_tokens: 13,
      prompt_tokens_details: { cached_tokens: 2 },
    });
  });

  it('a failed turn is a 502 the SDK does not retry; a cancelled one a 409', () => {
    const failed = endedTurnError(
      turn({
        status: 'failed',
        failure: {
          kind: 'provider_error',
          category: 'transport',
          message: 'm',
          brief: 'the key was refused',
        },
      }),
    );
    expect(failed).toMatchObject({ status: 502, code: 'turn_failed', options: { retry: false } });
    expect(failed?.message).toContain('provider_error: the key was refused');
    expect(endedTurnError(turn({ status: 'cancelled' }))).toMatchObject({
      status: 409,
      code: 'turn_cancelled',
    });
    expect(endedTurnError(turn({}))).toBeUndefined();
  });
});

describe('OpenAI error shape', () => {
  const native = (err: unknown) => {
    const app = err as AppError;
    return { status: app.status, body: app.toBody(), headers: {} };
  };

  it('reshapes the gateway errors: type by status, param from the first issue, invalid_api_key', () => {
    expect(
      toOpenAiErrorAnswer(
        new AppError('validation_failed', 'messages: too small', {
          issues: [{ path: 'messages', message: 'too small', code: 'too_small' }],
        }),
        native,
      ),
    ).toEqual({
      status: 400,
      body: {
        error: {
          message: 'messages: too small',
          type: 'invalid_request_error',
          param: 'messages',
          code: 'validation_failed',
        },
      },
      headers: {},
    });
    expect(toOpenAiErrorAnswer(new AppError('unauthorized', 'no key'), native).body.error).toEqual({
      message: 'no key',
      type: 'authentication_error',
      param: null,
      code: 'invalid_api_key',
    });
  });

  it('renders its own errors with x-should-retry when told', () => {
    const answer = toOpenAiErrorAnswer(
      new OpenAiError(408, 'turn_timeout', 'late', { retry: true, headers: { 'x-turn-id': 't' } }),
      native,
    );
    expect(answer.headers).toEqual({ 'x-turn-id': 't', 'x-should-retry': 'true' });
    expect(answer.body.error.type).toBe('timeout_error');
  });
});

describe('RoundText', () => {
  const run = (steps: (t: RoundText) => void) => {
    const sent: string[] = [];
    steps(new RoundText((s) => sent.push(s)));
    return sent;
  };

  it('passes deltas on and sets a round that follows one that spoke apart', () => {
    expect(
      run((t) => {
        t.round(0);
        t.add('Let me ');
        t.add('count.');
        t.round(1);
        t.round(0); // a committed copy of an earlier start changes nothing
        t.add('Two');
        t.add(' words.');
        t.complete('Two words.');
      }),
    ).toEqual(['Let me ', 'count.', '\n\n', 'Two', ' words.']);
  });

  it('sends what the deltas did not carry: all of a resumed round, or the tail', () => {
    expect(run((t) => t.complete('whole answer'))).toEqual(['whole answer']);
    expect(
      run((t) => {
        t.round(0);
        t.add('whole ');
        t.complete('whole answer');
      }),
    ).toEqual(['whole ', 'answer']);
    expect(
      run((t) => {
        t.round(0);
        t.add('thinking');
        t.round(1);
        t.complete('done');
      }),
    ).toEqual(['thinking', '\n\n', 'done']);
    // A final text the deltas contradict is not patched up.
    expect(
      run((t) => {
        t.add('abc');
        t.complete('xyz');
      }),
    ).toEqual(['abc']);
  });
});
