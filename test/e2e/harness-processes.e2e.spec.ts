import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createTestEnv, spawnApp, waitFor, type AppProcess, type TestEnv } from '@switchboard/testing';
import { Api, newTenant } from '../support/api';
import { CONTROL_TOOLS_MODULE } from '../support/control-tools';
import { FIXTURES, startGateway, type Running } from '../support/stack';

jest.setTimeout(180_000);

const ADMIN = 'test-admin-token-0123456789';

interface Listed {
  processId: string;
  pid: number;
  hostname: string;
  startedAt: string;
  lastSeenAt: string;
  turnsInFlight: number;
  permitsInUse: number;
  permitLimit: number;
  maxConcurrency: number;
}

/**
 * GET /v1/admin/processes lists the harness worker processes by their heartbeats in Redis: two real
 * processes appear with their load (a turn held in its tool counts in flight); one SIGKILLed drops off once its heartbeat's TTL passes (short
 * here: HARNESS_HEARTBEAT_MS/_TTL_MS), one stopped with SIGTERM takes itself off at once.
 */
describe('harness processes', () => {
  let env: TestEnv;
  let gateway: Running & { url: string };
  let admin: Api;
  const workers: AppProcess[] = [];
  const dir = mkdtempSync(path.join(tmpdir(), 'sb-processes-'));

  beforeAll(async () => {
    env = await createTestEnv();
    gateway = await startGateway(
      env.config({ SCRIPTED_FIXTURES_DIR: FIXTURES, EXTRA_TOOL_MODULES: CONTROL_TOOLS_MODULE }),
    );
    admin = new Api(gateway.url, ADMIN);
  });

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.kill('SIGKILL')));
    await gateway?.close();
    await env?.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  const harness = async () => {
    const w = await spawnApp(
      'harness-worker',
      env.processEnv({
        SCRIPTED_FIXTURES_DIR: FIXTURES,
        EXTRA_TOOL_MODULES: CONTROL_TOOLS_MODULE,
        HARNESS_CONCURRENCY: '7',
        HARNESS_HEARTBEAT_MS: '200',
        HARNESS_HEARTBEAT_TTL_MS: '1500',
      }),
    );
    workers.push(w);
    return w;
  };

  const listed = async (): Promise<Listed[]> => {
    const res = await admin.get<{ data: Listed[] }>('/v1/admin/processes');
    expect(res.status).toBe(200);
    return res.body.data;
  };
  const pids = async () => (await listed()).map((p) => p.pid);

  it('lists live workers with their load, and drops a killed one after its TTL', async () => {
    expect(await listed()).toEqual([]);
    const [a, b] = await Promise.all([harness(), harness()]);
    const both = await waitFor(
      async () => {
        const now = await listed();
        return now.length === 2 ? now : undefined;
      },
      { what: 'both harness workers listed' },
    );
    expect(both.map((p) => p.pid).sort()).toEqual([a.child.pid, b.child.pid].sort());
    for (const p of both) {
      expect(p).toEqual({
        processId: expect.stringContaining(`:${p.pid}:`),
        hostname: expect.any(String),
        pid: expect.any(Number),
        startedAt: expect.any(String),
        lastSeenAt: expect.any(String),
        turnsInFlight: 0,
        permitsInUse: 0,
        permitLimit: expect.any(Number),
        maxConcurrency: 7,
      });
      expect(p.permitLimit).toBeLessThanOrEqual(7);
      expect(Date.parse(p.lastSeenAt)).toBeGreaterThanOrEqual(Date.parse(p.startedAt));
    }

    // A turn holding in its tool is in flight on one of them.
    const { api } = await newTenant(gateway.url, ADMIN);
    const agent = await api.post('/v1/agents', {
      name: 'holder',
      model: 'scripted/hold-then-answer',
      tools: ['hold'],
    });
    const held = path.join(dir, 'held');
    expect(agent.status).toBe(201);
    const session = await api.post('/v1/sessions', { agentId: agent.body.id });
    expect((await api.post(`/v1/sessions/${session.body.id}/messages`, { content: held })).status).toBe(202);
    await waitFor(() => existsSync(`${held}.started`), { what: 'the turn holds in its tool' });
    const busy = await waitFor(
      async () => (await listed()).find((p) => p.turnsInFlight === 1 && p.permitsInUse >= 1),
      { what: 'a worker listing the held turn' },
    );
    writeFileSync(`${held}.release`, '');
    await waitFor(async () => (await listed()).find((p) => p.pid === busy.pid && p.turnsInFlight === 0), {
      what: 'the turn no longer in flight',
    });

    await a.kill('SIGKILL');
    await waitFor(async () => ((await pids()).includes(a.child.pid!) ? undefined : true), {
      what: 'the killed worker to drop off',
    });
    expect(await pids()).toEqual([b.child.pid]);

    // A clean stop removes the process itself.
    await b.kill('SIGTERM');
    expect(await pids()).toEqual([]);
  });
});
