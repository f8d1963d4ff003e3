import { createHash, hash, randomBytes, timingSafeEqual } from 'node:crypto';

const KEY_PREFIX = 'sb_';

/** A new API key: shown once; only its sha256 and a display prefix are stored. */
export function generateApiKey(): { key: string; hash: string; prefix: string } {
  const key = `${KEY_PREFIX}${randomBytes(30).toString('base64url')}`;
  return { key, hash: hashApiKey(key), prefix: key.slice(0, 10) };
}

/**
 * Keys are 240 random bits, so a fast hash is enough: no dictionary to guess from. Every request
 * hashes its key: one-shot `crypto.hash`, without a Hash object (issue 37).
 */
export function hashApiKey(key: string): string {
  return hash('sha256', key, 'hex');
}

export function bearer(header: string | string[] | undefined): string | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(value ?? '');
  return match?.[1];
}

export function constantTimeEquals(a: string, b: string): boolean {
  const ha = createHash('sha256').update(a).digest();
  const hb = createHash('sha256').update(b).digest();
  return timingSafeEqual(ha, hb);
}
