import { newId } from '@switchboard/contracts';
import type { Tx } from './prisma';
import { insertEvents } from './rows';
import { contentCipher, sealEventData } from './content-cipher';

export interface JournalEvent {
  /** Given by a caller that needs to find the event again (a retried step checking it committed). */
  id?: string;
  type: string;
  data: Record<string, unknown>;
  turnId?: string | null;
}

/** The session's lease no longer belongs to the caller: another worker owns the session now. */
export class LeaseLostError extends Error {
  constructor(sessionId: string) {
    super(`session ${sessionId} lease lost`);
    this.name = 'LeaseLostError';
  }
}

const SECRET_WORDS = new Set([
  'authorization',
  'token',
  'secret',
  'password',
  'passwd',
  'signature',
  'cookie',
  'apikey',
]);

/**
 * isSecretKey's answers by key. Every key of every journal event's data is checked, the same few
 * dozen names turn after turn, and splitting one into words costs about a microsecond (issue 37).
 * Keys inside tool arguments are anyone's, so the memo is cleared when it grows past its bound.
 */
const secretKeys = new Map<string, boolean>();
const SECRET_KEYS_MAX = 10_000;

/** A key names a secret when one of its words does: `x-api-key`, `accessToken`, `client_secret`, not `inputTokens`. */
export function isSecretKey(key: string): boolean {
  let secret = secretKeys.get(key);
  if (secret === undefined) {
    if (secretKeys.size >= SECRET_KEYS_MAX) secretKeys.clear();
    secretKeys.set(key, (secret = namesSecret(key)));
  }
  return secret;
}

function namesSecret(key: string): boolean {
  const words = key
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean);
  return words.some((w, i) => SECRET_WORDS.has(w) || (w === 'api' && words[i + 1] === 'key'));
}

/** Secrets never reach the journal. Dates keep their value; other non-plain objects serialise as JSON would. */
export function redact(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(redact);
  if (value instanceof Date) return value.toISOString();
  if (value && typeof value === 'object') {
    const proto = Object.getPrototypeOf(value) as unknown;
    if (proto !== Object.prototype && proto !== null) {
      return redact(JSON.parse(JSON.stringify(value)) as unknown);
    }
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [k, isSecretKey(k) ? '[redacted]' : redact(v)]),
    );
  }
  return value;
}

/**
 * Appends events to a session's durable journal with consecutive per-session seqs.
 * The seq counter lives on the session row, so appends of one session serialise.
 * With `leaseToken`, the append is fenced: it fails with LeaseLostError unless the
 * caller still holds the session lease, and it extends the lease.
 */
export async function appendEvents(
  tx: Tx,
  args: {
    tenantId: string;
    sessionId: string;
    events: JournalEvent[];
    lease?: { token: string; ms: number };
  },
): Promise<number[]> {
  const n = args.events.length;
  if (n === 0) return [];
  const rows = args.lease
    ? await tx.$queryRaw<{ last: number }[]>`
        UPDATE sessions SET last_event_seq = last_event_seq + ${n},
          lease_expires_at = now() + (${args.lease.ms} * interval '1 millisecond')
        WHERE id = ${args.sessionId}::uuid AND lease_token = ${args.lease.token}::uuid
        RETURNING last_event_seq AS last`
    : await tx.$queryRaw<{ last: number }[]>`
        UPDATE sessions SET last_event_seq = last_event_seq + ${n}
        WHERE id = ${args.sessionId}::uuid RETURNING last_event_seq AS last`;
  if (rows.length === 0) throw new LeaseLostError(args.sessionId);
  const first = rows[0].last - n + 1;
  const seqs = args.events.map((_, i) => first + i);
  // Content fields sealed for an encrypting tenant (docs/adr/0067); untouched without a cipher.
  const events = contentCipher()
    ? await Promise.all(
        args.events.map(async (e) => ({ ...e, data: await sealEventData(args.tenantId, redact(e.data)) })),
      )
    : args.events;
  await insertEvents(
    tx,
    events.map((e, i) => ({
      id: e.id ?? newId(),
      tenantId: args.tenantId,
      sessionId: args.sessionId,
      turnId: e.turnId ?? null,
      seq: seqs[i],
      type: e.type,
      data: redact(e.data),
    })),
  );
  return seqs;
}
