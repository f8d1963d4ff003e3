import { createHash } from 'node:crypto';

/**
 * A new session's id for a request with an Idempotency-Key: derived from the tenant and the key, so a
 * retry finds the session its first attempt created (and admission replays the message in it). A UUID
 * with version 8 (RFC 9562 "custom").
 */
export function sessionIdForKey(
  tenantId: string,
  idempotencyKey: string,
  /** The route the key was sent to (`responses` for /v1/responses): each derives its own sessions. */
  scope = 'chat-completions',
): string {
  const h = createHash('sha256').update(`${scope}\n${tenantId}\n${idempotencyKey}`).digest('hex');
  const variant = ((parseInt(h[16], 16) & 0x3) | 0x8).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}
