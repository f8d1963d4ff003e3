import { isSecretKey, redact } from './journal';

describe('isSecretKey (memoised by key, issue 37)', () => {
  it('answers the same on the first and the later calls', () => {
    const keys = [
      'x-api-key',
      'accessToken',
      'client_secret',
      'inputTokens',
      'apiKeyId',
      'name',
      'Authorization',
    ];
    const first = keys.map(isSecretKey);
    expect(first).toEqual([true, true, true, false, true, false, true]);
    expect(keys.map(isSecretKey)).toEqual(first);
  });

  it('stays right past the memo bound (anyone’s keys in tool arguments)', () => {
    for (let i = 0; i < 10_050; i++) expect(isSecretKey(`field${i}`)).toBe(false);
    expect(isSecretKey('password')).toBe(true);
    expect(isSecretKey('field3')).toBe(false);
  });

  it('redacts nested secret keys', () => {
    expect(redact({ a: { token: 't', n: 1 }, list: [{ secret: 's' }] })).toEqual({
      a: { token: '[redacted]', n: 1 },
      list: [{ secret: '[redacted]' }],
    });
  });
});
