import { EventData, EventType, isEventType, TurnEvent } from './events';
import { EventResponse } from './responses';

describe('the event union', () => {
  it('has a data schema for every EventType', () => {
    for (const type of Object.values(EventType)) {
      expect(EventData[type]).toBeDefined();
      expect(isEventType(type)).toBe(true);
    }
    expect(Object.keys(EventData).sort()).toEqual(Object.values(EventType).sort());
    expect(isEventType('no_such_event')).toBe(false);
  });

  const base = {
    seq: 3,
    turnId: '0195f3c2-7a3b-7cc1-9a51-2b1c4d5e6f70',
    createdAt: '2026-11-23T20:00:00.000Z',
  };

  it('parses journal events by their type, extra data fields kept', () => {
    const e = TurnEvent.parse({ ...base, type: 'text_delta', data: { text: 'hi', extra: 1 } });
    expect(e).toEqual({ ...base, type: 'text_delta', data: { text: 'hi', extra: 1 } });
    expect(
      TurnEvent.parse({
        ...base,
        type: 'turn_completed',
        data: { stopReason: 'end_turn', iterations: 1, toolCalls: 0, costUsd: '0.00010000' },
      }).type,
    ).toBe('turn_completed');
    // The API's Event is the union itself.
    expect(
      EventResponse.safeParse({ ...base, type: 'turn_failed', data: { stopReason: 'internal_error' } })
        .success,
    ).toBe(true);
  });

  it("rejects an unknown type and data that does not match its type's schema", () => {
    expect(TurnEvent.safeParse({ ...base, type: 'nope', data: {} }).success).toBe(false);
    expect(TurnEvent.safeParse({ ...base, type: 'text_delta', data: { text: 3 } }).success).toBe(false);
    expect(
      TurnEvent.safeParse({ ...base, type: 'provider_round_started', data: { model: 'm' } }).success,
    ).toBe(false);
    // The event itself is strict: unknown top-level fields are not an Event.
    expect(TurnEvent.safeParse({ ...base, type: 'text_delta', data: { text: '' }, x: 1 }).success).toBe(
      false,
    );
  });
});
