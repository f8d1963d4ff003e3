import { createHmac } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import {
  generateSigningSecret,
  generateTriggerToken,
  hashTriggerToken,
  isTriggerToken,
  SignatureError,
  verifyDelivery,
  verifyGithub,
  verifySlack,
  verifyStandardWebhooks,
} from './verify';

const body = Buffer.from('{"action":"opened","issue":{"number":7}}');

describe('verifyGithub (X-Hub-Signature-256)', () => {
  // docs.github.com "Validating webhook deliveries": the documented test vector.
  it("accepts GitHub's documented test vector", async () => {
    await expect(
      verifyGithub(["It's a Secret to Everybody"], Buffer.from('Hello, World!'), {
        'x-hub-signature-256': 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17',
      }),
    ).resolves.toBeUndefined();
  });

  it('refuses a changed body, a wrong secret, a truncated or missing signature', async () => {
    const sig = 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17';
    const secret = "It's a Secret to Everybody";
    await expect(
      verifyGithub([secret], Buffer.from('Hello, World?'), { 'x-hub-signature-256': sig }),
    ).rejects.toThrow(SignatureError);
    await expect(
      verifyGithub(['another secret'], Buffer.from('Hello, World!'), { 'x-hub-signature-256': sig }),
    ).rejects.toThrow(SignatureError);
    await expect(
      verifyGithub([secret], Buffer.from('Hello, World!'), { 'x-hub-signature-256': sig.slice(0, 20) }),
    ).rejects.toThrow(SignatureError);
    await expect(verifyGithub([secret], Buffer.from('Hello, World!'), {})).rejects.toThrow(/missing/);
  });

  it("accepts the previous secret while it is passed (a rotation's grace)", async () => {
    const sig = `sha256=${createHmac('sha256', 'old').update(body).digest('hex')}`;
    await expect(verifyGithub(['new', 'old'], body, { 'x-hub-signature-256': sig })).resolves.toBeUndefined();
    await expect(verifyGithub(['new'], body, { 'x-hub-signature-256': sig })).rejects.toThrow(SignatureError);
  });
});

describe('verifySlack (v0)', () => {
  const secret = '8f742231b10e8888abcd99yyyzzz85a5';
  const now = 1_700_000_000_000;
  const signed = (ts: number, s = secret) => ({
    'x-slack-request-timestamp': String(ts),
    'x-slack-signature': `v0=${createHmac('sha256', s).update(`v0:${ts}:${body.toString()}`).digest('hex')}`,
  });

  it('accepts a fresh signature over "v0:timestamp:body"', () => {
    expect(() => verifySlack([secret], body, signed(now / 1000 - 60), now)).not.toThrow();
  });

  it('refuses a timestamp 6 minutes old (or 6 minutes ahead) even when correctly signed', () => {
    expect(() => verifySlack([secret], body, signed(now / 1000 - 360), now)).toThrow(/too old/);
    expect(() => verifySlack([secret], body, signed(now / 1000 + 360), now)).toThrow(/too old/);
  });

  it('refuses a wrong secret, a changed body, a missing or non-numeric timestamp', () => {
    expect(() => verifySlack([secret], body, signed(now / 1000, 'wrong'), now)).toThrow(/does not match/);
    expect(() => verifySlack([secret], Buffer.from('{}'), signed(now / 1000), now)).toThrow(/does not match/);
    expect(() => verifySlack([secret], body, { 'x-slack-signature': 'v0=00' }, now)).toThrow(/missing/);
    expect(() =>
      verifySlack([secret], body, { ...signed(now / 1000), 'x-slack-request-timestamp': '1e9' }, now),
    ).toThrow(/Unix time/);
  });
});

describe('verifyStandardWebhooks', () => {
  const headers = (secrets: string[], id = 'msg_1', at = new Date()) => {
    const signatures = secrets.map((s) => new Webhook(s).sign(id, at, body.toString()));
    return {
      'webhook-id': id,
      'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
      'webhook-signature': signatures.join(' '),
    };
  };

  it('accepts a header with two signatures after a rotation, whichever secret we hold', () => {
    const old = generateSigningSecret('standard-webhooks');
    const fresh = generateSigningSecret('standard-webhooks');
    const both = headers([old, fresh]);
    expect(both['webhook-signature'].split(' ')).toHaveLength(2);
    expect(() => verifyStandardWebhooks([fresh], body, both)).not.toThrow();
    expect(() => verifyStandardWebhooks([old], body, both)).not.toThrow();
    // Only the old signature: valid while the previous secret is held, refused after the grace.
    expect(() => verifyStandardWebhooks([fresh, old], body, headers([old]))).not.toThrow();
    expect(() => verifyStandardWebhooks([fresh], body, headers([old]))).toThrow(SignatureError);
  });

  it('refuses a stale timestamp, a changed body, a changed id and missing headers', () => {
    const secret = generateSigningSecret('standard-webhooks');
    const stale = headers([secret], 'msg_2', new Date(Date.now() - 6 * 60_000));
    expect(() => verifyStandardWebhooks([secret], body, stale)).toThrow(SignatureError);
    expect(() => verifyStandardWebhooks([secret], Buffer.from('{}'), headers([secret]))).toThrow(
      SignatureError,
    );
    expect(() =>
      verifyStandardWebhooks([secret], body, { ...headers([secret]), 'webhook-id': 'msg_x' }),
    ).toThrow(SignatureError);
    expect(() => verifyStandardWebhooks([secret], body, { 'webhook-id': 'msg_3' })).toThrow(/missing/);
  });
});

describe('verifyDelivery', () => {
  it('never reports a token trigger as verified, and checks every signed scheme', async () => {
    await expect(verifyDelivery('token', [], body, {})).resolves.toBe(false);
    const secret = generateSigningSecret('github');
    const sig = `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
    await expect(verifyDelivery('github', [secret], body, { 'x-hub-signature-256': sig })).resolves.toBe(
      true,
    );
    await expect(verifyDelivery('github', [], body, { 'x-hub-signature-256': sig })).rejects.toThrow(
      SignatureError,
    );
    await expect(verifyDelivery('slack', ['s'], body, {})).rejects.toThrow(SignatureError);
    await expect(verifyDelivery('standard-webhooks', ['whsec_AAAA'], body, {})).rejects.toThrow(
      SignatureError,
    );
  });
});

describe('trigger tokens', () => {
  it('carry 192 random bits, are recognised by shape and stored only as their hash', () => {
    const a = generateTriggerToken();
    const b = generateTriggerToken();
    expect(a.token).not.toBe(b.token);
    expect(isTriggerToken(a.token)).toBe(true);
    expect(Buffer.from(a.token.slice(4), 'base64url')).toHaveLength(24);
    expect(a.hash).toBe(hashTriggerToken(a.token));
    expect(a.hash).not.toContain(a.token.slice(4));
    expect(isTriggerToken('sbt_short')).toBe(false);
    expect(isTriggerToken(`${a.token}x`)).toBe(false);
  });
});
