import { decode, encode, LiveCursor, sessionChannel, type LiveMessage } from './channel';

const at = '2026-01-01T00:00:00.000Z';
const journaled = (seq: number): LiveMessage => ({ seq, type: 'x', turnId: null, data: {}, createdAt: at });
const delta = (after: number): LiveMessage => ({
  ephemeral: true,
  after,
  type: 'text_delta',
  turnId: 't',
  data: { text: 'a' },
  createdAt: at,
});

describe('LiveCursor (subscribe, then read, then de-duplicate by seq)', () => {
  it('drops live events already read from the journal and keeps later ones once', () => {
    const cursor = new LiveCursor();
    cursor.advance(5); // the journal read returned seqs 1..5
    expect([4, 5, 6, 6, 7].map((s) => cursor.accept(journaled(s)))).toEqual([
      false,
      false,
      true,
      false,
      true,
    ]);
    expect(cursor.last).toBe(7);
    cursor.advance(3);
    expect(cursor.last).toBe(7);
  });

  it('takes an ephemeral delta only while nothing after its position has been seen', () => {
    const cursor = new LiveCursor(4);
    expect(cursor.accept(delta(4))).toBe(true);
    expect(cursor.accept(delta(3))).toBe(false);
    expect(cursor.last).toBe(4);
  });

  it('reports a gap when a live event skips seqs the reader has not seen', () => {
    const cursor = new LiveCursor(2);
    expect(cursor.isGap(journaled(3))).toBe(false);
    expect(cursor.isGap(journaled(5))).toBe(true);
    expect(cursor.isGap(delta(9))).toBe(false);
  });
});

describe('wire format', () => {
  it('round-trips a batch and refuses what it does not understand', () => {
    const events = [journaled(1), delta(1)];
    expect(decode(encode('s', events))).toEqual({ sessionId: 's', events });
    expect(decode('not json')).toBeUndefined();
    expect(decode(JSON.stringify({ v: 2, sessionId: 's', events: [] }))).toBeUndefined();
    expect(decode(JSON.stringify({ v: 1, sessionId: 's', events: [{ type: 'x' }, journaled(2)] }))).toEqual({
      sessionId: 's',
      events: [journaled(2)],
    });
  });

  it('names channels under the deployment prefix', () => {
    expect(sessionChannel('sb', 'abc')).toBe('sb:live:session:abc');
  });
});
