import { createSwitchboardClient, type SwitchboardClient } from '@switchboard/client';
import {
  createTestEnv,
  FakeLlmServer,
  scripted,
  spawnApp,
  type AppProcess,
  type TestEnv,
} from '@switchboard/testing';
import { newTenant } from '../support/api';
import { startGateway, type Running } from '../support/stack';

jest.setTimeout(120_000);

const ADMIN = 'test-admin-token-0123456789';
const MODEL = 'openai-chat/gpt-4o-mini';

type Llm = { role: string; content: string | null }[];

/**
 * Memory blocks through real processes (docs/adr/0051), with the typed client a user would use: the
 * operator writes blocks over /v1/agents/:id/blocks (bad input → 400 and nothing written; another
 * tenant → 404); a harness worker process runs turns in which the model edits a block with its tool,
 * and the next turn's system prompt — as the fake model server received it — carries the new text,
 * framed as the agent's; a write that changes nothing leaves the prompt byte for byte.
 */
describe('memory blocks', () => {
  let env: TestEnv;
  let llm: FakeLlmServer;
  let gateway: Running & { url: string };
  let harness: AppProcess;
  let sb: SwitchboardClient;
  let other: SwitchboardClient;
  let agentId: string;
  let sessionId: string;

  beforeAll(async () => {
    env = await createTestEnv();
    llm = await FakeLlmServer.start();
    gateway = await startGateway(env.config(llm.providerEnv));
    harness = await spawnApp('harness-worker', env.processEnv(llm.providerEnv));
    const mine = await newTenant(gateway.url, ADMIN, 'mine');
    const theirs = await newTenant(gateway.url, ADMIN, 'theirs');
    sb = createSwitchboardClient({ baseUrl: gateway.url, apiKey: mine.api.key });
    other = createSwitchboardClient({ baseUrl: gateway.url, apiKey: theirs.api.key });
    const agent = await sb.api.POST('/v1/agents', {
      body: { name: 'keeper', model: MODEL, tools: ['memory_block_replace', 'memory_block_append'] },
    });
    agentId = agent.data!.id;
    sessionId = (await sb.api.POST('/v1/sessions', { body: { agentId } })).data!.id;
  });

  afterAll(async () => {
    await harness?.kill('SIGKILL');
    await gateway?.close();
    await llm?.close();
    await env?.cleanup();
  });

  const path = (name: string) => ({ params: { path: { id: agentId, name } } });

  function put(name: string, body: Record<string, unknown>, client = sb) {
    return client.api.PUT('/v1/agents/{id}/blocks/{name}', { ...path(name), body: body as never });
  }

  /** One turn in the session; its status and the system prompt of each model request it made. */
  async function turn(
    input: string,
  ): Promise<{ id: string; status: string; systems: string[]; requests: Llm[] }> {
    const before = llm.requests.length;
    const res = await sb.api.POST('/v1/sessions/{id}/messages', {
      params: { path: { id: sessionId } },
      body: { content: input, wait: 60 },
    });
    expect(res.response.status).toBe(200);
    const requests = llm.requests.slice(before).map((r) => (r.body as { messages: Llm }).messages);
    const body = res.data as unknown as { id: string; status: string };
    return { id: body.id, status: body.status, systems: requests.map((m) => m[0].content ?? ''), requests };
  }

  async function blockNames(): Promise<string[]> {
    const list = await sb.api.GET('/v1/agents/{id}/blocks', { params: { path: { id: agentId } } });
    return list.data!.data.map((b) => `${b.name}@${b.version}`);
  }

  it('refuses bad blocks with a 400, another tenant with a 404, and writes nothing', async () => {
    expect(
      (await put('persona', { content: 'You are Keeper, terse and exact.', readOnly: true })).response.status,
    ).toBe(200);
    expect(
      (await put('human', { content: 'Name: Ada.', description: 'The person you help', limitChars: 200 }))
        .response.status,
    ).toBe(200);
    const before = await blockNames();
    expect(before).toEqual(['human@1', 'persona@1']);

    const bad: [string, Record<string, unknown>][] = [
      ['Bad-Name', { content: 'x' }],
      ['fresh', {}],
      ['fresh', { content: 'x'.repeat(2001) }],
      ['fresh', { content: 'x', limitChars: 9000 }],
      ['fresh', { content: 'x', colour: 'red' }],
      ['human', { content: 'y'.repeat(201) }],
      ['human', { limitChars: 3 }],
    ];
    for (const [name, body] of bad) {
      const res = await put(name, body);
      expect([name, res.response.status]).toEqual([name, 400]);
    }
    const stale = await put('human', { content: 'Name: Bob.', expectedVersion: 7 });
    expect(stale.response.status).toBe(409);

    // Another tenant: 404 on every route, nothing written or read.
    expect((await put('human', { content: 'hijacked' }, other)).response.status).toBe(404);
    expect(
      (await other.api.GET('/v1/agents/{id}/blocks', { params: { path: { id: agentId } } })).response.status,
    ).toBe(404);
    expect((await other.api.GET('/v1/agents/{id}/blocks/{name}', path('human'))).response.status).toBe(404);
    expect(
      (await other.api.GET('/v1/agents/{id}/blocks/{name}/versions', path('human'))).response.status,
    ).toBe(404);
    expect((await other.api.DELETE('/v1/agents/{id}/blocks/{name}', path('human'))).response.status).toBe(
      404,
    );

    expect(await blockNames()).toEqual(before);
    expect((await sb.api.GET('/v1/agents/{id}/blocks/{name}', path('human'))).data).toMatchObject({
      content: 'Name: Ada.',
      version: 1,
      writtenBy: 'operator',
      readOnly: false,
      limitChars: 200,
    });
  });

  it('lets the model edit a block with its tool; the next turn’s system prompt carries the new text', async () => {
    llm.enqueue(
      scripted.toolCall(
        'memory_block_append',
        { block: 'human', text: 'Prefers answers in Norwegian.' },
        { id: 'c1' },
      ),
      scripted.toolCall(
        'memory_block_replace',
        { block: 'persona', old_text: 'terse', new_text: 'chatty' },
        { id: 'c2' },
      ),
      scripted.text('Noted.'),
    );
    const first = await turn('Please answer in Norwegian from now on.');
    expect(first.status).toBe('completed');
    // The turn's prompt: the operator's blocks as they were, framed as the operator's.
    expect(first.systems[0]).toContain(
      '<memory_block name="human" written_by="operator" chars="10/200" description="The person you help">\nName: Ada.\n</memory_block>',
    );
    expect(first.systems[0]).toContain('<memory_block name="persona" written_by="operator" read_only="true"');
    // The locked block refused the model's edit, with an error it can read.
    const toolResults = first.requests[2].filter((m) => m.role === 'tool').map((m) => m.content ?? '');
    expect(toolResults[0]).toContain('Prefers answers in Norwegian.');
    expect(toolResults[1]).toContain('read-only');
    // Within the turn the prompt does not move: the edit shows from the next turn on.
    expect(new Set(first.systems).size).toBe(1);

    llm.enqueue(scripted.text('Hei!'));
    const second = await turn('Hello');
    expect(second.systems[0]).toContain(
      '<memory_block name="human" written_by="agent" chars="40/200" description="The person you help">\nName: Ada.\nPrefers answers in Norwegian.\n</memory_block>',
    );
    expect(second.systems[0]).toContain('You are Keeper, terse and exact.');
    // Everything before the blocks is the session's stored prompt, byte for byte.
    const head = (s: string) => s.slice(0, s.indexOf('Your memory blocks follow'));
    expect(head(second.systems[0])).toBe(head(first.systems[0]));

    const versions = await sb.api.GET('/v1/agents/{id}/blocks/{name}/versions', path('human'));
    expect(versions.data!.data).toEqual([
      expect.objectContaining({ version: 2, writtenBy: 'agent', turnId: first.id }),
      expect.objectContaining({ version: 1, writtenBy: 'operator', turnId: null, content: 'Name: Ada.' }),
    ]);
    expect(await blockNames()).toEqual(['human@2', 'persona@1']);

    // A write that changes nothing keeps the version and the prompt's bytes.
    const noop = await put('human', {
      content: 'Name: Ada.\nPrefers answers in Norwegian.',
      expectedVersion: 2,
    });
    expect(noop.data).toMatchObject({ version: 2, writtenBy: 'agent' });
    llm.enqueue(scripted.text('Ja.'));
    const third = await turn('Still there?');
    expect(third.systems[0]).toBe(second.systems[0]);

    // The operator's edit over what it read: the next prompt has it, as the operator's.
    const edited = await put('human', { content: 'Name: Ada Lovelace.', expectedVersion: 2 });
    expect(edited.data).toMatchObject({ version: 3, writtenBy: 'operator' });
    llm.enqueue(scripted.text('Ja.'));
    const fourth = await turn('And now?');
    expect(fourth.systems[0]).toContain('written_by="operator" chars="19/200"');
    expect(fourth.systems[0]).toContain('\nName: Ada Lovelace.\n</memory_block>');
    expect(fourth.systems[0]).not.toContain('Norwegian');

    // Deleted: the next prompt renders without it.
    expect((await sb.api.DELETE('/v1/agents/{id}/blocks/{name}', path('human'))).response.status).toBe(204);
    llm.enqueue(scripted.text('Ok.'));
    const fifth = await turn('Bye');
    expect(fifth.systems[0]).not.toContain('name="human"');
    expect(fifth.systems[0]).toContain('name="persona"');
  });
});
