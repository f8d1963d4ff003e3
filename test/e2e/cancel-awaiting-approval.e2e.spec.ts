import {
  createTestEnv,
  FakeLlmServer,
  spawnApp,
  waitFor,
  type AppProcess,
  type RecordedRequest,
  type ScriptedReply,
  type TestEnv,
} from '@switchboard/testing';
import { newTenant, type Api } from '../support/api';
import { startGateway, type Running } from '../support/stack';

jest.setTimeout(120_000);

/** One entry of a provider request's conversation, the same for Chat Completions and Anthropic. */
type Item =
  | { role: 'user'; text: string }
  | { role: 'assistant'; calls: { id: string; name: string }[] }
  | { role: 'tool'; id: string; content: string };

interface WireMessage {
  role: string;
  content?: unknown;
  tool_calls?: { id: string; function: { name: string } }[];
  tool_call_id?: string;
}
interface WireBlock {
  type: string;
  text?: string;
  id?: string;
  name?: string;
  tool_use_id?: string;
  content?: unknown;
}

const textOf = (c: unknown): string =>
  typeof c === 'string'
    ? c
    : Array.isArray(c)
      ? (c as WireBlock[]).map((b) => (b.type === 'text' ? (b.text ?? '') : '')).join('')
      : '';

/** A recorded request's conversation (system prompt left out), whichever wire format carried it. */
function conversation(r: RecordedRequest): Item[] {
  const messages = (r.body as { messages?: WireMessage[] }).messages ?? [];
  return messages.flatMap((m): Item[] => {
    if (r.endpoint === 'openai.chat.completions') {
      if (m.role === 'assistant' && m.tool_calls?.length)
        return [{ role: 'assistant', calls: m.tool_calls.map((c) => ({ id: c.id, name: c.function.name })) }];
      if (m.role === 'tool') return [{ role: 'tool', id: m.tool_call_id ?? '', content: textOf(m.content) }];
      return m.role === 'user' ? [{ role: 'user', text: textOf(m.content) }] : [];
    }
    const blocks: WireBlock[] =
      typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : (m.content as WireBlock[]);
    const uses = blocks.filter((b) => b.type === 'tool_use');
    if (m.role === 'assistant' && uses.length > 0)
      return [{ role: 'assistant', calls: uses.map((b) => ({ id: b.id ?? '', name: b.name ?? '' })) }];
    if (m.role !== 'user') return [];
    const results = blocks
      .filter((b) => b.type === 'tool_result')
      .map((b): Item => ({ role: 'tool', id: b.tool_use_id ?? '', content: textOf(b.content) }));
    const text = textOf(blocks.filter((b) => b.type === 'text'));
    return [...results, ...(text ? [{ role: 'user' as const, text }] : [])];
  });
}

const lastUserText = (r: RecordedRequest) =>
  conversation(r)
    .filter((i) => i.role === 'user')
    .at(-1)?.text ?? '';

/** `count <marker>`: both tools in one round; anything else is echoed. */
function reply(r: RecordedRequest): ScriptedReply {
  const items = conversation(r);
  const text = lastUserText(r);
  if (/count \S+$/.test(text) && items.at(-1)?.role === 'user')
    return {
      kind: 'message',
      toolCalls: [
        { name: 'word_count', arguments: JSON.stringify({ text: 'one two three' }) },
        { name: 'current_time', arguments: '{}' },
      ],
    };
  return { kind: 'message', text: 'noted' };
}

/**
 * Defect 1 of issue 18, through real processes with the stock OpenAI and Anthropic clients against the
 * fake LLM server: a turn cancelled (or interrupted) while one call of its round awaits approval and
 * the other already ran. The next message's provider request must carry the round, the call that ran
 * with its real result, and the gated call answered cancelled.
 */
describe('a turn cancelled while a call awaits approval', () => {
  let env: TestEnv;
  let llm: FakeLlmServer;
  let gateway: Running & { url: string };
  let api: Api;
  let worker: AppProcess;

  beforeAll(async () => {
    env = await createTestEnv();
    llm = await FakeLlmServer.start();
    llm.setDefault(reply);
    gateway = await startGateway(env.config({ ...llm.providerEnv }));
    ({ api } = await newTenant(gateway.url, 'test-admin-token-0123456789'));
    worker = await spawnApp('harness-worker', env.processEnv({ ...llm.providerEnv }));
  });

  afterAll(async () => {
    await worker?.kill('SIGKILL');
    await gateway?.close();
    await llm?.close();
    await env?.cleanup();
  });

  const status = (turnId: string, is: string) =>
    waitFor(
      async () => {
        const t = await api.get(`/v1/turns/${turnId}`);
        return t.body.status === is ? t.body : undefined;
      },
      { what: `turn ${turnId} ${is}`, timeoutMs: 60_000 },
    );

  it.each([
    ['Chat Completions', 'openai-chat/gpt-4o-mini', 'cancel'],
    ['Chat Completions', 'openai-chat/gpt-4o-mini', 'interrupt'],
    ['Anthropic', 'anthropic/claude-sonnet-5-5', 'cancel'],
    ['Anthropic', 'anthropic/claude-sonnet-5-5', 'interrupt'],
  ])(
    '%s (%s), %s: the next request has the round, the result that ran and the gated call cancelled',
    async (_wire, model, how) => {
      const marker = `${how}-${model.split('/')[0]}`;
      const agent = await api.post('/v1/agents', {
        name: `gated-${marker}`,
        model,
        tools: ['word_count', 'current_time'],
        approvalRequired: ['word_count'],
      });
      expect(agent.status).toBe(201);
      const session = (await api.post('/v1/sessions', { agentId: agent.body.id })).body.id as string;

      const first = await api.post(`/v1/sessions/${session}/messages`, { content: `count ${marker}` });
      expect(first.status).toBe(202);
      const turnId = first.body.turnId as string;
      await status(turnId, 'awaiting_approval');
      const journal = (await api.get(`/v1/sessions/${session}/events`)).body.data as {
        type: string;
        data: { name?: string; ok?: boolean };
      }[];
      expect(
        journal.filter((e) => e.type === 'tool_call_completed').map((e) => [e.data.name, e.data.ok]),
      ).toEqual([['current_time', true]]);

      const next = `what happened ${marker}`;
      if (how === 'cancel') {
        const c = await api.post(`/v1/turns/${turnId}/cancel`, {});
        expect(c.status).toBe(200);
        expect(c.body).toMatchObject({ status: 'cancelled' });
        const m = await api.post(`/v1/sessions/${session}/messages`, { content: next, wait: true });
        expect(m.body).toMatchObject({ status: 'completed', finalText: 'noted' });
      } else {
        const m = await api.post(`/v1/sessions/${session}/messages`, {
          content: next,
          multitask: 'interrupt',
          wait: true,
        });
        expect(m.status).toBe(200);
        expect(m.body).toMatchObject({ status: 'completed', finalText: 'noted' });
        expect((await api.get(`/v1/turns/${turnId}`)).body.status).toBe('cancelled');
      }

      const request = llm.requests.find((r) => lastUserText(r).endsWith(next));
      expect(request).toBeDefined();
      const items = conversation(request!);
      expect(items.map((i) => i.role)).toEqual(['user', 'assistant', 'tool', 'tool', 'user']);
      const round = items[1] as Extract<Item, { role: 'assistant' }>;
      expect(round.calls.map((c) => c.name)).toEqual(['word_count', 'current_time']);
      const [wordCount, currentTime] = round.calls.map((c) => c.id);
      const results = new Map(
        items
          .filter((i): i is Extract<Item, { role: 'tool' }> => i.role === 'tool')
          .map((i) => [i.id, i.content]),
      );
      expect([...results.keys()].sort()).toEqual([wordCount, currentTime].sort());
      // The call that ran, with its real result; the gated one answered cancelled.
      expect(JSON.parse(results.get(currentTime)!)).toMatchObject({ ok: true, result: expect.anything() });
      expect(JSON.parse(results.get(wordCount)!)).toMatchObject({
        ok: false,
        kind: 'cancelled',
        tool_name: 'word_count',
      });
      // word_count never ran: the model was not told a count.
      expect(results.get(wordCount)).not.toContain('"words"');
    },
  );
});
