import type { Queue } from 'bullmq';
import { newId } from '@switchboard/contracts';
import { PostTurnBatcher } from './post-turn-batcher';

/** A queue whose `add` the test settles by hand, recording each job's data. */
function manualQueue() {
  const adds: { data: { turnId: string; more?: { turnId: string }[] }; settle: (err?: Error) => void }[] = [];
  const queue = {
    add: (_name: string, data: { turnId: string }) =>
      new Promise((resolve, reject) =>
        adds.push({ data, settle: (err) => (err ? reject(err) : resolve({ id: `${data.turnId}.hooks` })) }),
      ),
  } as unknown as Queue;
  return { queue, adds };
}

const turn = () => ({ turnId: newId(), tenantId: newId() });
const WINDOW_MS = 5;
/** Past the window: the batcher's timer has fired. */
const nextLoop = () => new Promise((r) => setTimeout(r, WINDOW_MS + 1));

describe('PostTurnBatcher (docs/adr/0070)', () => {
  it('publishes the turns that end while a publish is on its way as one job after it', async () => {
    const { queue, adds } = manualQueue();
    const b = new PostTurnBatcher(queue, WINDOW_MS);
    const first = b.add(turn());
    await nextLoop();
    expect(adds).toHaveLength(1);
    const [x, y] = [turn(), turn()];
    const later = Promise.all([b.add(x), b.add(y)]);
    await nextLoop();
    // Still one publish in flight: the two wait for it.
    expect(adds).toHaveLength(1);
    adds[0].settle();
    await first;
    await nextLoop();
    expect(adds).toHaveLength(2);
    expect(adds[1].data).toMatchObject({ turnId: x.turnId, more: [{ turnId: y.turnId }] });
    adds[1].settle();
    await later;
  });

  it('a failed publish fails every turn of its job, and the next publish goes out', async () => {
    const { queue, adds } = manualQueue();
    const b = new PostTurnBatcher(queue, WINDOW_MS);
    const both = Promise.allSettled([b.add(turn()), b.add(turn())]);
    await nextLoop();
    adds[0].settle(new Error('redis down'));
    expect((await both).map((r) => r.status)).toEqual(['rejected', 'rejected']);
    const again = b.add(turn());
    await nextLoop();
    adds[1].settle();
    await expect(again).resolves.toBeUndefined();
  });
});

describe('PostTurnBatcher without a window', () => {
  it('publishes each turn alone, at once', async () => {
    const { queue, adds } = manualQueue();
    const b = new PostTurnBatcher(queue, 0);
    const [x, y] = [turn(), turn()];
    const both = Promise.all([b.add(x), b.add(y)]);
    // Synchronously: two jobs, neither carries the other.
    await Promise.resolve();
    expect(adds.map((a) => [a.data.turnId, a.data.more])).toEqual([
      [x.turnId, undefined],
      [y.turnId, undefined],
    ]);
    for (const a of adds) a.settle();
    await both;
  });
});
