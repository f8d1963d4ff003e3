import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Queue } from 'bullmq';
import type IORedis from 'ioredis';
import { Admission } from '@switchboard/admission';
import { QueueName } from '@switchboard/contracts';
import { createLogger } from '@switchboard/observability';
import { createRedis } from '@switchboard/queue';
import { createTestEnv, spawnApp, waitFor, type AppProcess, type TestEnv } from '@switchboard/testing';
import { EFFECT_TOOLS_MODULE, lines } from '../support/effect-tools';
import { newTenant, type Api } from '../support/api';
import { SseClient } from '../support/sse';
import { FIXTURES, startGateway, type Running } from '../support/stack';

jest.setTimeout(120_000);

const ADMIN = 'test-admin-token-0123456789';

/**
 * Approvals through real processes and the HTTP API (docs/adr/0013). A side-effecting test tool
 * (`effect_once`, test/support/effect-tools.ts) counts its effects in a file; the scripted model calls
 * it with the user's message as the file path. A gated call pauses its turn `awaiting_approval` with
 * no worker or lease held; the decision resumes it on whichever harness takes the job.
 */
describe('approvals', () => {
  let env: TestEnv;
  let gateway: Running & { url: string };
  let api: Api;
  let tenantId: string;
  let keyId: string;
  let dir: string;
  const workers: AppProcess[] = [];

  beforeAll(async () => {
    env = await createTestEnv();
    gateway = await startGateway(
      env.config({ SCRIPTED_FIXTURES_DIR: FIXTURES, EXTRA_TOOL_MODULES: EFFECT_TOOLS_MODULE }),
    );
    ({ api, tenantId, keyId } = await newTenant(gateway.url, ADMIN));
    dir = mkdtempSync(path.join(tmpdir(), 'sb-approvals-'));
  });

  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.kill('SIGKILL')));
  });

  afterAll(async () => {
    await gateway?.close();
    await env?.cleanup();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** A harness worker; the reconciler (and so the expiry) runs every half second. */
  const harness = async () => {
    const w = await spawnApp(
      'harness-worker',
      env.processEnv({
        SCRIPTED_FIXTURES_DIR: FIXTURES,
        EXTRA_TOOL_MODULES: EFFECT_TOOLS_MODULE,
        RECONCILE_INTERVAL_MS: '500',
      }),
    );
    workers.push(w);
    return w;
  };

  /** An agent whose model calls effect_once with the message as its path; the tool needs approval. */
  async function gatedSession(client = api, approvalRequired = ['effect_once']) {
    const agent = await client.post('/v1/agents', {
      name: `gated-${randomUUID().slice(0, 8)}`,
      model: 'scripted/effect-once',
      tools: ['effect_once'],
      approvalRequired,
    });
    expect(agent.status).toBe(201);
    expect(agent.body.approvalRequired).toEqual(approvalRequired);
    return (await client.post('/v1/sessions', { agentId: agent.body.id })).body.id as string;
  }

  /** Admits a message naming a fresh effect file whose tool may finish at once. */
  async function admit(session: string, client = api) {
    const file = path.join(dir, randomUUID());
    writeFileSync(`${file}.release`, '');
    const m = await client.post(`/v1/sessions/${session}/messages`, { content: file });
    expect(m.status).toBe(202);
    return { file, turnId: m.body.turnId as string };
  }

  const status = (turnId: string, is: string, client = api) =>
    waitFor(
      async () => {
        const t = await client.get(`/v1/turns/${turnId}`);
        return t.body.status === is ? t.body : undefined;
      },
      { what: `turn ${turnId} ${is}`, timeoutMs: 60_000 },
    );

  async function pendingFor(turnId: string, client = api) {
    const list = await client.get('/v1/approvals?status=pending&limit=200');
    expect(list.status).toBe(200);
    return (list.body.data as { id: string; turnId: string }[]).filter((a) => a.turnId === turnId);
  }

  const decide = (id: string, decision: 'approve' | 'reject', reason?: string, client = api) =>
    client.post(`/v1/approvals/${id}`, { decision, ...(reason ? { reason } : {}) });

  const toolResult = async (turnId: string) => {
    const m = await env.db.message.findFirstOrThrow({ where: { turnId, role: 'tool' } });
    return JSON.parse((m.body as { text: string }).text) as Record<string, unknown>;
  };

  it('pauses without holding a worker or lease; approved, it runs once and the session’s next turn after it', async () => {
    await harness();
    const session = await gatedSession();
    const first = await admit(session);
    // Watched live: the pause, the decision (published by the gateway) and the resumed run, one stream.
    const stream = await SseClient.open(`${gateway.url}/v1/turns/${first.turnId}/stream`, { key: api.key });
    await stream.until(
      (c) => c.journaled.some((f) => f.event === 'approval_requested'),
      'approval_requested on the turn stream',
      60_000,
    );
    expect((await api.get(`/v1/turns/${first.turnId}`)).body.status).toBe('awaiting_approval');

    // No worker holds the session while a human decides.
    const row = await env.db.session.findUniqueOrThrow({ where: { id: session } });
    expect(row.leaseToken).toBeNull();
    // A later turn of the session waits behind the paused one; another session's turn runs meanwhile.
    const second = await admit(session);
    const other = await api.post('/v1/agents', { name: 'echo', model: 'scripted/echo' });
    const otherSession = (await api.post('/v1/sessions', { agentId: other.body.id })).body.id;
    const otherTurn = (await api.post(`/v1/sessions/${otherSession}/messages`, { content: 'hi' })).body
      .turnId;
    await status(otherTurn, 'completed');
    expect((await api.get(`/v1/turns/${second.turnId}`)).body.status).toBe('queued');

    const [approval] = await pendingFor(first.turnId);
    const got = await api.get(`/v1/approvals/${approval.id}`);
    const { agentId } = (await api.get(`/v1/sessions/${session}`)).body as { agentId: string };
    const turnRow = await env.db.turn.findUniqueOrThrow({ where: { id: first.turnId } });
    expect(got.body).toMatchObject({
      id: approval.id,
      sessionId: session,
      turnId: first.turnId,
      toolName: 'effect_once',
      arguments: { path: first.file },
      sideEffect: 'local_write',
      policy: 'agent',
      status: 'pending',
      reason: null,
      decidedBy: null,
      decidedAt: null,
      // Who asked: the agent of the turn and the turn's input envelope (an operator prompt over the API).
      agentId,
      agentName: expect.stringMatching(/^gated-/),
      provenance: {
        messageId: turnRow.inputMessageId,
        kind: 'operator_prompt',
        origin: { kind: 'operator' },
        trust: 'trusted_operator',
        authorityClass: 'operator_instruction',
      },
    });
    // The list answers the same (one joined read, not a read per approval).
    expect(approval).toEqual(got.body);
    expect(lines(first.file, 'runs')).toEqual([]);

    const approved = await decide(approval.id, 'approve', 'go ahead');
    expect(approved.status).toBe(200);
    expect(approved.body).toMatchObject({
      status: 'approved',
      reason: 'go ahead',
      decidedBy: keyId,
      decidedAt: expect.any(String),
    });
    await stream.ended;
    expect(stream.status).toBe(200);
    expect(
      stream.journaled.map((f) => f.event).filter((t) => /^(approval|tool_call|turn_)/.test(t ?? '')),
    ).toEqual([
      'turn_started',
      'approval_requested',
      'approval_decided',
      'turn_started',
      'tool_call_started',
      'tool_call_completed',
      'turn_completed',
    ]);
    expect(stream.journaled.find((f) => f.event === 'approval_decided')!.data.data).toMatchObject({
      approvalId: approval.id,
      decision: 'approved',
      resumed: true,
    });
    const done = await status(first.turnId, 'completed');
    expect(done.finalText).toContain('"effected":true');
    expect(lines(first.file, 'effects')).toEqual([expect.stringMatching(new RegExp(`^${first.turnId}:`))]);
    expect(lines(first.file, 'runs')).toHaveLength(1);
    expect(await pendingFor(first.turnId)).toEqual([]);

    // The next turn ran after it: it pauses on its own call in turn.
    await status(second.turnId, 'awaiting_approval');
    const [next] = await pendingFor(second.turnId);
    expect((await decide(next.id, 'approve')).status).toBe(200);
    await status(second.turnId, 'completed');
    const t1 = await env.db.turn.findUniqueOrThrow({ where: { id: first.turnId } });
    const t2 = await env.db.turn.findUniqueOrThrow({ where: { id: second.turnId } });
    expect(t2.startedAt!.getTime()).toBeGreaterThanOrEqual(t1.completedAt!.getTime());
    expect(lines(second.file, 'effects')).toHaveLength(1);

    // The journal tells it in order, and the decision is final.
    const types = (
      await env.db.event.findMany({ where: { turnId: first.turnId }, orderBy: { seq: 'asc' } })
    ).map((e) => e.type);
    expect(types.filter((t) => /^(approval|tool_call|turn_)/.test(t))).toEqual([
      'turn_started',
      'approval_requested',
      'approval_decided',
      'turn_started',
      'tool_call_started',
      'tool_call_completed',
      'turn_completed',
    ]);
    expect((await decide(approval.id, 'approve')).body.status).toBe('approved');
    const late = await decide(approval.id, 'reject');
    expect(late.status).toBe(409);
    expect(late.body.error.code).toBe('conflict');
  });

  it('rejected: the model gets a rejected result and finishes; the tool never runs', async () => {
    await harness();
    const session = await gatedSession();
    const file = path.join(dir, randomUUID());
    writeFileSync(`${file}.release`, '');
    // `wait` answers when the turn pauses for approval: it will not end before a person decides.
    const waited = await api.post(`/v1/sessions/${session}/messages`, { content: file, wait: true });
    expect(waited.status).toBe(200);
    expect(waited.body.status).toBe('awaiting_approval');
    const turnId = waited.body.id as string;
    const [approval] = await pendingFor(turnId);
    expect((await decide(approval.id, 'reject', 'not this file')).status).toBe(200);
    const done = await status(turnId, 'completed');
    expect(done.finalText).toContain('approval_rejected');
    expect(lines(file, 'runs')).toEqual([]);
    expect(await toolResult(turnId)).toMatchObject({
      ok: false,
      kind: 'approval_rejected',
      message: expect.stringContaining('not this file'),
      retryable: false,
    });
  });

  it('parallel gated calls of one round each get their own approval; the turn resumes after the last', async () => {
    await harness();
    const agent = await api.post('/v1/agents', {
      name: `twice-${randomUUID().slice(0, 8)}`,
      model: 'scripted/effect-twice',
      tools: ['effect_once'],
      approvalRequired: ['effect_once'],
    });
    const session = (await api.post('/v1/sessions', { agentId: agent.body.id })).body.id as string;
    const file = path.join(dir, randomUUID());
    writeFileSync(`${file}-a.release`, '');
    writeFileSync(`${file}-b.release`, '');
    const turnId = (await api.post(`/v1/sessions/${session}/messages`, { content: file })).body
      .turnId as string;
    await status(turnId, 'awaiting_approval');
    const approvals = (await pendingFor(turnId)) as unknown as {
      id: string;
      callId: string;
      arguments: unknown;
    }[];
    expect(
      approvals.map((a) => a.arguments).sort((x, y) => JSON.stringify(x).localeCompare(JSON.stringify(y))),
    ).toEqual([{ path: `${file}-a` }, { path: `${file}-b` }]);
    const a = approvals.find((x) => (x.arguments as { path: string }).path.endsWith('-a'))!;
    const b = approvals.find((x) => (x.arguments as { path: string }).path.endsWith('-b'))!;
    expect((await decide(a.id, 'approve')).status).toBe(200);
    // One of two decided: the turn still waits, nothing ran.
    expect((await api.get(`/v1/turns/${turnId}`)).body.status).toBe('awaiting_approval');
    expect(lines(`${file}-a`, 'runs')).toEqual([]);
    expect((await decide(b.id, 'reject')).status).toBe(200);
    await status(turnId, 'completed');
    expect(lines(`${file}-a`, 'effects')).toHaveLength(1);
    expect(lines(`${file}-b`, 'runs')).toEqual([]);
  });

  it('concurrent decisions act once: approve+approve answers both, approve+reject refuses one', async () => {
    await harness();
    const session = await gatedSession();
    const a = await admit(session);
    await status(a.turnId, 'awaiting_approval');
    const [first] = await pendingFor(a.turnId);
    const both = await Promise.all([decide(first.id, 'approve'), decide(first.id, 'approve')]);
    expect(both.map((r) => r.status)).toEqual([200, 200]);
    await status(a.turnId, 'completed');
    expect(lines(a.file, 'effects')).toHaveLength(1);

    const b = await admit(session);
    await status(b.turnId, 'awaiting_approval');
    const [second] = await pendingFor(b.turnId);
    const mixed = await Promise.all([decide(second.id, 'approve'), decide(second.id, 'reject')]);
    expect(mixed.map((r) => r.status).sort()).toEqual([200, 409]);
    await status(b.turnId, 'completed');
    const won = mixed.find((r) => r.status === 200)!.body.status as string;
    expect(lines(b.file, 'effects')).toHaveLength(won === 'approved' ? 1 : 0);
    expect(await env.db.event.count({ where: { turnId: b.turnId, type: 'approval_decided' } })).toBe(1);
  });

  it('the harness killed after the decision: the turn resumes on another worker and runs the call once', async () => {
    const a = await harness();
    const { file, turnId } = await admit(await gatedSession());
    await status(turnId, 'awaiting_approval');
    expect(await a.kill('SIGKILL')).toBeNull();
    const [approval] = await pendingFor(turnId);
    // Decided while no worker runs: the resume waits in the queue and in Postgres.
    expect((await decide(approval.id, 'approve')).status).toBe(200);
    expect((await api.get(`/v1/turns/${turnId}`)).body.status).toBe('queued');
    await harness();
    await status(turnId, 'completed');
    expect(lines(file, 'runs')).toHaveLength(1);
    expect(lines(file, 'effects')).toHaveLength(1);
  });

  it('untrusted input: a side effect needs approval although nothing lists the tool', async () => {
    await harness();
    const session = await gatedSession(api, []);
    const file = path.join(dir, randomUUID());
    writeFileSync(`${file}.release`, '');
    // A webhook body is external evidence: it may inform the model, never authorise a write alone.
    const connection: IORedis = createRedis(env.redisUrl);
    const turns = new Queue(QueueName.Turns, { connection, prefix: env.queuePrefix });
    try {
      const admission = new Admission(env.db, turns, createLogger({ service: 'test', level: 'silent' }));
      const { turnId } = await admission.admit({
        tenantId,
        sessionId: session,
        kind: 'webhook_event',
        origin: { kind: 'webhook', source: 'test', eventType: 'push' },
        body: { type: 'text', text: file },
        deliverySurface: 'http_webhook',
        admissionContext: 'external_trigger_capability',
      });
      await status(turnId, 'awaiting_approval');
      const [approval] = await pendingFor(turnId);
      // Asked by external content: the webhook's envelope, an unverified sender's event.
      expect((await api.get(`/v1/approvals/${approval.id}`)).body).toMatchObject({
        toolName: 'effect_once',
        policy: 'untrusted_input',
        provenance: {
          kind: 'webhook_event',
          origin: { kind: 'webhook', source: 'test', eventType: 'push' },
          trust: 'trusted_integration',
          authorityClass: 'external_evidence',
        },
      });
      expect(lines(file, 'runs')).toEqual([]);
      await decide(approval.id, 'approve');
      await status(turnId, 'completed');
      expect(lines(file, 'effects')).toHaveLength(1);
    } finally {
      await turns.close();
      await connection.quit();
    }
  });

  it('expiry: an undecided approval expires and the call gets ApprovalExpired', async () => {
    await harness();
    const other = await newTenant(gateway.url, ADMIN, 'expiring');
    const settings = await other.api.patch('/v1/settings', { approvalTtlMs: 1000 });
    expect(settings.status).toBe(200);
    expect(settings.body.approvalTtlMs).toBe(1000);
    const { file, turnId } = await admit(await gatedSession(other.api), other.api);
    await status(turnId, 'awaiting_approval', other.api);
    const [approval] = await pendingFor(turnId, other.api);
    const done = await status(turnId, 'completed', other.api);
    expect(done.finalText).toContain('approval_expired');
    expect(lines(file, 'runs')).toEqual([]);
    expect((await other.api.get(`/v1/approvals/${approval.id}`)).body.status).toBe('expired');
    expect(await toolResult(turnId)).toMatchObject({ ok: false, kind: 'approval_expired', retryable: false });
    const late = await decide(approval.id, 'approve', undefined, other.api);
    expect(late.status).toBe(409);
  });

  it('refuses approval lists naming unknown tools, and bad TTLs', async () => {
    const agent = await api.post('/v1/agents', { name: 'x', approvalRequired: ['no_such_tool'] });
    expect(agent.status).toBe(400);
    expect(agent.body.error.details.issues[0].path).toBe('approvalRequired');
    const settings = await api.patch('/v1/settings', { approvalRequired: ['no_such_tool'] });
    expect(settings.status).toBe(400);
    expect(settings.body.error.details.issues[0].path).toBe('approvalRequired');
    expect((await api.patch('/v1/settings', { approvalTtlMs: 10 })).status).toBe(400);
    expect(
      (await api.patch('/v1/settings', { approvalRequired: ['effect_once', 'effect_once'] })).status,
    ).toBe(400);
    const ok = await api.patch('/v1/settings', { approvalRequired: ['effect_once'] });
    expect(ok.body).toMatchObject({ approvalRequired: ['effect_once'], approvalTtlMs: null });
    expect((await api.patch('/v1/settings', { approvalRequired: [] })).body.approvalRequired).toEqual([]);
  });

  it('another tenant’s approval is a 404; a cancelled turn’s approval is no longer pending and cannot be decided', async () => {
    await harness();
    const { turnId } = await admit(await gatedSession());
    await status(turnId, 'awaiting_approval');
    const [approval] = await pendingFor(turnId);
    const stranger = await newTenant(gateway.url, ADMIN, 'stranger');
    expect((await stranger.api.get(`/v1/approvals/${approval.id}`)).status).toBe(404);
    expect((await decide(approval.id, 'approve', undefined, stranger.api)).status).toBe(404);
    expect((await stranger.api.get('/v1/approvals?status=pending')).body.data).toEqual([]);

    const cancelled = await api.post(`/v1/turns/${turnId}/cancel`, { reason: 'changed my mind' });
    expect(cancelled.status).toBe(200);
    expect(await pendingFor(turnId)).toEqual([]);
    expect((await api.get(`/v1/approvals/${approval.id}`)).body).toMatchObject({
      status: 'cancelled',
      decidedBy: 'system',
    });
    expect((await decide(approval.id, 'approve')).status).toBe(409);
    expect((await api.get(`/v1/turns/${turnId}`)).body.status).toBe('cancelled');
  });
});
