import net from 'node:net';
import IORedis from 'ioredis';
import { sessionChannel } from '@switchboard/live';
import {
  createTestEnv,
  FakeLlmServer,
  scripted,
  spawnApp,
  waitFor,
  type AppProcess,
  type TestEnv,
} from '@switchboard/testing';
import { Api, newTenant } from '../support/api';
import { SseClient, type Frame } from '../support/sse';

/**
 * The SSE streams (`GET /v1/turns/:id/stream`, `GET /v1/sessions/:id/stream`, docs/adr/0015) through
 * real processes: two gateway replicas and a harness worker, each its own process, a real provider
 * SDK against the fake LLM server streaming slowly, and an SSE client (eventsource-parser).
 */
jest.setTimeout(120_000);

const ADMIN = 'test-admin-token-0123456789';
const TERMINAL = ['turn_completed', 'turn_failed', 'turn_cancelled'];

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** A journaled frame's data as the journal API shows the event (`streamed` is the stream's own). */
const asEvent = (f: Frame) => {
  const { streamed: _streamed, ...event } = f.data as Record<string, unknown>;
  return event;
};

describe('SSE event streams', () => {
  let env: TestEnv;
  let llm: FakeLlmServer;
  const processes: AppProcess[] = [];
  let urlA: string;
  let urlB: string;
  let a: Api;
  let b: Api;
  let redis: IORedis;
  let agentId: string;

  async function gatewayProcess(): Promise<{ url: string; process: AppProcess }> {
    const port = await freePort();
    const process = await spawnApp(
      'gateway',
      env.processEnv({ PORT: String(port), HOST: '127.0.0.1', SSE_HEARTBEAT_MS: '300' }),
      { readyPattern: /Server listening at|successfully started/ },
    );
    processes.push(process);
    const url = `http://127.0.0.1:${port}`;
    await waitFor(async () => (await fetch(`${url}/healthz`)).ok, { what: 'the gateway to listen' });
    return { url, process };
  }

  beforeAll(async () => {
    env = await createTestEnv();
    llm = await FakeLlmServer.start();
    const [ga, gb] = await Promise.all([gatewayProcess(), gatewayProcess()]);
    urlA = ga.url;
    urlB = gb.url;
    processes.push(await spawnApp('harness-worker', env.processEnv(llm.providerEnv)));
    a = (await newTenant(urlA, ADMIN)).api;
    b = new Api(urlB, a.key);
    redis = new IORedis(env.redisUrl);
    agentId = (
      await a.post('/v1/agents', {
        name: 'streamer',
        model: 'openai-chat/gpt-4o-mini',
        tools: ['word_count'],
      })
    ).body.id;
  });

  afterAll(async () => {
    redis?.disconnect();
    await Promise.all(processes.map((p) => p.kill('SIGTERM')));
    await llm?.close();
    await env?.cleanup();
  });

  const newSession = async () => (await a.post('/v1/sessions', { agentId })).body.id as string;
  const admit = async (sessionId: string, content: string, api = a) => {
    const res = await api.post(`/v1/sessions/${sessionId}/messages`, { content });
    expect(res.status).toBe(202);
    return res.body.turnId as string;
  };
  const journal = async (sessionId: string) =>
    (await a.get(`/v1/sessions/${sessionId}/events?limit=500`)).body.data as {
      seq: number;
      turnId: string;
    }[];
  const turnStream = (turnId: string, o: { lastEventId?: string; query?: string; url?: string } = {}) =>
    SseClient.open(`${o.url ?? urlA}/v1/turns/${turnId}/stream${o.query ?? ''}`, {
      key: a.key,
      lastEventId: o.lastEventId,
    });
  const sessionStream = (sessionId: string, url = urlA) =>
    SseClient.open(`${url}/v1/sessions/${sessionId}/stream`, { key: a.key });
  const ended = (s: SseClient) => s.journaled.some((f) => TERMINAL.includes(f.event!));
  const subscribers = async (sessionId: string) =>
    Number(
      ((await redis.pubsub('NUMSUB', sessionChannel(env.queuePrefix, sessionId))) as [string, number])[1],
    );

  it('delivers the text as the provider streams it, before the round commits; the journaled frames are the journal', async () => {
    const sessionId = await newSession();
    const s = await sessionStream(sessionId);
    expect(s.status).toBe(200);
    expect(s.headers?.get('content-type')).toMatch(/^text\/event-stream/);
    llm.enqueue(scripted.text('abcdefghij', { textPieces: 10, frameIntervalMs: 150 }));
    await admit(sessionId, 'stream please');
    await s.until(ended, 'the turn to end on the stream');
    s.close();

    const deltas = s.live.filter((f) => f.event === 'text_delta');
    expect(deltas.map((f) => f.data.data.text).join('')).toBe('abcdefghij');
    // Ten chunks 150 ms apart, flushed at most every 30 ms: several frames, not one at the end.
    expect(deltas.length).toBeGreaterThanOrEqual(5);
    for (const f of s.live) expect(f.data).toMatchObject({ ephemeral: true, after: expect.any(Number) });
    // The round's start went out when the call started, the text as it came, the commit at the end.
    const liveStart = s.live.find((f) => f.event === 'provider_round_started')!;
    const committed = s.journaled.find((f) => f.event === 'provider_round_completed')!;
    expect(liveStart.at).toBeLessThanOrEqual(deltas[0].at);
    expect(committed.at - deltas[0].at).toBeGreaterThan(1000);

    // Every journal event exactly once, in order, with id = seq; what went out live is marked streamed.
    const events = await journal(sessionId);
    expect(s.journaled.map(asEvent)).toEqual(events);
    expect(s.journaled.map((f) => Number(f.id))).toEqual(events.map((e) => e.seq));
    const streamed = s.journaled.filter((f) => f.data.streamed).map((f) => f.event);
    expect(streamed).toEqual(['turn_started', 'provider_round_started', 'text_delta']);
    expect(s.journaled.find((f) => f.event === 'text_delta')!.data.data.text).toBe('abcdefghij');
    expect(s.journaled.map((f) => f.event)).toEqual([
      'message_admitted',
      'turn_started',
      'provider_round_started',
      'text_delta',
      'provider_round_completed',
      'turn_completed',
    ]);
  });

  it("a turn's stream shows turn_started … text_delta … turn_completed in order and ends after it", async () => {
    const sessionId = await newSession();
    llm.enqueue(scripted.text('Hello there.', { frameIntervalMs: 100 }));
    const turnId = await admit(sessionId, 'hi');
    const s = await turnStream(turnId);
    await s.ended;
    const types = s.journaled.map((f) => f.event);
    expect(types.slice(-5)).toEqual([
      'turn_started',
      'provider_round_started',
      'text_delta',
      'provider_round_completed',
      'turn_completed',
    ]);
    expect(s.journaled.map(asEvent)).toEqual((await journal(sessionId)).filter((e) => e.turnId === turnId));

    // A late subscriber: the whole history, then the stream ends at once.
    const late = await turnStream(turnId);
    await late.ended;
    expect(late.journaled.map(asEvent)).toEqual(
      (await journal(sessionId)).filter((e) => e.turnId === turnId),
    );
    expect(late.live).toEqual([]);
    // …and one that had seen it all gets nothing and ends too.
    const done = await turnStream(turnId, { lastEventId: late.lastEventId });
    await done.ended;
    expect(done.frames).toEqual([]);
  });

  it('resumes with Last-Event-ID (or ?after=) mid-turn with no gap and no duplicate', async () => {
    const sessionId = await newSession();
    llm.enqueue(scripted.toolCall('word_count', { text: 'one two three' }, { delayMs: 300 }));
    llm.enqueue(scripted.text('Three words.', { delayMs: 1500, frameIntervalMs: 200 }));
    const turnId = await admit(sessionId, 'count');
    const first = await turnStream(turnId);
    await first.until(
      (c) => c.journaled.some((f) => f.event === 'tool_call_completed'),
      'the tool result on the stream',
    );
    first.close();
    await first.ended;
    const resumed = await turnStream(turnId, { lastEventId: first.lastEventId });
    const viaQuery = await turnStream(turnId, { query: `?after=${first.lastEventId}` });
    await Promise.all([resumed.ended, viaQuery.ended]);

    const expected = (await journal(sessionId)).filter((e) => e.turnId === turnId);
    expect([...first.journaled, ...resumed.journaled].map(asEvent)).toEqual(expected);
    expect(viaQuery.journaled.map(asEvent)).toEqual(resumed.journaled.map(asEvent));
    expect(resumed.journaled[0].id).toBe(String(Number(first.lastEventId) + 1));
  });

  it('a turn nobody watches (a waiter holds the request) publishes per round, not per chunk; a watched one streams', async () => {
    // Every command Redis runs for this test's processes (MONITOR shows the ones scripts run too),
    // read off a plain socket: one line per command, `+<time> [<db> <client>] "<command>" "<arg>" …`.
    const url = new URL(env.redisUrl);
    const monitor = net.connect(Number(url.port || 6379), url.hostname);
    const seen: { command: string; line: string }[] = [];
    let rest = '';
    monitor.setEncoding('latin1');
    monitor.on('data', (chunk: string) => {
      const lines = (rest + chunk).split('\r\n');
      rest = lines.pop()!;
      for (const line of lines) {
        const m = /^\+\d+\.\d+ \[[^\]]*\] "([^"]+)"/.exec(line);
        if (m && line.includes(env.queuePrefix)) seen.push({ command: m[1].toLowerCase(), line });
      }
    });
    await new Promise<void>((resolve) => {
      monitor.once('data', () => resolve());
      monitor.write('MONITOR\r\n');
    });
    try {
      const during = async (sessionId: string, run: () => Promise<void>) => {
        const from = seen.length;
        await run();
        // The end's PUBLISH is sent before the waiter or the stream hears it: it is in the MONITOR feed.
        const mine = seen.slice(from);
        return {
          publishes: mine.filter((c) => c.command === 'publish' && c.line.includes(sessionId)).length,
        };
      };
      const script = () => llm.enqueue(scripted.text('abcdefghij', { textPieces: 10, frameIntervalMs: 100 }));

      const unwatchedSession = await newSession();
      script();
      const unwatched = await during(unwatchedSession, async () => {
        const res = await a.post(`/v1/sessions/${unwatchedSession}/messages`, {
          content: 'quietly',
          wait: true,
        });
        expect(res.status).toBe(200);
        expect(res.body).toMatchObject({ status: 'completed', finalText: 'abcdefghij' });
      });

      const watchedSession = await newSession();
      const s = await sessionStream(watchedSession);
      script();
      const watched = await during(watchedSession, async () => {
        await admit(watchedSession, 'out loud');
        await s.until(ended, 'the turn to end on the stream');
      });
      s.close();
      expect(s.live.filter((f) => f.event === 'text_delta').length).toBeGreaterThanOrEqual(5);

      // Unwatched: the admission's, the round's start (its first probe), a probe or two while the ~1 s
      // round is open (0.5 s, 1.5 s after its start; later under load) and the end the waiter needs.
      // Watched: the admission's, the start, a PUBLISH per chunk, the commit.
      expect(unwatched.publishes).toBeGreaterThanOrEqual(3);
      expect(unwatched.publishes).toBeLessThanOrEqual(5);
      expect(watched.publishes).toBeGreaterThanOrEqual(8);
      process.stdout.write(
        `live PUBLISHes per turn: unwatched ${unwatched.publishes}, watched ${watched.publishes}\n`,
      );
      // Both journals are complete: the same event types, in the same order.
      const types = async (sessionId: string) =>
        (await journal(sessionId)).map((e) => (e as { type?: string }).type);
      expect(await types(unwatchedSession)).toEqual(await types(watchedSession));
    } finally {
      monitor.destroy();
    }
  });

  it('a client that subscribes to a turn nobody watched, mid-round, gets the whole stream in order, then live text', async () => {
    const sessionId = await newSession();
    const text = 'one two three four five six seven eight nine ten ';
    llm.enqueue(scripted.toolCall('word_count', { text: 'one two three' }));
    llm.enqueue(scripted.text(text, { textPieces: 10, frameIntervalMs: 300 }));
    const before = llm.requests.length;
    const turnId = await admit(sessionId, 'count, then talk');
    // The second round is streaming (3 s of text) and nobody has watched the turn so far.
    await llm.waitForRequests(before + 2);
    const s = await turnStream(turnId);
    await s.ended;

    // Every journal event of the turn exactly once, in order: what was committed before the client
    // came (read from the journal) and what came after.
    const expected = (await journal(sessionId)).filter((e) => e.turnId === turnId);
    expect(s.journaled.map(asEvent)).toEqual(expected);
    expect(s.journaled.map((f) => Number(f.id))).toEqual(expected.map((e) => e.seq));
    // The open round reached it live, before its commit: the round whole at the next probe (its
    // text from offset 0), then the text as it came — each character once.
    const deltas = s.live.filter((f) => f.event === 'text_delta');
    expect(deltas.length).toBeGreaterThanOrEqual(2);
    expect(deltas.map((f) => f.data.data.text).join('')).toBe(text);
    const committed = s.journaled.find((f) => f.event === 'turn_completed')!;
    expect(deltas[0].at).toBeLessThan(committed.at - 500);
  });

  it('delivers on every gateway replica (fan-out over Redis pub/sub)', async () => {
    const sessionId = await newSession();
    const [onA, onB] = await Promise.all([sessionStream(sessionId, urlA), sessionStream(sessionId, urlB)]);
    await waitFor(async () => (await subscribers(sessionId)) === 2, { what: 'both gateways subscribed' });
    llm.enqueue(scripted.text('to both', { frameIntervalMs: 50 }));
    await admit(sessionId, 'hello replicas', b);
    await Promise.all([onA.until(ended, 'the end on A'), onB.until(ended, 'the end on B')]);
    onA.close();
    onB.close();
    const events = await journal(sessionId);
    expect(onA.journaled.map(asEvent)).toEqual(events);
    expect(onB.journaled.map(asEvent)).toEqual(events);
  });

  it('sends heartbeats while quiet, and a client that leaves releases the subscription', async () => {
    const sessionId = await newSession();
    const s = await sessionStream(sessionId);
    await s.until((c) => c.comments.filter((x) => x.includes('heartbeat')).length >= 2, 'two heartbeats');
    expect(await subscribers(sessionId)).toBe(1);
    s.close();
    // The channel lingers 2 s after its last listener, then is unsubscribed.
    await waitFor(async () => (await subscribers(sessionId)) === 0, { what: 'the unsubscription' });
    // One request log line when the stream ended (Fastify's own hook does not run for a hijacked reply).
    const logged = () =>
      processes[0]
        .output()
        .split('\n')
        .filter((l) => l.includes('"route":"/v1/sessions/:id/stream"') && l.includes('clientLeft'))
        .map((l) => JSON.parse(l) as Record<string, unknown>);
    await waitFor(() => logged().length > 0, { what: "the stream's request log line" });
    expect(logged().at(-1)).toMatchObject({ msg: 'request completed', status: 200, clientLeft: true });
  });

  it('answers 404 for another tenant’s or an unknown id, 400 for a bad cursor, before any stream starts', async () => {
    const sessionId = await newSession();
    llm.enqueue(scripted.text('x'));
    const turnId = await admit(sessionId, 'x');
    const other = (await newTenant(urlA, ADMIN, 'other')).api;
    const cases: [string, Record<string, string>, number, string][] = [
      [`/v1/turns/${turnId}/stream`, { authorization: `Bearer ${other.key}` }, 404, 'not_found'],
      [`/v1/sessions/${sessionId}/stream`, { authorization: `Bearer ${other.key}` }, 404, 'not_found'],
      [`/v1/turns/0195f3c2-7a3b-7cc1-9a51-2b1c4d5e6f70/stream`, {}, 404, 'not_found'],
      [`/v1/sessions/not-a-uuid/stream`, {}, 404, 'not_found'],
      [`/v1/turns/${turnId}/stream`, { 'last-event-id': 'abc' }, 400, 'bad_request'],
      [`/v1/turns/${turnId}/stream`, { 'last-event-id': '-1' }, 400, 'bad_request'],
      [`/v1/sessions/${sessionId}/stream`, { 'last-event-id': '99999999999' }, 400, 'bad_request'],
      [`/v1/sessions/${sessionId}/stream?after=x`, {}, 400, 'validation_failed'],
      [`/v1/sessions/${sessionId}/stream?after=1.5`, {}, 400, 'validation_failed'],
      [`/v1/turns/${turnId}/stream?since=1`, {}, 400, 'validation_failed'],
      [`/v1/turns/${turnId}/stream`, { authorization: 'Bearer nope' }, 401, 'unauthorized'],
    ];
    for (const [path, headers, status, code] of cases) {
      const res = await a.request('GET', path, { headers });
      expect({ path, headers, status: res.status, code: res.body?.error?.code }).toEqual({
        path,
        headers,
        status,
        code,
      });
      expect(res.headers.get('content-type')).toMatch(/json/);
    }
  });

  it('ends open streams when the gateway shuts down, without holding its drain', async () => {
    const g = await gatewayProcess();
    const sessionId = await newSession();
    const s = await sessionStream(sessionId, g.url);
    await s.until((c) => c.comments.length > 0, 'the stream to open');
    const started = Date.now();
    const exited = g.process.kill('SIGTERM');
    await s.ended;
    // Not the 25 s SHUTDOWN_GRACE_MS the drain allows requests in flight.
    expect(Date.now() - started).toBeLessThan(5_000);
    await exited;
    expect(Date.now() - started).toBeLessThan(10_000);
  });
});
