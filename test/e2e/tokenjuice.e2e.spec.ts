import { createTestEnv, waitFor, type TestEnv } from '@switchboard/testing';
import { markerId } from '@switchboard/tokenjuice';
import { newTenant, type Api } from '../support/api';
import { FIXTURES, startStack } from '../support/stack';
import { TEST_LOG, TOKENJUICE_TOOLS_MODULE } from '../support/tokenjuice-tools';

jest.setTimeout(120_000);

/**
 * TokenJuice end to end (docs/adr/0033): the agent setting through the API, then a turn on the real
 * gateway and harness whose tool returns a 16 KB test log. History holds the compacted log behind its
 * marker; the model's tokenjuice_retrieve calls get the exact original, whole and by line and byte
 * range; another tenant's turn asking for the same marker gets not_found.
 */
describe('TokenJuice', () => {
  let env: TestEnv;
  let stack: Awaited<ReturnType<typeof startStack>>;
  let api: Api;
  let other: Api;

  beforeAll(async () => {
    env = await createTestEnv();
    stack = await startStack(
      env.config({
        SCRIPTED_FIXTURES_DIR: FIXTURES,
        EXTRA_TOOL_MODULES: TOKENJUICE_TOOLS_MODULE,
        TOKENJUICE_SWEEP_MS: '500',
      }),
    );
    ({ api } = await newTenant(stack.url, 'test-admin-token-0123456789', 'tj-mine'));
    ({ api: other } = await newTenant(stack.url, 'test-admin-token-0123456789', 'tj-theirs'));
  });

  afterAll(async () => {
    await stack?.close();
    await env?.cleanup();
  });

  it('stores, shows and changes an agent’s toolResultCompression', async () => {
    const created = await api.post('/v1/agents', { name: 'tj-default' });
    expect(created.status).toBe(201);
    expect(created.body.toolResultCompression).toBe('auto');
    const patched = await api.patch(`/v1/agents/${created.body.id}`, { toolResultCompression: 'light' });
    expect(patched.status).toBe(200);
    expect(patched.body.toolResultCompression).toBe('light');
    expect((await api.get(`/v1/agents/${created.body.id}`)).body.toolResultCompression).toBe('light');
    const off = await api.post('/v1/agents', { name: 'tj-off', toolResultCompression: 'off' });
    expect(off.body.toolResultCompression).toBe('off');
  });

  async function turn(client: Api, fixture: string, content: string) {
    const agent = await client.post('/v1/agents', {
      name: fixture,
      model: `scripted/${fixture}`,
      tools: ['run_tests'],
    });
    expect(agent.status).toBe(201);
    const session = await client.post('/v1/sessions', { agentId: agent.body.id });
    const admitted = await client.post(`/v1/sessions/${session.body.id}/messages`, { content, wait: true });
    expect(admitted.status).toBe(200);
    expect(admitted.body.status).toBe('completed');
    const messages = await env.db.message.findMany({
      where: { turnId: admitted.body.id, role: 'tool' },
      orderBy: { position: 'asc' },
    });
    return {
      sessionId: session.body.id as string,
      turnId: admitted.body.id as string,
      // Read-only calls of one round run in parallel: their results are found by call id, not position.
      results: new Map(messages.map((m) => [m.toolCallId!, { text: (m.body as { text: string }).text }])),
    };
  }

  it('compacts a large tool result in history; tokenjuice_retrieve returns the exact original; another tenant gets not_found', async () => {
    const id = markerId(TEST_LOG);
    const { sessionId, results } = await turn(api, 'tokenjuice-retrieve', `tj:${id}`);
    const [compacted, whole, lines, bytes, rest] = [
      'call_0_0',
      'call_1_0',
      'call_1_1',
      'call_1_2',
      'call_1_3',
    ].map((c) => results.get(c)!);

    expect(
      compacted.text.startsWith(`⟦tj:${id}⟧ run_tests returned ${Buffer.byteLength(TEST_LOG)} bytes of log`),
    ).toBe(true);
    expect(compacted.text).toContain('● agent request limits › keeps the tools in order');
    expect(Buffer.byteLength(compacted.text) * 3).toBeLessThan(Buffer.byteLength(TEST_LOG));

    // Whole: as much as fits an answer (12 KiB of JSON), then the rest from 8 KiB on (fixture).
    const first = JSON.parse(whole.text).result;
    expect(first).toMatchObject({ marker: `tj:${id}`, truncated: true });
    expect(first.nextStartByte).toBeGreaterThanOrEqual(8192);
    expect(Buffer.from(TEST_LOG).subarray(0, first.nextStartByte).toString()).toBe(first.content);
    const second = JSON.parse(rest.text).result;
    expect(second.truncated).toBe(false);
    expect(Buffer.from(first.content).subarray(0, 8192).toString() + second.content).toBe(TEST_LOG);
    expect(JSON.parse(lines.text).result.content).toBe(`${TEST_LOG.split('\n').slice(8, 12).join('\n')}\n`);
    expect(JSON.parse(bytes.text).result.content).toBe(Buffer.from(TEST_LOG).subarray(100, 300).toString());

    // The journal says what was compacted, and under which marker.
    const events = await api.get(`/v1/sessions/${sessionId}/events`);
    expect(events.status).toBe(200);
    const compactedEvents = (events.body.data as { type: string; data: Record<string, unknown> }[]).filter(
      (e) => e.type === 'tool_result_compacted',
    );
    expect(compactedEvents).toHaveLength(1);
    expect(compactedEvents[0].data).toMatchObject({
      tool: 'run_tests',
      kind: 'log',
      lossy: true,
      marker: `tj:${id}`,
    });

    // The same marker from another tenant: not found.
    const theirs = await turn(other, 'tokenjuice-peek', `tj:${id}`);
    expect(theirs.results.size).toBe(1);
    const refused = theirs.results.get('call_0_0')!.text;
    expect(JSON.parse(refused)).toMatchObject({ ok: false, kind: 'not_found' });
    expect(refused).not.toContain('agent request limits');
  });

  it('the maintenance sweep deletes originals past their retention', async () => {
    const id = markerId(TEST_LOG);
    expect(await env.db.toolResultOriginal.count({ where: { id } })).toBe(1);
    await env.db.toolResultOriginal.updateMany({
      where: { id },
      data: { expiresAt: new Date(Date.now() - 1000) },
    });
    // The `tokenjuice` job scheduler (TOKENJUICE_SWEEP_MS) runs on the maintenance queue.
    await waitFor(
      async () => ((await env.db.toolResultOriginal.count({ where: { id } })) === 0 ? true : undefined),
      {
        what: 'the tokenjuice sweep',
        timeoutMs: 20_000,
      },
    );
  });
});
