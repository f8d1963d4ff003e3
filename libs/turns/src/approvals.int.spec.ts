import type { Queue } from 'bullmq';
import { z } from 'zod';
import type { Admission } from '@switchboard/admission';
import { randomBytes } from 'node:crypto';
import { poolOf, setContentCipher } from '@switchboard/database';
import { TurnEngine } from '@switchboard/engine';
import { Metrics, type Logger } from '@switchboard/observability';
import {
  ProviderRegistry,
  type ModelProvider,
  type ModelRequest,
  type ModelResponse,
} from '@switchboard/providers';
import { newId } from '@switchboard/contracts';
import { LocalKeyRing, TenantCipher } from '@switchboard/platform';
import { ApprovalStore, ControlStore, sql as sqlOf, sqlDbFor } from '@switchboard/store';
import {
  seedTenantSession,
  cancelLeftovers,
  startHarness,
  type HarnessFixture,
  type TestEnv,
} from '@switchboard/testing';
import { defineTool, ToolRegistry, type SideEffect, type ToolDefinition } from '@switchboard/tools';
import { Approvals } from './approvals';
import { reconcileTurns } from './reconciler';
import { TurnRunner } from './runner';

/**
 * Approvals against real Postgres and BullMQ (docs/adr/0013): a gated call makes its turn wait
 * (`awaiting_approval`, lease released, approval row and event), later turns of the session wait
 * behind it, a decision acts once and resumes the turn with a job of its own, and the resumed run
 * executes the approved call once, or answers it rejected or expired.
 */
jest.setTimeout(120_000);

const USAGE = { inputTokens: 10, outputTokens: 5, cachedTokens: 0 };

/**
 * Calls the tools the user's message names (`pay`, `send`, `pay2`: two parallel pays, `pay+look`: a
 * gated pay and a read-only look in one round), then answers. Every request is kept.
 */
const requests: ModelRequest['messages'][] = [];
class Model implements ModelProvider {
  readonly name = 'openai-chat';
  async complete(r: ModelRequest): Promise<ModelResponse> {
    requests.push(structuredClone(r.messages));
    const last = r.messages[r.messages.length - 1];
    if (last.role === 'tool') {
      return { text: `answered: ${last.content}`, toolCalls: [], usage: USAGE, finishReason: 'stop' };
    }
    // Untrusted input reaches the model framed as evidence: the word is looked for inside it.
    const text = /\b(pay2|pay\+look|pay|send)\b/.exec(last.content)?.[1] ?? last.content;
    const calls =
      text === 'pay+look'
        ? [
            { id: 'c1', name: 'pay', arguments: '{"amount":3}' },
            { id: 'c2', name: 'look', arguments: '{"amount":4}' },
          ]
        : text === 'pay2'
          ? [
              { id: 'c1', name: 'pay', arguments: '{"amount":1,"apiKey":"sk-secret"}' },
              { id: 'c2', name: 'pay', arguments: '{"amount":2}' },
            ]
          : text === 'pay' || text === 'send'
            ? [{ id: 'c1', name: text, arguments: '{"amount":5,"apiKey":"sk-secret"}' }]
            : [];
    return calls.length > 0
      ? { text: '', toolCalls: calls, usage: USAGE, finishReason: 'tool_calls' }
      : { text: `plain: ${text}`, toolCalls: [], usage: USAGE, finishReason: 'stop' };
  }
}

const effects: string[] = [];
const tool = (name: string, sideEffect: SideEffect, needsApproval: boolean) =>
  defineTool({
    name,
    description: name,
    schema: z.strictObject({ amount: z.number(), apiKey: z.string().optional() }),
    sideEffect,
    timeoutMs: 2_000,
    needsApproval,
    execute: async ({ amount }, ctx) => (
      effects.push(`${name}:${amount}:${ctx.idempotencyKey}`),
      { paid: amount }
    ),
  }) as ToolDefinition;
const tools = new ToolRegistry([
  tool('pay', 'destructive', true),
  tool('send', 'network', false),
  tool('look', 'read_only', false),
]);

describe('approvals', () => {
  let h: HarnessFixture;
  let env: TestEnv;
  let turnsQueue: Queue;
  let admission: Admission;
  let logger: Logger;
  let store: ApprovalStore;
  let control: ControlStore;
  let approvals: Approvals;

  const runner = (workerId = 'w1') =>
    new TurnRunner({
      ...h.runnerDeps({ metrics: new Metrics('approvals'), workerId }),
      engine: new TurnEngine({ providers: new ProviderRegistry({}, [new Model()]), tools }),
      tools,
      defaultModel: 'openai-chat/default',
    });

  beforeAll(async () => {
    h = await startHarness();
    ({ env, turnsQueue, admission, logger } = h);
    store = new ApprovalStore(sqlDbFor(poolOf(env.db), 'test'));
    control = new ControlStore(sqlDbFor(poolOf(env.db), 'test'));
    approvals = new Approvals(store, turnsQueue, logger);
  });

  // The harness chooses across every tenant (docs/adr/0029): each test starts with nothing runnable.
  beforeEach(async () => {
    effects.length = 0;
    await cancelLeftovers(env.db);
  });

  afterAll(() => h?.close());

  const session = () =>
    seedTenantSession(env.db, 'approvals', { model: 'openai-chat/m', tools: ['pay', 'send', 'look'] });

  async function admit(ids: { tenantId: string; sessionId: string }, text: string, kind = 'operator_prompt') {
    const { turnId } = await admission.admit({
      ...ids,
      kind: kind as 'operator_prompt',
      origin:
        kind === 'operator_prompt'
          ? { kind: 'operator' }
          : { kind: 'webhook', source: 'test', eventType: 'x' },
      body: { type: 'text', text },
      deliverySurface: kind === 'operator_prompt' ? 'http_public_enqueue' : 'http_webhook',
      admissionContext: 'control_authenticated',
    });
    return turnId;
  }

  const job = (ids: { tenantId: string; sessionId: string }, turnId: string, resume?: string) => ({
    turnId,
    sessionId: ids.sessionId,
    tenantId: ids.tenantId,
    ...(resume ? { resume } : {}),
    trace: {},
  });
  const turnRow = (id: string) => env.db.turn.findUniqueOrThrow({ where: { id } });
  const pending = (turnId: string) =>
    env.db.approval.findMany({ where: { turnId, status: 'pending' }, orderBy: { callId: 'asc' } });
  const decide = (
    approvalId: string,
    tenantId: string | null,
    verdict: 'approved' | 'rejected',
    reason?: string,
  ) => approvals.decide({ approvalId, tenantId, verdict, reason: reason ?? null, decidedBy: 'key-1' });
  const toolResult = async (turnId: string) => {
    const m = await env.db.message.findFirstOrThrow({ where: { turnId, role: 'tool' } });
    return JSON.parse((m.body as { text: string }).text) as Record<string, unknown>;
  };

  it('waits on a gated call without starting it, frees the lease, and later turns wait behind it', async () => {
    const ids = await session();
    const first = await admit(ids, 'pay');
    expect(await runner().handle(job(ids, first))).toBe('done');

    const waiting = await turnRow(first);
    expect(waiting.status).toBe('awaiting_approval');
    expect((await env.db.session.findUniqueOrThrow({ where: { id: ids.sessionId } })).leaseToken).toBeNull();
    const [approval] = await pending(first);
    expect(approval).toMatchObject({
      tenantId: ids.tenantId,
      sessionId: ids.sessionId,
      callId: 'c1',
      toolName: 'pay',
      sideEffect: 'destructive',
      policy: 'tool',
      // Redacted as journal events are.
      arguments: { amount: 5, apiKey: '[redacted]' },
    });
    expect(approval.expiresAt.getTime()).toBeGreaterThan(Date.now() + 23 * 3600 * 1000);
    // Nothing of the call started: a resumed run must not answer it outcome_unknown.
    expect(await env.db.toolCall.count({ where: { turnId: first } })).toBe(0);
    const events = await env.db.event.findMany({ where: { turnId: first }, orderBy: { seq: 'asc' } });
    expect(events.map((e) => e.type)).not.toContain('tool_call_started');
    expect(events.find((e) => e.type === 'approval_requested')?.data).toMatchObject({
      approvalId: approval.id,
      callId: 'c1',
      name: 'pay',
      policy: 'tool',
    });

    // A later turn of the session: its job finds the session blocked and completes; the turn waits.
    const second = await admit(ids, 'hello');
    expect(await runner('w2').handle(job(ids, second))).toBe('done');
    expect((await turnRow(second)).status).toBe('queued');
    expect((await turnRow(first)).status).toBe('awaiting_approval');
    expect((await env.db.session.findUniqueOrThrow({ where: { id: ids.sessionId } })).leaseToken).toBeNull();
    // The reconciler leaves a turn behind a waiting one alone (its job is not re-made every interval).
    await (await turnsQueue.getJob(second))?.remove();
    await reconcileTurns(env.db, turnsQueue, logger);
    expect(await turnsQueue.getJob(second)).toBeUndefined();
    // `multitask: reject` sees the session busy.
    await expect(
      admission.admit({
        ...ids,
        kind: 'operator_prompt',
        origin: { kind: 'operator' },
        body: { type: 'text', text: 'now' },
        deliverySurface: 'http_public_enqueue',
        admissionContext: 'control_authenticated',
        multitask: 'reject',
      }),
    ).rejects.toMatchObject({ code: 'conflict' });

    // Approved: the turn is queued again with a resume job of its own, then runs the call once.
    const decided = await decide(approval.id, ids.tenantId, 'approved');
    expect(decided).toMatchObject({ kind: 'decided', resumed: true });
    expect((await turnRow(first)).status).toBe('queued');
    const resumeJob = await turnsQueue.getJob(`${first}.${approval.id}`);
    expect(resumeJob?.data).toMatchObject({ turnId: first, resume: approval.id });
    expect(await runner('w3').handle(job(ids, first, approval.id))).toBe('done');

    const done = await turnRow(first);
    expect(done.status).toBe('completed');
    expect(done.runCount).toBe(2);
    expect(effects).toEqual([`pay:5:${first}:c1`]);
    expect(await toolResult(first)).toEqual({ ok: true, result: { paid: 5 } });
    // The worker drained the session: the turn behind it ran after it.
    const later = await turnRow(second);
    expect(later.status).toBe('completed');
    expect(later.completedAt!.getTime()).toBeGreaterThanOrEqual(done.completedAt!.getTime());
    const types = (await env.db.event.findMany({ where: { turnId: first }, orderBy: { seq: 'asc' } })).map(
      (e) => e.type,
    );
    expect(types.filter((t) => t.startsWith('approval') || t.startsWith('tool_call'))).toEqual([
      'approval_requested',
      'approval_decided',
      'tool_call_started',
      'tool_call_completed',
    ]);

    // A replayed decision answers the stored one; another decision after it is a conflict.
    expect(await decide(approval.id, ids.tenantId, 'approved')).toMatchObject({ kind: 'replayed' });
    expect(await decide(approval.id, ids.tenantId, 'rejected')).toMatchObject({
      kind: 'conflict',
      why: 'decided',
    });
    // A redelivered resume job runs nothing again.
    expect(await runner('w4').handle(job(ids, first, approval.id))).toBe('done');
    expect(effects).toHaveLength(1);
  });

  it('the time spent waiting for a person does not count against the turn’s deadline', async () => {
    const ids = await session();
    await env.db.agent.update({ where: { id: ids.agentId }, data: { budgets: { deadlineMs: 60_000 } } });
    const turnId = await admit(ids, 'pay');
    await runner().handle(job(ids, turnId));
    const [approval] = await pending(turnId);
    // Two hours ago it started and began waiting; the person answers now.
    const twoHoursAgo = new Date(Date.now() - 2 * 3600 * 1000);
    await env.db.turn.update({ where: { id: turnId }, data: { startedAt: twoHoursAgo } });
    await env.db.approval.update({ where: { id: approval.id }, data: { createdAt: twoHoursAgo } });
    await decide(approval.id, ids.tenantId, 'approved');
    await runner().handle(job(ids, turnId, approval.id));
    const t = await turnRow(turnId);
    expect(t).toMatchObject({ status: 'completed', stopReason: 'final_answer' });
    expect(effects).toEqual([`pay:5:${turnId}:c1`]);
  });

  it('another tenant cannot see or decide the approval', async () => {
    const ids = await session();
    const other = await session();
    const turnId = await admit(ids, 'pay');
    await runner().handle(job(ids, turnId));
    const [approval] = await pending(turnId);
    expect(await decide(approval.id, other.tenantId, 'approved')).toEqual({ kind: 'not_found' });
    expect((await pending(turnId)).length).toBe(1);
  });

  it('concurrent decisions act once', async () => {
    const ids = await session();
    const turnId = await admit(ids, 'pay');
    await runner().handle(job(ids, turnId));
    const [approval] = await pending(turnId);
    const results = await Promise.all([
      decide(approval.id, ids.tenantId, 'approved'),
      decide(approval.id, ids.tenantId, 'rejected'),
      decide(approval.id, ids.tenantId, 'approved'),
    ]);
    expect(results.filter((r) => r.kind === 'decided')).toHaveLength(1);
    expect(await env.db.event.count({ where: { turnId, type: 'approval_decided' } })).toBe(1);
  });

  it('a rejected call gives the model a classified result and the turn completes', async () => {
    const ids = await session();
    const turnId = await admit(ids, 'pay');
    await runner().handle(job(ids, turnId));
    const [approval] = await pending(turnId);
    await decide(approval.id, ids.tenantId, 'rejected', 'not today');
    await runner().handle(job(ids, turnId, approval.id));
    const t = await turnRow(turnId);
    expect(t.status).toBe('completed');
    expect(effects).toEqual([]);
    expect(await toolResult(turnId)).toMatchObject({
      ok: false,
      kind: 'approval_rejected',
      message: expect.stringContaining('not today'),
      retryable: false,
    });
    const completed = await env.db.event.findFirstOrThrow({ where: { turnId, type: 'tool_call_completed' } });
    expect(completed.data).toMatchObject({ failure: { class: 'Denied', category: 'user_declined' } });
  });

  it('an expired approval is decided expired by the reconciler and the call gets ApprovalExpired', async () => {
    const ids = await session();
    const turnId = await admit(ids, 'pay');
    await runner().handle(job(ids, turnId));
    const [approval] = await pending(turnId);
    // Too late for a person once the expiry passed; the reconciler's expiry decides it.
    await env.db.approval.update({
      where: { id: approval.id },
      data: { expiresAt: new Date(Date.now() - 1000) },
    });
    expect(await decide(approval.id, ids.tenantId, 'approved')).toMatchObject({
      kind: 'conflict',
      why: 'expired',
    });
    expect(await approvals.expireDue()).toBeGreaterThanOrEqual(1);
    expect((await env.db.approval.findUniqueOrThrow({ where: { id: approval.id } })).status).toBe('expired');
    await runner().handle(job(ids, turnId, approval.id));
    expect((await turnRow(turnId)).status).toBe('completed');
    expect(effects).toEqual([]);
    expect(await toolResult(turnId)).toMatchObject({ ok: false, kind: 'approval_expired', retryable: false });
    const completed = await env.db.event.findFirstOrThrow({ where: { turnId, type: 'tool_call_completed' } });
    expect(completed.data).toMatchObject({ failure: { class: 'ApprovalExpired' } });
  });

  it('parallel gated calls each get an approval; the turn resumes after the last decision', async () => {
    const ids = await session();
    const turnId = await admit(ids, 'pay2');
    await runner().handle(job(ids, turnId));
    const [a, b] = await pending(turnId);
    expect([a.callId, b.callId]).toEqual(['c1', 'c2']);
    expect(await decide(a.id, ids.tenantId, 'approved')).toMatchObject({ kind: 'decided', resumed: false });
    expect((await turnRow(turnId)).status).toBe('awaiting_approval');
    expect(await decide(b.id, ids.tenantId, 'rejected')).toMatchObject({ kind: 'decided', resumed: true });
    await runner().handle(job(ids, turnId, b.id));
    expect((await turnRow(turnId)).status).toBe('completed');
    expect(effects).toEqual([`pay:1:${turnId}:c1`]);
  });

  it('untrusted input: a side-effecting call needs approval by default', async () => {
    const ids = await session();
    const trusted = await admit(ids, 'send');
    await runner().handle(job(ids, trusted));
    expect((await turnRow(trusted)).status).toBe('completed');
    expect(effects).toHaveLength(1);

    const untrusted = await admit(ids, 'send', 'webhook_event');
    await runner().handle(job(ids, untrusted));
    expect((await turnRow(untrusted)).status).toBe('awaiting_approval');
    const [approval] = await pending(untrusted);
    expect(approval).toMatchObject({ toolName: 'send', policy: 'untrusted_input' });
    expect(effects).toHaveLength(1);
  });

  it('an approval whose turn no longer waits cannot be decided', async () => {
    const ids = await session();
    const turnId = await admit(ids, 'pay');
    await runner().handle(job(ids, turnId));
    const [approval] = await pending(turnId);
    await env.db.turn.update({ where: { id: turnId }, data: { status: 'cancelled' } });
    expect(await decide(approval.id, ids.tenantId, 'approved')).toMatchObject({
      kind: 'conflict',
      why: 'turn_not_waiting',
    });
    expect(await store.due()).not.toContain(approval.id);
  });

  it("seals an encrypting tenant's approval arguments, a decision's reason and a cancel's note (docs/adr/0067)", async () => {
    const sealed = /^sbe1\./;
    const ids = await session();
    await env.db.tenant.update({
      where: { id: ids.tenantId },
      data: { settings: { encryption: { mode: 'on' } } },
    });
    setContentCipher(
      new TenantCipher(env.db, LocalKeyRing.fromSpec(`k1:${randomBytes(32).toString('base64')}`)),
    );
    try {
      // Approved with a reason: the row's arguments and reason, and the event's reason, stored sealed.
      const turnId = await admit(ids, 'pay');
      await runner().handle(job(ids, turnId));
      const [approval] = await pending(turnId);
      expect(approval.arguments).toEqual(expect.stringMatching(sealed));
      const decided = await decide(approval.id, ids.tenantId, 'approved', 'the invoice checks out');
      expect(decided).toMatchObject({ kind: 'decided', approval: { reason: 'the invoice checks out' } });
      const raw = await env.db.approval.findUniqueOrThrow({ where: { id: approval.id } });
      expect(raw.reason).toMatch(sealed);
      const event = await env.db.event.findFirstOrThrow({ where: { turnId, type: 'approval_decided' } });
      expect((event.data as { reason: string }).reason).toMatch(sealed);
      // Read through the store, opened.
      const listed = await store.db.first<{ reason: string; arguments: unknown }>(
        sqlOf`SELECT reason, arguments FROM approvals WHERE id = ${approval.id}::uuid`,
      );
      expect(listed).toEqual({
        reason: 'the invoice checks out',
        arguments: expect.objectContaining({ amount: 5 }),
      });

      // Cancelled while waiting, with a note: the note (turn, event) and the unrun call's arguments sealed.
      const other = await seedTenantSession(env.db, 'approvals', { model: 'openai-chat/m', tools: ['pay'] });
      await env.db.tenant.update({
        where: { id: other.tenantId },
        data: { settings: { encryption: { mode: 'on' } } },
      });
      const waiting = await admit(other, 'pay');
      await runner().handle(job(other, waiting));
      const r = await control.requestCancel({
        tenantId: other.tenantId,
        turnId: waiting,
        cause: { reason: 'api_cancel', note: 'changed my mind' },
        eventId: newId(),
      });
      expect(r).toMatchObject({ kind: 'cancelled' });
      expect((await turnRow(waiting)).cancelNote).toMatch(sealed);
      const cancelled = await env.db.event.findFirstOrThrow({
        where: { turnId: waiting, type: 'turn_cancelled' },
      });
      expect((cancelled.data as { note: string }).note).toMatch(sealed);
      const call = await env.db.toolCall.findFirstOrThrow({ where: { turnId: waiting, callId: 'c1' } });
      expect(call.arguments).toEqual(expect.stringMatching(sealed));
      expect(await store.db.first(sqlOf`SELECT cancel_note FROM turns WHERE id = ${waiting}::uuid`)).toEqual({
        cancel_note: 'changed my mind',
      });
    } finally {
      setContentCipher(undefined);
    }
  });

  it('a turn cancelled while a call awaits approval answers it cancelled; the next turn sees the whole round', async () => {
    const ids = await session();
    const turnId = await admit(ids, 'pay+look');
    await runner().handle(job(ids, turnId));
    expect((await turnRow(turnId)).status).toBe('awaiting_approval');
    expect(effects).toEqual([`look:4:${turnId}:c2`]);
    const [approval] = await pending(turnId);

    const r = await control.requestCancel({
      tenantId: ids.tenantId,
      turnId,
      cause: { reason: 'api_cancel', note: 'no' },
      eventId: newId(),
    });
    expect(r).toMatchObject({ kind: 'cancelled' });
    // Ended in one transaction with its gated call answered: the transcript's round is whole.
    const messages = await env.db.message.findMany({ where: { turnId }, orderBy: { position: 'asc' } });
    expect(messages.map((m) => [m.role, m.toolCallId])).toEqual([
      ['user', null],
      ['assistant', null],
      ['tool', 'c2'],
      ['tool', 'c1'],
    ]);
    expect(JSON.parse((messages[2].body as { text: string }).text)).toEqual({
      ok: true,
      result: { paid: 4 },
    });
    expect(JSON.parse((messages[3].body as { text: string }).text)).toMatchObject({
      ok: false,
      kind: 'cancelled',
      retryable: true,
      tool_name: 'pay',
    });
    const calls = await env.db.toolCall.findMany({ where: { turnId }, orderBy: { callId: 'asc' } });
    expect(
      calls.map((c) => [c.callId, c.status, c.sideEffect, (c.error as { kind?: string } | null)?.kind]),
    ).toEqual([
      ['c1', 'failed', 'destructive', 'cancelled'],
      ['c2', 'completed', 'read_only', undefined],
    ]);
    expect(calls[0].idempotencyKey).toBe(`${turnId}:c1`);
    expect((await turnRow(turnId)).toolCallCount).toBe(2);
    expect((await env.db.approval.findUniqueOrThrow({ where: { id: approval.id } })).status).toBe(
      'cancelled',
    );
    const events = await env.db.event.findMany({ where: { turnId }, orderBy: { seq: 'asc' } });
    expect(events.slice(-2).map((e) => [e.type, (e.data as { callId?: string }).callId])).toEqual([
      ['tool_call_completed', 'c1'],
      ['turn_cancelled', undefined],
    ]);
    expect(events.at(-2)?.data).toMatchObject({
      ok: false,
      failure: { kind: 'cancelled', class: 'ToolError' },
    });
    expect(events.at(-1)?.data).toMatchObject({ toolCalls: 2 });
    if (r.kind === 'cancelled')
      expect(r.events.map((e) => e.type)).toEqual(['tool_call_completed', 'turn_cancelled']);

    // The next turn's model request carries the round, the call that ran and the cancelled one.
    requests.length = 0;
    const next = await admit(ids, 'hello');
    await runner().handle(job(ids, next));
    expect((await turnRow(next)).status).toBe('completed');
    expect(requests[0].map((m) => (m.role === 'tool' ? `tool:${m.toolCallId}` : m.role))).toEqual([
      'system',
      'user',
      'assistant',
      'tool:c2',
      'tool:c1',
      'user',
    ]);
    expect(effects).toEqual([`look:4:${turnId}:c2`]);
  });
});
