import type { Queue } from 'bullmq';
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
import { LocalKeyRing, TenantCipher } from '@switchboard/platform';
import { ClientToolStore, clientCallId, sqlDbFor } from '@switchboard/store';
import {
  cancelLeftovers,
  seedTenantSession,
  startHarness,
  type HarnessFixture,
  type TestEnv,
} from '@switchboard/testing';
import { ToolRegistry } from '@switchboard/tools';
import { ClientTools } from './client-tools';
import { TurnRunner } from './runner';

/**
 * Client tool waits against real Postgres and BullMQ (docs/adr/0047): a call to a tool the request
 * declared makes the turn wait (`awaiting_client_tool`, lease released, a `client_tool` row and
 * event); concurrent identical answers resume it once; the resumed run records the client's output;
 * an expired wait ends the turn `client_tool_timeout`; bad answers change nothing.
 */
jest.setTimeout(120_000);

const USAGE = { inputTokens: 10, outputTokens: 5, cachedTokens: 0 };

/** Calls `weather` (twice for "two"), then answers with what the client sent. */
class Model implements ModelProvider {
  readonly name = 'openai-chat';
  async complete(r: ModelRequest): Promise<ModelResponse> {
    const last = r.messages[r.messages.length - 1];
    if (last.role === 'tool') {
      const outputs = r.messages.filter((m) => m.role === 'tool').map((m) => m.content);
      return { text: `answered: ${outputs.join(' | ')}`, toolCalls: [], usage: USAGE, finishReason: 'stop' };
    }
    const n = last.content.includes('two') ? 2 : 1;
    const calls = Array.from({ length: n }, (_, i) => ({
      id: `c${i + 1}`,
      name: 'weather',
      arguments: `{"city":"X${i}"}`,
    }));
    return { text: '', toolCalls: calls, usage: USAGE, finishReason: 'tool_calls' };
  }
}

const WEATHER = { name: 'weather', description: 'w', parameters: { type: 'object' } };

describe('client tool waits', () => {
  let h: HarnessFixture;
  let env: TestEnv;
  let turnsQueue: Queue;
  let admission: Admission;
  let logger: Logger;
  let clientTools: ClientTools;
  const tools = new ToolRegistry([]);

  const runner = () =>
    new TurnRunner({
      ...h.runnerDeps({ metrics: new Metrics('client_tools'), workerId: 'w1' }),
      engine: new TurnEngine({ providers: new ProviderRegistry({}, [new Model()]), tools }),
      tools,
      defaultModel: 'openai-chat/default',
    });

  beforeAll(async () => {
    h = await startHarness();
    ({ env, turnsQueue, admission, logger } = h);
    clientTools = new ClientTools(new ClientToolStore(sqlDbFor(poolOf(env.db), 'test')), turnsQueue, logger);
  });
  beforeEach(() => cancelLeftovers(env.db));
  afterAll(() => h?.close());

  async function waitingTurn(text = 'weather') {
    const ids = await seedTenantSession(env.db, 'client-tools', { model: 'openai-chat/m', tools: [] });
    const { turnId } = await admission.admit({
      ...ids,
      kind: 'operator_prompt',
      origin: { kind: 'operator' },
      body: { type: 'text', text },
      deliverySurface: 'http_public_enqueue',
      admissionContext: 'control_authenticated',
      clientTools: [WEATHER],
    });
    expect(await runner().handle({ turnId, ...ids, trace: {} })).toBe('done');
    const rows = await env.db.$queryRaw<{ id: string; status: string; call_id: string }[]>`
      SELECT id::text, status, call_id FROM approvals WHERE turn_id = ${turnId}::uuid AND kind = 'client_tool'
      ORDER BY call_id`;
    return { ids, turnId, callIds: rows.map((r) => clientCallId(r.id)), rows };
  }
  const turnRow = (id: string) => env.db.turn.findUniqueOrThrow({ where: { id } });

  it('waits without running anything, then concurrent identical answers resume the turn once', async () => {
    const { ids, turnId, callIds, rows } = await waitingTurn();
    expect((await turnRow(turnId)).status).toBe('awaiting_client_tool');
    expect(rows).toEqual([expect.objectContaining({ status: 'pending', call_id: 'c1' })]);
    expect((await env.db.session.findUniqueOrThrow({ where: { id: ids.sessionId } })).leaseToken).toBeNull();
    expect(await env.db.toolCall.count({ where: { turnId } })).toBe(0);

    const answer = () =>
      clientTools.answer({
        tenantId: ids.tenantId,
        results: [{ callId: callIds[0], output: 'sun' }],
        answeredBy: 't',
      });
    const outcomes = await Promise.all([answer(), answer(), answer()]);
    expect(outcomes.map((o) => o.kind).sort()).toEqual(['answered', 'replayed', 'replayed']);
    // A replay names the seq the first answer committed (the continuation a protocol follows).
    const first = outcomes.find((o) => o.kind === 'answered');
    const answeredSeq = first?.kind === 'answered' ? Math.max(...first.events.map((e) => e.seq)) : -1;
    for (const o of outcomes) if (o.kind === 'replayed') expect(o.afterSeq).toBe(answeredSeq);
    expect((await turnRow(turnId)).status).toBe('queued');
    const job = await turnsQueue.getJob(`${turnId}.${rows[0].id}`);
    expect(job).toBeDefined();
    expect(await runner().handle(job!.data)).toBe('done');
    const done = await turnRow(turnId);
    expect(done.status).toBe('completed');
    expect(done.finalText).toContain('sun');
    const types = (await env.db.event.findMany({ where: { turnId } })).map((e) => e.type);
    expect(types.filter((t) => t === 'client_tool_requested')).toHaveLength(1);
    expect(types.filter((t) => t === 'client_tool_answered')).toHaveLength(1);
    // Answered again after the end: replayed; another output: a conflict.
    expect(await answer()).toMatchObject({ kind: 'replayed', afterSeq: answeredSeq });
    const other = await clientTools.answer({
      tenantId: ids.tenantId,
      results: [{ callId: callIds[0], output: 'rain' }],
      answeredBy: 't',
    });
    expect(other).toMatchObject({ kind: 'conflict', why: 'answered_otherwise' });
  });

  it("seals an encrypting tenant's answer; a replay and a conflict still compare it opened (docs/adr/0067)", async () => {
    const { ids, turnId, callIds } = await waitingTurn();
    await env.db.tenant.update({
      where: { id: ids.tenantId },
      data: { settings: { encryption: { mode: 'on' } } },
    });
    setContentCipher(
      new TenantCipher(env.db, LocalKeyRing.fromSpec(`k1:${randomBytes(32).toString('base64')}`)),
    );
    try {
      const answer = (output: string) =>
        clientTools.answer({
          tenantId: ids.tenantId,
          results: [{ callId: callIds[0], output }],
          answeredBy: 't',
        });
      expect(await answer('sun')).toMatchObject({ kind: 'answered' });
      const [row] = await env.db.approval.findMany({ where: { turnId, kind: 'client_tool' } });
      expect(row.output).toMatch(/^sbe1\.t\./);
      expect(await answer('sun')).toMatchObject({ kind: 'replayed' });
      expect(await answer('rain')).toMatchObject({ kind: 'conflict', why: 'answered_otherwise' });
      const job = await turnsQueue.getJob(`${turnId}.${row.id}`);
      expect(await runner().handle(job!.data)).toBe('done');
      expect((await turnRow(turnId)).status).toBe('completed');
    } finally {
      setContentCipher(undefined);
    }
  });

  it('unknown ids, another tenant, a missing call: refused with nothing stored', async () => {
    const { ids, turnId, callIds } = await waitingTurn('two');
    expect(callIds).toHaveLength(2);
    const other = await seedTenantSession(env.db, 'someone-else', { model: 'openai-chat/m', tools: [] });
    const one = [{ callId: callIds[0], output: 'x' }];
    expect(await clientTools.answer({ tenantId: other.tenantId, results: one, answeredBy: 't' })).toEqual({
      kind: 'unknown',
      callIds: [callIds[0]],
    });
    expect(
      await clientTools.answer({
        tenantId: ids.tenantId,
        results: [{ callId: 'call_x', output: '' }],
        answeredBy: 't',
      }),
    ).toEqual({ kind: 'unknown', callIds: ['call_x'] });
    expect(await clientTools.answer({ tenantId: ids.tenantId, results: one, answeredBy: 't' })).toEqual({
      kind: 'missing',
      callIds: [callIds[1]],
    });
    const pending = await env.db.$queryRaw<{ n: number }[]>`
      SELECT count(*)::int AS n FROM approvals WHERE turn_id = ${turnId}::uuid AND status = 'pending'`;
    expect(pending[0].n).toBe(2);
    expect((await turnRow(turnId)).status).toBe('awaiting_client_tool');
  });

  it('an expired wait ends the turn client_tool_timeout; a late answer is a conflict', async () => {
    const { ids, turnId, callIds } = await waitingTurn();
    await env.db
      .$executeRaw`UPDATE approvals SET expires_at = now() - interval '1 second' WHERE turn_id = ${turnId}::uuid`;
    expect(await clientTools.expireDue()).toBeGreaterThanOrEqual(1);
    expect((await turnRow(turnId)).status).toBe('queued');
    expect(await runner().handle({ turnId, ...ids, trace: {} })).toBe('done');
    expect(await turnRow(turnId)).toMatchObject({ status: 'failed', stopReason: 'client_tool_timeout' });
    const late = await clientTools.answer({
      tenantId: ids.tenantId,
      results: [{ callId: callIds[0], output: 'x' }],
      answeredBy: 't',
    });
    expect(late).toMatchObject({ kind: 'conflict', why: 'expired' });
  });
});
