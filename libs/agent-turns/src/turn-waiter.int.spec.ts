import IORedis from 'ioredis';
import { newId, type TurnResponse } from '@switchboard/contracts';
import { poolOf } from '@switchboard/database';
import { LiveSubscriber, RedisLivePublisher } from '@switchboard/live';
import { createLogger } from '@switchboard/observability';
import { commitCheckpoint, readTurn, sqlDbFor, type TurnDetailRead } from '@switchboard/store';
import {
  createTestEnv,
  seedSession,
  seedTenant,
  startTcpProxy,
  waitFor,
  type TcpProxy,
  type TestEnv,
} from '@switchboard/testing';
import { TurnWaiter } from './turn-waiter';

/**
 * The wait answered from the turn's end event (docs/adr/0071) on real Postgres and Redis: the body
 * the end's statement read back answers without a read, and is the body `readTurn` reads; an end
 * event without it, one lost while the subscriber's connection was down, or none at all is answered
 * from Postgres as before.
 */
jest.setTimeout(120_000);

const logger = createLogger({ service: 'test', level: 'silent' });

/** A detail that shows every field of the row as JSON would (the gateway's presenter is in apps/). */
const detail = async (_tenantId: string, t: TurnDetailRead) =>
  JSON.parse(JSON.stringify(t)) as unknown as TurnResponse;

describe('TurnWaiter', () => {
  let env: TestEnv;
  let command: IORedis;
  let publisher: RedisLivePublisher;
  let proxy: TcpProxy;
  let subscriber: LiveSubscriber;
  let tenant: { tenantId: string; agentId: string };

  beforeAll(async () => {
    env = await createTestEnv();
    command = new IORedis(env.redisUrl, { maxRetriesPerRequest: null });
    publisher = new RedisLivePublisher(command, { prefix: env.queuePrefix, logger });
    const redis = new URL(env.redisUrl);
    proxy = await startTcpProxy({ host: redis.hostname, port: Number(redis.port || 6379) });
    subscriber = LiveSubscriber.connect(proxy.rewrite(env.redisUrl), {
      prefix: env.queuePrefix,
      logger,
      lingerMs: 0,
    });
    tenant = await seedTenant(env.db, 'waiter');
  });

  afterAll(async () => {
    await subscriber?.close();
    await proxy?.close();
    await command?.quit();
    await env?.cleanup();
  });

  /** A running turn with one finished tool call. */
  async function runningTurn() {
    const sessionId = await seedSession(env.db, tenant.tenantId, tenant.agentId);
    const turnId = newId();
    await env.db.turn.create({
      data: {
        id: turnId,
        tenantId: tenant.tenantId,
        sessionId,
        agentId: tenant.agentId,
        seq: 1,
        inputMessageId: newId(),
        status: 'running',
        startedAt: new Date(),
      },
    });
    await env.db.toolCall.create({
      data: {
        id: newId(),
        tenantId: tenant.tenantId,
        sessionId,
        turnId,
        callId: 'call_1',
        idempotencyKey: `${turnId}:call_1`,
        name: 'word_count',
        arguments: { text: 'three small words' },
        sideEffect: 'read_only',
        status: 'completed',
        result: { words: 3 },
        startedAt: new Date(),
        completedAt: new Date(),
        durationMs: 4,
      },
    });
    return { sessionId, turnId };
  }

  /** The turn's end as the finalisation commits it, with the row the statement read back. */
  async function end(t: { sessionId: string; turnId: string }, status = 'completed') {
    const result = await commitCheckpoint(sqlDbFor(poolOf(env.db), 'worker'), {
      tenantId: tenant.tenantId,
      sessionId: t.sessionId,
      turnId: t.turnId,
      lease: null,
      events: [
        {
          id: newId(),
          turnId: t.turnId,
          type: status === 'completed' ? 'turn_completed' : 'turn_failed',
          data: {},
          withTurnCost: true,
        },
      ],
      turn: {
        end: {
          status,
          stopReason: status === 'completed' ? 'end_turn' : 'error',
          finalText: 'three',
          iterations: 2,
          toolCalls: 1,
          failure: status === 'completed' ? null : { kind: 'provider', message: 'no' },
          costStatus: 'priced',
          decision: { strategy: 'react', model: 'm', iterations: 2, toolCalls: 1, stopReason: 'end_turn' },
        },
      },
      returnEvents: true,
      returnTurn: true,
    });
    return { events: result.events ?? [], row: result.turn };
  }

  /** A waiter on its own counted connection: its transactions are the wait's reads. */
  function waiter() {
    const sql = sqlDbFor(poolOf(env.db), 'gateway');
    return { w: new TurnWaiter(sql, subscriber, detail), sql };
  }

  async function wait(w: TurnWaiter, t: { sessionId: string; turnId: string }, deadlineMs = 20_000) {
    const watch = w.watch(t.sessionId);
    const answer = w.untilEnded(watch, {
      tenantId: tenant.tenantId,
      turnId: t.turnId,
      deadline: Date.now() + deadlineMs,
      subscribedBeforeAdmission: false,
    });
    await waitFor(() => subscriber.channelCount >= 1, { what: 'the subscription' });
    return { answer: answer.finally(() => watch.close()) };
  }

  const read = async (turnId: string) =>
    detail(tenant.tenantId, (await readTurn(sqlDbFor(poolOf(env.db), 'test'), tenant.tenantId, turnId))!);

  it('answers from the body the end event carries, without a read, byte for byte what readTurn reads', async () => {
    for (const status of ['completed', 'failed']) {
      const t = await runningTurn();
      const { w, sql } = waiter();
      const { answer } = await wait(w, t);
      // The subscribe-then-read look, before the end.
      await waitFor(() => sql.counts.transactions === 1, { what: 'the first read' });
      const ended = await end(t, status);
      expect(ended.row).toBeTruthy();
      await publisher.publish(
        t.sessionId,
        ended.events.map((e) => ({ ...e, turn: { row: ended.row! } })),
      );
      const body = await answer;
      expect(w.fromLive).toBe(1);
      expect(sql.counts.transactions).toBe(1);
      expect(JSON.stringify(body)).toBe(JSON.stringify(await read(t.turnId)));
      expect(body).toMatchObject({ status, toolCalls: [{ callId: 'call_1', result: { words: 3 } }] });
    }
  });

  it('reads Postgres when the end event says to (sub-agent tasks, too large, changed)', async () => {
    const t = await runningTurn();
    const { w, sql } = waiter();
    const { answer } = await wait(w, t);
    await waitFor(() => sql.counts.transactions === 1, { what: 'the first read' });
    const ended = await end(t);
    await publisher.publish(
      t.sessionId,
      ended.events.map((e) => ({ ...e, turn: { read: 'spawned' } })),
    );
    const body = await answer;
    expect(w.fromLive).toBe(0);
    expect(sql.counts.transactions).toBe(2);
    expect(JSON.stringify(body)).toBe(JSON.stringify(await read(t.turnId)));
  });

  it('an end published while the subscriber connection was down is read at the resync', async () => {
    const t = await runningTurn();
    const { w, sql } = waiter();
    const { answer } = await wait(w, t);
    await waitFor(() => sql.counts.transactions === 1, { what: 'the first read' });
    await proxy.down();
    try {
      const ended = await end(t);
      // Lost: nobody is subscribed.
      await publisher.publish(
        t.sessionId,
        ended.events.map((e) => ({ ...e, turn: { row: ended.row! } })),
      );
    } finally {
      await proxy.up();
    }
    const body = await answer;
    // Read again at the resync: the end's live copy never arrived.
    expect(w.fromLive).toBe(0);
    expect(sql.counts.transactions).toBe(2);
    expect(JSON.stringify(body)).toBe(JSON.stringify(await read(t.turnId)));
  });

  it('an end never published is read at the deadline', async () => {
    const t = await runningTurn();
    const { w, sql } = waiter();
    const started = Date.now();
    const { answer } = await wait(w, t, 1_500);
    await waitFor(() => sql.counts.transactions === 1, { what: 'the first read' });
    await end(t, 'failed');
    const body = await answer;
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_400);
    expect(w.fromLive).toBe(0);
    expect(body).toMatchObject({ status: 'failed' });
    expect(JSON.stringify(body)).toBe(JSON.stringify(await read(t.turnId)));
  });
});
