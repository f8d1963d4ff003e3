import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { verifyWithFallback } from '@octokit/webhooks-methods';
import { Webhook } from 'standardwebhooks';
import type { TriggerScheme } from '@switchboard/contracts';

/**
 * Signature verification of webhook deliveries (docs/adr/0019). Every verifier reads the RAW body:
 * re-serialising parsed JSON would change the bytes the sender signed. Each takes the trigger's
 * current secret and, during a rotation's grace period, the previous one.
 */

/** How old (or how far in the future) a signed timestamp may be: Slack's and Standard Webhooks' 5 minutes. */
export const TIMESTAMP_TOLERANCE_S = 5 * 60;

const TOKEN_PREFIX = 'sbt_';

/** A trigger's capability token, the secret part of its URL: 192 random bits; only its sha256 is stored. */
export function generateTriggerToken(): { token: string; hash: string } {
  const token = `${TOKEN_PREFIX}${randomBytes(24).toString('base64url')}`;
  return { token, hash: hashTriggerToken(token) };
}

/** Tokens are random, so a fast hash is enough (like API keys, apps/gateway/src/platform/auth/keys.ts). */
export function hashTriggerToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/** True when the string can be one of our tokens: anything else is answered 404 without a lookup. */
export function isTriggerToken(token: string): boolean {
  return /^sbt_[A-Za-z0-9_-]{32}$/.test(token);
}

/**
 * A new signing secret for the schemes whose secret we generate: GitHub takes any text (64 hex
 * characters, 256 bits); Standard Webhooks secrets are `whsec_` and base64 (32 bytes). Slack
 * generates its own signing secret: the tenant gives it to us.
 */
export function generateSigningSecret(scheme: 'github' | 'standard-webhooks'): string {
  const bytes = randomBytes(32);
  return scheme === 'github' ? bytes.toString('hex') : `whsec_${bytes.toString('base64')}`;
}

export type Headers = Record<string, string | string[] | undefined>;

/** Why a delivery was refused: the gateway answers 401 with this text and writes nothing. */
export class SignatureError extends Error {}

const header = (headers: Headers, name: string): string | undefined => {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
};

/** GitHub's `X-Hub-Signature-256: sha256=<hex HMAC of the body>` (docs.github.com "Validating webhook deliveries"). */
export async function verifyGithub(secrets: string[], raw: Buffer, headers: Headers): Promise<void> {
  const signature = header(headers, 'x-hub-signature-256');
  if (!signature) throw new SignatureError('missing X-Hub-Signature-256 header');
  const [current, ...previous] = secrets;
  // The library signs strings: GitHub bodies are UTF-8 (the JSON parser already refused anything else).
  if (!(await verifyWithFallback(current, raw.toString('utf8'), signature, previous)))
    throw new SignatureError('X-Hub-Signature-256 does not match');
}

/**
 * Slack's v0 scheme: `X-Slack-Signature: v0=<hex HMAC of "v0:<X-Slack-Request-Timestamp>:<body>">`,
 * refused when the timestamp is more than 5 minutes from now (api.slack.com "Verifying requests").
 */
export function verifySlack(secrets: string[], raw: Buffer, headers: Headers, nowMs = Date.now()): void {
  const timestamp = header(headers, 'x-slack-request-timestamp');
  const signature = header(headers, 'x-slack-signature');
  if (!timestamp || !signature)
    throw new SignatureError('missing X-Slack-Request-Timestamp or X-Slack-Signature');
  if (!/^\d{1,12}$/.test(timestamp)) throw new SignatureError('X-Slack-Request-Timestamp is not a Unix time');
  if (Math.abs(nowMs / 1000 - Number(timestamp)) > TIMESTAMP_TOLERANCE_S)
    throw new SignatureError('X-Slack-Request-Timestamp is too old or in the future');
  const given = Buffer.from(signature);
  for (const secret of secrets) {
    const expected = Buffer.from(
      `v0=${createHmac('sha256', secret).update(`v0:${timestamp}:`).update(raw).digest('hex')}`,
    );
    if (given.length === expected.length && timingSafeEqual(given, expected)) return;
  }
  throw new SignatureError('X-Slack-Signature does not match');
}

/**
 * Standard Webhooks (`webhook-id`, `webhook-timestamp`, `webhook-signature` with one or more
 * space-separated `v1,<base64>` signatures; the library refuses timestamps more than 5 minutes off).
 * A sender rotating its secret signs with both: either one matching is enough.
 */
export function verifyStandardWebhooks(secrets: string[], raw: Buffer, headers: Headers): void {
  const id = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  const signature = header(headers, 'webhook-signature');
  if (!id || !timestamp || !signature)
    throw new SignatureError('missing webhook-id, webhook-timestamp or webhook-signature header');
  let last: unknown;
  for (const secret of secrets) {
    try {
      new Webhook(secret).verify(raw, {
        'webhook-id': id,
        'webhook-timestamp': timestamp,
        'webhook-signature': signature,
      });
      return;
    } catch (err) {
      last = err;
    }
  }
  throw new SignatureError(last instanceof Error ? last.message : 'webhook-signature does not match');
}

/**
 * Verifies a delivery by its trigger's scheme. Returns whether a signature was checked: `token`
 * triggers have none, so their deliveries are never `verified` (external evidence, SPEC §2).
 */
export async function verifyDelivery(
  scheme: TriggerScheme,
  secrets: string[],
  raw: Buffer,
  headers: Headers,
  nowMs = Date.now(),
): Promise<boolean> {
  if (scheme === 'token') return false;
  if (secrets.length === 0) throw new SignatureError('the trigger has no signing secret');
  if (scheme === 'github') await verifyGithub(secrets, raw, headers);
  else if (scheme === 'slack') verifySlack(secrets, raw, headers, nowMs);
  else verifyStandardWebhooks(secrets, raw, headers);
  return true;
}
