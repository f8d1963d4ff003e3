import {
  AgentStoppedError,
  AppError,
  findInvalidText,
  newId,
  notFound,
  TenantPausedError,
  TriggerScheme,
  type HookDeliveryResponse,
  type SlackChallengeResponse,
} from '@switchboard/contracts';
import type { Logger } from '@switchboard/observability';
import type { DeliveriesRepository, IngressTrigger } from './deliveries-repository';
import { hashTriggerToken, isTriggerToken, SignatureError, verifyDelivery, type Headers } from './verify';

/** Headers kept with a delivery: provenance for triage and audit. Signatures and credentials are not. */
const KEPT_HEADERS = [
  'content-type',
  'user-agent',
  'x-github-event',
  'x-github-delivery',
  'x-github-hook-id',
  'x-github-hook-installation-target-type',
  'x-github-hook-installation-target-id',
  'x-slack-request-timestamp',
  'x-slack-retry-num',
  'x-slack-retry-reason',
  'webhook-id',
  'webhook-timestamp',
  'idempotency-key',
  // Correlation across a workflow (seed 002 envelope; docs/adr/0060): projected onto the message or wake hint.
  'x-correlation-id',
  'x-causation-id',
];

/** A sender's delivery id: at most this long, printable ASCII. */
const DELIVERY_ID = /^[\x21-\x7e]{1,200}$/;

const first = (headers: Headers, name: string): string | undefined => {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
};

const field = (body: unknown, ...path: string[]): string | undefined => {
  let v: unknown = body;
  for (const key of path)
    v = v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>)[key] : undefined;
  return typeof v === 'string' ? v : undefined;
};

/** A trigger's signature scheme. Rows written before the trigger API have scheme `none`: a token-only trigger. */
export function schemeOf(t: { signatureScheme: string }): TriggerScheme {
  const scheme = TriggerScheme.safeParse(t.signatureScheme);
  return scheme.success ? scheme.data : 'token';
}

/**
 * The id replays share, by scheme (docs/adr/0019): GitHub's X-GitHub-Delivery (a redelivery keeps
 * it); Standard Webhooks' webhook-id; Slack's `event_id` (its retries keep it), else the request
 * timestamp and signature; a token trigger's Idempotency-Key, else none (every post is new).
 */
function deliveryIdOf(scheme: string, headers: Headers, body: unknown): string | undefined {
  switch (scheme) {
    case 'github':
      return first(headers, 'x-github-delivery');
    case 'standard-webhooks':
      return first(headers, 'webhook-id');
    case 'slack':
      return (
        field(body, 'event_id') ??
        `${first(headers, 'x-slack-request-timestamp')}:${first(headers, 'x-slack-signature')}`
      );
    default:
      return first(headers, 'idempotency-key') ?? newId();
  }
}

/** The event's type as its sender names it. */
function eventTypeOf(scheme: string, headers: Headers, body: unknown): string | undefined {
  if (scheme === 'github') return first(headers, 'x-github-event');
  if (scheme === 'slack') return field(body, 'event', 'type') ?? field(body, 'type');
  return field(body, 'type');
}

/** What a delivery became, as the `switchboard_webhook_deliveries_total` outcome label. */
export type DeliveryOutcome = 'accepted' | 'duplicate' | 'refused' | 'not_found' | 'paused' | 'stopped';

/** What the ingress needs from its host (the gateway wires queues, secrets, metrics and rate limits). */
export interface WebhookIngressDeps {
  deliveries: Pick<DeliveriesRepository, 'triggerByTokenHash' | 'record' | 'find'>;
  /** Hands a stored delivery to triage (a triage job; its id makes a second one a no-op). */
  enqueue(job: { deliveryId: string; tenantId: string }): Promise<void>;
  /** A sealed signing secret opened; undefined when this deployment cannot open it. */
  openSecret(stored: string): string | undefined;
  /** Counts a delivery by scheme and outcome. */
  count(scheme: string, outcome: DeliveryOutcome): void;
  logger: Logger;
  now?: () => number;
}

/** One request to a trigger's URL. */
export interface WebhookDelivery {
  /** The URL's token: the capability. */
  token: string;
  /** The body as sent (the signature covers these bytes); undefined when there was none. */
  rawBody: Buffer | undefined;
  /** The body parsed as JSON. */
  body: unknown;
  headers: Headers;
  /** Counts the delivery against its trigger's rate limit (docs/adr/0028); throws when it is spent. */
  limit(trigger: { tenantId: string; triggerId: string }): Promise<void>;
}

/** The answer: 202 with the stored delivery (a replay's `duplicate`), or 200 with Slack's challenge. */
export type WebhookAnswer =
  { status: 202; body: HookDeliveryResponse } | { status: 200; body: SlackChallengeResponse };

/**
 * The webhook ingress (docs/adr/0019), plain TypeScript: no API key, the URL's token is the
 * capability. The signature is checked on the raw body before anything is written; the delivery
 * is stored (deduplicated by the sender's delivery id) and a triage job enqueued before the 202, so
 * an accepted delivery is never lost and a replay writes nothing new. Refusals are `AppError`s.
 */
export class WebhookIngress {
  constructor(private readonly deps: WebhookIngressDeps) {}

  async deliver(d: WebhookDelivery): Promise<WebhookAnswer> {
    const trigger = await this.trigger(d.token);
    // Counted per trigger before any work (docs/adr/0028). A sender retries a 429, and its retry is
    // deduplicated by its delivery id like any replay: nothing is lost.
    await d.limit({ tenantId: trigger.tenantId, triggerId: trigger.id });
    if (!d.rawBody) {
      throw new AppError('bad_request', 'a delivery needs a JSON body (Content-Type: application/json)');
    }
    const scheme = schemeOf(trigger);
    const verified = await this.verify(trigger, scheme, d.rawBody, d.headers);
    this.admissible(trigger, scheme);
    const body = d.body;
    // What Postgres cannot store is refused like on every other route (docs/adr/0005).
    const invalid = findInvalidText(body);
    if (invalid.length > 0) {
      throw new AppError('validation_failed', 'the body has text that cannot be stored', { issues: invalid });
    }
    // Slack confirms an Events API Request URL with a signed url_verification event that must be
    // answered with its challenge; it is not an event, so nothing is stored or triaged.
    const challenge =
      scheme === 'slack' && field(body, 'type') === 'url_verification' ? field(body, 'challenge') : undefined;
    if (challenge !== undefined) return { status: 200, body: { challenge } };
    const deliveryId = deliveryIdOf(scheme, d.headers, body);
    if (!deliveryId || !DELIVERY_ID.test(deliveryId)) {
      throw new AppError(
        'bad_request',
        'missing or malformed delivery id header (1 to 200 printable characters)',
      );
    }
    return { status: 202, body: await this.store(trigger, scheme, deliveryId, verified, d.headers, body) };
  }

  /** The token's trigger. Unknown, malformed and revoked tokens are one answer: nothing tells a guesser which. */
  private async trigger(token: string): Promise<IngressTrigger> {
    const trigger = isTriggerToken(token)
      ? await this.deps.deliveries.triggerByTokenHash(hashTriggerToken(token))
      : undefined;
    if (!trigger || trigger.revokedAt) {
      this.deps.count('unknown', 'not_found');
      throw notFound('trigger');
    }
    return trigger;
  }

  /** The signature, by the trigger's current secret and, during a rotation's grace period, the previous one. */
  private async verify(
    trigger: IngressTrigger,
    scheme: TriggerScheme,
    raw: Buffer,
    headers: Headers,
  ): Promise<boolean> {
    const now = this.deps.now?.() ?? Date.now();
    const previous =
      trigger.previousSecretExpiresAt && trigger.previousSecretExpiresAt.getTime() > now
        ? trigger.previousSigningSecret
        : null;
    const secrets = [trigger.signingSecret, previous]
      .map((s) => (s ? this.openSecret(trigger.id, s) : undefined))
      .filter((s): s is string => !!s);
    try {
      return await verifyDelivery(scheme, secrets, raw, headers);
    } catch (err) {
      if (!(err instanceof SignatureError)) throw err;
      this.deps.logger.info({ triggerId: trigger.id, reason: err.message }, 'webhook delivery refused');
      this.deps.count(scheme, 'refused');
      throw new AppError('unauthorized', `signature refused: ${err.message}`);
    }
  }

  /**
   * The paused tenant (docs/adr/0030) and the stopped agent (docs/adr/0031): refused once the sender
   * is verified (a 401 tells an unsigned sender nothing more), nothing stored.
   */
  private admissible(trigger: IngressTrigger, scheme: TriggerScheme): void {
    if (trigger.tenantPaused) {
      this.deps.count(scheme, 'paused');
      throw new TenantPausedError();
    }
    if (trigger.agentStopped) {
      this.deps.count(scheme, 'stopped');
      throw new AgentStoppedError(trigger.agentId);
    }
  }

  /** Stores the delivery and hands it to triage; a replay, even a concurrent one, stores nothing. */
  private async store(
    trigger: IngressTrigger,
    scheme: TriggerScheme,
    deliveryId: string,
    verified: boolean,
    headers: Headers,
    body: unknown,
  ): Promise<HookDeliveryResponse> {
    const kept = Object.fromEntries(
      KEPT_HEADERS.flatMap((h) => {
        const v = first(headers, h);
        return v === undefined ? [] : [[h, v.slice(0, 500)]];
      }),
    );
    const eventType = eventTypeOf(scheme, headers, body);
    const payload = {
      source: scheme === 'token' ? trigger.name : scheme,
      ...(eventType ? { eventType: eventType.slice(0, 200) } : {}),
      headers: kept,
      body,
    };
    const id = newId();
    const { tenantId } = trigger;
    const stored = await this.deps.deliveries.record({
      id,
      tenantId,
      triggerId: trigger.id,
      deliveryId,
      payload,
      verified,
    });
    if (stored) {
      await this.deps.enqueue({ deliveryId: id, tenantId });
      this.deps.count(scheme, 'accepted');
      return { deliveryId: id, duplicate: false };
    }
    // A replay: its statement ran after the first one committed, so this read sees that row.
    const existing = await this.deps.deliveries.find(trigger.id, deliveryId);
    if (!existing) throw new AppError('conflict', 'the delivery is being stored by another request: retry');
    // Not yet decided: the first answer may have failed to enqueue; the job id makes this a no-op otherwise.
    if (existing.decision === null) await this.deps.enqueue({ deliveryId: existing.id, tenantId });
    this.deps.count(scheme, 'duplicate');
    return { deliveryId: existing.id, duplicate: true };
  }

  /** A secret sealed under a key this gateway does not have verifies nothing (logged: a deployment error). */
  private openSecret(triggerId: string, stored: string): string | undefined {
    const secret = this.deps.openSecret(stored);
    if (secret === undefined) {
      this.deps.logger.error({ triggerId }, 'cannot open the signing secret: check TRIGGER_SECRET_KEY');
    }
    return secret;
  }
}
