import type { LiveEphemeralEvent, LiveEvent } from '@switchboard/live';
import { StreamReader, type StreamItem } from '@switchboard/agent-turns';
import { sseFrame } from './sse-frame';

const T = '0195f3c2-7a3b-7cc1-9a51-2b1c4d5e6f70';
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

describe('sseFrame', () => {
  it('frames a journaled event with its seq as id, a live one without id, idle as a comment', () => {
    const r = new StreamReader({ sessionId: 's', after: 0 });
    const [j] = r.take(journaled(1, 'text_delta', 'a', { text: 'hi\nthere' }));
    expect(sseFrame(j)).toBe(
      `id: 1\nevent: text_delta\ndata: {"seq":1,"type":"text_delta","turnId":"${T}","data":{"text":"hi\\nthere"},"createdAt":"${AT}"}\n\n`,
    );
    const [l] = r.take(ephemeral('b', 0, 'provider_round_started', { round: 0 }, { after: 1 }));
    expect(sseFrame(l)).toBe(
      `event: provider_round_started\ndata: {"ephemeral":true,"after":1,"type":"provider_round_started","turnId":"${T}","data":{"round":0},"createdAt":"${AT}"}\n\n`,
    );
    expect(sseFrame({ ...(j as Extract<StreamItem, { kind: 'journaled' }>), streamed: true })).toContain(
      '"streamed":true',
    );
    expect(sseFrame({ kind: 'idle' })).toBe(': heartbeat\n\n');
  });
});
