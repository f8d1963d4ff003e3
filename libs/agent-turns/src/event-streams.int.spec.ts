import IORedis from 'ioredis';
import { newId } from '@switchboard/contracts';
import { appendEvents, poolOf } from '@switchboard/database';
import { LiveSubscriber, RedisLivePublisher } from '@switchboard/live';
import { createLogger } from '@switchboard/observability';
import { primaryReads, sqlDbFor } from '@switchboard/store';
import {
  createTestEnv,
  seedSession,
  seedTenant,
  startTcpProxy,
  waitFor,
  type TcpProxy,
  type TestEnv,
} from '@switchboard/testing';
import { EventStreams, type StreamItem } from './event-streams';

/**
 * The replay-then-tail seam on real Postgres and Redis (docs/adr/0011, 0015): history then live
 * with no gap and no duplicate, a commit that was never published read from the journal, a
 * dropped subscriber connection resynchronised, and Redis unreachable from the start.
 */
jest.setTimeout(120_000);

const logger = createLogger({ service: 'test', level: 'silent' });

describe('EventStreams', () => {
  let env: TestEnv;
  let command: IORedis;
  let publisher: RedisLivePublisher;
  let proxy: TcpProxy;
  const closing: (() => Promise<unknown>)[] = [];

  beforeAll(async () => {
    env = await createTestEnv();
    command = new IORedis(env.redisUrl, { maxRetriesPerRequest: null });
    await command.ping();
    publisher = new RedisLivePublisher(command, { prefix: env.queuePrefix, logger });
    const redis = new URL(env.redisUrl);
    proxy = await startTcpProxy({ host: redis.hostname, port: Number(redis.port || 6379) });
  });

  afterAll(async () => {
    for (const close of closing.splice(0).reverse()) await close().catch(() => undefined);
    await proxy?.close();
    await command?.quit();
    await env?.cleanup();
  });

  /** A stream over its own subscriber connection (through the proxy), collecting what it yields. */
  function open(sessionId: string, o: { after?: number; turnId?: string; idleMs?: number } = {}) {
    const subscriber = LiveSubscriber.connect(proxy.rewrite(env.redisUrl), {
      prefix: env.queuePrefix,
      logger,
      lingerMs: 0,
    });
    const leave = new AbortController();
    const streams = new EventStreams(
      primaryReads({ sql: sqlDbFor(poolOf(env.db), 'test') }),
      subscriber,
      new AbortController().signal,
    );
    const items: StreamItem[] = [];
    const done = (async () => {
      for await (const item of streams.events({
        sessionId,
        after: o.after ?? 0,
        signal: leave.signal,
        ...o,
      })) {
        items.push(item);
      }
    })();
    closing.push(async () => {
      leave.abort();
      await done;
      await subscriber.close();
    });
    const seqs = () => items.flatMap((i) => (i.kind === 'journaled' ? [i.event.seq] : []));
    return { items, seqs, done, leave, subscriber };
  }

  let tenant: { tenantId: string; agentId: string };
  beforeAll(async () => {
    tenant = await seedTenant(env.db, 'streams');
  });

  /** Commits events to the session's journal (as a writer would), returning them as the live channel carries them. */
  async function commit(sessionId: string, types: string[]) {
    const ids = types.map(() => newId());
    const seqs = await env.db.$transaction((tx) =>
      appendEvents(tx, {
        tenantId: tenant.tenantId,
        sessionId,
        events: types.map((type, i) => ({ id: ids[i], type, data: { i }, turnId: null })),
      }),
    );
    return types.map((type, i) => ({ id: ids[i], seq: seqs[i], type, turnId: null, data: { i } }));
  }

  it('replays the journal after the cursor, then live events, each seq once; a commit never published is read at the next gap', async () => {
    const sessionId = await seedSession(env.db, tenant.tenantId, tenant.agentId);
    await commit(sessionId, ['message_admitted', 'turn_started', 'provider_round_started']);
    const s = open(sessionId, { after: 1 });
    await waitFor(() => s.seqs().length === 2, { what: 'the history' });
    // A stream hears the session's channel and its progress channel (docs/adr/0072).
    await waitFor(() => s.subscriber.channelCount === 2, { what: 'the subscription' });
    // Published, then a copy of it again (a writer's retry): once.
    const a = await commit(sessionId, ['text_delta']);
    await publisher.publish(sessionId, a);
    await publisher.publish(sessionId, a);
    // Committed but never published, then one that is: the gap is read from the journal.
    await commit(sessionId, ['provider_round_completed']);
    await publisher.publish(sessionId, await commit(sessionId, ['turn_completed']));
    await waitFor(() => s.seqs().length === 5, { what: 'every event' });
    expect(s.seqs()).toEqual([2, 3, 4, 5, 6]);
  });

  it('reads the journal again after its subscriber connection dropped (the resync)', async () => {
    const sessionId = await seedSession(env.db, tenant.tenantId, tenant.agentId);
    const s = open(sessionId);
    await waitFor(() => s.subscriber.channelCount === 2, { what: 'the subscription' });
    await publisher.publish(sessionId, await commit(sessionId, ['message_admitted']));
    await waitFor(() => s.seqs().length === 1, { what: 'the first event' });
    await proxy.down();
    // Lost on the channel: nobody is subscribed.
    await publisher.publish(sessionId, await commit(sessionId, ['turn_started']));
    await proxy.up();
    await waitFor(() => s.seqs().length === 2, { what: 'the event published while down', timeoutMs: 20_000 });
    expect(s.seqs()).toEqual([1, 2]);
  });

  it('with Redis unreachable from the start, replays the journal and reads it at every idle interval', async () => {
    const sessionId = await seedSession(env.db, tenant.tenantId, tenant.agentId);
    await commit(sessionId, ['message_admitted']);
    await proxy.down();
    try {
      const s = open(sessionId, { idleMs: 300 });
      await waitFor(() => s.seqs().length === 1, { what: 'the history without Redis', timeoutMs: 10_000 });
      await commit(sessionId, ['turn_started']);
      await waitFor(() => s.seqs().length === 2, { what: 'a commit, by reading', timeoutMs: 10_000 });
      // Nothing new: a heartbeat.
      await waitFor(() => s.items.at(-1)?.kind === 'idle', { what: 'an idle item', timeoutMs: 5_000 });
    } finally {
      await proxy.up();
    }
  });

  it("a turn's stream ends after its terminal event, and at once for a turn that had ended", async () => {
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
        status: 'completed',
      },
    });
    await env.db.$transaction((tx) =>
      appendEvents(tx, {
        tenantId: tenant.tenantId,
        sessionId,
        events: [
          { type: 'message_admitted', data: {}, turnId },
          { type: 'turn_started', data: {}, turnId: null },
          { type: 'turn_completed', data: {}, turnId },
        ],
      }),
    );
    const s = open(sessionId, { turnId });
    await s.done;
    expect(s.seqs()).toEqual([1, 3]);
    const after = open(sessionId, { turnId, after: 3 });
    await after.done;
    expect(after.items).toEqual([]);
  });
});
