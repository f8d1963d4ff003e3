import path from 'node:path';
import {
  createTestEnv,
  FakeLlmServer,
  runProcess,
  scripted,
  spawnApp,
  spawnGateway,
  type AppProcess,
  type TestEnv,
} from '@switchboard/testing';
import { newTenant } from '../support/api';
import { bunBinary } from '../support/bun';

/**
 * The Open Responses compliance suite (openresponses/openresponses `bin/compliance-test.ts`, vendored
 * as published under test/open-responses, Apache-2.0) run by Bun — the npm package `bun` — against a
 * real gateway and harness worker whose agent's model is the fake LLM server. The exact command is
 * in test/open-responses/README.md. Every case passes, `tool-calling` (client function tools,
 * docs/adr/0047) included: the fake model calls the client's `get_weather` when it is offered.
 */
jest.setTimeout(240_000);

const ADMIN = 'test-admin-token-0123456789';
const SUITE = path.resolve(__dirname, '../open-responses');

interface SuiteResult {
  summary: { passed: number; failed: number; skipped: number; total: number };
  results: { id: string; status: string; errors?: string[] }[];
}

describe('Open Responses compliance suite against the gateway', () => {
  let env: TestEnv;
  let llm: FakeLlmServer;
  const processes: AppProcess[] = [];
  let url: string;
  let key: string;

  beforeAll(async () => {
    env = await createTestEnv();
    llm = await FakeLlmServer.start();
    // Every model call answers; the suite checks shapes and protocol, not the model's wit. Offered
    // the client's get_weather (the tool-calling case), the model calls it.
    llm.setDefault((req) => {
      const tools = (req.body as { tools?: { function?: { name?: string } }[] } | null)?.tools ?? [];
      return tools.some((t) => t.function?.name === 'get_weather')
        ? scripted.toolCall('get_weather', { location: 'San Francisco, CA' })
        : scripted.text('Ahoy: one, two, three.', { textPieces: 3 });
    });
    const [gateway, harness] = await Promise.all([
      spawnGateway(env.processEnv(llm.providerEnv)),
      spawnApp('harness-worker', env.processEnv(llm.providerEnv)),
    ]);
    processes.push(gateway, harness);
    url = gateway.url;
    const { api } = await newTenant(url, ADMIN);
    key = api.key!;
    const agent = await api.post('/v1/agents', {
      name: 'compliance',
      model: 'openai-chat/gpt-4o-mini',
      instructions: 'Answer briefly.',
    });
    expect(agent.status).toBe(201);
  });

  afterAll(async () => {
    await Promise.all(processes.map((p) => p.kill('SIGTERM')));
    await llm?.close();
    await env?.cleanup();
  });

  it('passes all 17 cases', async () => {
    const out = await runProcess(
      bunBinary(),
      [
        'bin/compliance-test.ts',
        '--base-url',
        `${url}/v1`,
        '--api-key',
        key,
        '--model',
        'compliance',
        '--json',
      ],
      { env: { ...process.env, NO_COLOR: '1' }, cwd: SUITE, timeoutMs: 200_000 },
    );
    const report = JSON.parse(out.stdout) as SuiteResult;
    const failed = report.results.filter((r) => r.status !== 'passed');
    expect(failed).toEqual([]);
    expect(report.summary.total).toBe(17);
    expect(report.summary.passed).toBe(17);
  });
});
