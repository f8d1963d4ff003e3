import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Queue } from 'bullmq';
import type IORedis from 'ioredis';
import OpenAI from 'openai';
import { QueueName } from '@switchboard/contracts';
import { createRedis } from '@switchboard/queue';
import { createTestEnv, waitFor, type TestEnv } from '@switchboard/testing';
import { Api, newTenant, type ApiResponse } from '../support/api';
import { CONTROL_TOOLS_MODULE } from '../support/control-tools';
import { FIXTURES, startGateway, startHarness, type Running } from '../support/stack';

jest.setTimeout(120_000);

const ADMIN = 'test-admin-token-0123456789';
const UNKNOWN_ID = '01a20360-0000-7000-8000-000000000000';

/**
 * The operator's tenant API through the real gateway and a harness worker (docs/adr/0030): the
 * tenant view with today's spend and turn counts, the operator's settings, pause (admission refused
 * with 403 tenant_paused and nothing written, a running turn stopped at its next safe point, queued
 * turns kept queued, reads answered) and resume (the queued turns run), and the audit log as a tenant and as
 * the operator sees it.
 */
describe('operator tenant API', () => {
  let env: TestEnv;
  let gateway: Running & { url: string };
  let harness: Running;
  let admin: Api;
  let redis: IORedis;
  let turnsQueue: Queue;
  const dir = mkdtempSync(path.join(tmpdir(), 'sb-tenant-admin-'));

  beforeAll(async () => {
    env = await createTestEnv();
    const config = env.config({ SCRIPTED_FIXTURES_DIR: FIXTURES, EXTRA_TOOL_MODULES: CONTROL_TOOLS_MODULE });
    gateway = await startGateway(config);
    harness = await startHarness(config);
    admin = new Api(gateway.url, ADMIN);
    redis = createRedis(env.redisUrl);
    turnsQueue = new Queue(QueueName.Turns, { connection: redis, prefix: env.queuePrefix });
  });

  afterAll(async () => {
    await harness?.close();
    await gateway?.close();
    await turnsQueue?.close();
    redis?.disconnect();
    await env?.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  const turnOf = async (api: Api, id: string) => (await api.get(`/v1/turns/${id}`)).body;
  const untilStatus = (api: Api, id: string, statuses: string[]) =>
    waitFor(
      async () => {
        const turn = await turnOf(api, id);
        return statuses.includes(turn.status) ? turn : undefined;
      },
      { what: `turn ${id} ${statuses.join(' or ')}` },
    );
  const expectError = (res: ApiResponse, status: number, code: string) =>
    expect({ status: res.status, code: res.body?.error?.code }).toEqual({ status, code });

  it('lists and shows tenants with their settings, today’s spend and their unfinished turns', async () => {
    const { api, tenantId } = await newTenant(gateway.url, ADMIN, 'spender');
    const echo = await api.post('/v1/agents', { name: 'echo', model: 'scripted/echo' });
    const done = await api.post(
      `/v1/sessions/${(await api.post('/v1/sessions', { agentId: echo.body.id })).body.id}/messages`,
      { content: 'hello', wait: true },
    );
    expect(done.body.status).toBe('completed');
    // A turn waiting for approval, and a turn queued behind it.
    const gated = await api.post('/v1/agents', {
      name: 'gated',
      model: 'scripted/demo',
      tools: ['word_count'],
      approvalRequired: ['word_count'],
    });
    const session = (await api.post('/v1/sessions', { agentId: gated.body.id })).body.id;
    const waiting = await api.post(`/v1/sessions/${session}/messages`, { content: 'one two' });
    await untilStatus(api, waiting.body.turnId, ['awaiting_approval']);
    const queued = await api.post(`/v1/sessions/${session}/messages`, { content: 'three' });

    const shown = await admin.get(`/v1/admin/tenants/${tenantId}`);
    expect(shown.status).toBe(200);
    const spent = Number(done.body.costUsd) + Number((await turnOf(api, waiting.body.turnId)).costUsd);
    expect(spent).toBeGreaterThan(0);
    expect(shown.body).toMatchObject({
      id: tenantId,
      name: 'spender',
      paused: false,
      pausedAt: null,
      pauseReason: null,
      maxConcurrentTurns: null,
      share: 1,
      dailySpendLimitUsd: null,
      rateLimits: {},
      turns: { running: 0, queued: 1, waiting: 1 },
    });
    expect(Number(shown.body.spentTodayUsd)).toBeCloseTo(spent, 8);
    expect((await turnOf(api, queued.body.turnId)).status).toBe('queued');

    // Paged by id: every tenant once, in creation order, the cursor carried between pages.
    await newTenant(gateway.url, ADMIN, 'second');
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: ApiResponse = await admin.get(
        `/v1/admin/tenants?limit=1${cursor ? `&cursor=${cursor}` : ''}`,
      );
      expect(page.status).toBe(200);
      expect(page.body.data.length).toBeLessThanOrEqual(1);
      seen.push(...page.body.data.map((t: { id: string }) => t.id));
      cursor = page.body.nextCursor;
    } while (cursor);
    const all = await admin.get('/v1/admin/tenants?limit=200');
    expect(seen).toEqual(all.body.data.map((t: { id: string }) => t.id));
    expect(seen).toEqual([...seen].sort());
    expect(all.body.data).toContainEqual(shown.body);
    expectError(await admin.get('/v1/admin/tenants?cursor=nonsense'), 400, 'bad_request');
    expectError(await admin.get('/v1/admin/tenants?limit=0'), 400, 'validation_failed');
    expectError(await admin.get(`/v1/admin/tenants/${UNKNOWN_ID}`), 404, 'not_found');
    expectError(await api.get('/v1/admin/tenants'), 401, 'unauthorized');
  });

  it('sets the operator’s settings; bad input is a 400, an unknown tenant a 404, never a 5xx', async () => {
    const { api, tenantId } = await newTenant(gateway.url, ADMIN, 'limited');
    const set = await admin.patch(`/v1/admin/tenants/${tenantId}`, {
      maxConcurrentTurns: 4,
      share: 2.5,
      dailySpendLimitUsd: 20,
    });
    expect(set.status).toBe(200);
    expect(set.body).toMatchObject({
      id: tenantId,
      maxConcurrentTurns: 4,
      share: 2.5,
      dailySpendLimitUsd: 20,
    });
    // The keys the scheduler and the spend cap read; the tenant sees the operator's cap, read-only.
    const stored = await env.db.tenant.findUniqueOrThrow({ where: { id: tenantId } });
    expect(stored.settings).toMatchObject({
      maxConcurrentTurns: 4,
      share: 2.5,
      operatorDailySpendLimitUsd: 20,
    });
    expect((await api.get('/v1/settings')).body).toMatchObject({
      dailySpendLimitUsd: null,
      operatorDailySpendLimitUsd: 20,
    });
    // The tenant's own budget is apart from it: setting or removing its own cannot raise the operator's.
    expect((await api.patch('/v1/settings', { dailySpendLimitUsd: 1000 })).body).toMatchObject({
      dailySpendLimitUsd: 1000,
      operatorDailySpendLimitUsd: 20,
    });
    expect((await api.patch('/v1/settings', { dailySpendLimitUsd: null })).status).toBe(200);
    expect((await admin.get(`/v1/admin/tenants/${tenantId}`)).body.dailySpendLimitUsd).toBe(20);
    expectError(
      await api.patch('/v1/settings', { operatorDailySpendLimitUsd: 1000 }),
      400,
      'validation_failed',
    );
    const reset = await admin.patch(`/v1/admin/tenants/${tenantId}`, { share: null, dailySpendLimitUsd: 0 });
    expect(reset.body).toMatchObject({ maxConcurrentTurns: 4, share: 1, dailySpendLimitUsd: 0 });

    const before = await env.db.tenant.findUniqueOrThrow({ where: { id: tenantId } });
    for (const body of [
      {},
      { colour: 'red' },
      { maxConcurrentTurns: 0 },
      { maxConcurrentTurns: 2.5 },
      { maxConcurrentTurns: '4' },
      { share: 0 },
      { share: 101 },
      { share: 'high' },
      { dailySpendLimitUsd: -1 },
      { dailySpendLimitUsd: { usd: 1 } },
      { rateLimits: { admission: 1 } },
      [{ share: 2 }],
      null,
    ]) {
      const res = await admin.request('PATCH', `/v1/admin/tenants/${tenantId}`, {
        raw: JSON.stringify(body),
        headers: { 'content-type': 'application/json' },
      });
      expect({ body, status: res.status, code: res.body.error?.code }).toEqual({
        body,
        status: 400,
        code: 'validation_failed',
      });
    }
    expectError(
      await admin.request('PATCH', `/v1/admin/tenants/${tenantId}`, {
        raw: '{"share":',
        headers: { 'content-type': 'application/json' },
      }),
      400,
      'invalid_json',
    );
    expectError(await admin.patch(`/v1/admin/tenants/${UNKNOWN_ID}`, { share: 2 }), 404, 'not_found');
    expectError(await admin.patch('/v1/admin/tenants/not-a-tenant', { share: 2 }), 404, 'not_found');
    expectError(await api.patch(`/v1/admin/tenants/${tenantId}`, { share: 2 }), 401, 'unauthorized');
    expectError(await admin.post(`/v1/admin/tenants/${UNKNOWN_ID}/pause`, {}), 404, 'not_found');
    expectError(await admin.post(`/v1/admin/tenants/${UNKNOWN_ID}/resume`), 404, 'not_found');
    expectError(
      await admin.post(`/v1/admin/tenants/${tenantId}/pause`, { reason: 'x'.repeat(501) }),
      400,
      'validation_failed',
    );
    expectError(
      await admin.post(`/v1/admin/tenants/${tenantId}/resume`, { force: true }),
      400,
      'validation_failed',
    );
    expect(await env.db.tenant.findUniqueOrThrow({ where: { id: tenantId } })).toEqual(before);
  });

  it('pauses: admission is refused and writes nothing, a running turn stops at its next safe point, queued turns wait; resume runs them', async () => {
    const { api, tenantId } = await newTenant(gateway.url, ADMIN, 'pausable');
    const holder = await api.post('/v1/agents', {
      name: 'holder',
      model: 'scripted/hold-then-answer',
      tools: ['hold'],
    });
    await api.post('/v1/agents', { name: 'echo', model: 'scripted/echo' });
    const session = (await api.post('/v1/sessions', { agentId: holder.body.id })).body.id;
    const trigger = await api.post('/v1/triggers', {
      agentId: holder.body.id,
      name: 'alerts',
      scheme: 'token',
    });

    // A turn holding in its tool, and a second turn queued behind it (its hold is released already).
    const first = path.join(dir, 'first');
    const second = path.join(dir, 'second');
    writeFileSync(`${second}.release`, '');
    const running = await api.post(`/v1/sessions/${session}/messages`, { content: first });
    await waitFor(() => existsSync(`${first}.started`), { what: 'the first turn holds in its tool' });
    const behind = await api.post(`/v1/sessions/${session}/messages`, { content: second });

    const paused = await admin.post(`/v1/admin/tenants/${tenantId}/pause`, { reason: 'runaway costs' });
    expect(paused.status).toBe(200);
    expect(paused.body).toMatchObject({
      paused: true,
      pauseReason: 'runaway costs',
      turns: { running: 1, queued: 1, waiting: 0 },
    });
    expect(paused.body.pausedAt).toEqual(expect.any(String));
    // Idempotent: 200 with the tenant unchanged.
    const again = await admin.post(`/v1/admin/tenants/${tenantId}/pause`, { reason: 'other' });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ pausedAt: paused.body.pausedAt, pauseReason: 'runaway costs' });

    // Every admission of the tenant's input: 403 tenant_paused, nothing written.
    const counts = async () => ({
      messages: await env.db.message.count({ where: { tenantId } }),
      turns: await env.db.turn.count({ where: { tenantId } }),
      sessions: await env.db.session.count({ where: { tenantId } }),
      deliveries: await env.db.triggerDelivery.count({ where: { tenantId } }),
    });
    const before = await counts();
    const refused = await api.post(`/v1/sessions/${session}/messages`, { content: 'more' });
    expectError(refused, 403, 'tenant_paused');
    expect(refused.body.error.message).toMatch(/paused/);
    expectError(
      await api.post(`/v1/sessions/${session}/messages`, { content: 'more', wait: true }),
      403,
      'tenant_paused',
    );
    const openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: api.key!, maxRetries: 0 });
    const chat = await openai.chat.completions
      .create({
        model: 'echo',
        messages: [
          { role: 'user', content: 'earlier' },
          { role: 'assistant', content: 'ok' },
          { role: 'user', content: 'hi' },
        ],
      })
      .catch((err: unknown) => err);
    expect(chat).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect(chat).toMatchObject({ status: 403, code: 'tenant_paused', type: 'permission_error' });
    const hook = await new Api(gateway.url).post(
      trigger.body.path,
      { type: 'alert' },
      { 'idempotency-key': 'd-1' },
    );
    expectError(hook, 403, 'tenant_paused');
    expect(await counts()).toEqual(before);
    // Reads keep working.
    expect((await api.get(`/v1/sessions/${session}`)).status).toBe(200);
    expect((await api.get(`/v1/sessions/${session}/messages`)).status).toBe(200);
    expect((await api.get('/v1/agents')).status).toBe(200);

    // Released, the running turn reaches its next safe point (before its next model call) and is
    // cancelled there, reason tenant_paused (docs/adr/0055).
    writeFileSync(`${first}.release`, '');
    const stopped = await untilStatus(api, running.body.turnId, ['completed', 'failed', 'cancelled']);
    expect(stopped).toMatchObject({
      status: 'cancelled',
      stopReason: 'cancelled',
      cancelReason: 'tenant_paused',
      iterations: 1,
    });
    const events = (await api.get(`/v1/sessions/${session}/events`)).body.data;
    expect(events.map((e: { type: string }) => e.type)).toContain('stop_hook_fired');
    // Its worker looked at the queued turn and left it: the job is done (removed at completion,
    // docs/adr/0080), the turn still queued.
    await waitFor(async () => (await turnsQueue.getJob(running.body.turnId)) === undefined, {
      what: 'the running turn’s job completed',
    });
    expect((await turnOf(api, behind.body.turnId)).status).toBe('queued');
    expect((await admin.get(`/v1/admin/tenants/${tenantId}`)).body.turns).toEqual({
      running: 0,
      queued: 1,
      waiting: 0,
    });

    // Resume: admission opens, the queued turn runs.
    const resumed = await admin.post(`/v1/admin/tenants/${tenantId}/resume`);
    expect(resumed.status).toBe(200);
    expect(resumed.body).toMatchObject({ paused: false, pausedAt: null, pauseReason: null });
    const ran = await untilStatus(api, behind.body.turnId, ['completed', 'failed', 'cancelled']);
    expect(ran).toMatchObject({ status: 'completed', stopReason: 'final_answer' });
    expect(ran.finalText).toMatch(/^released: /);
    const after = await api.post(`/v1/sessions/${session}/messages`, { content: second, wait: true });
    expect(after.status).toBe(200);
    expect(after.body.status).toBe('completed');
    // Resuming a running tenant changes nothing.
    const twice = await admin.post(`/v1/admin/tenants/${tenantId}/resume`, {});
    expect(twice.status).toBe(200);
    expect(twice.body.paused).toBe(false);
  });

  it('audits each security-relevant change; a tenant sees its own entries, the operator all', async () => {
    const created = await admin.post('/v1/admin/tenants', { name: 'audited' });
    const tenantId: string = created.body.tenant.id;
    const firstKeyId: string = created.body.apiKey.id;
    const api = new Api(gateway.url, created.body.apiKey.key);
    const other = await newTenant(gateway.url, ADMIN, 'bystander');
    await other.api.post('/v1/api-keys', { name: 'theirs' });

    const key = await api.post('/v1/api-keys', { name: 'ci' });
    await api.delete(`/v1/api-keys/${key.body.id}`);
    await api.patch('/v1/settings', { blockedTools: [], toolSchemaMode: 'strict' });
    await admin.patch(`/v1/admin/tenants/${tenantId}/limits`, { admission: 100 });
    await admin.patch(`/v1/admin/tenants/${tenantId}`, { maxConcurrentTurns: 2 });
    const gated = await api.post('/v1/agents', {
      name: 'gated',
      model: 'scripted/demo',
      tools: ['word_count'],
      approvalRequired: ['word_count'],
    });
    const trigger = await api.post('/v1/triggers', { agentId: gated.body.id, name: 'gh', scheme: 'github' });
    const rotated = await api.post(`/v1/triggers/${trigger.body.id}/rotate`, {});
    expect(rotated.status).toBe(200);
    const session = (await api.post('/v1/sessions', { agentId: gated.body.id })).body.id;
    const turn = await api.post(`/v1/sessions/${session}/messages`, { content: 'one two' });
    await untilStatus(api, turn.body.turnId, ['awaiting_approval']);
    const approval = (await api.get('/v1/approvals?status=pending')).body.data[0];
    expect(
      (await api.post(`/v1/approvals/${approval.id}`, { decision: 'approve', reason: 'fine' })).status,
    ).toBe(200);
    await admin.post(`/v1/admin/tenants/${tenantId}/pause`, {});
    await admin.post(`/v1/admin/tenants/${tenantId}/resume`);

    const own = await api.get('/v1/audit-events?limit=200');
    expect(own.status).toBe(200);
    const log: {
      id: string;
      tenantId: string;
      actor: string;
      action: string;
      targetType: string;
      targetId: string;
      details: Record<string, unknown>;
      createdAt: string;
    }[] = own.body.data;
    const byKey = `api_key:${firstKeyId}`;
    expect(log.map((e) => [e.action, e.actor, e.targetType])).toEqual([
      ['tenant.resumed', 'operator', 'tenant'],
      ['tenant.paused', 'operator', 'tenant'],
      ['approval.decided', byKey, 'approval'],
      ['trigger.secret_rotated', byKey, 'trigger'],
      ['agent.version_created', byKey, 'agent'],
      ['tenant.limits_changed', 'operator', 'tenant'],
      ['tenant.limits_changed', 'operator', 'tenant'],
      ['tenant.settings_changed', byKey, 'tenant'],
      ['api_key.revoked', byKey, 'api_key'],
      ['api_key.created', byKey, 'api_key'],
      ['tenant.created', 'operator', 'tenant'],
    ]);
    expect(log.every((e) => e.tenantId === tenantId)).toBe(true);
    expect(own.body.nextCursor).toBeNull();
    const find = (action: string) => log.find((e) => e.action === action)!;
    expect(find('approval.decided')).toMatchObject({
      targetId: approval.id,
      details: { decision: 'approved', turnId: turn.body.turnId, toolName: 'word_count', reason: 'fine' },
    });
    expect(find('trigger.secret_rotated')).toMatchObject({
      targetId: trigger.body.id,
      details: { name: 'gh', scheme: 'github', replaced: 'signing_secret' },
    });
    expect(find('tenant.settings_changed').details).toEqual({ fields: ['blockedTools', 'toolSchemaMode'] });
    expect(find('api_key.created')).toMatchObject({ targetId: key.body.id, details: { name: 'ci' } });
    // No secret and no hash anywhere: keys, their hashes, signing secrets.
    const text = JSON.stringify(log);
    const hashes = (await env.db.apiKey.findMany({ where: { tenantId } })).map((k) => k.hash);
    for (const secret of [
      created.body.apiKey.key,
      key.body.key,
      trigger.body.signingSecret,
      rotated.body.signingSecret,
      ...hashes,
    ]) {
      expect(text).not.toContain(secret);
    }

    // One action; pages of two follow the same order; the other tenant sees none of these.
    const pausedOnly = await api.get('/v1/audit-events?action=tenant.paused');
    expect(pausedOnly.body.data.map((e: { id: string }) => e.id)).toEqual([find('tenant.paused').id]);
    const paged: string[] = [];
    let cursor: string | null = null;
    do {
      const page: ApiResponse = await api.get(`/v1/audit-events?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.status).toBe(200);
      paged.push(...page.body.data.map((e: { id: string }) => e.id));
      cursor = page.body.nextCursor;
    } while (cursor);
    expect(paged).toEqual(log.map((e) => e.id));
    const theirs = (await other.api.get('/v1/audit-events?limit=200')).body.data;
    expect(theirs.map((e: { action: string }) => e.action)).toEqual(['api_key.created', 'tenant.created']);
    expect(theirs.every((e: { tenantId: string }) => e.tenantId === other.tenantId)).toBe(true);
    // A cursor from another tenant's log pages nothing of this one.
    const foreign = await other.api.get(`/v1/audit-events?limit=1`);
    const crossed = await api.get(`/v1/audit-events?cursor=${foreign.body.nextCursor}`);
    expect(crossed.status).toBe(200);
    expect(crossed.body.data).toEqual([]);

    // The operator: every tenant's entries, or one tenant's, or one action.
    const everything = (await admin.get('/v1/admin/audit-events?limit=200')).body.data;
    expect(everything.map((e: { id: string }) => e.id)).toEqual(expect.arrayContaining(log.map((e) => e.id)));
    expect(everything.some((e: { tenantId: string }) => e.tenantId === other.tenantId)).toBe(true);
    const one = await admin.get(`/v1/admin/audit-events?tenantId=${tenantId}&limit=200`);
    expect(one.body.data).toEqual(log);
    const actions = await admin.get(`/v1/admin/audit-events?action=tenant.created&limit=200`);
    expect(actions.body.data.map((e: { tenantId: string }) => e.tenantId)).toEqual(
      expect.arrayContaining([tenantId, other.tenantId]),
    );
    expect(actions.body.data.every((e: { action: string }) => e.action === 'tenant.created')).toBe(true);

    // Bad input: 400s; the wrong credentials: 401s.
    for (const query of [
      'action=tenant.gone',
      'limit=0',
      'limit=201',
      'cursor=nonsense',
      'tenantId=' + tenantId,
    ]) {
      const res = await api.get(`/v1/audit-events?${query}`);
      expect({ query, status: res.status }).toEqual({ query, status: 400 });
    }
    for (const query of ['tenantId=not-a-uuid', 'action=nope', 'limit=-1', 'cursor=%00', 'colour=red']) {
      const res = await admin.get(`/v1/admin/audit-events?${query}`);
      expect({ query, status: res.status }).toEqual({ query, status: 400 });
    }
    expectError(await api.get('/v1/admin/audit-events'), 401, 'unauthorized');
    expectError(await admin.get('/v1/audit-events'), 401, 'unauthorized');
  });
});
