import { sessionIdForKey } from './session-key';

describe('sessionIdForKey', () => {
  it('is a stable UUID (version 8) per tenant and key', () => {
    const a = sessionIdForKey('t1', 'k');
    expect(a).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(sessionIdForKey('t1', 'k')).toBe(a);
    expect(sessionIdForKey('t2', 'k')).not.toBe(a);
    expect(sessionIdForKey('t1', 'k2')).not.toBe(a);
  });
});
