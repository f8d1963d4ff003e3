import type { Queue } from 'bullmq';
import { z } from 'zod';
import type { Admission, TurnSteering } from '@switchboard/admission';
import { cancelCause, type Priority } from '@switchboard/contracts';
import { poolOf } from '@switchboard/database';
import { TurnEngine } from '@switchboard/engine';
import {
  ProviderRegistry,
  type ModelProvider,
  type ModelRequest,
  type ModelResponse,
} from '@switchboard/providers';
import { SqlDb, TurnStore } from '@switchboard/store';
import { defineTool, ToolRegistry, type ToolDefinition } from '@switchboard/tools';
import {
  seedTenantSession,
  startHarness,
  waitFor,
  type HarnessFixture,
  type TestEnv,
} from '@switchboard/testing';
import { TurnRunner } from './runner';

/**
 * Steering turns against real Postgres and BullMQ (docs/adr/0014): pending turns drained by priority
 * band with the lease released once nothing is left, cancels of queued, running and orphaned turns,
 * and an interjection delivered into a running turn before its next provider call.
 */
jest.setTimeout(120_000);

const API_CANCEL = cancelCause('api_cancel');
const USAGE = { inputTokens: 10, outputTokens: 5, cachedTokens: 0 };

/** The last user text of a request (the turn's input, or an interjection). */
const lastUser = (r: ModelRequest) => [...r.messages].reverse().find((m) => m.role === 'user')?.content ?? '';

/**
 * A scripted model: `tool:<x>` asks for the `hold` tool, `hang` waits for the abort, anything else
 * answers at once. Every request is recorded.
 */
class Scripted implements ModelProvider {
  readonly name = 'scripted-ctl';
  readonly requests: ModelRequest[] = [];
  readonly aborted: string[] = [];
  async complete(request: ModelRequest): Promise<ModelResponse> {
    this.requests.push(request);
    // This turn's input: the last user message before any assistant message of this turn.
    const input =
      [...request.messages].reverse().find((m) => m.role === 'user' && m.content.startsWith('#'))?.content ??
      '';
    const last = request.messages.at(-1);
    if (input.includes('hang')) {
      return new Promise((_, reject) => {
        request.signal?.addEventListener('abort', () => {
          this.aborted.push(input);
          reject(new Error('aborted'));
        });
      });
    }
    if (input.includes('tool') && last?.role !== 'tool' && !request.messages.some((m) => m.role === 'tool')) {
      return {
        text: '',
        toolCalls: [
          { id: 'c1', name: 'hold', arguments: '{"n":1}' },
          { id: 'c2', name: 'hold', arguments: '{"n":2}' },
        ],
        usage: USAGE,
        finishReason: 'tool_calls',
      };
    }
    return { text: `answer to ${lastUser(request)}`, toolCalls: [], usage: USAGE, finishReason: 'stop' };
  }
}

/** A side-effecting tool (so two calls run in two waves) that holds until released or aborted. */
const gate = { release: () => undefined as void, started: 0, aborted: 0 };
const hold = defineTool({
  name: 'hold',
  description: 'Holds',
  schema: z.strictObject({ n: z.int() }),
  sideEffect: 'local_write',
  timeoutMs: 30_000,
  needsApproval: false,
  execute: async (_args, ctx) => {
    gate.started++;
    await new Promise<void>((resolve, reject) => {
      gate.release = resolve;
      ctx.signal.addEventListener('abort', () => {
        gate.aborted++;
        reject(new Error('aborted'));
      });
    });
    return { held: true };
  },
}) as ToolDefinition;

describe('steering turns', () => {
  let h: HarnessFixture;
  let env: TestEnv;
  let postTurn: Queue;
  let control: TurnSteering;
  let admission: Admission;
  const tools = new ToolRegistry([hold]);
  const provider = new Scripted();
  const engine = new TurnEngine({ providers: new ProviderRegistry({}, [provider]), tools });

  const runner = (leaseMs = 10_000) =>
    new TurnRunner({
      ...h.runnerDeps({ workerId: `w-${Math.random()}`, leaseMs }),
      engine,
      tools,
      defaultModel: 'scripted-ctl/m',
    });

  beforeAll(async () => {
    h = await startHarness({ admitWithControl: true });
    ({ env, postTurnQueue: postTurn, control, admission } = h);
  });

  afterAll(() => h?.close());

  const session = () => seedTenantSession(env.db, 'ctl', { model: 'scripted-ctl/m', tools: ['hold'] });
  const admit = (
    s: { tenantId: string; sessionId: string },
    text: string,
    o: { priority?: Priority; multitask?: 'interrupt'; kind?: 'webhook_event' } = {},
  ) =>
    admission.admit({
      tenantId: s.tenantId,
      sessionId: s.sessionId,
      kind: o.kind ?? 'operator_prompt',
      origin: o.kind ? { kind: 'webhook', source: 'test', eventType: 'x' } : { kind: 'operator' },
      body: { type: 'text', text },
      deliverySurface: 'http_public_enqueue',
      admissionContext: 'control_authenticated',
      priority: o.priority,
      multitask: o.multitask,
    });
  const job = (s: { tenantId: string; sessionId: string }, turnId: string) => ({
    turnId,
    sessionId: s.sessionId,
    tenantId: s.tenantId,
    trace: {},
  });
  const turn = (id: string) => env.db.turn.findUniqueOrThrow({ where: { id } });
  const events = (turnId: string) =>
    env.db.event.findMany({ where: { turnId }, orderBy: { seq: 'asc' } }).then((es) => es.map((e) => e.type));
  const leaseOf = (sessionId: string) =>
    env.db.session.findUniqueOrThrow({ where: { id: sessionId } }).then((s) => s.leaseToken);

  it('drains pending turns by priority band, FIFO within a band, and then releases the lease', async () => {
    const s = await session();
    const n1 = await admit(s, '#n1');
    const b1 = await admit(s, '#b1', { priority: 'background' });
    const n2 = await admit(s, '#n2');
    const x1 = await admit(s, '#x1', { priority: 'next' });
    const i1 = await admit(s, '#i1', { priority: 'interject' });
    // From a webhook, interject is not trusted: it is admitted as next (after x1).
    const w1 = await admit(s, '#w1', { priority: 'interject', kind: 'webhook_event' });
    expect((await turn(w1.turnId)).priority).toBe('next');

    const before = provider.requests.length;
    expect(await runner().handle(job(s, n1.turnId))).toBe('done');
    const order = provider.requests.slice(before).map((r) => lastUser(r).replace(/^<evidence[^>]*>\s*/, ''));
    expect(order.map((t) => t.match(/#\w+/)?.[0])).toEqual(['#i1', '#x1', '#w1', '#n1', '#n2', '#b1']);
    for (const t of [n1, b1, n2, x1, i1, w1]) expect((await turn(t.turnId)).status).toBe('completed');
    // Released by the last turn's commit although it was not the highest seq.
    expect(await leaseOf(s.sessionId)).toBeNull();
    // Each turn's history holds only the turns that ran before it: #n1 ran fourth and sees three.
    const n1Request = provider.requests.slice(before)[3];
    const users = n1Request.messages
      .filter((m) => m.role === 'user')
      .map((m) => m.content.match(/#\w+/)?.[0]);
    // Earlier turns are listed in admission order (seq: the order compaction cuts by), not run order.
    expect(users).toEqual(['#x1', '#i1', '#w1', '#n1']);
  });

  it('ends a queued turn at once: it never runs, its hooks are enqueued, later turns still run', async () => {
    const s = await session();
    const a = await admit(s, '#qa');
    const b = await admit(s, '#qb');
    const cancelled = await control.cancel(s.tenantId, a.turnId, cancelCause('api_cancel', 'not needed'));
    expect(cancelled).toEqual({ status: 'cancelled', changed: true });
    const t = await turn(a.turnId);
    expect([t.status, t.stopReason, t.cancelReason, t.cancelNote]).toEqual([
      'cancelled',
      'cancelled',
      'api_cancel',
      'not needed',
    ]);
    expect(await events(a.turnId)).toEqual(['message_admitted', 'turn_cancelled']);
    const ended = await env.db.event.findFirstOrThrow({
      where: { turnId: a.turnId, type: 'turn_cancelled' },
    });
    expect(ended.data).toMatchObject({ stopReason: 'cancelled', reason: 'api_cancel', note: 'not needed' });
    expect(await postTurn.getJob(`${a.turnId}.hooks`)).toBeDefined();
    // Idempotent: the turn is answered as it is.
    // A repeat with another reason changes nothing: the first reason stands.
    expect(await control.cancel(s.tenantId, a.turnId, cancelCause('operator'))).toEqual({
      status: 'cancelled',
      changed: false,
    });
    expect((await turn(a.turnId)).cancelReason).toBe('api_cancel');
    // Another tenant's turn is unknown.
    const other = await session();
    expect(await control.cancel(other.tenantId, a.turnId, API_CANCEL)).toBeUndefined();

    const before = provider.requests.length;
    // The cancelled turn's own job drains the session: b runs, a never does.
    expect(await runner().handle(job(s, a.turnId))).toBe('done');
    const seen = provider.requests.slice(before).map(lastUser);
    expect(seen.some((u) => u.includes('#qa'))).toBe(false);
    expect((await turn(b.turnId)).status).toBe('completed');
    expect(await leaseOf(s.sessionId)).toBeNull();
  });

  it('stops a running turn mid-stream on a control message: the stream is aborted, hooks still run', async () => {
    const s = await session();
    const a = await admit(s, '#hang');
    const r = runner();
    const run = r.handle(job(s, a.turnId));
    await waitFor(async () => ((await turn(a.turnId)).status === 'running' ? true : undefined), {
      what: 'turn running',
    });
    await waitFor(() => (provider.requests.some((q) => lastUser(q).includes('#hang')) ? true : undefined), {
      what: 'provider called',
    });
    expect(
      await control.cancel(s.tenantId, a.turnId, cancelCause('api_cancel', 'user pressed stop')),
    ).toEqual({
      status: 'running',
      changed: true,
    });
    // No subscriber in this test: the runner is handed the message as the harness's subscriber would.
    r.control({ v: 1, type: 'cancel', turnId: a.turnId, sessionId: s.sessionId });
    expect(await run).toBe('done');
    const t = await turn(a.turnId);
    expect([t.status, t.stopReason]).toEqual(['cancelled', 'cancelled']);
    expect(provider.aborted).toContain('#hang');
    const cancelledEvent = await env.db.event.findFirstOrThrow({
      where: { turnId: a.turnId, type: 'turn_cancelled' },
    });
    expect(cancelledEvent.data).toMatchObject({
      stopReason: 'cancelled',
      reason: 'api_cancel',
      note: 'user pressed stop',
    });
    expect(t).toMatchObject({ cancelReason: 'api_cancel', cancelNote: 'user pressed stop' });
    expect(await postTurn.getJob(`${a.turnId}.hooks`)).toBeDefined();
    expect(await leaseOf(s.sessionId)).toBeNull();
  });

  it('stops a running turn mid-tool from the heartbeat alone (a lost control message); unrun calls answered cancelled', async () => {
    const s = await session();
    const a = await admit(s, '#tool');
    gate.started = 0;
    gate.aborted = 0;
    const run = runner(900).handle(job(s, a.turnId));
    await waitFor(() => (gate.started === 1 ? true : undefined), { what: 'tool started' });
    await control.cancel(s.tenantId, a.turnId, API_CANCEL);
    expect(await run).toBe('done');
    expect(gate.aborted).toBe(1);
    expect(gate.started).toBe(1);
    const t = await turn(a.turnId);
    expect(t.status).toBe('cancelled');
    const calls = await env.db.toolCall.findMany({ where: { turnId: a.turnId }, orderBy: { callId: 'asc' } });
    expect(calls.map((c) => [c.callId, c.status, (c.error as { kind?: string } | null)?.kind])).toEqual([
      ['c1', 'failed', 'cancelled'],
      ['c2', 'failed', 'cancelled'],
    ]);
  });

  it('ends a turn whose worker died without running it again', async () => {
    const s = await session();
    const a = await admit(s, '#orphan');
    // A worker claimed it and died: running, lease lapsed.
    await env.db.turn.update({
      where: { id: a.turnId },
      data: { status: 'running', startedAt: new Date(), runCount: 1 },
    });
    await env.db.session.update({
      where: { id: s.sessionId },
      data: {
        leaseOwner: 'dead',
        leaseToken: crypto.randomUUID(),
        leaseExpiresAt: new Date(Date.now() - 1000),
      },
    });
    expect(await control.cancel(s.tenantId, a.turnId, API_CANCEL)).toEqual({
      status: 'running',
      changed: true,
    });
    const before = provider.requests.length;
    expect(await runner().handle(job(s, a.turnId))).toBe('done');
    expect(provider.requests.length).toBe(before);
    expect((await turn(a.turnId)).status).toBe('cancelled');
    expect(await events(a.turnId)).toEqual(['message_admitted', 'turn_cancelled']);
  });

  it('multitask interrupt cancels the running turn and runs the new message after it', async () => {
    const s = await session();
    const a = await admit(s, '#hang again');
    const r = runner(900);
    const run = r.handle(job(s, a.turnId));
    await waitFor(
      () => (provider.requests.some((q) => lastUser(q).includes('#hang again')) ? true : undefined),
      {
        what: 'provider called',
      },
    );
    const b = await admit(s, '#after', { multitask: 'interrupt' });
    expect(await run).toBe('done');
    expect((await turn(a.turnId)).status).toBe('cancelled');
    expect(await turn(a.turnId)).toMatchObject({
      cancelReason: 'superseded',
      cancelNote: `interrupted by turn ${b.turnId}`,
    });
    expect((await turn(b.turnId)).status).toBe('completed');
  });

  it('delivers an interjection into the running turn before its next provider call', async () => {
    const s = await session();
    const a = await admit(s, '#tool then');
    gate.started = 0;
    const r = runner();
    const run = r.handle(job(s, a.turnId));
    await waitFor(() => (gate.started === 1 ? true : undefined), { what: 'tool started' });
    const i = await admit(s, '#steer: use metric units', { priority: 'interject' });
    r.control({ v: 1, type: 'interject', sessionId: s.sessionId });
    gate.release();
    await waitFor(() => (gate.started === 2 ? true : undefined), { what: 'second call started' });
    gate.release();
    expect(await run).toBe('done');
    const last = provider.requests.at(-1)!;
    expect(last.messages.at(-1)).toEqual({ role: 'user', content: '#steer: use metric units' });
    expect((await turn(a.turnId)).finalText).toBe('answer to #steer: use metric units');
    const it = await turn(i.turnId);
    expect([it.status, it.stopReason]).toEqual(['completed', 'interjected']);
    expect(await events(a.turnId)).toContain('interjection_delivered');
    // The transcript keeps it in the running turn, after the tool results, with its provenance.
    const msgs = await env.db.message.findMany({ where: { turnId: a.turnId }, orderBy: { position: 'asc' } });
    const steer = msgs.find((m) => m.id === it.inputMessageId);
    expect(steer).toMatchObject({
      role: 'user',
      authorityClass: 'operator_instruction',
      priority: 'interject',
    });
    expect(msgs.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'tool', 'user', 'assistant']);
    // A retried delivery whose first commit's answer was lost finds what it moved.
    const store = new TurnStore(new SqlDb(poolOf(env.db)));
    expect((await store.interjectedSince(a.turnId, 0)).map((m) => m.messageId)).toEqual([it.inputMessageId]);
    expect(await store.interjectedSince(a.turnId, 5)).toEqual([]);
  });
});
