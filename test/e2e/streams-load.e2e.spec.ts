import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import {
  createTestEnv,
  FakeLlmServer,
  scripted,
  spawnApp,
  waitFor,
  type AppProcess,
  type TestEnv,
} from '@switchboard/testing';
import { newTenant, type Api } from '../support/api';
import { SseClient, type Frame } from '../support/sse';

/**
 * Live text on `GET /v1/turns/:id/stream` with the machine busy (issue 30, defect 3; docs/adr/0015):
 * a gateway process, a harness process and the fake LLM streaming twelve chunks over 3.3 s, while
 * two busy-loop processes keep both cores occupied. A stream whose subscription came after the turn
 * had started (what load does) must still show the text as it comes, not only the journal at the
 * end: the harness probes the open round again while nobody listens, whole, and the stream takes it
 * from there.
 */
jest.setTimeout(180_000);

const ADMIN = 'test-admin-token-0123456789';
const TERMINAL = ['turn_completed', 'turn_failed', 'turn_cancelled'];
/** The busy loops end by themselves after this long, should afterAll never run. */
const BUSY_FOR_MS = 150_000;
const CHUNKS = Array.from({ length: 12 }, (_, i) => `w${i} `);
const TEXT = CHUNKS.join('');

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** The live text a client renders: each live text_delta frame appended, in order. */
const liveText = (s: SseClient) =>
  s.live
    .filter((f) => f.event === 'text_delta')
    .map((f) => f.data.data.text as string)
    .join('');
const terminal = (s: SseClient): Frame => s.journaled.find((f) => TERMINAL.includes(f.event!))!;

describe('SSE live text under load', () => {
  let env: TestEnv;
  let llm: FakeLlmServer;
  const processes: AppProcess[] = [];
  const busy: ChildProcess[] = [];
  let url: string;
  let a: Api;
  let agentId: string;

  beforeAll(async () => {
    env = await createTestEnv();
    llm = await FakeLlmServer.start();
    const port = await freePort();
    processes.push(
      await spawnApp('gateway', env.processEnv({ PORT: String(port), HOST: '127.0.0.1' }), {
        readyPattern: /Server listening at|successfully started/,
      }),
    );
    url = `http://127.0.0.1:${port}`;
    await waitFor(async () => (await fetch(`${url}/healthz`)).ok, { what: 'the gateway to listen' });
    processes.push(await spawnApp('harness-worker', env.processEnv(llm.providerEnv)));
    a = (await newTenant(url, ADMIN)).api;
    agentId = (await a.post('/v1/agents', { name: 'slow-talker', model: 'openai-chat/gpt-4o-mini' })).body.id;
    // Both cores busy for the rest of the file.
    for (let i = 0; i < 2; i++) {
      busy.push(
        spawn(
          process.execPath,
          ['-e', `const end = Date.now() + ${BUSY_FOR_MS}; while (Date.now() < end);`],
          {
            stdio: 'ignore',
          },
        ),
      );
    }
  });

  afterAll(async () => {
    for (const child of busy) child.kill('SIGKILL');
    await Promise.all(processes.map((p) => p.kill('SIGTERM')));
    await llm?.close();
    await env?.cleanup();
  });

  /** A session, a model reply streaming CHUNKS 275 ms apart, and the admitted turn. */
  async function slowTurn(): Promise<{ sessionId: string; turnId: string }> {
    const sessionId = (await a.post('/v1/sessions', { agentId })).body.id as string;
    llm.enqueue(scripted.text(TEXT, { textPieces: CHUNKS.length, frameIntervalMs: 275 }));
    const res = await a.post(`/v1/sessions/${sessionId}/messages`, { content: 'talk slowly' });
    expect(res.status).toBe(202);
    return { sessionId, turnId: res.body.turnId as string };
  }

  const turnStream = (turnId: string) => SseClient.open(`${url}/v1/turns/${turnId}/stream`, { key: a.key });

  it('a stream that subscribes after the model began streaming still shows the text live, before the turn ends', async () => {
    const requests = llm.requests.length;
    const { turnId } = await slowTurn();
    // The round started (its start went out to nobody) before the stream subscribes.
    await llm.waitForRequests(requests + 1);
    const s = await turnStream(turnId);
    await s.ended;
    expect(s.status).toBe(200);

    const texts = s.live.filter((f) => f.event === 'text_delta');
    expect(texts.length).toBeGreaterThan(0);
    // Live: the text came before the round committed, not with the end.
    expect(texts[0].at).toBeLessThan(terminal(s).at);
    // From the round's start (the probe carries it whole), each character once, the tail the
    // chunks did not carry just before the commit.
    expect(liveText(s)).toBe(TEXT);
    const journaledText = s.journaled.find((f) => f.event === 'text_delta')!;
    expect(journaledText.data.data.text).toBe(TEXT);
    expect(journaledText.data.streamed).toBe(true);
  });

  it('a stream opened right after the admission shows the text live, as the journal commits it whole', async () => {
    const { sessionId, turnId } = await slowTurn();
    const s = await turnStream(turnId);
    await s.ended;
    const texts = s.live.filter((f) => f.event === 'text_delta');
    expect(texts.length).toBeGreaterThan(0);
    expect(texts[0].at).toBeLessThan(terminal(s).at);
    // Live text and its tail before the commit: the whole text, once.
    expect(liveText(s)).toBe(TEXT);
    // The journaled frames are the turn's journal, each once.
    const journal = (await a.get(`/v1/sessions/${sessionId}/events?limit=500`)).body.data as {
      seq: number;
      turnId: string;
    }[];
    expect(s.journaled.map((f) => Number(f.id))).toEqual(
      journal.filter((e) => e.turnId === turnId).map((e) => e.seq),
    );
  });
});
