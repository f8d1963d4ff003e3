import net from 'node:net';
import IORedis from 'ioredis';
import { decode, isEphemeral, sessionChannel, TERMINAL_EVENT_TYPES, type LiveEvent } from '@switchboard/live';
import { createTestEnv, spawnApp, waitFor, type AppProcess, type TestEnv } from '@switchboard/testing';
import { Api, newTenant } from '../support/api';
import { FIXTURES, startGateway, type Running } from '../support/stack';

/**
 * `wait` on admission through real processes: two gateway replicas and a harness worker, each its
 * own process. A waiting request learns that its turn ended from the live channel (Redis pub/sub
 * fan-out to every replica), not by polling.
 */
jest.setTimeout(90_000);

const ADMIN = 'test-admin-token-0123456789';

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('admission with wait', () => {
  let env: TestEnv;
  const processes: AppProcess[] = [];
  const running: Running[] = [];
  let a: Api;
  let b: Api;
  let redis: IORedis;
  let echo: string;
  let slow: string;

  async function gatewayProcess(): Promise<string> {
    const port = await freePort();
    processes.push(
      await spawnApp(
        'gateway',
        env.processEnv({ PORT: String(port), HOST: '127.0.0.1', WAIT_TIMEOUT_MS: '20000' }),
        { readyPattern: /Server listening at|successfully started/ },
      ),
    );
    const url = `http://127.0.0.1:${port}`;
    await waitFor(async () => (await fetch(`${url}/healthz`)).ok, { what: 'the gateway to listen' });
    return url;
  }

  beforeAll(async () => {
    env = await createTestEnv();
    const [urlA, urlB] = await Promise.all([gatewayProcess(), gatewayProcess()]);
    processes.push(await spawnApp('harness-worker', env.processEnv({ SCRIPTED_FIXTURES_DIR: FIXTURES })));
    const tenant = await newTenant(urlA, ADMIN);
    a = tenant.api;
    b = new Api(urlB, a.key);
    redis = new IORedis(env.redisUrl);
    echo = (await a.post('/v1/agents', { name: 'echo', model: 'scripted/echo' })).body.id;
    slow = (await a.post('/v1/agents', { name: 'slow', model: 'scripted/slow' })).body.id;
  });

  afterAll(async () => {
    redis?.disconnect();
    await Promise.all(running.map((r) => r.close()));
    await Promise.all(processes.map((p) => p.kill('SIGTERM')));
    await env?.cleanup();
  });

  const newSession = async (agentId: string) => (await a.post('/v1/sessions', { agentId })).body.id as string;
  /** Gateway processes subscribed to the session's live channel. */
  const subscribers = async (sessionId: string) =>
    Number(
      ((await redis.pubsub('NUMSUB', sessionChannel(env.queuePrefix, sessionId))) as [string, number])[1],
    );

  it('answers 200 with the ended turn, as GET /v1/turns/:id shows it', async () => {
    const sessionId = await newSession(echo);
    const started = Date.now();
    const res = await a.post(`/v1/sessions/${sessionId}/messages`, { content: 'hello', wait: true });
    expect(res.status).toBe(200);
    // Heard live, not found by the last look at the 20 s bound.
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(res.body).toMatchObject({ status: 'completed', finalText: 'You said: hello', sessionId });
    const turn = await a.get(`/v1/turns/${res.body.id}`);
    expect(res.body).toEqual(turn.body);
  });

  /**
   * Listens to a session's live channel as a gateway does: the terminal events it hears, with what
   * they carry of the turn (docs/adr/0071).
   */
  async function listen(sessionId: string) {
    const listener = new IORedis(env.redisUrl);
    const ends: LiveEvent[] = [];
    listener.on('message', (_channel: string, raw: string) => {
      for (const e of decode(raw)?.events ?? [])
        if (!isEphemeral(e) && TERMINAL_EVENT_TYPES.has(e.type)) ends.push(e);
    });
    await listener.subscribe(sessionChannel(env.queuePrefix, sessionId));
    return { ends, close: () => listener.disconnect() };
  }

  it('answers exactly what GET /v1/turns/:id answers: with tool calls, failed, paused for approval', async () => {
    const agent = async (body: Record<string, unknown>) =>
      (await a.post('/v1/agents', { name: `a-${Date.now()}`, ...body })).body.id as string;
    const cases = [
      // Two rounds and a word_count call: the tool calls aggregated in the waiter's one statement.
      { agentId: await agent({ model: 'scripted/demo' }), status: 'completed', toolCalls: 1 },
      // A non-retryable provider error: the failure artifact and attempt timeline.
      { agentId: await agent({ model: 'scripted/auth-fails' }), status: 'failed', toolCalls: 0 },
      // The tool needs approval: the wait answers the pause (docs/adr/0013).
      {
        agentId: await agent({
          model: 'scripted/demo',
          tools: ['word_count'],
          approvalRequired: ['word_count'],
        }),
        status: 'awaiting_approval',
        toolCalls: undefined,
      },
    ];
    for (const c of cases) {
      const sessionId = await newSession(c.agentId);
      const heard = await listen(sessionId);
      const res = await a.post(`/v1/sessions/${sessionId}/messages`, {
        content: 'three small words',
        wait: true,
      });
      expect({ code: res.status, status: res.body.status }).toEqual({ code: 200, status: c.status });
      if (c.toolCalls !== undefined) expect(res.body.toolCalls).toHaveLength(c.toolCalls);
      const turn = await a.get(`/v1/turns/${res.body.id}`);
      // Byte for byte: same fields, same order, same conversions (cost, timestamps).
      expect(JSON.stringify(res.body)).toBe(JSON.stringify(turn.body));
      // An ended turn's answer came with its end event (docs/adr/0071): the turn rode along.
      if (c.status !== 'awaiting_approval') {
        await waitFor(() => heard.ends.length === 1, { what: 'the end event' });
        expect(heard.ends[0].turn).toEqual({
          row: expect.objectContaining({ id: res.body.id, status: c.status }),
        });
      }
      heard.close();
    }
  });

  it('POST /v1/chat/completions holds through the same wait: the answer is the turn GET /v1/turns/:id shows', async () => {
    const { body, status } = await a.post('/v1/chat/completions', {
      model: 'echo',
      messages: [{ role: 'user', content: 'chat hello' }],
    });
    expect(status).toBe(200);
    const turn = (await a.get(`/v1/turns/${body.turn_id}`)).body;
    expect(body.choices[0].message.content).toBe(turn.finalText);
    expect(body.usage).toMatchObject({
      prompt_tokens: turn.usage.inputTokens,
      completion_tokens: turn.usage.outputTokens,
    });
    expect(turn).toMatchObject({ status: 'completed', finalText: 'You said: chat hello' });
  });

  it('a subscriber connection killed mid-wait, again and again, still answers the turn (from Postgres)', async () => {
    const sessionId = await newSession(slow);
    const started = Date.now();
    let answered = false;
    const pending = a
      .post(`/v1/sessions/${sessionId}/messages`, { content: 'through the kills', wait: true })
      .finally(() => (answered = true));
    await waitFor(async () => (await subscribers(sessionId)) >= 1, { what: 'the waiter subscribed' });
    // Until the answer: this deployment's subscriber connections (named with its prefix) are killed
    // each 100 ms (the gateways reconnect and resync), so the end's publish is likely lost; the
    // resync or the deadline read answers.
    const ours = `name=switchboard-live:${env.queuePrefix} `;
    let kills = 0;
    while (!answered) {
      const list = String(await redis.call('CLIENT', 'LIST', 'TYPE', 'pubsub'));
      for (const line of list.split('\n').filter((l) => l.includes(ours))) {
        const id = /(?:^|\s)id=(\d+)/.exec(line)?.[1];
        if (id) kills += Number(await redis.call('CLIENT', 'KILL', 'ID', id));
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const res = await pending;
    expect(kills).toBeGreaterThan(0);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'completed', finalText: 'slow reply to through the kills' });
    expect(JSON.stringify(res.body)).toBe(JSON.stringify((await a.get(`/v1/turns/${res.body.id}`)).body));
    // Within the bound (20 s): the resync after a reconnect reads, not only the last look.
    expect(Date.now() - started).toBeLessThan(20_000);
  });

  it('answers every turn of a session waited on one after another (the channel lingers between them)', async () => {
    const sessionId = await newSession(echo);
    for (const word of ['one', 'two', 'three']) {
      const res = await a.post(`/v1/sessions/${sessionId}/messages`, { content: word, wait: true });
      expect({ status: res.status, text: res.body.finalText }).toEqual({
        status: 200,
        text: `You said: ${word}`,
      });
    }
  });

  it('fans out to every replica: waiters on both gateways are answered, one subscription per process', async () => {
    const sessionId = await newSession(slow);
    const send = (api: Api, content: string) =>
      api.post(`/v1/sessions/${sessionId}/messages`, { content, wait: true });
    const started = Date.now();
    const pending = [send(a, 'first'), send(a, 'second'), send(b, 'third')];
    // Three waiters, two processes: each gateway multiplexes its waiters onto one subscription.
    await waitFor(async () => (await subscribers(sessionId)) === 2, { what: 'both gateways subscribed' });
    const answers = await Promise.all(pending);
    // Three 1.5 s turns in a row, each answered as it ended: far from the 20 s bound.
    expect(Date.now() - started).toBeLessThan(12_000);
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200]);
    expect(answers.map((r) => r.body.status)).toEqual(['completed', 'completed', 'completed']);
    expect(answers.map((r) => r.body.finalText).sort()).toEqual(
      ['slow reply to first', 'slow reply to second', 'slow reply to third'].sort(),
    );
  });

  it('answers 202 as without wait when the turn outlasts the bound (WAIT_TIMEOUT_MS, or fewer seconds asked)', async () => {
    const short = await startGateway(env.config({ WAIT_TIMEOUT_MS: '300' }));
    running.push(short);
    const sessionId = await newSession(slow);
    let started = Date.now();
    const bounded = await new Api(short.url, a.key).post(`/v1/sessions/${sessionId}/messages`, {
      content: 'too slow',
      wait: true,
    });
    const elapsed = Date.now() - started;
    expect(bounded.status).toBe(202);
    expect(bounded.body).toEqual({
      messageId: expect.any(String),
      turnId: expect.any(String),
      status: 'queued',
    });
    expect(elapsed).toBeGreaterThanOrEqual(250);
    expect(elapsed).toBeLessThan(1_400);

    // `wait: 1` on a gateway whose bound is 20 s: one second.
    started = Date.now();
    const asked = await a.post(`/v1/sessions/${sessionId}/messages`, { content: 'also slow', wait: 1 });
    expect(asked.status).toBe(202);
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
    // The turns still run: a later wait sees the last one end.
    const last = await a.post(`/v1/sessions/${sessionId}/messages`, { content: 'last', wait: true });
    expect(last.body).toMatchObject({ status: 'completed', finalText: 'slow reply to last' });
  });

  it('a turn that ended before the wait subscribed is read from Postgres (an idempotent replay waits too)', async () => {
    const sessionId = await newSession(echo);
    const headers = { 'idempotency-key': 'replay-after-end' };
    const first = await a.post(`/v1/sessions/${sessionId}/messages`, { content: 'done already' }, headers);
    expect(first.status).toBe(202);
    await waitFor(async () => (await a.get(`/v1/turns/${first.body.turnId}`)).body.status === 'completed', {
      what: 'the turn to end',
    });
    // Nothing will be published for this turn any more: only the read after subscribing can answer.
    const started = Date.now();
    const replay = await b.post(
      `/v1/sessions/${sessionId}/messages`,
      { content: 'done already', wait: true },
      headers,
    );
    expect(replay.status).toBe(200);
    expect(replay.body).toMatchObject({ id: first.body.turnId, status: 'completed' });
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('a gateway that shuts down answers its waiting requests 202 rather than holding the drain', async () => {
    const leaving = await startGateway(env.config({ WAIT_TIMEOUT_MS: '20000' }));
    const sessionId = await newSession(slow);
    const waiting = new Api(leaving.url, a.key).post(`/v1/sessions/${sessionId}/messages`, {
      content: 'shutting down',
      wait: true,
    });
    await waitFor(async () => (await subscribers(sessionId)) === 1, { what: 'the waiter subscribed' });
    const started = Date.now();
    await leaving.close();
    const res = await waiting;
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({ turnId: expect.any(String) });
    expect(Date.now() - started).toBeLessThan(1_400);
  });

  it('a client that disconnects releases its subscription', async () => {
    const sessionId = await newSession(slow);
    // Eight slow turns ahead: the waited turn cannot end for 12 s or more (three were not enough on a
    // loaded machine: the release, 2 s of linger plus the polls, came after the fourth turn ended).
    for (const content of Array.from({ length: 8 }, (_, i) => `ahead ${i + 1}`)) {
      expect((await a.post(`/v1/sessions/${sessionId}/messages`, { content })).status).toBe(202);
    }
    const gone = new AbortController();
    const request = fetch(`${a.baseUrl}/v1/sessions/${sessionId}/messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${a.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ content: 'never mind', wait: true }),
      signal: gone.signal,
    }).catch((err: unknown) => err);
    await waitFor(async () => (await subscribers(sessionId)) === 1, { what: 'the waiter subscribed' });
    gone.abort();
    await request;
    // Unsubscribed once the channel's linger (2 s) has passed: before the turn could have ended.
    await waitFor(async () => (await subscribers(sessionId)) === 0, {
      what: 'the subscription released',
      timeoutMs: 10_000,
    });
    const ended = await env.db.turn.count({ where: { sessionId, status: 'completed' } });
    expect(ended).toBeLessThan(9);
  });
});
