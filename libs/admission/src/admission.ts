import { createHash } from 'node:crypto';
import type { Queue } from 'bullmq';
import { configure } from 'safe-stable-stringify';
import {
  AppError,
  defaultTrust,
  deriveAuthorityClass,
  EventType,
  Jobs,
  newId,
  notFound,
  PRIORITY_RANK,
  type AdmissionContext,
  type DeliverySurface,
  type MessageBody,
  type MessageKind,
  type MessageOrigin,
  type Priority,
} from '@switchboard/contracts';
import { appendEvents, insertMessage, isUniqueViolation, type Db, type Tx } from '@switchboard/database';
import { currentTraceCarrier, withSpan, type Logger } from '@switchboard/observability';
import { publish } from '@switchboard/queue';

export interface AdmitInput {
  tenantId: string;
  sessionId: string;
  kind: MessageKind;
  origin: MessageOrigin;
  body: MessageBody;
  deliverySurface: DeliverySurface;
  admissionContext: AdmissionContext;
  priority?: Priority;
  /** True only when the ingress authenticated the integration (token + signature). */
  verifiedIntegration?: boolean;
  metadata?: Record<string, unknown>;
  correlationId?: string;
  causationId?: string;
  idempotencyKey?: string;
  multitask?: 'enqueue' | 'reject';
}

export interface Admitted {
  messageId: string;
  turnId: string;
  status: string;
  /** True when an earlier admission with the same idempotency key was returned. */
  replayed: boolean;
}

/**
 * Admission: every input becomes one persisted MessageEnvelope and one queued
 * turn, committed to Postgres before the caller hears back, then a wake-up job
 * on `turns`. If Redis is unavailable the admission still stands: the reconciler
 * enqueues it later.
 */
export class Admission {
  constructor(
    private readonly db: Db,
    private readonly turnsQueue: Queue,
    private readonly logger: Logger,
    private readonly options: { enqueueTimeoutMs?: number } = {},
  ) {}

  /**
   * Idempotency-Key (draft-ietf-httpapi-idempotency-key-header), scoped to the session: the first
   * request with a key admits; a retry with the same request gets the first admission back
   * (`replayed`); the same key with a different request is `idempotency_key_reused` (422); a retry
   * while the first is still being admitted is `idempotency_key_in_flight` (409). A request that
   * failed stored nothing, so its key stays free.
   */
  async admit(input: AdmitInput): Promise<Admitted> {
    return withSpan(
      'admit message',
      { attributes: { 'switchboard.session.id': input.sessionId } },
      async (span) => {
        const idempotency = input.idempotencyKey
          ? { key: input.idempotencyKey, fingerprint: requestFingerprint(input) }
          : undefined;
        if (idempotency) {
          const existing = await this.findByKey(this.db, input, idempotency);
          if (existing) return existing;
        }
        let admitted: Admitted & { traceContext?: unknown };
        try {
          admitted = await this.persist(input, idempotency);
        } catch (err) {
          if (idempotency && isUniqueViolation(err)) {
            const existing = await this.findByKey(this.db, input, idempotency);
            if (existing) return existing;
          }
          throw err;
        }
        if (admitted.replayed) return admitted;
        span.setAttribute('switchboard.turn.id', admitted.turnId);
        try {
          const enqueued = publish(
            this.turnsQueue,
            Jobs.turn,
            { turnId: admitted.turnId, sessionId: input.sessionId, tenantId: input.tenantId },
            { priority: PRIORITY_RANK[input.priority ?? 'normal'] },
          );
          // A Redis that is down would hold the caller forever; the admission already stands in Postgres.
          enqueued.catch(() => undefined);
          await withTimeout(enqueued, this.options.enqueueTimeoutMs ?? 2000);
        } catch (err) {
          this.logger.error(
            { err, turnId: admitted.turnId },
            'enqueue failed after admission; the reconciler will retry',
          );
        }
        return {
          messageId: admitted.messageId,
          turnId: admitted.turnId,
          status: admitted.status,
          replayed: false,
        };
      },
    );
  }

  /** The admission an earlier request with this key made, or null; 422 when that request differed. */
  private async findByKey(
    db: Db | Tx,
    input: AdmitInput,
    idempotency: Idempotency,
  ): Promise<Admitted | null> {
    const msg = await db.message.findFirst({
      where: { tenantId: input.tenantId, sessionId: input.sessionId, idempotencyKey: idempotency.key },
      select: { id: true, idempotencyFingerprint: true },
    });
    if (!msg) return null;
    // Messages admitted before fingerprints were stored have none: they replay as they always did.
    if (msg.idempotencyFingerprint !== null && msg.idempotencyFingerprint !== idempotency.fingerprint) {
      throw new AppError(
        'idempotency_key_reused',
        'this Idempotency-Key was already used with a different request: use a new key for a new message',
      );
    }
    const turn = await db.turn.findUnique({
      where: { inputMessageId: msg.id },
      select: { id: true, status: true },
    });
    if (!turn) return null;
    return { messageId: msg.id, turnId: turn.id, status: turn.status, replayed: true };
  }

  private async persist(input: AdmitInput, idempotency: Idempotency | undefined) {
    const priority = input.priority ?? 'normal';
    const trust = defaultTrust(input.origin);
    const authorityClass = deriveAuthorityClass(input.kind, input.verifiedIntegration ?? false);
    const messageId = newId();
    const turnId = newId();
    const traceContext = currentTraceCarrier();

    return this.db.$transaction(async (tx): Promise<Admitted & { traceContext?: unknown }> => {
      if (idempotency) {
        // Held until this transaction ends: a second request with the key meanwhile is in flight (409),
        // not queued behind the session lock. Taken before that lock, so it never waits for it.
        const lockKey = `idempotency:${input.sessionId}:${idempotency.key}`;
        const [{ locked }] = await tx.$queryRaw<{ locked: boolean }[]>`
          SELECT pg_try_advisory_xact_lock(hashtextextended(${lockKey}, 0)) AS locked`;
        if (!locked) {
          throw new AppError(
            'idempotency_key_in_flight',
            'a request with this Idempotency-Key is still being processed: retry later',
          );
        }
        // The holder may have committed between the first look and the lock.
        const existing = await this.findByKey(tx, input, idempotency);
        if (existing) return existing;
      }
      // Locks the session row: admissions of one session get consecutive seqs in commit order.
      const rows = await tx.$queryRaw<{ seq: number; agent_id: string; status: string }[]>`
        UPDATE sessions SET last_turn_seq = last_turn_seq + 1, updated_at = now()
        WHERE id = ${input.sessionId}::uuid AND tenant_id = ${input.tenantId}::uuid
        RETURNING last_turn_seq AS seq, agent_id, status`;
      if (rows.length === 0) throw notFound('session');
      const { seq, agent_id: agentId, status } = rows[0];
      if (status !== 'active') throw new AppError('conflict', 'session is closed');
      if (input.multitask === 'reject') {
        const busy = await tx.turn.count({
          where: { sessionId: input.sessionId, status: { in: ['queued', 'running'] } },
        });
        if (busy > 0) {
          throw new AppError('conflict', 'a turn is already queued or running in this session', {
            multitask: 'reject',
          });
        }
      }
      await insertMessage(tx, {
        id: messageId,
        tenantId: input.tenantId,
        agentId,
        sessionId: input.sessionId,
        turnId,
        turnSeq: seq,
        position: 0,
        role: 'user',
        kind: input.kind,
        origin: input.origin,
        trust,
        authorityClass,
        priority,
        deliverySurface: input.deliverySurface,
        admissionContext: input.admissionContext,
        body: input.body,
        metadata: input.metadata ?? {},
        correlationId: input.correlationId ?? null,
        causationId: input.causationId ?? null,
        idempotencyKey: idempotency?.key ?? null,
        idempotencyFingerprint: idempotency?.fingerprint ?? null,
      });
      await tx.$executeRaw`
        INSERT INTO turns (id, tenant_id, session_id, agent_id, seq, input_message_id, status, priority, trace_context)
        VALUES (${turnId}::uuid, ${input.tenantId}::uuid, ${input.sessionId}::uuid, ${agentId}::uuid, ${seq},
          ${messageId}::uuid, 'queued', ${priority}, ${JSON.stringify(traceContext)}::jsonb)`;
      await appendEvents(tx, {
        tenantId: input.tenantId,
        sessionId: input.sessionId,
        events: [
          {
            type: EventType.MessageAdmitted,
            turnId,
            data: {
              messageId,
              kind: input.kind,
              authorityClass,
              priority,
              deliverySurface: input.deliverySurface,
            },
          },
        ],
      });
      return { messageId, turnId, status: 'queued', replayed: false, traceContext };
    });
  }
}

interface Idempotency {
  key: string;
  fingerprint: string;
}

const canonicalJson = configure({ deterministic: true });

/**
 * sha256 of the request as admitted, in canonical JSON (sorted keys, defaults filled in): what a
 * retry must repeat for its key to replay. `"hi"` and `[{type:"text",text:"hi"}]` are the same
 * message; a different text, priority, multitask, metadata or correlationId is a different request.
 */
export function requestFingerprint(input: AdmitInput): string {
  const request = {
    kind: input.kind,
    origin: input.origin,
    body: input.body,
    deliverySurface: input.deliverySurface,
    admissionContext: input.admissionContext,
    priority: input.priority ?? 'normal',
    multitask: input.multitask ?? 'enqueue',
    metadata: input.metadata ?? {},
    correlationId: input.correlationId ?? null,
    causationId: input.causationId ?? null,
  };
  return createHash('sha256').update(canonicalJson(request)).digest('hex');
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`enqueue timed out after ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}
