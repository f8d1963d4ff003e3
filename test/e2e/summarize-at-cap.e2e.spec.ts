import net from 'node:net';
import {
  createTestEnv,
  FakeLlmServer,
  scripted,
  spawnApp,
  waitFor,
  type AppProcess,
  type RecordedRequest,
  type ScriptedReply,
  type TestEnv,
} from '@switchboard/testing';
import { bodyText, type MessageBody } from '@switchboard/contracts';
import { newTenant, type Api } from '../support/api';

jest.setTimeout(120_000);

const ADMIN = 'test-admin-token-0123456789';
/** The agent's model-call cap (`budgets.maxIterations`). */
const CAP = 3;
const SUMMARY = 'Summary: I checked the time three times; nothing is left undone.';

interface WireMessage {
  role: string;
  content?: unknown;
  tool_calls?: unknown[];
}
interface WireBody {
  messages: WireMessage[];
  tools?: { function: { name: string } }[];
  tool_choice?: unknown;
}
const text = (c: unknown): string =>
  typeof c === 'string' ? c : Array.isArray(c) ? c.map((p: { text?: string }) => p.text ?? '').join('') : '';

/**
 * The model never finishes on its own: every round it says how far it got and calls the read-only
 * `current_time` again. Asked with `tool_choice: "none"` it answers with a summary, and tries a tool
 * call anyway (which the turn must drop).
 */
function reply(req: RecordedRequest): ScriptedReply {
  const body = req.body as WireBody;
  if (body.tool_choice === 'none') return scripted.toolCall('current_time', {}, { text: SUMMARY });
  const results = body.messages.filter((m) => m.role === 'tool').length;
  return scripted.toolCall('current_time', {}, { text: `step ${results}` });
}

/**
 * `budgets.onMaxIterations: 'summarize'` (docs/adr/0058) through real processes (a gateway, a harness
 * worker), the public API and the fake provider: at the model-call cap the turn makes exactly one
 * more, tool-less call (`tool_choice: "none"`, same system message and transcript, plus a closing
 * instruction sent to the provider only) and ends `max_iterations` on its text; without the setting
 * it ends on the last round's partial text after exactly `maxIterations` calls; a bad value is a 400
 * on create and on PATCH and changes nothing.
 */
describe('a summary at the model-call cap', () => {
  let env: TestEnv;
  let llm: FakeLlmServer;
  const processes: AppProcess[] = [];
  let api: Api;

  beforeAll(async () => {
    env = await createTestEnv();
    llm = await FakeLlmServer.start();
    llm.setDefault(reply);
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as net.AddressInfo;
    await new Promise((resolve) => server.close(resolve));
    processes.push(
      ...(await Promise.all([
        spawnApp('gateway', env.processEnv({ ...llm.providerEnv, PORT: String(port), HOST: '127.0.0.1' }), {
          readyPattern: /Server listening at|successfully started/,
        }),
        spawnApp('harness-worker', env.processEnv({ ...llm.providerEnv })),
      ])),
    );
    const url = `http://127.0.0.1:${port}`;
    await waitFor(async () => (await fetch(`${url}/healthz`)).ok, { what: 'the gateway to listen' });
    ({ api } = await newTenant(url, ADMIN));
  });

  afterAll(async () => {
    await Promise.all(processes.map((p) => p.kill('SIGTERM')));
    await llm?.close();
    await env?.cleanup();
  });

  const agent = async (budgets: Record<string, unknown>) => {
    const res = await api.post('/v1/agents', {
      name: 'looper',
      model: 'openai-chat/gpt-4o-mini',
      tools: ['current_time'],
      budgets,
    });
    expect(res.status).toBe(201);
    return res.body.id as string;
  };

  /** One turn in a new session; its end, its session, and the model requests it made. */
  async function turn(agentId: string) {
    const before = llm.requests.length;
    const sessionId = (await api.post('/v1/sessions', { agentId })).body.id as string;
    const msg = await api.post(`/v1/sessions/${sessionId}/messages`, { content: 'What time is it?' });
    expect(msg.status).toBe(202);
    const ended = await waitFor(
      async () => {
        const r = await api.get(`/v1/turns/${msg.body.turnId}`);
        return ['completed', 'failed', 'cancelled'].includes(r.body.status) ? r.body : undefined;
      },
      { what: `turn ${msg.body.turnId} ended`, timeoutMs: 60_000 },
    );
    const requests = llm.requests
      .slice(before)
      .filter((r) => r.endpoint === 'openai.chat.completions')
      .map((r) => r.body as WireBody);
    const transcript = (
      (await api.get(`/v1/sessions/${sessionId}/messages`)).body.data as { role: string; body: MessageBody }[]
    ).map((m) => ({ role: m.role, text: bodyText(m.body) }));
    return { ended, requests, transcript };
  }

  it('makes one more, tool-less call at the cap and ends on its text', async () => {
    const agentId = await agent({ maxIterations: CAP, onMaxIterations: 'summarize' });
    const { ended, requests, transcript } = await turn(agentId);

    expect(ended).toMatchObject({ status: 'completed', stopReason: 'max_iterations', finalText: SUMMARY });
    // The cap's rounds, then exactly one summarising call.
    expect(requests).toHaveLength(CAP + 1);
    for (const r of requests.slice(0, CAP)) expect(r.tool_choice).toBeUndefined();
    const last = requests[CAP];
    expect(last.tool_choice).toBe('none');
    // The tools are still described (the transcript's calls stay valid), the transcript is the same
    // as the cap's last round plus its answer and result, and the instruction closes it.
    const previous = requests[CAP - 1];
    expect(last.tools?.map((t) => t.function.name)).toContain('current_time');
    expect(last.tools).toEqual(previous.tools);
    expect(last.messages[0]).toEqual(previous.messages[0]);
    expect(last.messages.slice(0, previous.messages.length)).toEqual(previous.messages);
    expect(last.messages.slice(previous.messages.length).map((m) => m.role)).toEqual([
      'assistant',
      'tool',
      'user',
    ]);
    const instruction = text(last.messages.at(-1)?.content);
    expect(instruction).toMatch(/limit of model calls/);

    // Only the cap's tool calls ran: the one the summary tried was dropped.
    expect(ended.toolCalls).toHaveLength(CAP);

    // The transcript: the input, the rounds, the summary; never the instruction.
    expect(transcript.some((m) => m.text.includes('limit of model calls'))).toBe(false);
    expect(transcript.filter((m) => m.role === 'user').map((m) => m.text)).toEqual(['What time is it?']);
    const answers = transcript.filter((m) => m.role === 'assistant').map((m) => m.text);
    expect(answers).toEqual([...Array.from({ length: CAP }, (_, i) => `step ${i}`), SUMMARY]);
  });

  it('without the setting (or with stop) ends on the last partial text after exactly the cap', async () => {
    for (const budgets of [{ maxIterations: CAP }, { maxIterations: CAP, onMaxIterations: 'stop' }]) {
      const { ended, requests, transcript } = await turn(await agent(budgets));
      expect(ended).toMatchObject({
        status: 'completed',
        stopReason: 'max_iterations',
        finalText: `step ${CAP - 1}`,
      });
      expect(requests).toHaveLength(CAP);
      expect(requests.every((r) => r.tool_choice === undefined)).toBe(true);
      expect(transcript.map((m) => m.text)).not.toContain(SUMMARY);
    }
  });

  it('refuses a bad value with 400 on create and on PATCH, and changes nothing', async () => {
    const before = (await api.get('/v1/agents')).body.data.length as number;
    const created = await api.post('/v1/agents', {
      name: 'bad',
      model: 'openai-chat/gpt-4o-mini',
      budgets: { maxIterations: CAP, onMaxIterations: 'later' },
    });
    expect(created.status).toBe(400);
    expect(created.body.error).toMatchObject({ code: 'validation_failed', message: expect.any(String) });
    expect(JSON.stringify(created.body.error)).toContain('onMaxIterations');
    expect((await api.get('/v1/agents')).body.data).toHaveLength(before);

    const agentId = await agent({ maxIterations: CAP, onMaxIterations: 'summarize' });
    const stored = (await api.get(`/v1/agents/${agentId}`)).body;
    const patched = await api.patch(`/v1/agents/${agentId}`, {
      budgets: { maxIterations: CAP, onMaxIterations: 'later' },
    });
    expect(patched.status).toBe(400);
    expect(patched.body.error).toMatchObject({ code: 'validation_failed', message: expect.any(String) });
    expect(JSON.stringify(patched.body.error)).toContain('onMaxIterations');
    const after = (await api.get(`/v1/agents/${agentId}`)).body;
    expect(after).toEqual(stored);
    expect(after.budgets).toEqual({ maxIterations: CAP, onMaxIterations: 'summarize' });
  });
});
