import { follow, SessionStream, turnText, type Frame } from './session-stream';

const T = 'turn-1';
const U = 'turn-2';

/** A journaled frame as the gateway writes it (`id: <seq>`, the Event as data). */
const j = (
  seq: number,
  type: string,
  data: Record<string, unknown> = {},
  turnId = T,
  streamed = false,
): Frame => ({
  id: String(seq),
  event: type,
  data: { seq, type, turnId, data, createdAt: '2026-12-05T20:00:00.000Z', ...(streamed ? { streamed } : {}) },
});
/** A live frame (no id, `ephemeral: true`). */
const live = (type: string, data: Record<string, unknown>, after: number, turnId = T): Frame => ({
  event: type,
  data: { ephemeral: true, after, type, turnId, data, createdAt: '2026-12-05T20:00:00.000Z' },
});
const chunk = (text: string, after = 0, turnId = T) => live('text_delta', { text }, after, turnId);

function feed(s: SessionStream, frames: Frame[]) {
  return frames.map((f) => s.apply(f));
}
const textOf = (s: SessionStream, id = T) => turnText(s.turn(id)!);

describe('SessionStream', () => {
  it('shows text as it streams, then the committed round in its place (streamed: no duplicate)', () => {
    const s = new SessionStream();
    feed(s, [
      j(1, 'message_admitted', { messageId: 'm1' }),
      live('turn_started', {}, 0),
      live('provider_round_started', { round: 1 }, 0),
      chunk('Hel'),
      chunk('lo, '),
    ]);
    expect(s.turn(T)).toMatchObject({ status: 'running', provisional: 'Hello, ' });
    expect(textOf(s)).toBe('Hello, ');
    // The commit overtook the last flush: the gateway sends the tail live, then the round journaled.
    feed(s, [
      j(2, 'turn_started', {}, T, true),
      j(3, 'provider_round_started', { round: 1 }, T, true),
      live('text_delta', { text: 'world' }, 3),
      j(4, 'text_delta', { text: 'Hello, world' }, T, true),
      j(5, 'provider_round_completed', { round: 1 }),
    ]);
    expect(textOf(s)).toBe('Hello, world');
    expect(s.turn(T)!.provisional).toBe('');
    feed(s, [j(6, 'turn_completed', { stopReason: 'end_turn' })]);
    expect(s.turn(T)).toMatchObject({ status: 'completed', stopReason: 'end_turn' });
    expect(s.lastSeq).toBe(6);
  });

  it('drops journaled copies and frames out of order; a skipped seq asks for a reconnect', () => {
    const s = new SessionStream();
    expect(feed(s, [j(1, 'message_admitted'), j(2, 'turn_started'), j(1, 'message_admitted')])).toEqual([
      'applied',
      'applied',
      'ignored',
    ]);
    expect(s.apply(j(3, 'provider_round_started', { round: 1 }))).toBe('applied');
    expect(s.apply(j(4, 'text_delta', { text: 'once' }))).toBe('applied');
    // The same round again (a replayed frame): not a second copy of its text.
    expect(s.apply(j(4, 'text_delta', { text: 'once' }))).toBe('ignored');
    expect(s.apply(j(2, 'turn_started'))).toBe('ignored');
    expect(textOf(s)).toBe('once');
    // Seq 5 is missing: 6 is not applied (its text would come before 5's) and the caller resumes after 4.
    expect(s.apply(j(6, 'text_delta', { text: 'later' }))).toBe('gap');
    expect(s.lastSeq).toBe(4);
    expect(s.reconnect()).toBe(4);
    feed(s, [j(5, 'provider_round_started', { round: 2 }), j(6, 'text_delta', { text: 'later' })]);
    expect(textOf(s)).toBe('once\n\nlater');
  });

  it('drops a stale live chunk of a round already committed', () => {
    const s = new SessionStream();
    feed(s, [j(1, 'message_admitted'), chunk('abc', 0), j(2, 'text_delta', { text: 'abc' }, T, true)]);
    // A copy of the first round's chunk arriving late (its after, 0, is before the commit at 2).
    expect(s.apply(chunk('abc', 0))).toBe('ignored');
    expect(textOf(s)).toBe('abc');
    // The next round's chunks carry after = the commit's last seq: taken.
    feed(s, [j(3, 'provider_round_completed', { round: 1 }), chunk('def', 3)]);
    expect(textOf(s)).toBe('abc\n\ndef');
  });

  it('a round re-sent whole (journaled, not streamed) replaces the partial live text', () => {
    const s = new SessionStream();
    // This connection missed a chunk: it showed "The quick " and "fox", not "brown ".
    feed(s, [j(1, 'message_admitted'), chunk('The quick '), chunk('fox')]);
    feed(s, [j(2, 'turn_started'), j(3, 'provider_round_started', { round: 1 })]);
    feed(s, [j(4, 'text_delta', { text: 'The quick brown fox' })]);
    expect(textOf(s)).toBe('The quick brown fox');
  });

  it('reconnect replay: provisional text dropped, the open round again from its start, no gap or duplicate', () => {
    const s = new SessionStream();
    feed(s, [
      j(1, 'message_admitted'),
      live('provider_round_started', { round: 1 }, 0),
      chunk('one '),
      j(2, 'turn_started', {}, T, true),
      j(3, 'provider_round_started', { round: 1 }, T, true),
      j(4, 'text_delta', { text: 'one ' }, T, true),
      j(5, 'provider_round_completed', { round: 1 }),
      live('provider_round_started', { round: 2 }, 5),
      chunk('two ', 5),
      chunk('thr', 5),
    ]);
    expect(textOf(s)).toBe('one \n\ntwo thr');
    // The connection drops here; the page reconnects after seq 5.
    expect(s.reconnect()).toBe(5);
    expect(textOf(s)).toBe('one ');
    // The new connection replays nothing before 6, and the open round's text again from offset 0.
    feed(s, [
      j(5, 'provider_round_completed', { round: 1 }),
      live('provider_round_started', { round: 2 }, 5),
      chunk('two three', 5),
      chunk(' four', 5),
    ]);
    expect(textOf(s)).toBe('one \n\ntwo three four');
    feed(s, [
      j(6, 'provider_round_started', { round: 2 }, T, true),
      j(7, 'text_delta', { text: 'two three four' }, T, true),
      j(8, 'turn_completed', { stopReason: 'end_turn' }),
    ]);
    expect(textOf(s)).toBe('one \n\ntwo three four');
    expect(s.turn(T)!.status).toBe('completed');
  });

  it('reconnect after the round committed unseen: the journal brings it, the live copy is not doubled', () => {
    const s = new SessionStream();
    feed(s, [j(1, 'message_admitted'), chunk('partial')]);
    s.reconnect();
    feed(s, [
      j(2, 'turn_started'),
      j(3, 'provider_round_started', { round: 1 }),
      j(4, 'text_delta', { text: 'partial and the rest' }),
      j(5, 'turn_completed', { stopReason: 'end_turn' }),
    ]);
    expect(textOf(s)).toBe('partial and the rest');
    // Live frames for an ended turn (a late copy) change nothing.
    expect(s.apply(chunk(' again', 4))).toBe('ignored');
    expect(textOf(s)).toBe('partial and the rest');
  });

  it("a round run again (its worker died mid-round): the dead attempt's text is replaced, not added to", () => {
    const s = new SessionStream();
    feed(s, [
      j(1, 'message_admitted', { messageId: 'm1' }),
      live('turn_started', {}, 0),
      live('provider_round_started', { round: 0 }, 0),
      chunk('w000 w001 '),
    ]);
    // Another worker takes the turn over after the lease and runs the round again from its start
    // (the model need not say the same: what the dead attempt streamed never commits).
    feed(s, [live('turn_started', { resumed: true }, 0), live('provider_round_started', { round: 0 }, 0)]);
    expect(textOf(s)).toBe('');
    feed(s, [chunk('v000 '), chunk('v001')]);
    expect(textOf(s)).toBe('v000 v001');
    feed(s, [j(2, 'turn_started', { resumed: true }, T, true), j(3, 'provider_round_started', {}, T, true)]);
    feed(s, [j(4, 'text_delta', { text: 'v000 v001' }, T, true), j(5, 'turn_completed')]);
    expect(textOf(s)).toBe('v000 v001');
  });

  it('tracks status through approvals, subagents and the end; counts transcript changes', () => {
    const s = new SessionStream();
    feed(s, [j(1, 'message_admitted'), j(2, 'turn_started')]);
    const v = s.transcriptVersion;
    expect(s.turn(T)!.status).toBe('running');
    feed(s, [j(3, 'tool_call_started', { callId: 'c', name: 'send_email' })]);
    expect(s.turn(T)!.runningTool).toBe('send_email');
    feed(s, [j(4, 'approval_requested', { approvalId: 'a', name: 'send_email' })]);
    expect(s.turn(T)!.status).toBe('awaiting_approval');
    feed(s, [
      j(5, 'approval_decided', { decision: 'approved' }),
      j(6, 'tool_call_completed', { name: 'send_email' }),
    ]);
    expect(s.turn(T)).toMatchObject({ status: 'running', runningTool: null });
    feed(s, [j(7, 'subagent_spawned', { blocking: true })]);
    expect(s.turn(T)!.status).toBe('awaiting_subagent');
    feed(s, [j(8, 'subagent_completed'), j(9, 'client_tool_requested', { callId: 'call_1', name: 'f' })]);
    expect(s.turn(T)!.status).toBe('awaiting_client_tool');
    feed(s, [j(10, 'client_tool_answered', { callId: 'call_1' })]);
    expect(s.turn(T)!.status).toBe('running');
    feed(s, [j(11, 'turn_cancelled', { stopReason: 'cancelled' })]);
    expect(s.turn(T)!.status).toBe('cancelled');
    expect(s.transcriptVersion).toBeGreaterThan(v);
    // A journaled event arriving after the end does not revive the turn.
    feed(s, [j(10, 'approval_decided', { decision: 'rejected' })]);
    expect(s.turn(T)!.status).toBe('cancelled');
  });

  it('keeps turns apart; current() is the newest unfinished one', () => {
    const s = new SessionStream();
    feed(s, [
      j(1, 'message_admitted'),
      j(2, 'text_delta', { text: 'first' }),
      j(3, 'turn_completed', { stopReason: 'end_turn' }),
      j(4, 'message_admitted', {}, U),
      chunk('second', 0, U),
    ]);
    expect(textOf(s, T)).toBe('first');
    expect(textOf(s, U)).toBe('second');
    expect(s.current()!.turnId).toBe(U);
    expect(s.turns().map((t) => t.turnId)).toEqual([T, U]);
    feed(s, [j(5, 'turn_completed', { stopReason: 'end_turn' }, U)]);
    expect(s.current()!.turnId).toBe(U);
  });

  it('ignores heartbeats, frames it does not understand, and events without a turn', () => {
    const s = new SessionStream(10);
    expect(s.apply({ data: 'not json' })).toBe('ignored');
    expect(s.apply({ event: 'text_delta', data: { text: 'no ephemeral flag' } })).toBe('ignored');
    expect(s.apply(live('text_delta', { text: 1 }, 0))).toBe('ignored');
    expect(s.apply({ id: 'x', data: {} })).toBe('ignored');
    expect(s.apply(j(11, 'session_closed', {}, null as unknown as string))).toBe('applied');
    expect(s.turns()).toEqual([]);
    expect(s.lastSeq).toBe(11);
  });

  it('a fast stream: thousands of chunks add up exactly, memory bounded to recent turns', () => {
    const s = new SessionStream();
    let seq = 0;
    for (let turn = 0; turn < 80; turn++) {
      const id = `t${turn}`;
      s.apply(j(++seq, 'message_admitted', {}, id));
      const after = seq;
      let expected = '';
      for (let i = 0; i < 200; i++) {
        const piece = `${i % 10}`;
        expected += piece;
        s.apply(chunk(piece, after, id));
      }
      expect(textOf(s, id)).toBe(expected);
      s.apply(j(++seq, 'text_delta', { text: expected }, id, true));
      s.apply(j(++seq, 'turn_completed', { stopReason: 'end_turn' }, id));
      expect(textOf(s, id)).toBe(expected);
    }
    expect(s.turns().length).toBeLessThanOrEqual(50);
    expect(s.turns().at(-1)!.turnId).toBe('t79');
  });
});

describe('follow', () => {
  /**
   * A fake gateway: each connection yields its frames, then drops (throws) or is refused; past the
   * scripted connections the caller is done (the signal aborts).
   */
  function gateway(connections: { frames: Frame[]; then?: 'drop' | 'end' | { status: number } }[]) {
    const afters: number[] = [];
    const abort = new AbortController();
    const open = (after: number, signal: AbortSignal): AsyncIterable<Frame> => {
      afters.push(after);
      const c = connections[afters.length - 1];
      return (async function* () {
        if (!c) {
          abort.abort();
          return;
        }
        if (typeof c.then === 'object') throw Object.assign(new Error(`HTTP ${c.then.status}`), c.then);
        for (const f of c.frames) {
          if (signal.aborted) return;
          yield f;
        }
        if (c.then === 'drop') throw new TypeError('network error');
      })();
    };
    const states: string[] = [];
    const run = (s: SessionStream) =>
      follow(s, {
        open,
        signal: abort.signal,
        onChange: () => undefined,
        onState: (st) => states.push(st),
        pause: () => Promise.resolve(),
      });
    return { afters, states, run };
  }

  it('a dropped connection resumes after the last journaled seq; the open round comes again, not doubled', async () => {
    const g = gateway([
      {
        frames: [j(1, 'message_admitted'), chunk('Hel'), chunk('lo '), j(2, 'turn_started', {}, T, true)],
        then: 'drop',
      },
      {
        // The new connection: the journal after 2 (nothing yet), the round again from its start.
        frames: [chunk('Hello wor', 0), chunk('ld', 0), j(3, 'text_delta', { text: 'Hello world' }, T, true)],
        then: 'end',
      },
      { frames: [j(2, 'turn_started'), j(4, 'turn_completed', { stopReason: 'end_turn' })], then: 'drop' },
    ]);
    const s = new SessionStream();
    expect(await g.run(s)).toBeNull();
    expect(g.afters).toEqual([0, 2, 3, 4]);
    expect(textOf(s)).toBe('Hello world');
    expect(s.turn(T)!.status).toBe('completed');
    expect(g.states).toContain('reconnecting');
  });

  it('a journaled frame that skips seqs ends the connection and resumes before the gap', async () => {
    const g = gateway([
      { frames: [j(1, 'message_admitted'), j(3, 'text_delta', { text: 'late' }), chunk('never')] },
      { frames: [j(2, 'turn_started'), j(3, 'text_delta', { text: 'late' })] },
    ]);
    const s = new SessionStream();
    await g.run(s);
    expect(g.afters.slice(0, 2)).toEqual([0, 1]);
    expect(textOf(s)).toBe('late');
  });

  it('stops on a refusal (a revoked key: 401) and says so', async () => {
    const g = gateway([{ frames: [], then: { status: 401 } }]);
    expect(await g.run(new SessionStream())).toMatchObject({ status: 401 });
    expect(g.afters).toEqual([0]);
  });
});
