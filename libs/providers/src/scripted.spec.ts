import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadFixtureDir, ScriptedFixture, ScriptedProvider } from './scripted';
import { ProviderError, type ChatMessage, type ModelRequest, type ModelResponse } from './types';

function fixture(name: string, rounds: unknown[]): ScriptedFixture {
  return ScriptedFixture.parse({ name, rounds });
}

function request(model: string, messages: ChatMessage[], extra: Partial<ModelRequest> = {}): ModelRequest {
  return { model, messages, tools: [], ...extra };
}

const user = (content: string): ChatMessage => ({ role: 'user', content });
const assistant = (content = ''): ChatMessage => ({ role: 'assistant', content, toolCalls: [] });
const tool = (content: string, toolCallId = 'c'): ChatMessage => ({
  role: 'tool',
  toolCallId,
  name: 't',
  content,
});

async function caught(promise: Promise<unknown>): Promise<ProviderError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof ProviderError)) throw new Error(`expected a ProviderError, got ${String(err)}`);
  return err;
}

describe('ScriptedProvider round selection', () => {
  const provider = new ScriptedProvider([fixture('three', [{ text: 'r0' }, { text: 'r1' }, { text: 'r2' }])]);
  const play = (messages: ChatMessage[]) => provider.complete(request('three', messages));

  it('plays round 0 for a fresh user message, whatever came before it', async () => {
    const res = await play([
      { role: 'system', content: 'sys' },
      user('old'),
      assistant('a'),
      assistant('b'),
      user('new'),
    ]);
    expect(res.text).toBe('r0');
  });

  it('plays the round numbered by the assistant messages since the last user message', async () => {
    expect((await play([user('q'), assistant(), tool('x')])).text).toBe('r1');
    expect((await play([user('q'), assistant(), tool('x'), assistant(), tool('y')])).text).toBe('r2');
  });

  it('repeats the last round once the script runs out', async () => {
    const res = await play([user('q'), assistant(), assistant(), assistant(), assistant()]);
    expect(res.text).toBe('r2');
  });

  it('names tool calls after the round and their index and reports finish reasons', async () => {
    const p = new ScriptedProvider([
      fixture('tools', [
        { toolCalls: [{ name: 'a' }, { name: 'b', arguments: { x: 1 } }] },
        { text: 'done' },
      ]),
    ]);
    const first = await p.complete(request('tools', [user('q')]));
    expect(first.toolCalls).toEqual([
      { id: 'call_0_0', name: 'a', arguments: '{}' },
      { id: 'call_0_1', name: 'b', arguments: '{"x":1}' },
    ]);
    expect(first.finishReason).toBe('tool_calls');
    const second = await p.complete(request('tools', [user('q'), assistant(), tool('r')]));
    expect(second).toMatchObject({ text: 'done', toolCalls: [], finishReason: 'stop' });
  });

  it('estimates usage from the prompt and the output at about 4 characters a token', async () => {
    const p = new ScriptedProvider([fixture('u', [{ text: '12345678' }])]);
    const res = await p.complete(request('u', [user('a'.repeat(40))]));
    expect(res.usage).toEqual({ inputTokens: 10, outputTokens: 2, cachedTokens: 0 });
    expect(res.reportedCostUsd).toBeUndefined();
  });
});

describe('ScriptedProvider templating', () => {
  it('renders {{input}} from the last user message and {{lastToolResult}} from the latest tool result', async () => {
    const p = new ScriptedProvider([
      fixture('t', [{ text: 'unused' }, { text: 'in={{input}} last={{lastToolResult}} keep={{unknown}}' }]),
    ]);
    const res = await p.complete(
      request('t', [user('first'), assistant(), user('second'), assistant(), tool('R1'), tool('R2')]),
    );
    expect(res.text).toBe('in=second last=R2 keep={{unknown}}');
  });

  it('does not take a tool result from before the last user message', async () => {
    const p = new ScriptedProvider([fixture('t', [{ text: '[{{lastToolResult}}]' }])]);
    const res = await p.complete(request('t', [user('a'), assistant(), tool('stale'), user('b')]));
    expect(res.text).toBe('[]');
  });

  it('renders placeholders inside nested tool-call arguments and keeps them valid JSON', async () => {
    const input = 'say "hi"\\ and\nnew line $& $1 {"x":1} ünïcødé 😀';
    const p = new ScriptedProvider([
      fixture('nested', [
        {
          toolCalls: [
            {
              name: 'search',
              arguments: {
                query: '{{input}}',
                filter: { tags: ['{{input}}', 'fixed'], limit: 3, on: true, none: null },
                prefix: 'q: {{input}}!',
              },
            },
          ],
        },
      ]),
    ]);
    const res = await p.complete(request('nested', [user(input)]));

    expect(JSON.parse(res.toolCalls[0].arguments)).toEqual({
      query: input,
      filter: { tags: [input, 'fixed'], limit: 3, on: true, none: null },
      prefix: `q: ${input}!`,
    });
  });

  it('keeps the demo fixture flow: word_count on the input, then the tool result in the answer', async () => {
    const p = new ScriptedProvider();
    const first = await p.complete(request('demo', [user('one two "three"')]));
    expect(first.toolCalls).toEqual([
      { id: 'call_0_0', name: 'word_count', arguments: JSON.stringify({ text: 'one two "three"' }) },
    ]);
    const second = await p.complete(
      request('demo', [
        user('one two "three"'),
        { role: 'assistant', content: '', toolCalls: first.toolCalls },
        tool('{"words":3}', 'call_0_0'),
      ]),
    );
    expect(second.text).toBe('I counted your message with the word_count tool: {"words":3}');
  });
});

describe('ScriptedProvider streaming', () => {
  async function deltasOf(text: string, chunks: number): Promise<{ deltas: string[]; res: ModelResponse }> {
    const p = new ScriptedProvider([fixture('s', [{ text, chunks }])]);
    const deltas: string[] = [];
    const res = await p.complete(request('s', [user('x')], { onTextDelta: (d) => deltas.push(d) }));
    return { deltas, res };
  }

  it('streams the text in `chunks` deltas that join to the full text', async () => {
    const { deltas, res } = await deltasOf('abcdefghijkl', 4);
    expect(deltas).toEqual(['abc', 'def', 'ghi', 'jkl']);
    expect(deltas.join('')).toBe(res.text);
  });

  it('streams the whole text as one delta by default', async () => {
    const { deltas } = await deltasOf('hello world', 1);
    expect(deltas).toEqual(['hello world']);
  });

  it('sends no delta for an empty text', async () => {
    const p = new ScriptedProvider([fixture('e', [{ toolCalls: [{ name: 'x' }] }])]);
    const onTextDelta = jest.fn();
    await p.complete(request('e', [user('x')], { onTextDelta }));
    expect(onTextDelta).not.toHaveBeenCalled();
  });

  it('streams exactly `chunks` deltas when the text length is not a multiple of it', async () => {
    const { deltas } = await deltasOf('abcde', 4);
    expect(deltas.join('')).toBe('abcde');
    expect(deltas).toHaveLength(4);
  });
});

describe('ScriptedProvider delays and errors', () => {
  afterEach(() => {
    jest.useRealTimers();
  });

  /** Settles `promise` against everything already queued, without advancing fake time. */
  async function stateOf(promise: Promise<unknown>): Promise<'pending' | 'resolved' | 'rejected'> {
    const tracked = promise.then(
      () => 'resolved' as const,
      () => 'rejected' as const,
    );
    const pending = new Promise<'pending'>((resolve) => setImmediate(() => resolve('pending')));
    return Promise.race([tracked, pending]);
  }

  it('waits delayMs before answering', async () => {
    jest.useFakeTimers({ doNotFake: ['setImmediate', 'nextTick', 'queueMicrotask'] });
    const p = new ScriptedProvider([fixture('slow', [{ text: 'late', delayMs: 1_000 }])]);
    const answer = p.complete(request('slow', [user('x')]));

    await jest.advanceTimersByTimeAsync(999);
    expect(await stateOf(answer)).toBe('pending');
    await jest.advanceTimersByTimeAsync(1);
    expect(await stateOf(answer)).toBe('resolved');
    expect((await answer).text).toBe('late');
  });

  it('rejects with a cancelled ProviderError when aborted during the delay', async () => {
    jest.useFakeTimers({ doNotFake: ['setImmediate', 'nextTick', 'queueMicrotask'] });
    const p = new ScriptedProvider([fixture('slow', [{ text: 'late', delayMs: 60_000 }])]);
    const controller = new AbortController();
    const answer = p.complete(request('slow', [user('x')], { signal: controller.signal }));
    await jest.advanceTimersByTimeAsync(10);
    controller.abort();

    const err = await caught(answer);
    expect(err.kind).toBe('cancelled');
    expect(err.retryable).toBe(false);
  });

  it('rejects at once with a cancelled ProviderError when the signal is already aborted', async () => {
    jest.useFakeTimers({ doNotFake: ['setImmediate', 'nextTick', 'queueMicrotask'] });
    const p = new ScriptedProvider([fixture('slow', [{ text: 'late', delayMs: 60_000 }])]);
    const controller = new AbortController();
    controller.abort();
    const answer = p.complete(request('slow', [user('x')], { signal: controller.signal }));
    answer.catch(() => undefined);

    expect(await stateOf(answer)).toBe('rejected');
    expect((await caught(answer)).kind).toBe('cancelled');
  });

  it.each([
    ['rate_limited', true],
    ['server', true],
    ['auth', false],
    ['context_length', false],
    ['invalid_response', false],
  ] as const)('fails an `error: %s` round with a ProviderError of that kind', async (kind, retryable) => {
    const p = new ScriptedProvider([fixture('err', [{ error: kind, text: 'never' }])]);
    const onTextDelta = jest.fn();
    const err = await caught(p.complete(request('err', [user('x')], { onTextDelta })));
    expect(err.kind).toBe(kind);
    expect(err.retryable).toBe(retryable);
    expect(err.details.provider).toBe('scripted');
    expect(onTextDelta).not.toHaveBeenCalled();
  });

  it('fails an unknown fixture with bad_request naming it', async () => {
    const err = await caught(new ScriptedProvider().complete(request('no-such-fixture', [user('x')])));
    expect(err.kind).toBe('bad_request');
    expect(err.message).toContain('no-such-fixture');
  });
});

describe('ScriptedProvider fixtures', () => {
  it('has the built-in fixtures and lets a custom fixture replace one of the same name', async () => {
    const p = new ScriptedProvider([fixture('echo', [{ text: 'custom echo' }])]);
    expect(p.has('demo')).toBe(true);
    expect(p.has('echo')).toBe(true);
    expect(p.has('nope')).toBe(false);
    expect((await p.complete(request('echo', [user('x')]))).text).toBe('custom echo');
    expect((await new ScriptedProvider().complete(request('echo', [user('x')]))).text).toBe('You said: x');
  });

  it('rejects fixtures with unknown fields, bad names, no rounds or out-of-range numbers', () => {
    expect(ScriptedFixture.safeParse({ name: 'ok', rounds: [{ text: 'x', surprise: 1 }] }).success).toBe(
      false,
    );
    expect(ScriptedFixture.safeParse({ name: 'has space', rounds: [{}] }).success).toBe(false);
    expect(ScriptedFixture.safeParse({ name: 'ok', rounds: [] }).success).toBe(false);
    expect(ScriptedFixture.safeParse({ name: 'ok', rounds: [{ chunks: 0 }] }).success).toBe(false);
    expect(ScriptedFixture.safeParse({ name: 'ok', rounds: [{ delayMs: -1 }] }).success).toBe(false);
    expect(ScriptedFixture.safeParse({ name: 'ok', rounds: [{ error: 'cancelled' }] }).success).toBe(false);
    expect(ScriptedFixture.parse({ name: 'ok', rounds: [{}] }).rounds[0]).toEqual({
      text: '',
      toolCalls: [],
      delayMs: 0,
      chunks: 1,
    });
  });

  describe('loadFixtureDir', () => {
    let dir: string;
    beforeEach(() => {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-fixtures-'));
    });
    afterEach(() => {
      fs.rmSync(dir, { recursive: true, force: true });
    });

    it('loads every *.json file and ignores other files', () => {
      fs.writeFileSync(path.join(dir, 'a.json'), JSON.stringify({ name: 'a', rounds: [{ text: 'A' }] }));
      fs.writeFileSync(path.join(dir, 'b.json'), JSON.stringify({ name: 'b', rounds: [{ text: 'B' }] }));
      fs.writeFileSync(path.join(dir, 'notes.txt'), 'not a fixture');

      const loaded = loadFixtureDir(dir);
      expect(loaded.map((f) => f.name).sort()).toEqual(['a', 'b']);
      expect(loaded.find((f) => f.name === 'a')?.rounds[0]).toMatchObject({ text: 'A', chunks: 1 });
    });

    it('rejects a file that does not match the fixture schema, naming the file', () => {
      fs.writeFileSync(path.join(dir, 'good.json'), JSON.stringify({ name: 'good', rounds: [{}] }));
      const bad = path.join(dir, 'bad.json');
      fs.writeFileSync(bad, JSON.stringify({ name: 'bad', rounds: [{ txt: 'typo' }] }));

      expect(() => loadFixtureDir(dir)).toThrow(bad);
    });

    it('rejects a file that is not valid JSON, naming the file', () => {
      const broken = path.join(dir, 'broken.json');
      fs.writeFileSync(broken, '{ "name": "broken", ');

      expect(() => loadFixtureDir(dir)).toThrow(broken);
    });
  });
});

describe('ScriptedProvider and a forced tool choice (docs/adr/0047)', () => {
  const spec = (name: string) => ({ name, description: '', parameters: { type: 'object' } });

  it('calls the named tool as a model obeying the choice would, and records what it was asked', async () => {
    const p = new ScriptedProvider([
      fixture('forced', [{ toolCalls: [{ name: 'other', arguments: { a: 1 } }] }, { text: 'done' }]),
    ]);
    const named = await p.complete(
      request('forced', [user('hi')], {
        tools: [spec('other'), spec('extract')],
        toolChoice: { type: 'tool', name: 'extract' },
      }),
    );
    expect(named.toolCalls).toEqual([{ id: 'call_0_0', name: 'extract', arguments: '{}' }]);
    expect(named.finishReason).toBe('tool_calls');
    expect(p.requests.at(-1)).toEqual({
      model: 'forced',
      round: 0,
      tools: ['other', 'extract'],
      toolChoice: { type: 'tool', name: 'extract' },
    });
    // The round's own calls to the named tool are kept; others dropped.
    const own = await p.complete(
      request('forced', [user('hi')], {
        tools: [spec('other')],
        toolChoice: { type: 'tool', name: 'other' },
      }),
    );
    expect(own.toolCalls).toEqual([{ id: 'call_0_0', name: 'other', arguments: '{"a":1}' }]);
  });

  it('required adds a call to the first offered tool only when the round calls none', async () => {
    const p = new ScriptedProvider([fixture('plain', [{ text: 'no tools' }])]);
    const forced = await p.complete(
      request('plain', [user('hi')], {
        tools: [spec('first'), spec('second')],
        toolChoice: { type: 'required' },
      }),
    );
    expect(forced.toolCalls.map((c) => c.name)).toEqual(['first']);
    const free = await p.complete(request('plain', [user('hi')], { tools: [spec('first')] }));
    expect(free.toolCalls).toEqual([]);
    expect(p.requests.at(-1)).not.toHaveProperty('toolChoice');
  });
});
