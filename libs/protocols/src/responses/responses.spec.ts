import {
  CreateResponseRequest,
  ResponseObject,
  unsupportedResponsesParameter,
  responsesToolChoice,
  type TurnResponse,
} from '@switchboard/contracts';
import { OpenAiError } from '../openai-chat/chat-completions';
import {
  compactionInput,
  compactionOf,
  functionCallOutputs,
  responseRefOf,
  responsesClientTools,
  planInput,
  unpackCompaction,
  requestRecordOf,
  echoedTools,
  ResponseBuilder,
  responseIdOf,
  statusOf,
  turnIdOf,
  type ResponseMeta,
  type ResponseStreamEvent,
  type TurnEventLike,
} from './responses';

const TURN = '01a20360-1234-7abc-8def-0123456789ab';
const SESSION = '01a20360-0000-7000-8000-000000000001';
const meta: ResponseMeta = {
  turnId: TURN,
  sessionId: SESSION,
  record: requestRecordOf({ responses: { model: 'helper', metadata: { a: 'b' } } }, 'fallback'),
};

describe('requestRecordOf', () => {
  it('reads store: false, and a record without it as stored', () => {
    expect(requestRecordOf({ responses: { store: false } }, 'm').store).toBe(false);
    expect(requestRecordOf({ responses: {} }, 'm').store).toBe(true);
    expect(requestRecordOf(null, 'm').store).toBe(true);
  });

  it('keeps the declared function tools and tool choice, which the response echoes (docs/adr/0047)', () => {
    const declared = echoedTools({
      tools: [
        { type: 'function', name: 'get_weather', parameters: { type: 'object' }, strict: true },
        { type: 'function', name: 'bare' },
      ],
      tool_choice: { type: 'function', name: 'get_weather' },
    });
    expect(declared).toEqual({
      tools: [
        {
          type: 'function',
          name: 'get_weather',
          description: null,
          parameters: { type: 'object' },
          strict: true,
        },
        { type: 'function', name: 'bare', description: null, parameters: null, strict: null },
      ],
      tool_choice: { type: 'function', name: 'get_weather' },
    });
    expect(echoedTools({ tool_choice: 'auto' })).toEqual({});
    const record = requestRecordOf({ responses: { model: 'helper', ...declared } }, 'm');
    const r = new ResponseBuilder({ ...meta, record }).snapshot('in_progress');
    expect(() => ResponseObject.parse(r)).not.toThrow();
    expect(r.tools).toEqual(declared.tools);
    expect(r.tool_choice).toEqual({ type: 'function', name: 'get_weather' });
    // A record this version cannot read echoes nothing rather than fail.
    const odd = requestRecordOf({ responses: { tools: [{ type: 'web_search' }], tool_choice: 7 } }, 'm');
    expect(new ResponseBuilder({ ...meta, record: odd }).snapshot('in_progress')).toMatchObject({
      tools: [],
      tool_choice: 'auto',
    });
  });
});

const turn = (over: Partial<TurnResponse> = {}): TurnResponse =>
  ({
    id: TURN,
    sessionId: SESSION,
    status: 'completed',
    stopReason: 'final_answer',
    finalText: 'The answer.',
    usage: { inputTokens: 100, outputTokens: 20, cachedTokens: 30, cacheWriteTokens: 0 },
    toolCalls: [],
    failure: null,
    createdAt: '2026-11-27T10:00:00.000Z',
    completedAt: '2026-11-27T10:00:05.000Z',
    ...over,
  }) as TurnResponse;

const round = (n: number): TurnEventLike => ({ type: 'provider_round_started', data: { round: n } });
const text = (t: string): TurnEventLike => ({ type: 'text_delta', data: { text: t } });
const started = (callId: string): TurnEventLike => ({
  type: 'tool_call_started',
  data: { callId, name: 'word_count' },
});
const completed = (callId: string): TurnEventLike => ({
  type: 'tool_call_completed',
  data: { callId, name: 'word_count', ok: true, durationMs: 3 },
});

/** Every event a builder gives for a turn's events, then its end. */
function run(events: TurnEventLike[], end: TurnResponse, startingAfter = -1): ResponseStreamEvent[] {
  const b = new ResponseBuilder(meta, startingAfter);
  b.start();
  for (const e of events) b.event(e);
  b.finish(end);
  return b.take();
}

describe('client function tools (docs/adr/0047)', () => {
  const CALL = 'call_0123456789abcdef0123456789abcdef';

  it('a continuation id names the turn and the seq it starts after', () => {
    expect(responseIdOf(TURN, 42)).toBe(`${responseIdOf(TURN)}_42`);
    expect(responseRefOf(responseIdOf(TURN, 42))).toEqual({ turnId: TURN, after: 42 });
    expect(responseRefOf(responseIdOf(TURN))).toEqual({ turnId: TURN, after: 0 });
    expect(turnIdOf(responseIdOf(TURN, 7))).toBe(TURN);
    expect(responseRefOf(`${responseIdOf(TURN)}_0`)).toBeUndefined();
    expect(responseRefOf(`${responseIdOf(TURN)}_x`)).toBeUndefined();
  });

  it('declares the function tools; tool_choice none offers none', () => {
    const tools = [{ type: 'function', name: 'f', description: 'd', parameters: { type: 'object' } }];
    expect(responsesClientTools({ tools })).toEqual([
      { name: 'f', description: 'd', parameters: { type: 'object' } },
    ]);
    expect(responsesClientTools({ tools, tool_choice: 'none' })).toEqual([]);
    expect(responsesClientTools({ tools: [{ type: 'function', name: 'g' }] })[0].parameters).toEqual({
      type: 'object',
      properties: {},
    });
  });

  it('takes the function_call_output items after the last message as the answer', () => {
    const parse = (input: unknown) => CreateResponseRequest.parse({ model: 'm', input }).input;
    expect(functionCallOutputs(parse('hi'))).toBeUndefined();
    expect(
      functionCallOutputs(
        parse([
          { role: 'user', content: 'q' },
          { type: 'function_call', call_id: CALL, name: 'f', arguments: '{}' },
          { type: 'function_call_output', call_id: CALL, output: 'out' },
          { type: 'function_call_output', call_id: 'call_2', output: [{ type: 'input_text', text: 'a' }] },
        ]),
      ),
    ).toEqual([
      { callId: CALL, output: 'out' },
      { callId: 'call_2', output: 'a' },
    ]);
    // A new user message after the results is a new message.
    expect(
      functionCallOutputs(
        parse([
          { type: 'function_call_output', call_id: CALL, output: 'out' },
          { role: 'user', content: 'next' },
        ]),
      ),
    ).toBeUndefined();
  });

  it('a waiting turn completes its response with function_call items and their events', () => {
    const b = new ResponseBuilder(meta);
    b.start();
    b.event(round(0));
    b.event(text('Checking.'));
    const r = b.waiting(
      turn({ status: 'awaiting_client_tool', stopReason: null, finalText: 'Checking.', completedAt: null }),
      [{ callId: CALL, name: 'get_weather', arguments: '{"city":"Oslo"}' }],
    );
    expect(() => ResponseObject.parse(r)).not.toThrow();
    expect(r).toMatchObject({
      status: 'completed',
      output_text: 'Checking.',
      completed_at: null,
      error: null,
    });
    expect(r.usage).not.toBeNull();
    expect(r.output.at(-1)).toEqual({
      type: 'function_call',
      id: 'fc_0123456789abcdef0123456789abcdef',
      call_id: CALL,
      name: 'get_weather',
      arguments: '{"city":"Oslo"}',
      status: 'completed',
    });
    const types = b.take().map((e) => e.type);
    expect(types.slice(-5)).toEqual([
      'response.output_item.added',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.completed',
    ]);
  });

  it('a continuation shows the turn after its seq, under its own id and item ids', () => {
    const b = new ResponseBuilder({ ...meta, after: 9 });
    b.event(round(1));
    b.event(text('Done.'));
    const r = b.finish(
      turn({ finalText: 'Done.', toolCalls: [{ callId: 'earlier' } as TurnResponse['toolCalls'][0]] }),
    );
    expect(r.id).toBe(responseIdOf(TURN, 9));
    expect(r.output).toHaveLength(1);
    expect(r.output[0].id).toBe(`msg_${TURN.replace(/-/g, '')}_9_0`);
  });
});

describe('response ids', () => {
  it('are derived from the turn id and back', () => {
    expect(responseIdOf(TURN)).toBe('resp_01a2036012347abc8def0123456789ab');
    expect(turnIdOf(responseIdOf(TURN))).toBe(TURN);
  });

  it.each(['resp_', 'resp_xyz', TURN, 'resp_01A2036012347ABC8DEF0123456789AB', `resp_${'0'.repeat(33)}`])(
    '%s is none',
    (id) => expect(turnIdOf(id)).toBeUndefined(),
  );
});

describe('planInput', () => {
  it('a string is the message', () => {
    expect(planInput('hi')).toEqual({ prompt: 'hi', history: [], images: [] });
  });

  it('admits the trailing user messages as one; earlier user and assistant messages are the history', () => {
    expect(
      planInput([
        { role: 'developer', content: 'be a pirate' },
        { role: 'user', content: 'a' },
        {
          type: 'message',
          role: 'assistant',
          content: [{ type: 'output_text', text: 'b', annotations: [] }],
        },
        { type: 'mcp_call', id: 'mcp_1', name: 'x' },
        { role: 'user', content: [{ type: 'input_text', text: 'c' }] },
        { role: 'system', content: 'ignored' },
        { role: 'user', content: 'd' },
      ] as CreateResponseRequest['input']),
    ).toEqual({
      prompt: 'c\n\nd',
      history: [
        { role: 'user', text: 'a' },
        { role: 'assistant', text: 'b' },
      ],
      images: [],
    });
  });

  it('the new user message’s images go with the prompt; an earlier message’s are refused', () => {
    const image = { type: 'input_image', image_url: 'https://img.test/a.png', detail: 'low' };
    expect(
      planInput([
        { role: 'user', content: [{ type: 'input_text', text: 'what is this?' }, image] },
      ] as CreateResponseRequest['input']),
    ).toEqual({
      prompt: 'what is this?',
      history: [],
      images: [{ url: 'https://img.test/a.png', detail: 'low' }],
    });
    expect(() =>
      planInput([
        { role: 'user', content: [image] },
        { role: 'assistant', content: 'a cat' },
        { role: 'user', content: 'and now?' },
      ] as CreateResponseRequest['input']),
    ).toThrow(expect.objectContaining({ status: 400, options: { param: 'input[0]' } }));
  });

  it('a compaction item stands for the messages it packed', () => {
    const packed = compactionOf([
      { role: 'user', text: 'the code word is slate' },
      { role: 'assistant', text: 'OK.' },
    ]);
    expect(packed).toMatchObject({ object: 'response.compaction', usage: { total_tokens: 0 } });
    expect(packed.output).toEqual([
      {
        type: 'compaction',
        id: expect.stringMatching(/^cmp_/),
        encrypted_content: expect.stringMatching(/^sbc1\./),
        created_by: 'switchboard',
      },
    ]);
    const input = [
      ...packed.output,
      { type: 'message', role: 'user', content: 'and now?' },
    ] as CreateResponseRequest['input'];
    expect(planInput(input)).toEqual({
      prompt: 'and now?',
      history: [
        { role: 'user', text: 'the code word is slate' },
        { role: 'assistant', text: 'OK.' },
      ],
      images: [],
    });
    // Compacted again: the packed messages and the new ones, in order.
    expect(compactionInput(input).map((m) => m.text)).toEqual(['the code word is slate', 'OK.', 'and now?']);
  });

  it.each([
    ['not ours', 'opaque-from-elsewhere'],
    ['not base64 JSON', 'sbc1.!!!'],
    [
      'not messages',
      `sbc1.${Buffer.from(JSON.stringify({ m: [{ role: 'tool', text: 1 }] })).toString('base64url')}`,
    ],
  ])('refuses a compaction item that is %s, naming it', (_, content) => {
    const input = [
      { type: 'compaction', encrypted_content: content },
      { role: 'user', content: 'x' },
    ] as CreateResponseRequest['input'];
    expect(() => planInput(input)).toThrow(
      expect.objectContaining({ status: 400, options: { param: 'input[0].encrypted_content' } }),
    );
    expect(() => unpackCompaction(content, 0)).toThrow(OpenAiError);
  });

  it('compact refuses an input with no message to pack', () => {
    expect(() =>
      compactionInput([{ role: 'system', content: 'x' }] as CreateResponseRequest['input']),
    ).toThrow(expect.objectContaining({ status: 400, code: 'invalid_value' }));
  });

  it.each([
    ['an assistant message last', [{ role: 'assistant', content: 'x' }]],
    ['only system messages', [{ role: 'system', content: 'x' }]],
    ['a blank message', '  '],
  ])('refuses %s', (_, input) => {
    expect(() => planInput(input as CreateResponseRequest['input'])).toThrow(OpenAiError);
  });
});

describe('unsupportedResponsesParameter', () => {
  const parse = (body: Record<string, unknown>) =>
    unsupportedResponsesParameter(CreateResponseRequest.parse({ model: 'm', input: 'x', ...body }));

  it('refuses what it cannot honour, naming the parameter', () => {
    // Function tools are the client's (docs/adr/0047); other tool types are refused.
    expect(parse({ tools: [{ type: 'function', name: 'f' }] })).toBeUndefined();
    expect(parse({ tools: [{ type: 'web_search' }] })).toMatchObject({
      param: 'tools[0].type',
      code: 'unsupported_value',
    });
    // store: false is honoured (docs/adr/0035), not refused.
    expect(parse({ store: false })).toBeUndefined();
    // required and a named function are forced for the first round (docs/adr/0047); others refused.
    expect(parse({ tool_choice: 'required' })).toBeUndefined();
    expect(parse({ tool_choice: { type: 'function', name: 'f' } })).toBeUndefined();
    expect(responsesToolChoice({ type: 'function', name: 'f' })).toEqual({ type: 'tool', name: 'f' });
    expect(responsesToolChoice('required')).toEqual({ type: 'required' });
    expect(responsesToolChoice('auto')).toBeUndefined();
    expect(parse({ tool_choice: { type: 'allowed_tools', mode: 'auto', tools: [] } })).toMatchObject({
      param: 'tool_choice',
      code: 'unsupported_value',
    });
    expect(parse({ tool_choice: { type: 'web_search' } })).toMatchObject({
      param: 'tool_choice',
      code: 'unsupported_value',
    });
    expect(parse({ input: [{ type: 'function_call_output', call_id: 'c', output: '1' }] })).toBeUndefined();
    expect(parse({ input: [{ type: 'item_reference', id: 'msg_1' }] })).toMatchObject({
      param: 'input[0].type',
    });
    expect(
      parse({ input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'u' }] }] }),
    ).toMatchObject({ param: 'input[0].content[0].image_url' });
    expect(
      parse({ input: [{ role: 'user', content: [{ type: 'input_image', file_id: 'file_1' }] }] }),
    ).toMatchObject({ param: 'input[0].content[0].file_id' });
    expect(
      parse({
        input: [{ role: 'assistant', content: [{ type: 'input_image', image_url: 'https://x.test/a.png' }] }],
      }),
    ).toMatchObject({ param: 'input[0].content[0].type' });
    expect(
      parse({ input: [{ role: 'user', content: [{ type: 'input_file', file_id: 'f' }] }] }),
    ).toMatchObject({ param: 'input[0].content[0].type' });
    expect(
      parse({
        input: [
          { role: 'user', content: [{ type: 'input_image', image_url: 'data:image/png;base64,iVBO' }] },
        ],
      }),
    ).toBeUndefined();
  });

  it('lets the harmless spellings of the defaults pass', () => {
    expect(
      parse({
        tools: [],
        tool_choice: 'auto',
        store: true,
        text: { format: { type: 'text' } },
        temperature: 0.2,
        instructions: 'x',
        input: [
          { type: 'reasoning', id: 'r', summary: [] },
          { role: 'user', content: 'x' },
        ],
      }),
    ).toBeUndefined();
  });
});

describe('statusOf', () => {
  it.each([
    ['queued', null, 'queued'],
    ['running', null, 'in_progress'],
    ['awaiting_approval', null, 'in_progress'],
    ['completed', 'final_answer', 'completed'],
    ['completed', 'max_iterations', 'incomplete'],
    ['failed', 'provider_error', 'failed'],
    ['cancelled', 'cancelled', 'cancelled'],
  ] as const)('%s (%s) → %s', (status, stopReason, expected) => {
    expect(statusOf({ status, stopReason })).toBe(expected);
  });
});

describe('ResponseBuilder', () => {
  it('a structured answer (text.format): only the validated final answer, as one message, the format echoed', () => {
    const format = { type: 'json_schema' as const, name: 'n', schema: { type: 'object' } };
    const structured = new ResponseBuilder({
      ...meta,
      record: requestRecordOf({ responses: { model: 'helper', text_format: format } }, 'fallback'),
    });
    structured.start();
    // The rejected first answer and the repair round's deltas are not shown.
    for (const e of [round(0), text('not JSON'), round(1), text('{"a"'), text(':1}')]) structured.event(e);
    const response = structured.finish(turn({ finalText: '{"a":1}' }));
    expect(ResponseObject.parse(response)).toEqual(response);
    expect(response.output_text).toBe('{"a":1}');
    expect(response.output).toHaveLength(1);
    expect(response.text).toEqual({ format });
    const deltas = structured.take().filter((e) => e.type === 'response.output_text.delta');
    expect(deltas.map((e) => e.delta)).toEqual(['{"a":1}']);
  });

  it('a plain answer: the semantic events in order, numbered by position, and the response', () => {
    const events = run([round(0), text('The '), text('answer.')], turn());
    expect(events.map((e) => [e.type, e.sequence_number])).toEqual([
      ['response.created', 0],
      ['response.in_progress', 1],
      ['response.output_item.added', 2],
      ['response.content_part.added', 3],
      ['response.output_text.delta', 7],
      ['response.output_text.delta', 14],
      ['response.output_text.done', 15],
      ['response.content_part.done', 16],
      ['response.output_item.done', 17],
      ['response.completed', 18],
    ]);
    const response = events.at(-1)!.response as ResponseObject;
    expect(ResponseObject.parse(response)).toEqual(response);
    expect(response).toMatchObject({
      id: responseIdOf(TURN),
      status: 'completed',
      model: 'helper',
      output_text: 'The answer.',
      metadata: { a: 'b' },
      created_at: expect.any(Number),
      completed_at: Math.floor(Date.parse('2026-11-27T10:00:05.000Z') / 1000),
      usage: {
        input_tokens: 100,
        input_tokens_details: { cached_tokens: 30 },
        output_tokens: 20,
        output_tokens_details: { reasoning_tokens: 0 },
        total_tokens: 120,
      },
    });
    // The snapshot in response.created has no output and no usage yet.
    expect(events[0].response).toMatchObject({ status: 'in_progress', output: [], usage: null });
  });

  it('replayed (one delta per round) and live (many) number every other event alike', () => {
    const live = run(
      [round(0), text('Let '), text('me.'), started('c1'), completed('c1'), round(1), text('Done.')],
      turn({ finalText: 'Done.' }),
    );
    const replay = run(
      [round(0), text('Let me.'), started('c1'), completed('c1'), round(1), text('Done.')],
      turn({ finalText: 'Done.' }),
    );
    const structural = (l: ResponseStreamEvent[]) =>
      l.filter((e) => e.type !== 'response.output_text.delta').map((e) => [e.type, e.sequence_number]);
    expect(structural(live)).toEqual(structural(replay));
    expect((live.at(-1)!.response as ResponseObject).output.map((i) => i.type)).toEqual([
      'message',
      'reasoning',
      'message',
    ]);
  });

  it('resumed after any number: exactly the rest, a delta spanning the cut cut', () => {
    const events = [round(0), text('Hello '), text('world.')];
    const all = run(events, turn({ finalText: 'Hello world.' }));
    for (let n = -1; n <= all.at(-1)!.sequence_number; n++) {
      const rest = run(events, turn({ finalText: 'Hello world.' }), n);
      expect(rest.every((e) => e.sequence_number > n)).toBe(true);
      // Everything after n, whole events and the cut delta's tail: the text still adds up.
      const seenText = all
        .filter((e) => e.type === 'response.output_text.delta' && e.sequence_number <= n)
        .map((e) => e.delta)
        .join('');
      const cut = all.find(
        (e) =>
          e.type === 'response.output_text.delta' &&
          e.sequence_number > n &&
          e.sequence_number - (e.delta as string).length < n,
      );
      const partial = cut
        ? (cut.delta as string).slice(0, n - (cut.sequence_number - (cut.delta as string).length))
        : '';
      const restText = rest
        .filter((e) => e.type === 'response.output_text.delta')
        .map((e) => e.delta)
        .join('');
      expect(seenText + partial + restText).toBe('Hello world.');
    }
  });

  it('sends what the deltas left out of the final answer; a resumed turn’s answer is its own item', () => {
    const tail = run([round(0), text('The ')], turn());
    expect(tail.filter((e) => e.type === 'response.output_text.delta').map((e) => e.delta)).toEqual([
      'The ',
      'answer.',
    ]);
    const resumed = run([round(0), text('Looking.'), started('c1'), completed('c1')], turn());
    const response = resumed.at(-1)!.response as ResponseObject;
    expect(response.output.map((i) => i.type)).toEqual(['message', 'reasoning', 'message']);
    expect(response.output_text).toBe('Looking.The answer.');
  });

  it('tool calls take their arguments and results from the turn’s record at the end', () => {
    const events = run(
      [round(0), started('c1'), completed('c1'), round(1), text('Three.')],
      turn({
        finalText: 'Three.',
        toolCalls: [
          {
            callId: 'c1',
            name: 'word_count',
            arguments: { text: 'a b c' },
            status: 'completed',
            result: { words: 3 },
            error: null,
          } as unknown as TurnResponse['toolCalls'][number],
        ],
      }),
    );
    const response = events.at(-1)!.response as ResponseObject;
    expect(response.output[0]).toEqual({
      type: 'reasoning',
      id: `rs_${TURN.replace(/-/g, '')}_0`,
      status: 'completed',
      summary: [{ type: 'summary_text', text: 'Called word_count with {"text":"a b c"} → {"words":3}' }],
      switchboard_tool_call: {
        call_id: 'c1',
        name: 'word_count',
        arguments: '{"text":"a b c"}',
        output: '{"words":3}',
        error: null,
        status: 'completed',
      },
    });
    // Streamed: the item is added when the call starts, its summary and done when it ends.
    const types = events.map((e) => e.type);
    const added = types.indexOf('response.output_item.added');
    expect(types.slice(added, added + 6)).toEqual([
      'response.output_item.added',
      'response.reasoning_summary_part.added',
      'response.reasoning_summary_text.delta',
      'response.reasoning_summary_text.done',
      'response.reasoning_summary_part.done',
      'response.output_item.done',
    ]);
    expect(events[added]).toMatchObject({
      item: { type: 'reasoning', status: 'in_progress', summary: [] },
    });
  });

  it('an error event carries its payload where Open Responses and the openai SDK read it', () => {
    const b = new ResponseBuilder(meta);
    b.error('server_shutting_down', 'bye');
    expect(b.take()).toEqual([
      {
        type: 'error',
        sequence_number: 0,
        code: 'server_shutting_down',
        message: 'bye',
        param: null,
        error: { type: 'server_error', code: 'server_shutting_down', message: 'bye', param: null },
      },
    ]);
  });

  it('ends failed, cancelled and incomplete turns with their events', () => {
    const failed = run(
      [round(0)],
      turn({
        status: 'failed',
        stopReason: 'provider_error',
        finalText: null,
        failure: { kind: 'provider_error', category: 'transport', message: 'down', brief: 'down' },
      }),
    ).at(-1)!;
    expect(failed.type).toBe('response.failed');
    expect(failed.response).toMatchObject({ status: 'failed', error: { code: 'server_error' } });
    const cancelled = run([], turn({ status: 'cancelled', stopReason: 'cancelled', finalText: null })).at(
      -1,
    )!;
    expect(cancelled.type).toBe('response.failed');
    expect(cancelled.response).toMatchObject({ status: 'cancelled', error: { code: 'turn_cancelled' } });
    const incomplete = run([], turn({ stopReason: 'max_iterations', finalText: 'partial' })).at(-1)!;
    expect(incomplete.type).toBe('response.incomplete');
    expect(incomplete.response).toMatchObject({
      status: 'incomplete',
      incomplete_details: { reason: 'max_iterations' },
      output: [{ type: 'message', status: 'incomplete' }],
    });
  });
});
