import { createSwitchboardClient } from '@switchboard/client';
import { createTestEnv, runProcess, waitFor, type TestEnv } from '@switchboard/testing';
import { newTenant } from '../support/api';
import { startStack } from '../support/stack';

/**
 * The typed client (libs/client) and the CLI on it (`npm run cli`), as a tenant uses them against a
 * running stack: a full turn, a streamed turn and an approval, each through the CLI as a process;
 * the client's typed calls and its SSE helper directly; a bad key and bad arguments fail clearly.
 */
jest.setTimeout(180_000);

describe('the typed client and the CLI', () => {
  let env: TestEnv;
  let stack: Awaited<ReturnType<typeof startStack>>;
  let key: string;

  beforeAll(async () => {
    env = await createTestEnv();
    stack = await startStack(env.config());
    key = (await newTenant(stack.url, 'test-admin-token-0123456789', 'cli')).api.key!;
  });

  afterAll(async () => {
    await stack?.close();
    await env?.cleanup();
  });

  /** The CLI as a process (asynchronously: the stack answers from this process). */
  async function cli(args: string[], o: { key?: string } = {}) {
    const r = await runProcess(process.execPath, ['-r', '@swc-node/register', 'scripts/cli.ts', ...args], {
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        SWITCHBOARD_URL: stack.url,
        SWITCHBOARD_API_KEY: o.key ?? key,
      },
    });
    return { code: r.code, out: r.stdout, err: r.stderr };
  }
  const json = async (args: string[]) => {
    const r = await cli(args);
    expect({ code: r.code, err: r.err }).toEqual({ code: 0, err: '' });
    return JSON.parse(r.out) as Record<string, any>;
  };

  it('drives a full turn: an agent, a session, a message answered once its turn ends', async () => {
    const agent = await json(['agents', 'create', '--name', 'counter', '--tool', 'word_count']);
    const session = await json(['sessions', 'create', '--agent', agent.id]);
    const turn = await json(['send', session.id, 'one two three', '--wait']);
    expect(turn).toMatchObject({ status: 'completed', stopReason: 'final_answer' });
    expect(await json(['turns', 'get', turn.id])).toMatchObject({ id: turn.id, status: 'completed' });
    expect((await json(['agents', 'list'])).data.map((a: { id: string }) => a.id)).toContain(agent.id);
    expect((await json(['usage'])).totals).toBeDefined();
  });

  it('streams a turn: the text as it comes, then the ended turn', async () => {
    const agent = await json(['agents', 'create', '--name', 'streamer', '--tool', 'word_count']);
    const session = await json(['sessions', 'create', '--agent', agent.id]);
    const r = await cli(['send', session.id, 'alpha beta', '--stream']);
    expect({ code: r.code, err: r.err }).toEqual({ code: 0, err: '' });
    const [text, ...rest] = r.out.split('\n{');
    const turn = JSON.parse(`{${rest.join('\n{')}`) as { status: string; finalText: string };
    expect(turn.status).toBe('completed');
    expect(text.trim()).toContain(turn.finalText.trim());
  });

  it('decides an approval: the turn waits, the CLI approves, the turn ends', async () => {
    const agent = await json([
      'agents',
      'create',
      '--name',
      'gated',
      '--tool',
      'word_count',
      '--approval-required',
      'word_count',
    ]);
    const session = await json(['sessions', 'create', '--agent', agent.id]);
    const waiting = await json(['send', session.id, 'count these words', '--wait']);
    expect(waiting.status).toBe('awaiting_approval');
    const pending = await json(['approvals', 'list', '--status', 'pending']);
    const approval = pending.data.find((a: { turnId: string }) => a.turnId === waiting.id);
    expect(approval).toBeDefined();
    expect(await json(['approvals', 'approve', approval.id])).toMatchObject({ status: 'approved' });
    const ended = await waitFor(async () => {
      const t = await json(['turns', 'get', waiting.id]);
      return t.status === 'completed' ? t : undefined;
    });
    expect(ended.toolCalls.map((c: { name: string }) => c.name)).toEqual(['word_count']);
  });

  it('gives the typed client’s calls and its SSE helper to TypeScript users', async () => {
    const sb = createSwitchboardClient({ baseUrl: stack.url, apiKey: key });
    const agent = await sb.api.POST('/v1/agents', { body: { name: 'typed', tools: ['word_count'] } });
    expect(agent.response.status).toBe(201);
    const session = await sb.api.POST('/v1/sessions', { body: { agentId: agent.data!.id } });
    const admitted = await sb.api.POST('/v1/sessions/{id}/messages', {
      params: { path: { id: session.data!.id } },
      body: { content: 'one two', wait: true },
    });
    expect(admitted.response.status).toBe(200);
    const types: string[] = [];
    for await (const frame of sb.streamSession(session.data!.id)) {
      if (frame.id !== undefined && frame.event) types.push(frame.event);
      if (frame.event === 'turn_completed') break;
    }
    expect(types[0]).toBe('message_admitted');
    expect(types).toContain('turn_completed');
    // An error answer is data, typed by the document's error schema.
    const missing = await sb.api.GET('/v1/turns/{id}', {
      params: { path: { id: '01a20360-0000-7000-8000-000000000000' } },
    });
    expect(missing.response.status).toBe(404);
    expect(missing.error).toMatchObject({ error: { code: 'not_found' } });
  });

  it('fails clearly: a bad key is the API’s 401 on stderr, bad arguments are usage errors', async () => {
    const denied = await cli(['agents', 'list'], { key: 'sb_not_a_real_key' });
    expect(denied.code).toBe(1);
    expect(denied.err).toContain('HTTP 401');
    const bad = await cli(['approvals', 'list', '--status', 'maybe']);
    expect(bad.code).not.toBe(0);
    expect(bad.err).toContain("argument 'maybe' is invalid");
    const help = await cli(['--help']);
    expect(help.code).toBe(0);
    for (const command of [
      'agents',
      'sessions',
      'send',
      'turns',
      'approvals',
      'usage',
      'triggers',
      'schedules',
    ]) {
      expect(help.out).toContain(command);
    }
  });
});
