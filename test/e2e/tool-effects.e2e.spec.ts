import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  createTestEnv,
  spawnApp,
  startTcpProxy,
  waitFor,
  type AppProcess,
  type TcpProxy,
  type TestEnv,
} from '@switchboard/testing';
import { EFFECT_TOOLS_MODULE, lines } from '../support/effect-tools';
import { newTenant, type Api } from '../support/api';
import { FIXTURES, startGateway, startHooks, type Running } from '../support/stack';

jest.setTimeout(120_000);

/**
 * A finished tool effect is never repeated (ADR 0004), with real processes: a side-effecting test
 * tool counts its effects in a file. Postgres "restarts" (a TCP proxy in front of it, for the
 * harness worker only) while the tool runs: the result is held and committed once Postgres is
 * back, and the effect happens once. A worker killed while a tool runs leaves the call started but
 * unrecorded: the resumed turn answers it `outcome_unknown` instead of running it again, unless the
 * tool honours the idempotency key, which then runs again under the same key.
 */
describe('tool effects across database restarts and killed workers', () => {
  let env: TestEnv;
  let proxy: TcpProxy;
  let gateway: Running & { url: string };
  let hooks: Running;
  let api: Api;
  let dir: string;
  const workers: AppProcess[] = [];

  beforeAll(async () => {
    env = await createTestEnv();
    const pg = new URL(env.databaseUrl);
    proxy = await startTcpProxy({ host: pg.hostname, port: Number(pg.port || 5432) });
    const config = env.config({ SCRIPTED_FIXTURES_DIR: FIXTURES, EXTRA_TOOL_MODULES: EFFECT_TOOLS_MODULE });
    gateway = await startGateway(config);
    hooks = await startHooks(config);
    ({ api } = await newTenant(gateway.url, 'test-admin-token-0123456789'));
    dir = mkdtempSync(path.join(tmpdir(), 'sb-effects-'));
  });

  // Each test has its own workers: the one that runs a tool is the one a test kills.
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.kill('SIGKILL')));
  });

  afterAll(async () => {
    await hooks?.close();
    await gateway?.close();
    await proxy?.close();
    await env?.cleanup();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** One harness worker; the Postgres-restart test sends its database traffic through the proxy. */
  const harness = async (viaProxy = false) => {
    const w = await spawnApp(
      'harness-worker',
      env.processEnv({
        SCRIPTED_FIXTURES_DIR: FIXTURES,
        EXTRA_TOOL_MODULES: EFFECT_TOOLS_MODULE,
        ...(viaProxy ? { DATABASE_URL: proxy.rewrite(env.databaseUrl) } : {}),
      }),
    );
    workers.push(w);
    return w;
  };

  /** Starts a turn of a fresh session whose model calls `tool` with a path of its own. */
  async function start(model: string) {
    const agent = await api.post('/v1/agents', {
      name: `effects-${randomUUID().slice(0, 8)}`,
      model,
      tools: ['effect_once', 'effect_idempotent'],
    });
    expect(agent.status).toBe(201);
    const session = (await api.post('/v1/sessions', { agentId: agent.body.id })).body.id as string;
    const file = path.join(dir, randomUUID());
    const m = await api.post(`/v1/sessions/${session}/messages`, { content: file });
    expect(m.status).toBe(202);
    return { session, file, turnId: m.body.turnId as string };
  }

  const turn = (id: string) => env.db.turn.findUniqueOrThrow({ where: { id } });
  const completed = (id: string) =>
    waitFor(async () => ((await turn(id)).status === 'completed' ? turn(id) : undefined), {
      what: `turn ${id} completed`,
      timeoutMs: 60_000,
    });
  const toolResults = (turnId: string) =>
    env.db.message.findMany({ where: { turnId, role: 'tool' }, orderBy: { position: 'asc' } });

  it('Postgres restarting while a tool runs: the effect happens once and the turn completes', async () => {
    const worker = await harness(true);
    const { session, file, turnId } = await start('scripted/effect-once');
    await waitFor(() => existsSync(`${file}.started`), { what: 'the tool started', timeoutMs: 30_000 });

    // Postgres goes away for this worker while the tool runs; the tool then finishes its effect.
    await proxy.down();
    writeFileSync(`${file}.release`, '');
    await waitFor(() => lines(file, 'effects').length === 1, { what: 'the effect' });
    // The result could not be saved: the worker holds it and retries, rather than failing the job.
    await waitFor(() => worker.output().includes('checkpoint write failed on a transient database error'), {
      what: 'a retried checkpoint write',
    });
    await proxy.up();

    const done = await completed(turnId);
    expect(lines(file, 'runs')).toHaveLength(1);
    expect(lines(file, 'effects')).toEqual([expect.stringContaining(turnId)]);
    // The turn went on in the same run; it was never resumed.
    expect(done.runCount).toBe(1);
    expect(done.finalText).toContain('"effected":true');
    const results = await toolResults(turnId);
    expect(results).toHaveLength(1);
    const calls = await env.db.toolCall.findMany({ where: { turnId } });
    expect(calls.map((c) => [c.name, c.status])).toEqual([['effect_once', 'completed']]);
    expect(await env.db.event.count({ where: { turnId, type: 'tool_call_completed' } })).toBe(1);
    // The session lease was released, not left to expire.
    await waitFor(
      async () =>
        (await env.db.session.findUniqueOrThrow({ where: { id: session } })).leaseToken === null || undefined,
      { what: 'the session lease released' },
    );
  });

  it('a worker killed during a side-effecting tool: the resumed turn answers outcome_unknown and does not run it again', async () => {
    const a = await harness();
    const { file, turnId } = await start('scripted/effect-once');
    await waitFor(() => existsSync(`${file}.started`), { what: 'the tool started', timeoutMs: 30_000 });
    expect(await a.kill('SIGKILL')).toBeNull();
    // Were the tool run again, it would finish at once and make its effect.
    writeFileSync(`${file}.release`, '');

    await harness();
    const done = await completed(turnId);
    expect(done.runCount).toBe(2);
    expect(lines(file, 'runs')).toHaveLength(1);
    expect(lines(file, 'effects')).toEqual([]);

    const results = await toolResults(turnId);
    expect(results).toHaveLength(1);
    const result = JSON.parse((results[0].body as { text: string }).text) as Record<string, unknown>;
    expect(result).toMatchObject({
      ok: false,
      kind: 'outcome_unknown',
      retryable: false,
      tool_name: 'effect_once',
      hint: expect.stringMatching(/verify/),
    });
    expect(done.finalText).toContain('outcome_unknown');
    const call = await env.db.toolCall.findFirstOrThrow({ where: { turnId } });
    expect(call.status).toBe('failed');
    const event = await env.db.event.findFirstOrThrow({ where: { turnId, type: 'tool_call_completed' } });
    expect(event.data).toMatchObject({
      ok: false,
      failure: { kind: 'outcome_unknown', retryable: false, class: 'OutcomeUnknown' },
    });
  });

  it('a worker killed during a tool that honours the idempotency key: it runs again under the same key', async () => {
    const a = await harness();
    const { file, turnId } = await start('scripted/effect-idempotent');
    await waitFor(() => existsSync(`${file}.started`), { what: 'the tool started', timeoutMs: 30_000 });
    expect(await a.kill('SIGKILL')).toBeNull();
    writeFileSync(`${file}.release`, '');

    await harness();
    const done = await completed(turnId);
    expect(done.finalText).toContain('"effected":true');
    const runs = lines(file, 'runs').map((l) => JSON.parse(l) as { key: string; resumed: boolean });
    expect(runs).toHaveLength(2);
    expect(runs[0].key).toMatch(new RegExp(`^${turnId}:`));
    expect(runs[1]).toEqual({ key: runs[0].key, resumed: true });
    expect(lines(file, 'effects')).toEqual([runs[0].key]);
    expect(await toolResults(turnId)).toHaveLength(1);
  });
});
