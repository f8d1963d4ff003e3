import type { LiveEphemeralEvent, LiveEvent } from '@switchboard/live';
import { StreamReader, type StreamItem } from './event-streams';

const T = '0195f3c2-7a3b-7cc1-9a51-2b1c4d5e6f70';
const OTHER = '0195f3c2-7a3b-7cc1-9a51-2b1c4d5e6f71';
const AT = '2026-11-23T20:00:00.000Z';

const journaled = (
  seq: number,
  type: string,
  id: string,
  data: Record<string, unknown> = {},
  turnId = T,
): LiveEvent => ({
  id,
  seq,
  type,
  turnId,
  data,
  createdAt: '2026-11-23T20:00:00+00:00',
});
const ephemeral = (
  id: string,
  index: number,
  type: string,
  data: Record<string, unknown> = {},
  o: { after?: number; offset?: number; turnId?: string } = {},
): LiveEphemeralEvent => ({
  ephemeral: true,
  id,
  index,
  after: o.after ?? 1,
  ...(o.offset !== undefined ? { offset: o.offset } : {}),
  type,
  turnId: o.turnId ?? T,
  data,
  createdAt: AT,
});

/** What a client would see: journaled as `seq:type(streamed)`, live as `~type:text`. */
const shown = (items: StreamItem[]) =>
  items.map((i) =>
    i.kind === 'journaled'
      ? `${i.event.seq}:${i.event.type}${i.streamed ? '(streamed)' : ''}`
      : i.kind === 'live'
        ? `~${i.event.type}${typeof i.event.data.text === 'string' ? `:${i.event.data.text}` : ''}`
        : 'idle',
  );

describe('StreamReader', () => {
  it('takes each journal seq once, in order, and says when one is missing', () => {
    const r = new StreamReader({ sessionId: 's', after: 1 });
    expect(shown(r.take(journaled(1, 'message_admitted', 'a')))).toEqual([]);
    expect(shown(r.take(journaled(2, 'turn_started', 'b')))).toEqual(['2:turn_started']);
    expect(shown(r.take(journaled(2, 'turn_started', 'b')))).toEqual([]);
    expect(r.isGap(journaled(4, 'x', 'd'))).toBe(true);
    expect(r.isGap(journaled(3, 'x', 'c'))).toBe(false);
    // An ephemeral event after commits this reader has not seen (published while nobody listened).
    expect(r.isGap(ephemeral('e', 0, 'provider_round_started', {}, { after: 4 }))).toBe(true);
    expect(r.isGap(ephemeral('e', 0, 'provider_round_started', {}, { after: 2 }))).toBe(false);
  });

  it('passes ephemeral events on in their order, text chunks by offset, and marks their committed copies streamed', () => {
    const r = new StreamReader({ sessionId: 's', after: 1 });
    const items = [
      ephemeral('ts', 0, 'turn_started'),
      ephemeral('prs', 1, 'provider_round_started'),
      ephemeral('td', 2, 'text_delta', { text: 'Hel' }, { offset: 0 }),
      ephemeral('td', 2, 'text_delta', { text: 'lo' }, { offset: 3 }),
      // A repeat, or a chunk out of place, is not shown.
      ephemeral('td', 2, 'text_delta', { text: 'lo' }, { offset: 3 }),
      // The commit: the last chunk (", world") was overtaken by it.
      journaled(2, 'turn_started', 'ts'),
      journaled(3, 'provider_round_started', 'prs'),
      journaled(4, 'text_delta', 'td', { text: 'Hello, world' }),
      journaled(5, 'provider_round_completed', 'prc'),
    ].flatMap((m) => r.take(m));
    expect(shown(items)).toEqual([
      '~turn_started',
      '~provider_round_started',
      '~text_delta:Hel',
      '~text_delta:lo',
      '2:turn_started(streamed)',
      '3:provider_round_started(streamed)',
      '~text_delta:, world',
      '4:text_delta(streamed)',
      '5:provider_round_completed',
    ]);
  });

  it('skips the provisional events of a commit it joined midway: that round arrives whole at its commit', () => {
    const r = new StreamReader({ sessionId: 's', after: 1 });
    const items = [
      // It missed turn_started (index 0) and the text's first chunk.
      ephemeral('prs', 1, 'provider_round_started'),
      ephemeral('td', 2, 'text_delta', { text: 'lo' }, { offset: 3 }),
      journaled(2, 'turn_started', 'ts'),
      journaled(3, 'provider_round_started', 'prs'),
      journaled(4, 'text_delta', 'td', { text: 'Hello' }),
      // The next commit's live events are taken from their start.
      ephemeral('prs2', 0, 'provider_round_started', {}, { after: 4 }),
      ephemeral('td2', 1, 'text_delta', { text: 'Bye' }, { after: 4, offset: 0 }),
    ].flatMap((m) => r.take(m));
    expect(shown(items)).toEqual([
      '2:turn_started',
      '3:provider_round_started',
      '4:text_delta',
      '~provider_round_started',
      '~text_delta:Bye',
    ]);
  });

  it("takes a step begun again under new ids from its start (a resumed turn's re-run after its worker died)", () => {
    const r = new StreamReader({ sessionId: 's', after: 1 });
    const items = [
      ephemeral('ts', 0, 'turn_started'),
      ephemeral('prs', 1, 'provider_round_started'),
      ephemeral('td', 2, 'text_delta', { text: 'Hel' }, { offset: 0 }),
      // The worker died before the commit; another resumes the turn from the same commit.
      ephemeral('ts2', 0, 'turn_started', { resumed: true }),
      ephemeral('prs2', 1, 'provider_round_started'),
      ephemeral('td2', 2, 'text_delta', { text: 'Hi' }, { offset: 0 }),
      // A probe of the new attempt's first event (the same id again) changes nothing.
      ephemeral('ts2', 0, 'turn_started', { resumed: true }),
      journaled(2, 'turn_started', 'ts2'),
      journaled(3, 'provider_round_started', 'prs2'),
      journaled(4, 'text_delta', 'td2', { text: 'Hi there' }),
    ].flatMap((m) => r.take(m));
    expect(shown(items)).toEqual([
      '~turn_started',
      '~provider_round_started',
      '~text_delta:Hel',
      '~turn_started',
      '~provider_round_started',
      '~text_delta:Hi',
      '2:turn_started(streamed)',
      '3:provider_round_started(streamed)',
      '~text_delta: there',
      '4:text_delta(streamed)',
    ]);
  });

  it('fills what it missed from a copy of the round published whole, then takes the text as it comes', () => {
    const r = new StreamReader({ sessionId: 's', after: 1 });
    const items = [
      // Subscribed late (after the round start, under load): a chunk out of place is not shown…
      ephemeral('td', 2, 'text_delta', { text: 'lo' }, { offset: 3 }),
      // …the writer's next probe carries the round whole…
      ephemeral('ts', 0, 'turn_started'),
      ephemeral('prs', 1, 'provider_round_started'),
      ephemeral('td', 2, 'text_delta', { text: 'Hello' }, { offset: 0 }),
      // …and the text goes on from there.
      ephemeral('td', 2, 'text_delta', { text: ', wor' }, { offset: 5 }),
      // A chunk lost (a PUBLISH given up: ", world" never came), then the next one: not in place…
      ephemeral('td', 2, 'text_delta', { text: '!' }, { offset: 12 }),
      // …until the round goes out whole again: only what this stream lacks is shown.
      ephemeral('ts', 0, 'turn_started'),
      ephemeral('prs', 1, 'provider_round_started'),
      ephemeral('td', 2, 'text_delta', { text: 'Hello, world!' }, { offset: 0 }),
      ephemeral('td', 2, 'text_delta', { text: 'Hello, world!' }, { offset: 0 }),
      journaled(2, 'turn_started', 'ts'),
      journaled(3, 'provider_round_started', 'prs'),
      journaled(4, 'text_delta', 'td', { text: 'Hello, world!' }),
    ].flatMap((m) => r.take(m));
    expect(shown(items)).toEqual([
      '~turn_started',
      '~provider_round_started',
      '~text_delta:Hello',
      '~text_delta:, wor',
      '~text_delta:ld!',
      '2:turn_started(streamed)',
      '3:provider_round_started(streamed)',
      '4:text_delta(streamed)',
    ]);
  });

  it('drops an ephemeral event whose committed copy it already read (a journal read overtook the live queue)', () => {
    const r = new StreamReader({ sessionId: 's', after: 1 });
    r.take(journaled(2, 'turn_started', 'ts'));
    r.take(journaled(3, 'provider_round_started', 'prs'));
    expect(r.take(ephemeral('ts', 0, 'turn_started'))).toEqual([]);
    expect(r.take(ephemeral('prs', 1, 'provider_round_started'))).toEqual([]);
  });

  it("a turn's reader shows only that turn and is done after its terminal event", () => {
    const r = new StreamReader({ sessionId: 's', turnId: T, after: 0 });
    const items = [
      journaled(1, 'message_admitted', 'a'),
      journaled(2, 'message_admitted', 'o', {}, OTHER),
      ephemeral('x', 0, 'provider_round_started', {}, { turnId: OTHER }),
      journaled(3, 'turn_completed', 'c'),
      journaled(4, 'turn_started', 'n', {}, OTHER),
    ].flatMap((m) => r.take(m));
    expect(shown(items)).toEqual(['1:message_admitted', '3:turn_completed']);
    expect(r.done).toBe(true);
    expect(r.cursor.last).toBe(3);
  });
});
