import type { LivePublisher, PublishableEvent } from '@switchboard/live';
import { LiveProgress } from './live-progress';

/** Records every batch; answers `receivers` subscribers (undefined: the PUBLISH was given up). */
class Recorder implements LivePublisher {
  readonly batches: PublishableEvent[][] = [];
  receivers: number | undefined = 1;
  async publish(_sessionId: string, events: readonly PublishableEvent[]): Promise<void> {
    this.batches.push([...events]);
  }
  async publishCounted(_sessionId: string, events: readonly PublishableEvent[]): Promise<number | undefined> {
    this.batches.push([...events]);
    return this.receivers;
  }
}

/** A batch as `id@index+offset:text` (or `id@index` for an event without text). */
const brief = (batch: PublishableEvent[]) =>
  batch.map((e) =>
    'ephemeral' in e
      ? `${e.id}@${e.index}${e.offset !== undefined ? `+${e.offset}` : ''}${typeof e.data.text === 'string' ? `:${e.data.text}` : ''}`
      : `#${e.seq}`,
  );

const tick = (ms = 0) => new Promise((resolve) => setTimeout(resolve, ms));

/** Every LiveProgress a test made is closed after it, even when the test failed midway. */
const made: LiveProgress[] = [];
const progress = (...args: ConstructorParameters<typeof LiveProgress>) => {
  const live = new LiveProgress(...args);
  made.push(live);
  return live;
};
afterEach(() => {
  made.splice(0).forEach((l) => l.close());
  jest.useRealTimers();
});
const committed = (seq: number, id: string, type = 'x') => ({
  id,
  seq,
  type,
  turnId: 't',
  data: {},
  createdAt: new Date().toISOString(),
});

describe('LiveProgress', () => {
  it('publishes the round start at once with what is buffered before it, then coalesced text with offsets', async () => {
    const pub = new Recorder();
    const live = progress(pub, 's', 't', 20);
    live.emitted('e0', 'turn_started', { seq: 1 });
    expect(pub.batches).toHaveLength(0);
    live.emitted('e1', 'provider_round_started', { round: 0, model: 'm' });
    expect(pub.batches).toHaveLength(1);
    expect(pub.batches[0]).toMatchObject([
      { ephemeral: true, id: 'e0', index: 0, after: 0, type: 'turn_started' },
      { ephemeral: true, id: 'e1', index: 1, after: 0, type: 'provider_round_started' },
    ]);
    await tick();
    // The first chunk goes out at once (nothing was flushed within the interval before)...
    live.delta('d', 2, 'Hel');
    live.delta('d', 2, 'lo');
    await tick(1);
    // ...later ones within the interval are coalesced.
    live.delta('d', 2, ', ');
    live.delta('d', 2, 'world');
    await tick(40);
    const text = pub.batches.slice(1).flat();
    expect(text.map((e) => e.data.text)).toEqual(['Hello', ', world']);
    expect(text).toMatchObject([
      { id: 'd', index: 2, offset: 0, type: 'text_delta' },
      { id: 'd', index: 2, offset: 5, type: 'text_delta' },
    ]);
    expect(pub.batches.length).toBe(3);
  });

  it('publishes each commit as journaled and drops what is provisional', async () => {
    const pub = new Recorder();
    const live = progress(pub, 's', 't', 1000);
    live.emitted('e1', 'provider_round_started', { round: 0, model: 'm' });
    await tick();
    live.delta('d', 1, 'a');
    await tick();
    live.delta('d', 1, 'b');
    live.emitted('d', 'text_delta', { text: 'ab' });
    live.emitted('e2', 'provider_round_completed', {});
    live.committed([committed(5, 'e1'), committed(6, 'd'), committed(7, 'e2')]);
    await tick(1100);
    // prs, the first chunk, the commit; the pending 'b' is in the commit.
    expect(pub.batches).toHaveLength(3);
    expect(pub.batches[2].map((e) => 'seq' in e && e.seq)).toEqual([5, 6, 7]);
    // After the commit, ephemeral events say what they follow.
    live.emitted('e3', 'provider_round_started', { round: 1, model: 'm' });
    expect(pub.batches[3]).toMatchObject([{ id: 'e3', after: 7, index: 0 }]);
  });

  it('sends no text or tool starts while the round start reached nobody', async () => {
    const pub = new Recorder();
    pub.receivers = 0;
    const live = progress(pub, 's', 't', 0, 200);
    live.emitted('e1', 'provider_round_started', { round: 0, model: 'm' });
    await tick();
    live.delta('d', 1, 'abc');
    live.emitted('d', 'text_delta', { text: 'abc' });
    live.emitted('e2', 'tool_call_started', { callId: 'c', name: 'n' });
    await tick(5);
    expect(pub.batches).toHaveLength(1);
    // Its commit goes out only if it ends the turn.
    live.committed([committed(5, 'e1'), committed(6, 'd'), committed(7, 'e2')]);
    expect(pub.batches).toHaveLength(1);
    // The next round, begun right after a probe nobody heard, is probed when the interval is up.
    pub.receivers = 1;
    live.emitted('e3', 'provider_round_started', { round: 1, model: 'm' });
    expect(pub.batches).toHaveLength(1);
    await tick(250);
    expect(pub.batches[1].map((e) => e.id)).toEqual(['e3']);
    pub.receivers = 0;
    live.emitted('e4', 'provider_round_started', { round: 2, model: 'm' });
    await tick();
    live.committed([committed(8, 'e3'), committed(9, 'e4'), committed(10, 'end', 'turn_completed')]);
    expect(pub.batches.at(-1)!.map((e) => 'seq' in e && e.seq)).toEqual([8, 9, 10]);
  });

  it("publishes a tool's start only when the tool still runs a flush interval later", async () => {
    const pub = new Recorder();
    const live = progress(pub, 's', 't', 20);
    live.emitted('e1', 'provider_round_started', { round: 0, model: 'm' });
    live.committed([committed(2, 'e1')]);
    live.emitted('fast', 'tool_call_started', { callId: 'a', name: 'n' });
    live.committed([committed(3, 'fast')]);
    live.emitted('slow', 'tool_call_started', { callId: 'b', name: 'n' });
    await tick(40);
    expect(pub.batches.map((b) => b.map((e) => e.id))).toEqual([['e1'], ['e1'], ['fast'], ['slow']]);
    expect(pub.batches[3][0]).toMatchObject({ ephemeral: true, after: 3, index: 0 });
  });

  it('probes an open round while nobody listens (its first event alone); a probe that reaches a reader that subscribed late has the round go out whole, then the text as it comes', async () => {
    // Fake time: under load real timers drift, and one probe more or less is not the point here.
    jest.useFakeTimers();
    const tick = (ms = 0) => jest.advanceTimersByTimeAsync(ms);
    const pub = new Recorder();
    pub.receivers = 0;
    const live = progress(pub, 's', 't', 0, 50);
    live.emitted('ts', 'turn_started', {});
    live.emitted('prs', 'provider_round_started', { round: 0, model: 'm' });
    await tick();
    live.delta('d', 2, 'Hel');
    live.delta('d', 2, 'lo');
    await tick(80);
    // Nobody yet: one probe, the round's first event alone (not its text).
    expect(pub.batches.map(brief)).toEqual([['ts@0', 'prs@1'], ['ts@0']]);
    // A reader subscribed (late: after the round start, under load): the next probe reaches it, and
    // the round goes out whole at once.
    pub.receivers = 1;
    live.delta('d', 2, ', ');
    await tick(80);
    expect(pub.batches.slice(2).map(brief)).toEqual([['ts@0'], ['ts@0', 'prs@1', 'd@2+0:Hello, ']]);
    // From then on the text goes out as it comes, continuing the offsets.
    live.delta('d', 2, 'world');
    await tick(5);
    expect(pub.batches.slice(4).map(brief)).toEqual([['d@2+7:world']]);
    // Its commit goes out too (someone listens), and nothing is probed after it.
    live.emitted('d', 'text_delta', { text: 'Hello, world' });
    live.committed([committed(2, 'ts'), committed(3, 'prs'), committed(4, 'd')]);
    await tick(80);
    expect(pub.batches.slice(5).map(brief)).toEqual([['#2', '#3', '#4']]);
    jest.useRealTimers();
  });

  it('stops probing at the commit, and probes no more than every reprobe interval', async () => {
    const pub = new Recorder();
    pub.receivers = 0;
    const live = progress(pub, 's', 't', 0, 40);
    const started = Date.now();
    live.emitted('prs', 'provider_round_started', { round: 0, model: 'm' });
    await tick();
    for (let i = 0; i < 10; i++) {
      live.delta('d', 1, 'x');
      await tick(10);
    }
    // 100 ms of text or more: the round start and a probe every 40 ms, not a PUBLISH per chunk.
    const probes = Math.floor((Date.now() - started) / 40);
    expect(pub.batches.length).toBeGreaterThanOrEqual(2);
    expect(pub.batches.length).toBeLessThanOrEqual(1 + probes);
    // Each probe is the round's first event alone: a turn nobody watches does not send its text again.
    for (const b of pub.batches.slice(1)) expect(brief(b)).toEqual(['prs@0']);
    live.committed([committed(2, 'prs')]);
    const n = pub.batches.length;
    await tick(100);
    expect(pub.batches).toHaveLength(n);
  });

  it('backs its probes off while nobody watches: a long round costs a few PUBLISHes; what settles the turn always goes out', async () => {
    jest.useFakeTimers();
    const tick = (ms = 0) => jest.advanceTimersByTimeAsync(ms);
    const pub = new Recorder();
    pub.receivers = 0;
    const live = progress(pub, 's', 't', 0, 100);
    live.emitted('prs', 'provider_round_started', { round: 0, model: 'm' });
    // Ten seconds of text, a chunk every 10 ms.
    for (let i = 0; i < 1000; i++) {
      live.delta('d', 1, 'x');
      await tick(10);
    }
    // The round start, then probes at 0.1, 0.3, 0.7, 1.5, 3.1, 4.7, 6.3, 7.9, 9.5 s: not one per 100 ms.
    expect(pub.batches.length).toBeLessThanOrEqual(11);
    expect(pub.batches.length).toBeGreaterThanOrEqual(8);
    for (const b of pub.batches) expect(brief(b)).toEqual(['prs@0']);
    // A commit that makes the turn wait for the client's tools goes out though nobody watches (a
    // waiter holds the request), on the channel it is published to by type, not counted as a probe.
    live.emitted('d', 'text_delta', { text: 'x' });
    live.committed([committed(2, 'prs'), committed(3, 'd'), committed(4, 'ctr', 'client_tool_requested')]);
    expect(pub.batches.at(-1)!.map((e) => 'seq' in e && e.seq)).toEqual([2, 3, 4]);
    jest.useRealTimers();
  });

  it('publishes the round whole after a PUBLISH was given up, or reached a process it had not reached', async () => {
    const pub = new Recorder();
    const live = progress(pub, 's', 't', 0, 1000);
    live.emitted('prs', 'provider_round_started', { round: 0, model: 'm' });
    await tick();
    live.delta('d', 1, 'a');
    await tick(5);
    // Given up (Redis slow): a reader may have missed it.
    pub.receivers = undefined;
    live.delta('d', 1, 'b');
    await tick(5);
    pub.receivers = 1;
    live.delta('d', 1, 'c');
    await tick(5);
    // A second gateway process subscribed mid-round: its reader missed the start.
    pub.receivers = 2;
    live.delta('d', 1, 'd');
    await tick(5);
    await tick(5);
    live.delta('d', 1, 'e');
    await tick(5);
    expect(pub.batches.map(brief)).toEqual([
      ['prs@0'],
      ['d@1+0:a'],
      ['d@1+1:b'],
      ['prs@0', 'd@1+0:abc'],
      ['d@1+3:d'],
      ['prs@0', 'd@1+0:abcd'],
      ['d@1+4:e'],
    ]);
  });
});
