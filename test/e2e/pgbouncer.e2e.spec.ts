import { execFileSync } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import path from 'node:path';
import OpenAI from 'openai';
import { createTestEnv, crossRealmSafeFetch, waitFor, type TestEnv } from '@switchboard/testing';
import { Api, newTenant } from '../support/api';
import { FIXTURES, startGateway, startHarness, startHooks, type Running } from '../support/stack';

/**
 * Switchboard behind PgBouncer 1.18 in transaction pooling mode (docs/adr/0041): a gateway, a
 * harness worker and a hooks worker whose DATABASE_URL is the bouncer, with
 * DATABASE_PREPARED_STATEMENTS=false (a named statement is prepared on one server connection and
 * the next transaction may run on another). Core flows through the public HTTP API: nothing lost
 * or duplicated, also across a restart of the bouncer. `scripts/pgbouncer.sh` runs the bouncer;
 * without the pgbouncer binary the file skips (scripts/test.sh installs it when it can).
 */
jest.setTimeout(60_000);

const SCRIPT = path.resolve(__dirname, '../../scripts/pgbouncer.sh');
const ADMIN = 'test-admin-token-0123456789';

function pgbouncerInstalled(): boolean {
  const dirs = [...(process.env.PATH ?? '').split(path.delimiter), '/usr/sbin'];
  return dirs.some((d) => d && existsSync(path.join(d, 'pgbouncer')));
}

const installed = pgbouncerInstalled();
if (!installed) {
  console.warn(
    'test/e2e/pgbouncer.e2e.spec.ts skipped: the pgbouncer binary is not installed (scripts/pgbouncer.sh install, or apt-get install pgbouncer)',
  );
}

function bouncer(...args: string[]): string {
  return execFileSync(SCRIPT, args, { encoding: 'utf8', timeout: 20_000 }).trim();
}

(installed ? describe : describe.skip)('Switchboard behind PgBouncer in transaction pooling mode', () => {
  let env: TestEnv;
  let dir: string;
  const apps: Running[] = [];
  let url: string;
  let api: Api;
  let agentId: string;
  let sessionId: string;

  beforeAll(async () => {
    env = await createTestEnv();
    const started = /^port=(\d+) dir=(.+)$/.exec(bouncer('start'));
    if (!started) throw new Error('scripts/pgbouncer.sh start printed no port');
    dir = started[2];
    const viaBouncer = new URL(env.databaseUrl);
    viaBouncer.port = started[1];
    const config = env.config({
      DATABASE_URL: viaBouncer.toString(),
      DATABASE_PREPARED_STATEMENTS: 'false',
      SCRIPTED_FIXTURES_DIR: FIXTURES,
    });
    const gateway = await startGateway(config);
    apps.push(gateway, await startHarness(config), await startHooks(config));
    url = gateway.url;
    ({ api } = await newTenant(url, ADMIN));
    const agent = await api.post('/v1/agents', {
      name: 'counter',
      instructions: 'Count words.',
      tools: ['word_count'],
    });
    expect(agent.status).toBe(201);
    agentId = agent.body.id;
    sessionId = (await api.post('/v1/sessions', { agentId })).body.id;
  });

  afterAll(async () => {
    // Workers first so nothing is mid-flight when the connections go.
    for (const app of apps.reverse()) await app.close();
    if (dir) {
      bouncer('stop', dir);
      rmSync(dir, { recursive: true, force: true });
    }
    await env?.cleanup();
  });

  /** One message with wait:true: the turn it ran, completed, with its word_count call. */
  async function say(content: string) {
    const res = await api.post(`/v1/sessions/${sessionId}/messages`, { content, wait: true });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'completed' });
    return res.body as { id: string; status: string };
  }

  async function expectTurnWithToolCall(turnId: string, words: number) {
    const turn = (await api.get(`/v1/turns/${turnId}`)).body;
    expect(turn).toMatchObject({ status: 'completed', stopReason: 'final_answer' });
    expect(turn.finalText).toContain(`"words":${words}`);
    expect(turn.toolCalls).toEqual([
      expect.objectContaining({
        name: 'word_count',
        status: 'completed',
        result: expect.objectContaining({ words }),
      }),
    ]);
  }

  /** Every row of the session counted once: messages by role, turns, events by seq. */
  async function expectTranscript(turnIds: string[]) {
    const transcript = await api.get(`/v1/sessions/${sessionId}/messages?limit=200`);
    expect(transcript.status).toBe(200);
    const roles = transcript.body.data.map((m: { role: string }) => m.role);
    // Each turn: the user's message, the call, its result, the answer.
    expect(roles).toEqual(turnIds.flatMap(() => ['user', 'assistant', 'tool', 'assistant']));
    const ids = transcript.body.data.map((m: { id: string }) => m.id);
    expect(new Set(ids).size).toBe(ids.length);

    const rows = await env.db.turn.findMany({ where: { sessionId }, orderBy: { createdAt: 'asc' } });
    expect(rows.map((t) => t.id).sort()).toEqual([...turnIds].sort());
    expect(rows.every((t) => t.status === 'completed')).toBe(true);
    expect(await env.db.message.count({ where: { sessionId } })).toBe(turnIds.length * 4);
    expect(await env.db.toolCall.count({ where: { turnId: { in: turnIds } } })).toBe(turnIds.length);

    const events = await api.get(`/v1/sessions/${sessionId}/events?limit=500`);
    expect(events.status).toBe(200);
    const data = events.body.data as { seq: number; type: string }[];
    const seqs = data.map((e) => e.seq);
    expect(new Set(seqs).size).toBe(seqs.length);
    expect(data.filter((e) => e.type === 'message_admitted')).toHaveLength(turnIds.length);
    expect(data.filter((e) => e.type === 'turn_started')).toHaveLength(turnIds.length);
    expect(data.filter((e) => e.type === 'turn_completed')).toHaveLength(turnIds.length);
  }

  it('runs tool-using turns with wait:true, concurrent ones too, and keeps every row once', async () => {
    const first = await say('one two three four');
    await expectTurnWithToolCall(first.id, 4);
    // Several sessions at once: transactions of different apps interleave on the bouncer's connections.
    const others = await Promise.all(
      [1, 2, 3, 4].map(async (n) => {
        const session = (await api.post('/v1/sessions', { agentId })).body.id as string;
        const res = await api.post(`/v1/sessions/${session}/messages`, {
          content: 'a b c '.repeat(n).trim(),
          wait: true,
        });
        return res.body as { id: string; status: string };
      }),
    );
    expect(others.map((t) => t.status)).toEqual(['completed', 'completed', 'completed', 'completed']);
    const second = await say('five six');
    await expectTurnWithToolCall(second.id, 2);
    await expectTranscript([first.id, second.id]);

    // The post-turn hooks ran once per turn, through the bouncer too.
    await waitFor(
      async () =>
        (await env.db.hookRun.count({
          where: { turnId: { in: [first.id, second.id] }, hook: 'cost-log' },
        })) === 2,
      { what: 'the cost-log hook of both turns' },
    );
  });

  it('answers a chat completion through the openai client', async () => {
    const client = new OpenAI({
      baseURL: `${url}/v1`,
      apiKey: api.key!,
      fetch: crossRealmSafeFetch,
      maxRetries: 0,
    });
    const { data, response } = await client.chat.completions
      .create({ model: 'counter', messages: [{ role: 'user', content: 'seven eight nine' }] })
      .withResponse();
    expect(data.object).toBe('chat.completion');
    expect(data.choices[0].message.content).toContain('"words":3');
    const extra = data as unknown as { session_id: string; turn_id: string };
    expect(response.headers.get('x-session-id')).toBe(extra.session_id);
    expect((await api.get(`/v1/turns/${extra.turn_id}`)).body.status).toBe('completed');
    expect(await env.db.turn.count({ where: { sessionId: extra.session_id } })).toBe(1);
  });

  it('keeps working across a restart of the bouncer, with no duplicate rows', async () => {
    const before = await env.db.turn.findMany({ where: { sessionId }, select: { id: true } });
    bouncer('stop', dir);
    // Every app reaches Postgres only through the bouncer: with it down nothing is admitted.
    const down = await api.post(`/v1/sessions/${sessionId}/messages`, { content: 'while down', wait: true });
    expect(down.status).toBe(503);
    bouncer('start', dir);
    // The pools' connections to the old bouncer are dead; the next statements open new ones.
    const turnIds = before.map((t) => t.id);
    for (const content of ['ten eleven', 'twelve thirteen fourteen']) {
      const res = await waitFor(
        async () => {
          const r = await api.post(`/v1/sessions/${sessionId}/messages`, { content, wait: true });
          // 503 while a pool still hands out a dead connection: nothing was admitted, so try again.
          return r.status === 503 ? undefined : r;
        },
        { what: 'the gateway to admit through the restarted bouncer' },
      );
      expect(res.status).toBe(200);
      expect(res.body.status).toBe('completed');
      turnIds.push(res.body.id);
    }
    await expectTurnWithToolCall(turnIds[turnIds.length - 1], 3);
    await expectTranscript(turnIds);
  });

  it('finishes turns in flight across a restart of the bouncer, each once', async () => {
    const session = (await api.post('/v1/sessions', { agentId })).body.id as string;
    const admitted: string[] = [];
    for (const content of ['alpha', 'alpha beta', 'alpha beta gamma']) {
      const res = await api.post(`/v1/sessions/${session}/messages`, { content });
      expect(res.status).toBe(202);
      admitted.push(res.body.turnId);
    }
    bouncer('stop', dir);
    await new Promise((resolve) => setTimeout(resolve, 300));
    bouncer('start', dir);
    const turns = await waitFor(
      async () => {
        const rows = await env.db.turn.findMany({ where: { sessionId: session } });
        return rows.length === 3 && rows.every((t) => t.status === 'completed') ? rows : undefined;
      },
      { what: 'the three turns to complete after the restart', timeoutMs: 30_000 },
    );
    expect(turns.map((t) => t.id).sort()).toEqual([...admitted].sort());
    expect(await env.db.message.count({ where: { sessionId: session } })).toBe(12);
    expect(await env.db.toolCall.count({ where: { turnId: { in: admitted } } })).toBe(3);
    const events = (await api.get(`/v1/sessions/${session}/events?limit=500`)).body.data as { seq: number }[];
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
  });
});
