import type { LiveEphemeralEvent, LiveEvent } from '@switchboard/live';
import { StreamReader, type StreamItem } from '@switchboard/agent-turns';
import { sseFrame } from './sse-frame';

const T = '0195f3c2-7a3b-7cc1-9a51-2b1c4d5e6f70';
const AT = '2026-11-23T20:00:00.000Z';

describe('sseFrame', () => {
  it('frames a journaled event with its seq as id, a live one without id, idle as a comment', () => {
    const r = new StreamReader({ sessionId: 's', after: 0 });
    const [j] = r.take({
      id: 'a',
      seq: 1,
      type: 'text_delta',
      turnId: T,
      data: { text: 'hi\nthere' },
      createdAt: '2026-11-23T20:00:00+00:00',
    } satisfies LiveEvent);
    expect(sseFrame(j)).toBe(
      `id: 1\nevent: text_delta\ndata: {"seq":1,"type":"text_delta","turnId":"${T}","data":{"text":"hi\\nthere"},"createdAt":"${AT}"}\n\n`,
    );
    const [l] = r.take({
      ephemeral: true,
      id: 'b',
      index: 0,
      after: 1,
      type: 'provider_round_started',
      turnId: T,
      data: { round: 0 },
      createdAt: AT,
    } satisfies LiveEphemeralEvent);
    expect(sseFrame(l)).toBe(
      `event: provider_round_started\ndata: {"ephemeral":true,"after":1,"type":"provider_round_started","turnId":"${T}","data":{"round":0},"createdAt":"${AT}"}\n\n`,
    );
    expect(sseFrame({ ...(j as Extract<StreamItem, { kind: 'journaled' }>), streamed: true })).toContain(
      '"streamed":true',
    );
    expect(sseFrame({ kind: 'idle' })).toBe(': heartbeat\n\n');
  });
});
