import { randomBytes, randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import IORedis from 'ioredis';
import { createLogger } from '@switchboard/observability';
import { startTcpProxy, testRedisUrl, waitFor, type TcpProxy } from '@switchboard/testing';
import { sessionChannel, type LiveMessage } from './channel';
import { RedisLivePublisher } from './publisher';
import { LiveSubscriber, type LiveListener } from './subscriber';

/**
 * The live channel on the real Redis: publishers and subscribers on separate connections, as the
 * harness and gateway processes have them. Each test uses its own prefix.
 */
jest.setTimeout(120_000);

const logger = createLogger({ service: 'test', level: 'silent' });

/** A listener that records what it hears. */
function recorder() {
  const batches: LiveMessage[][] = [];
  let resyncs = 0;
  const listener: LiveListener = {
    onEvents: (events) => batches.push(events),
    onResync: () => resyncs++,
  };
  return {
    listener,
    batches,
    seqs: () => batches.flat().map((e) => ('seq' in e ? e.seq : -1)),
    resyncs: () => resyncs,
  };
}

const event = (seq: number, type = 'provider_round_completed', turnId: string | null = null) => ({
  seq,
  type,
  turnId,
  data: { n: seq },
});

describe('live channel', () => {
  const url = testRedisUrl();
  let prefix: string;
  let command: IORedis;
  let publisher: RedisLivePublisher;
  const closing: (() => Promise<unknown>)[] = [];

  beforeEach(async () => {
    prefix = `sbt_live_${randomBytes(4).toString('hex')}`;
    command = new IORedis(url, { maxRetriesPerRequest: null });
    publisher = new RedisLivePublisher(command, { prefix, logger });
    closing.push(() => command.quit());
    // The publisher drops batches while its connection is not ready (as a process's would be at start-up).
    await command.ping();
  });

  afterEach(async () => {
    for (const close of closing.splice(0).reverse()) await close().catch(() => undefined);
  });

  const subscriber = (options: { lingerMs?: number; url?: string } = {}) => {
    const s = LiveSubscriber.connect(options.url ?? url, { prefix, logger, lingerMs: options.lingerMs ?? 0 });
    closing.push(() => s.close());
    return s;
  };

  const subscribers = async (sessionId: string) =>
    Number(((await command.pubsub('NUMSUB', sessionChannel(prefix, sessionId))) as [string, number])[1]);

  it('delivers each commit batch to subscribers on different connections, in publish order', async () => {
    const sessionId = randomUUID();
    const [a, b] = [subscriber(), subscriber()];
    const [ra, rb] = [recorder(), recorder()];
    const [sa, sb] = [a.listen(sessionId, ra.listener), b.listen(sessionId, rb.listener)];
    expect(await sa.ready).toBe(true);
    expect(await sb.ready).toBe(true);
    expect(await subscribers(sessionId)).toBe(2);

    for (let seq = 1; seq <= 20; seq += 2) await publisher.publish(sessionId, [event(seq), event(seq + 1)]);
    await waitFor(() => ra.seqs().length === 20 && rb.seqs().length === 20, { what: 'all events' });
    const all = Array.from({ length: 20 }, (_, i) => i + 1);
    expect(ra.seqs()).toEqual(all);
    expect(rb.seqs()).toEqual(all);
    // One message per PUBLISH: batches stay whole.
    expect(ra.batches.map((b) => b.length)).toEqual(Array(10).fill(2));
    expect(ra.batches[0][0]).toMatchObject({ seq: 1, type: 'provider_round_completed', data: { n: 1 } });
    expect(typeof ra.batches[0][0].createdAt).toBe('string');
  });

  it('hears only its own session, and nothing from another prefix', async () => {
    const [mine, other] = [randomUUID(), randomUUID()];
    const s = subscriber();
    const r = recorder();
    expect(await s.listen(mine, r.listener).ready).toBe(true);
    const stranger = new RedisLivePublisher(command, { prefix: `${prefix}x`, logger });
    await stranger.publish(mine, [event(1)]);
    await publisher.publish(other, [event(1)]);
    await publisher.publish(mine, [event(7)]);
    await waitFor(() => r.seqs().length > 0, { what: 'the event' });
    expect(r.seqs()).toEqual([7]);
  });

  it('multiplexes listeners onto one subscription per session and unsubscribes when the last leaves', async () => {
    const sessionId = randomUUID();
    const s = subscriber();
    const [r1, r2] = [recorder(), recorder()];
    const first = s.listen(sessionId, r1.listener);
    const second = s.listen(sessionId, r2.listener);
    expect(await first.ready).toBe(true);
    expect(await second.ready).toBe(true);
    expect(await subscribers(sessionId)).toBe(1);
    // The session's channel and its progress channel.
    expect(s.channelCount).toBe(2);

    first.close();
    expect(await subscribers(sessionId)).toBe(1);
    await publisher.publish(sessionId, [event(1)]);
    await waitFor(() => r2.seqs().length === 1, { what: 'the second listener' });

    second.close();
    await waitFor(async () => (await subscribers(sessionId)) === 0, { what: 'the unsubscription' });
    expect(s.channelCount).toBe(0);
    await publisher.publish(sessionId, [event(2)]);
    // A listener on another session proves later messages are flowing before we look.
    const probe = recorder();
    const probeSession = randomUUID();
    expect(await s.listen(probeSession, probe.listener).ready).toBe(true);
    await publisher.publish(probeSession, [event(3)]);
    await waitFor(() => probe.seqs().length === 1, { what: 'the probe' });
    expect(r1.seqs()).toEqual([]);
    expect(r2.seqs()).toEqual([1]);
  });

  it('confirms every channel subscribed while its lazy connection was still connecting', async () => {
    // The gateway's subscriber connects on its first use; streams opened together all subscribe
    // during the connection's handshake (ioredis' ready check must not run on a subscriber).
    for (const gapMs of [0, 1, 2]) {
      const s = LiveSubscriber.connect(url, { prefix, logger, lingerMs: 0 }, { lazyConnect: true });
      closing.push(() => s.close());
      const sessions = Array.from({ length: 5 }, () => randomUUID());
      const recorders = sessions.map(() => recorder());
      const subs = [];
      for (const [i, sessionId] of sessions.entries()) {
        subs.push(s.listen(sessionId, recorders[i].listener));
        await new Promise((resolve) => setTimeout(resolve, gapMs));
      }
      const confirmed = Promise.all(subs.map((x) => x.ready));
      const late = new Promise((resolve) => setTimeout(() => resolve('not confirmed in 5 s'), 5000));
      expect(await Promise.race([confirmed, late])).toEqual(sessions.map(() => true));
      for (const [i, sessionId] of sessions.entries()) await publisher.publish(sessionId, [event(i + 1)]);
      await waitFor(() => recorders.every((r) => r.seqs().length === 1), { what: 'every session' });
    }
  });

  it('keeps a channel subscribed for lingerMs after its last listener, and reuses it', async () => {
    const sessionId = randomUUID();
    const s = subscriber({ lingerMs: 60_000 });
    const first = s.listen(sessionId, recorder().listener);
    expect(await first.ready).toBe(true);
    first.close();
    // Still subscribed: the next listener is ready at once, with no new SUBSCRIBE.
    const again = s.listen(sessionId, recorder().listener);
    expect(again.isReady).toBe(true);
    expect(await subscribers(sessionId)).toBe(1);
    again.close();
  });

  it('subscribes again after its connection drops, and tells listeners to resync', async () => {
    const redis = new URL(url);
    const proxy: TcpProxy = await startTcpProxy({ host: redis.hostname, port: Number(redis.port || 6379) });
    closing.push(() => proxy.close());
    const sessionId = randomUUID();
    const s = subscriber({ url: proxy.rewrite(url) });
    const r = recorder();
    const sub = s.listen(sessionId, r.listener);
    expect(await sub.ready).toBe(true);
    await publisher.publish(sessionId, [event(1)]);
    await waitFor(() => r.seqs().length === 1, { what: 'the first event' });

    await proxy.down();
    await waitFor(async () => (await subscribers(sessionId)) === 0, { what: 'Redis to drop the subscriber' });
    await waitFor(() => !sub.isReady, { what: 'the subscriber to see its connection close' });
    // Lost: nobody is subscribed. The resync is how the listener learns to read Postgres.
    await publisher.publish(sessionId, [event(2)]);
    // A listener that joins while the connection is down waits for the real subscription.
    const late = recorder();
    const lateSub = s.listen(sessionId, late.listener);
    expect(lateSub.isReady).toBe(false);

    await proxy.up();
    await waitFor(() => r.resyncs() === 1, { what: 'the resync', timeoutMs: 15_000 });
    expect(await lateSub.ready).toBe(true);
    expect(sub.isReady).toBe(true);
    expect(await subscribers(sessionId)).toBe(1);
    await publisher.publish(sessionId, [event(3)]);
    await waitFor(() => r.seqs().length === 2 && late.seqs().length === 1, { what: 'events after it' });
    expect(r.seqs()).toEqual([1, 3]);
    expect(late.seqs()).toEqual([3]);
  });

  it('a watch pulls batches in order, times out, and stops when aborted or closed', async () => {
    const sessionId = randomUUID();
    const s = subscriber();
    const watch = s.watch(sessionId, { progress: true });
    expect(await watch.subscribed(Date.now() + 5000)).toBe(true);
    await publisher.publish(sessionId, [event(1)]);
    await publisher.publish(sessionId, [event(2, 'turn_completed', 't')]);
    const first = await watch.next(Date.now() + 5000);
    const second = await watch.next(Date.now() + 5000);
    expect(first).toEqual([expect.objectContaining({ seq: 1 })]);
    expect(second).toEqual([expect.objectContaining({ seq: 2, type: 'turn_completed', turnId: 't' })]);
    expect(await watch.next(Date.now() + 50)).toBe('timeout');
    const abort = new AbortController();
    const pending = watch.next(Date.now() + 10_000, abort.signal);
    abort.abort();
    expect(await pending).toBe('aborted');
    const closed = watch.next(Date.now() + 10_000);
    watch.close();
    expect(await closed).toBe('aborted');
    await waitFor(async () => (await subscribers(sessionId)) === 0, { what: 'the unsubscription' });
  });

  it('a waiter hears only what settles a turn and is no watcher; a stream is one, also once it follows', async () => {
    const sessionId = randomUUID();
    const s = subscriber();
    const waiter = s.watch(sessionId);
    expect(await waiter.subscribed(Date.now() + 5000)).toBe(true);
    const round = {
      ephemeral: true as const,
      after: 1,
      id: 'prs',
      index: 0,
      type: 'provider_round_started',
      turnId: 't',
      data: {},
    };
    // Progress reaches nobody: the count a writer of ephemeral events probes with is 0.
    expect(await publisher.publishCounted(sessionId, [round])).toBe(0);
    expect(await publisher.publishCounted(sessionId, [event(2, 'tool_call_completed', 't')])).toBe(0);
    // What settles a turn goes out on the session's channel, which the waiter hears.
    expect(await publisher.publishCounted(sessionId, [event(3, 'approval_requested', 't')])).toBe(1);
    expect(await waiter.next(Date.now() + 5000)).toEqual([expect.objectContaining({ seq: 3 })]);
    expect(await waiter.next(Date.now() + 50)).toBe('timeout');

    // Handed to a stream, the watch follows the progress channel too: a watcher now.
    waiter.follow();
    expect(waiter.subscription.isReady).toBe(false);
    expect(await waiter.subscribed(Date.now() + 5000)).toBe(true);
    expect(await publisher.publishCounted(sessionId, [{ ...round, after: 3 }])).toBe(1);
    await publisher.publish(sessionId, [event(4, 'provider_round_completed', 't')]);
    await publisher.publish(sessionId, [event(5, 'turn_completed', 't')]);
    const heard: LiveMessage[] = [];
    while (heard.length < 3) {
      const next = await waiter.next(Date.now() + 5000);
      if (!Array.isArray(next)) throw new Error(`expected events, got ${next}`);
      heard.push(...next);
    }
    // One connection hears both channels in publish order.
    expect(heard.map((e) => ('seq' in e ? e.seq : `after ${e.after}`))).toEqual(['after 3', 4, 5]);
    waiter.close();
    await waitFor(async () => (await subscribers(sessionId)) === 0, { what: 'the unsubscription' });
    expect(s.channelCount).toBe(0);
  });

  it('a listener that joins a session its process already hears gets the open round first, and nothing of a committed one', async () => {
    const sessionId = randomUUID();
    const s = subscriber({ lingerMs: 60_000 });
    const first = recorder();
    const firstSub = s.listen(sessionId, first.listener);
    expect(await firstSub.ready).toBe(true);
    const provisional = (id: string, index: number, text?: string, offset?: number) => ({
      ephemeral: true as const,
      after: 4,
      id,
      index,
      type: text === undefined ? 'provider_round_started' : 'text_delta',
      turnId: 't1',
      data: text === undefined ? {} : { text },
      ...(offset === undefined ? {} : { offset }),
    });
    await publisher.publish(sessionId, [provisional('prs', 0)]);
    await publisher.publish(sessionId, [provisional('td', 1, 'Hel', 0)]);
    await waitFor(() => first.batches.length === 2, { what: 'the round so far' });

    // A second stream on this process, mid-round (the PUBLISH count does not change for it).
    const late = recorder();
    const joined = s.listen(sessionId, late.listener);
    expect(await joined.ready).toBe(true);
    await publisher.publish(sessionId, [provisional('td', 1, 'lo', 3)]);
    await waitFor(() => late.batches.flat().length === 3, { what: 'the open round, then the next chunk' });
    expect(late.batches.flat().map((e) => e.id)).toEqual(['prs', 'td', 'td']);
    expect(late.batches.flat().map((e) => e.data.text)).toEqual([undefined, 'Hel', 'lo']);

    // After its commit the round is not replayed: a listener that joins then hears the next one only.
    await publisher.publish(sessionId, [{ ...event(5, 'text_delta', 't1'), id: 'td' }]);
    await waitFor(() => late.batches.length === 3, { what: 'the commit' });
    const next = recorder();
    const nextSub = s.listen(sessionId, next.listener);
    expect(await nextSub.ready).toBe(true);
    await publisher.publish(sessionId, [{ ...provisional('prs2', 0), after: 5 }]);
    await waitFor(() => next.batches.length > 0, { what: 'the next round' });
    expect(next.batches.flat().map((e) => e.id)).toEqual(['prs2']);
    // The open round outlives the listeners (the channel lingers): one that comes back gets it.
    for (const sub of [firstSub, joined, nextSub]) sub.close();
    expect(s.channelCount).toBe(2);
    const back = recorder();
    expect(await s.listen(sessionId, back.listener).ready).toBe(true);
    await waitFor(() => back.batches.length > 0, { what: 'the open round' });
    expect(back.batches.flat().map((e) => e.id)).toEqual(['prs2']);
  });

  it('a publish while Redis is unreachable neither throws nor waits, and is logged', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const dead = new IORedis('redis://127.0.0.1:1', { maxRetriesPerRequest: null, lazyConnect: true });
    dead.on('error', () => undefined);
    closing.push(async () => dead.disconnect());
    const cut = new RedisLivePublisher(dead, {
      prefix,
      logger: createLogger({ service: 'test', level: 'warn', destination: sink }),
    });
    const started = Date.now();
    await expect(cut.publish(randomUUID(), [event(1)])).resolves.toBeUndefined();
    expect(Date.now() - started).toBeLessThan(500);
    expect(lines.join('')).toContain('live events not published');
  });
});
