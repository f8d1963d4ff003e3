import { newId } from '@switchboard/contracts';
import type { Tx } from './prisma';
import { insertEvents } from './rows';

export interface JournalEvent {
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

const SECRET_KEYS = /^(authorization|api[_-]?key|token|secret|password|signature)$/i;

/** Secrets never reach the journal. */
export function redact(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(redact);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [k, SECRET_KEYS.test(k) ? '[redacted]' : redact(v)]),
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
  await insertEvents(
    tx,
    args.events.map((e, i) => ({
      id: newId(),
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
