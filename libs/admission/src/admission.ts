import { createHash } from 'node:crypto';
import type { Queue } from 'bullmq';
import { configure } from 'safe-stable-stringify';
import {
  AgentStoppedError,
  AppError,
  defaultTrust,
  deriveAuthorityClass,
  EventType,
  Jobs,
  newId,
  notFound,
  TenantPausedError,
  type AdmissionContext,
  type DeliverySurface,
  type MessageBody,
  type MessageKind,
  type MessageOrigin,
  type Priority,
  type ResponseFormat,
  type ToolChoice,
} from '@switchboard/contracts';
import { poolOf, type Db } from '@switchboard/database';
import type { LivePublisher } from '@switchboard/live';
import { currentTraceCarrier, withSpan, type Logger, type Metrics } from '@switchboard/observability';
import { publish, withTimeout } from '@switchboard/queue';
import { TenantGate } from './tenant-gate';
import {
  AdmissionStore,
  replayTurn,
  sqlDbFor,
  type PriorAdmission,
  type ReplayResult,
  type ReplayTurn,
  type SqlDb,
} from '@switchboard/store';
import { importSession, type SessionImport, type SessionImportResult } from './session-import';
import type { TurnSteering } from './turn-steering';

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
  /**
   * Seed 002 `sourceRefs` (docs/adr/0060): stable source ids. Set by runtime-owned ingress only
   * (triage, wake hints); nothing a client sends maps to it.
   */
  sourceRefs?: Record<string, string>;
  idempotencyKey?: string;
  /**
   * enqueue (default): run after what is queued; reject: refuse while a turn is queued or running;
   * interrupt: cancel the session's active turn and run this message after it (docs/adr/0014).
   */
  multitask?: 'enqueue' | 'reject' | 'interrupt';
  /**
   * The sender is the parent turn of the session's sub-agent (steer_subagent, docs/adr/0024): it holds
   * operator-like authority over its child, so `priority: interject` is honoured although the message's
   * kind is a runtime one. Set only by the runtime; nothing a client sends maps to it.
   */
  fromParent?: boolean;
  /** The structured output the turn's answer must have (docs/adr/0048), checked by the caller; absent: text. */
  responseFormat?: ResponseFormat | null;
  /**
   * Tools the client declared and runs (docs/adr/0047), already validated by the protocol (names
   * distinct from the agent's tools, schemas valid): kept with the turn.
   */
  clientTools?: { name: string; description: string; parameters: Record<string, unknown> }[];
  /** The tool choice forced for the turn's first round (docs/adr/0047), checked by the caller; absent: auto. */
  toolChoice?: ToolChoice;
}

export interface Admitted {
  messageId: string;
  turnId: string;
  status: string;
  /** True when an earlier admission with the same idempotency key was returned. */
  replayed: boolean;
}

/** Postgres unique violation (node-postgres error). */
const isUniqueViolation = (err: unknown): boolean => (err as { code?: unknown } | null)?.code === '23505';

/**
 * Admission: every input becomes one persisted MessageEnvelope and one queued
 * turn, committed to Postgres before the caller hears back, then a wake-up job
 * on `turns`. If Redis is unavailable the admission still stands: the reconciler
 * enqueues it later.
 */
export class Admission {
  private readonly store: AdmissionStore;
  private readonly sql: SqlDb;

  /** `db` must come from `createPrisma`/`createDatabase`: admission runs typed SQL on its pg pool. */
  constructor(
    private readonly db: Db,
    private readonly turnsQueue: Queue,
    private readonly logger: Logger,
    private readonly options: {
      enqueueTimeoutMs?: number;
      metrics?: Metrics;
      /** Cancels for `multitask: interrupt` and the nudge of an interjection; without it, neither happens. */
      control?: TurnSteering;
      /** The live channel: `message_admitted` goes out on it after the commit (docs/adr/0015). */
      live?: LivePublisher;
      /**
       * At most this many admissions of one tenant at a time in this process, the rest waiting in
       * order (ADMISSION_CONCURRENCY_PER_TENANT, docs/adr/0029); 0 or absent: no bound.
       */
      perTenantConcurrency?: number;
      /** The bound while another tenant admits too (ADMISSION_CONCURRENCY_PER_TENANT_CONTENDED); 0 or absent: the same. */
      perTenantConcurrencyContended?: number;
    } = {},
  ) {
    this.sql = sqlDbFor(poolOf(db), 'admission', options.metrics);
    this.store = new AdmissionStore(this.sql);
    this.gate = new TenantGate(options.perTenantConcurrency ?? 0, options.perTenantConcurrencyContended ?? 0);
  }

  private readonly gate: TenantGate;

  /**
   * Idempotency-Key (draft-ietf-httpapi-idempotency-key-header), scoped to the session: the first
   * request with a key admits; a retry with the same request gets the first admission back
   * (`replayed`); the same key with a different request is `idempotency_key_reused` (422); a retry
   * while the first is still being admitted is `idempotency_key_in_flight` (409). A request that
   * failed stored nothing, so its key stays free.
   */
  async admit(input: AdmitInput): Promise<Admitted> {
    return this.gate.run(input.tenantId, () => this.admitNow(input));
  }

  private admitNow(input: AdmitInput): Promise<Admitted> {
    return withSpan(
      'admit message',
      { attributes: { 'switchboard.session.id': input.sessionId } },
      async (span) => {
        const idempotency = input.idempotencyKey
          ? { key: input.idempotencyKey, fingerprint: requestFingerprint(input) }
          : undefined;
        let admitted: Admitted;
        try {
          admitted = await this.persist(input, idempotency);
        } catch (err) {
          // Another request with the key committed between this statement's snapshot and its lock.
          if (idempotency && isUniqueViolation(err)) {
            const prior = await this.store.findByKey(input, idempotency.key);
            if (prior) return replay(prior, idempotency);
          }
          throw err;
        }
        if (admitted.replayed) return admitted;
        span.setAttribute('switchboard.turn.id', admitted.turnId);
        await this.steer(input, admitted);
        await this.enqueue({ turnId: admitted.turnId, sessionId: input.sessionId, tenantId: input.tenantId });
        return admitted;
      },
    );
  }

  /**
   * Replays an ended turn (docs/adr/0054): the fork of its session and the replay turn's admission in
   * one transaction (`replayTurn`), then, as for any admission, the fork's and the parent's events on
   * the live channel and the turn's job. A refusal writes nothing.
   */
  async replay(r: Omit<ReplayTurn, 'traceContext'>): Promise<ReplayResult> {
    return this.gate.run(r.tenantId, () =>
      withSpan('replay turn', { attributes: { 'switchboard.turn.id': r.turnId } }, async () => {
        const replayed = await replayTurn(this.sql, { ...r, traceContext: currentTraceCarrier() });
        const live = this.options.live;
        if (live) {
          void live.publish(replayed.fork.parentSessionId, replayed.fork.events.parent);
          void live.publish(replayed.sessionId, [...replayed.fork.events.fork, replayed.admitted]);
        }
        await this.enqueue({ turnId: replayed.turnId, sessionId: replayed.sessionId, tenantId: r.tenantId });
        return replayed;
      }),
    );
  }

  /** The admitted turn's job, bounded: a Redis that is down leaves it to the reconciler (ADR 0004). */
  private async enqueue(job: { turnId: string; sessionId: string; tenantId: string }): Promise<void> {
    try {
      // No BullMQ priority: a turn's band orders it in the harness's choice in Postgres (docs/adr/0080).
      const enqueued = publish(this.turnsQueue, Jobs.turn, job);
      // A Redis that is down would hold the caller forever; the admission already stands in Postgres.
      enqueued.catch(() => undefined);
      await withTimeout(enqueued, this.options.enqueueTimeoutMs ?? 2000);
    } catch (err) {
      this.logger.error(
        { err, turnId: job.turnId },
        'enqueue failed after admission; the reconciler will retry',
      );
    }
  }

  /**
   * After the commit (docs/adr/0014): `interrupt` cancels the turn in the way (the admitted one runs
   * when it has ended), and a trusted interjection's worker is told to pull it at its next safe point.
   * Neither fails the admission: it stands, and the heartbeat finds what a lost message would have said.
   */
  private async steer(input: AdmitInput, admitted: Admitted): Promise<void> {
    const control = this.options.control;
    if (!control) return;
    try {
      if (input.multitask === 'interrupt') {
        await control.interrupt(input.tenantId, input.sessionId, admitted.turnId);
      }
      if (effectivePriority(input) === 'interject') await control.notifyInterjection(input.sessionId);
    } catch (err) {
      this.logger.warn({ err, turnId: admitted.turnId }, 'could not signal the running turn after admission');
    }
  }

  /**
   * A new session seeded with a conversation held elsewhere, its history ended as the session's
   * first turn (`importSession`); a session with the id that exists already is left as it is.
   */
  importSession(s: SessionImport): Promise<SessionImportResult> {
    return importSession(this.db, s);
  }

  /** One statement for `enqueue`, one short transaction for `reject` (libs/store/src/admission-store.ts). */
  private async persist(input: AdmitInput, idempotency: Idempotency | undefined): Promise<Admitted> {
    const priority = effectivePriority(input);
    const messageId = newId();
    const turnId = newId();
    const eventId = newId();
    const result = await this.store.admit({
      tenantId: input.tenantId,
      sessionId: input.sessionId,
      messageId,
      turnId,
      eventId,
      kind: input.kind,
      origin: input.origin,
      trust: defaultTrust(input.origin),
      authorityClass: deriveAuthorityClass(input.kind, input.verifiedIntegration ?? false),
      priority,
      deliverySurface: input.deliverySurface,
      admissionContext: input.admissionContext,
      body: input.body,
      metadata: input.metadata ?? {},
      correlationId: input.correlationId ?? null,
      causationId: input.causationId ?? null,
      sourceRefs: input.sourceRefs ?? {},
      idempotency,
      traceContext: currentTraceCarrier(),
      rejectIfBusy: input.multitask === 'reject',
      responseFormat: input.responseFormat ?? null,
      ...(input.clientTools?.length ? { clientTools: input.clientTools } : {}),
      ...(input.toolChoice ? { toolChoice: input.toolChoice } : {}),
    });
    switch (result.kind) {
      case 'admitted':
        // Streams of the session hear of it now; sent at once, not awaited, never failing the admission.
        void this.options.live?.publish(input.sessionId, [
          {
            id: eventId,
            seq: result.eventSeq,
            type: EventType.MessageAdmitted,
            turnId,
            data: result.event.data,
            createdAt: result.event.createdAt,
          },
        ]);
        return { messageId, turnId, status: 'queued', replayed: false };
      case 'prior':
        return replay(result.prior, idempotency!);
      case 'in_flight':
        // Held until the first request's transaction ends: a retry meanwhile is told, not queued.
        throw new AppError(
          'idempotency_key_in_flight',
          'a request with this Idempotency-Key is still being processed: retry later',
        );
      case 'paused':
        // Refused where every input is admitted (docs/adr/0030): the gateway answers 403 tenant_paused.
        throw new TenantPausedError();
      case 'stopped':
        // The stopped boundary (docs/adr/0031): 409 agent_stopped naming the resume.
        throw new AgentStoppedError(result.agentId);
      case 'not_found':
        throw notFound('session');
      case 'closed':
        throw new AppError('conflict', 'session is closed');
      case 'busy':
        throw new AppError('conflict', 'a turn is already queued or running in this session', {
          multitask: 'reject',
        });
    }
  }
}

/**
 * The band a message is admitted in (SPEC §2): `interject` only from a trusted operator (authority
 * `operator_instruction`) or a sub-agent's parent turn (`fromParent`); from anyone else it is `next`,
 * the most urgent band that does not enter a running turn.
 */
export function effectivePriority(
  input: Pick<AdmitInput, 'priority' | 'kind' | 'verifiedIntegration' | 'fromParent'>,
): Priority {
  const priority = input.priority ?? 'normal';
  if (priority !== 'interject') return priority;
  if (input.fromParent === true) return 'interject';
  return deriveAuthorityClass(input.kind, input.verifiedIntegration ?? false) === 'operator_instruction'
    ? 'interject'
    : 'next';
}

/** The earlier admission with this key; 422 when that request differed. */
function replay(prior: PriorAdmission, idempotency: Idempotency): Admitted {
  // Messages admitted before fingerprints were stored have none: they replay as they always did.
  if (prior.fingerprint !== null && prior.fingerprint !== idempotency.fingerprint) {
    throw new AppError(
      'idempotency_key_reused',
      'this Idempotency-Key was already used with a different request: use a new key for a new message',
    );
  }
  return { messageId: prior.messageId, turnId: prior.turnId, status: prior.status, replayed: true };
}

interface Idempotency {
  key: string;
  fingerprint: string;
}

const canonicalJson = configure({ deterministic: true });

/**
 * sha256 of the request as admitted, in canonical JSON (sorted keys, defaults filled in): what a
 * retry must repeat for its key to replay. `"hi"` and `[{type:"text",text:"hi"}]` are the same
 * message; a different text, priority, multitask, metadata, correlationId, response format, set of
 * client tools or tool choice is a different request.
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
    // Only when asked for, so keys of requests without them keep the fingerprints they were stored with.
    ...(input.responseFormat ? { responseFormat: input.responseFormat } : {}),
    ...(input.clientTools?.length ? { clientTools: input.clientTools } : {}),
    ...(input.toolChoice ? { toolChoice: input.toolChoice } : {}),
  };
  return createHash('sha256').update(canonicalJson(request)).digest('hex');
}
