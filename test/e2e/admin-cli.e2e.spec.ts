import { execFile } from 'node:child_process';
import path from 'node:path';
import { Queue } from 'bullmq';
import type IORedis from 'ioredis';
import { newId, QueueName } from '@switchboard/contracts';
import { createRedis } from '@switchboard/queue';
import { createTestEnv, ROOT, seedSession, seedTurn, type TestEnv } from '@switchboard/testing';

// Each command is its own process (swc compiles the script at start): seconds each on a busy machine.
jest.setTimeout(180_000);

/**
 * The admin CLI (`npm run admin -- …`, scripts/admin.ts) as an operator runs it, a process per
 * command against the test's database and Redis (docs/adr/0030): it uses the admin API's
 * repositories, writes audit entries as `operator`, and a resume wakes the tenant's queued turns.
 */
describe('admin CLI', () => {
  let env: TestEnv;
  let redis: IORedis;
  let turnsQueue: Queue;

  beforeAll(async () => {
    env = await createTestEnv();
    redis = createRedis(env.redisUrl);
    turnsQueue = new Queue(QueueName.Turns, { connection: redis, prefix: env.queuePrefix });
  });

  afterAll(async () => {
    await turnsQueue?.close();
    redis?.disconnect();
    await env?.cleanup();
  });

  const cli = (...args: string[]) =>
    new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      execFile(
        process.execPath,
        ['-r', '@swc-node/register', path.join('scripts', 'admin.ts'), ...args],
        { cwd: ROOT, env: env.processEnv(), timeout: 60_000 },
        (err, stdout, stderr) =>
          resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
      );
    });
  const json = async (...args: string[]) => {
    const r = await cli(...args);
    expect({ args, code: r.code, stderr: r.code === 0 ? '' : r.stderr }).toEqual({
      args,
      code: 0,
      stderr: '',
    });
    return JSON.parse(r.stdout);
  };

  it('creates, lists, shows, sets, pauses and resumes a tenant, and shows its audit log', async () => {
    const created = await json('create-tenant', 'acme', 'corp');
    const tenantId: string = created.tenant.id;
    expect(created.tenant.name).toBe('acme corp');
    expect(created.apiKey.key).toMatch(/^sb_/);

    const listed = await cli('list-tenants');
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain(tenantId);
    expect(listed.stdout).toMatch(/acme corp\s+running\s+0\/0\/0\s+\$0\s/);
    const all = await json('list-tenants', '--json');
    expect(all.map((t: { id: string }) => t.id)).toContain(tenantId);

    const set = await json(
      'set-tenant',
      tenantId,
      '--max-concurrent-turns',
      '3',
      '--share',
      '2',
      '--daily-spend-limit-usd',
      '5',
      '--rate-limit',
      'admission=10',
    );
    expect(set).toMatchObject({
      id: tenantId,
      maxConcurrentTurns: 3,
      share: 2,
      dailySpendLimitUsd: 5,
      rateLimits: { admission: 10 },
    });
    const reset = await json('set-tenant', tenantId, '--share', 'default', '--daily-spend-limit-usd', 'none');
    expect(reset).toMatchObject({ maxConcurrentTurns: 3, share: 1, dailySpendLimitUsd: null });

    // Refused as the API refuses it, and nothing written.
    const before = await env.db.tenant.findUniqueOrThrow({ where: { id: tenantId } });
    for (const args of [
      ['--share', '0'],
      ['--max-concurrent-turns', 'many'],
      ['--max-concurrent-turns', '1.5'],
      ['--rate-limit', 'uploads=1'],
      ['--rate-limit', 'admission=-1'],
      ['--colour', 'red'],
      [],
    ]) {
      const r = await cli('set-tenant', tenantId, ...args);
      expect({ args, code: r.code }).toEqual({ args, code: 2 });
    }
    expect(await env.db.tenant.findUniqueOrThrow({ where: { id: tenantId } })).toEqual(before);
    expect((await cli('show-tenant', newId())).code).toBe(1);
    expect((await cli('show-tenant', 'not-a-uuid')).code).toBe(2);

    // A queued turn whose job is gone: the resume publishes one for it.
    const agent = await env.db.agent.create({
      data: { id: newId(), tenantId, name: 'a', model: 'scripted/echo' },
    });
    const sessionId = await seedSession(env.db, tenantId, agent.id);
    const turn = await seedTurn(env.db, { tenantId, agentId: agent.id, sessionId }, { status: 'queued' });

    const paused = await json('pause-tenant', tenantId, '--reason', 'cli test');
    expect(paused).toMatchObject({ paused: true, pauseReason: 'cli test', turns: { queued: 1 } });
    expect(await turnsQueue.getJob(turn.id)).toBeUndefined();
    const resumed = await json('resume-tenant', tenantId);
    expect(resumed).toMatchObject({ paused: false, pauseReason: null });
    expect(await (await turnsQueue.getJob(turn.id))?.getState()).toEqual(
      expect.stringMatching(/waiting|prioritized/),
    );

    const key = await json('create-key', tenantId, 'ci');
    expect(key).toMatchObject({ name: 'ci', key: expect.stringMatching(/^sb_/) });
    const revoked = await cli('revoke-key', key.id);
    expect(revoked).toMatchObject({ code: 0, stdout: `revoked ${key.id}\n` });
    expect((await cli('revoke-key', key.id)).code).toBe(1);

    const log = await json('audit', '--tenant', tenantId, '--json');
    expect(log.map((e: { action: string }) => e.action)).toEqual([
      'api_key.revoked',
      'api_key.created',
      'tenant.resumed',
      'tenant.paused',
      'tenant.limits_changed',
      'tenant.limits_changed',
      'tenant.limits_changed',
      'tenant.created',
    ]);
    expect(log.every((e: { actor: string }) => e.actor === 'operator')).toBe(true);
    expect(JSON.stringify(log)).not.toContain(key.key);
    const text = await cli('audit', '--tenant', tenantId, '--action', 'tenant.paused');
    expect(text.code).toBe(0);
    expect(text.stdout.trim().split('\n')).toHaveLength(1);
    expect(text.stdout).toContain('tenant.paused');
    expect((await cli('audit', '--action', 'tenant.vaporised')).code).toBe(2);
    expect((await cli('nonsense')).code).toBe(2);
  });
});
