import { Controller, HttpCode, Inject, Param, Post, Req, Res } from '@nestjs/common';
import { getQueueToken } from '@nestjs/bullmq';
import { ApiTags } from '@nestjs/swagger';
import type { Queue } from 'bullmq';
import type { FastifyReply, FastifyRequest } from 'fastify';
import {
  AppError,
  findInvalidText,
  HookDeliveryResponse,
  Jobs,
  newId,
  notFound,
  QueueName,
  SlackChallengeResponse,
  TenantPausedError,
  AgentStoppedError,
} from '@switchboard/contracts';
import type { Logger, Metrics } from '@switchboard/observability';
import type { Config } from '@switchboard/config';
import { CONFIG, LOGGER, METRICS } from '@switchboard/platform';
import { publish } from '@switchboard/queue';
import { DeliveriesRepository } from '@switchboard/triage';
import { Public } from '../platform/auth/guard';
import { hashTriggerToken, isTriggerToken, SignatureError, verifyDelivery, type Headers } from './verify';
import { SecretBox } from './secrets';
import type { RawBodyRequest } from '../platform/body';
import { ApiErrors, Operation } from '../platform/openapi';
import { ApiRateLimits } from '../platform/rate-limit';
import { schemeOf } from '../api/triggers.controller';

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

/**
 * The webhook ingress (seed 002 "External Trigger Ingress", SPEC §10, docs/adr/0019). No API key:
 * the URL's token is the capability. The signature is checked on the raw body before anything is
 * written; the delivery is stored (deduplicated by the sender's delivery id) and a triage job
 * enqueued before the 202, so an accepted delivery is never lost and a replay writes nothing new.
 */
@ApiTags('hooks')
@ApiErrors(500, 503)
@Public()
@Controller('v1/hooks')
export class HooksController {
  private readonly box: SecretBox;

  constructor(
    @Inject(DeliveriesRepository) private readonly deliveries: DeliveriesRepository,
    @Inject(getQueueToken(QueueName.Triage)) private readonly triage: Queue,
    @Inject(LOGGER) private readonly logger: Logger,
    @Inject(CONFIG) config: Config,
    @Inject(METRICS) private readonly metrics: Metrics,
    @Inject(ApiRateLimits) private readonly limits: ApiRateLimits,
  ) {
    this.box = new SecretBox(config.TRIGGER_SECRET_KEY);
  }

  @Post(':token')
  @HttpCode(202)
  @Operation({
    id: 'deliverHook',
    summary: 'Deliver a webhook to a trigger (the URL token is the credential; signed by the trigger scheme)',
    description:
      "The webhook ingress (docs/adr/0019): no API key, the URL's token is the credential, and the body's signature is checked by the trigger's scheme before anything is written. An accepted delivery is stored, deduplicated by the sender's delivery id (a replay writes nothing new and is answered 202 again), and handed to triage. 401 for a refused signature, 404 for an unknown or revoked token, 403 when the tenant is paused, 409 when the agent is stopped.",
    status: 202,
    schema: HookDeliveryResponse,
    errors: [400, 401, 403, 404, 409, 413, 415, 429],
    alternative: {
      status: 200,
      schema: SlackChallengeResponse,
      description: "A Slack trigger's signed url_verification request: its challenge echoed, nothing stored",
    },
  })
  async deliver(
    @Param('token') token: string,
    @Req() req: FastifyRequest & RawBodyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<HookDeliveryResponse | SlackChallengeResponse> {
    // Unknown, malformed and revoked tokens are one answer: nothing tells a guesser which it was.
    const trigger = isTriggerToken(token)
      ? await this.deliveries.triggerByTokenHash(hashTriggerToken(token))
      : undefined;
    if (!trigger || trigger.revokedAt) {
      this.metrics.webhookDeliveries.inc({ scheme: 'unknown', outcome: 'not_found' });
      throw notFound('trigger');
    }
    // Counted per trigger before any work (docs/adr/0028). A sender retries a 429, and its retry is
    // deduplicated by its delivery id like any replay: nothing is lost.
    await this.limits.enforce('webhooks', { tenantId: trigger.tenantId, triggerId: trigger.id }, reply);
    const raw = req.rawBody;
    if (!raw)
      throw new AppError('bad_request', 'a delivery needs a JSON body (Content-Type: application/json)');

    const scheme = schemeOf(trigger);
    const secrets = [trigger.signingSecret, this.previousSecret(trigger)]
      .map((s) => (s ? this.openSecret(trigger.id, s) : undefined))
      .filter((s): s is string => !!s);
    let verified: boolean;
    try {
      verified = await verifyDelivery(scheme, secrets, raw, req.headers);
    } catch (err) {
      if (!(err instanceof SignatureError)) throw err;
      this.logger.info({ triggerId: trigger.id, reason: err.message }, 'webhook delivery refused');
      this.metrics.webhookDeliveries.inc({ scheme, outcome: 'refused' });
      throw new AppError('unauthorized', `signature refused: ${err.message}`);
    }

    // The operator paused the trigger's tenant (docs/adr/0030): refused once the sender is verified
    // (a 401 tells an unsigned sender nothing more), nothing stored.
    if (trigger.tenantPaused) {
      this.metrics.webhookDeliveries.inc({ scheme, outcome: 'paused' });
      throw new TenantPausedError();
    }
    // The trigger's agent is stopped (docs/adr/0031): the stopped boundary, nothing stored.
    if (trigger.agentStopped) {
      this.metrics.webhookDeliveries.inc({ scheme, outcome: 'stopped' });
      throw new AgentStoppedError(trigger.agentId);
    }

    const body: unknown = req.body;
    // What Postgres cannot store is refused like on every other route (docs/adr/0005).
    const invalid = findInvalidText(body);
    if (invalid.length > 0) {
      throw new AppError('validation_failed', 'the body has text that cannot be stored', { issues: invalid });
    }
    // Slack confirms an Events API Request URL with a signed url_verification event that must be
    // answered with its challenge; it is not an event, so nothing is stored or triaged.
    const challenge =
      scheme === 'slack' && field(body, 'type') === 'url_verification' ? field(body, 'challenge') : undefined;
    if (challenge !== undefined) {
      reply.status(200);
      return { challenge };
    }
    const deliveryId = deliveryIdOf(scheme, req.headers, body);
    if (!deliveryId || !DELIVERY_ID.test(deliveryId)) {
      throw new AppError(
        'bad_request',
        'missing or malformed delivery id header (1 to 200 printable characters)',
      );
    }
    const headers = Object.fromEntries(
      KEPT_HEADERS.flatMap((h) => {
        const v = first(req.headers, h);
        return v === undefined ? [] : [[h, v.slice(0, 500)]];
      }),
    );
    const eventType = eventTypeOf(scheme, req.headers, body);
    const payload = {
      source: scheme === 'token' ? trigger.name : scheme,
      ...(eventType ? { eventType: eventType.slice(0, 200) } : {}),
      headers,
      body,
    };

    // A replay, even a concurrent one, stores nothing (DeliveriesRepository.record).
    const id = newId();
    const stored = await this.deliveries.record({
      id,
      tenantId: trigger.tenantId,
      triggerId: trigger.id,
      deliveryId,
      payload,
      verified,
    });
    if (stored) {
      await publish(this.triage, Jobs.triage, { deliveryId: id, tenantId: trigger.tenantId });
      this.metrics.webhookDeliveries.inc({ scheme, outcome: 'accepted' });
      return { deliveryId: id, duplicate: false };
    }
    // A replay: its statement ran after the first one committed, so this read sees that row.
    const existing = await this.deliveries.find(trigger.id, deliveryId);
    if (!existing) throw new AppError('conflict', 'the delivery is being stored by another request: retry');
    // Not yet decided: the first answer may have failed to enqueue; the job id makes this a no-op otherwise.
    if (existing.decision === null) {
      await publish(this.triage, Jobs.triage, { deliveryId: existing.id, tenantId: trigger.tenantId });
    }
    this.metrics.webhookDeliveries.inc({ scheme, outcome: 'duplicate' });
    return { deliveryId: existing.id, duplicate: true };
  }

  /** A secret sealed under a key this gateway does not have verifies nothing (logged: a deployment error). */
  private openSecret(triggerId: string, stored: string): string | undefined {
    const secret = this.box.open(stored);
    if (secret === undefined)
      this.logger.error({ triggerId }, 'cannot open the signing secret: check TRIGGER_SECRET_KEY');
    return secret;
  }

  private previousSecret(t: { previousSigningSecret: string | null; previousSecretExpiresAt: Date | null }) {
    return t.previousSecretExpiresAt && t.previousSecretExpiresAt.getTime() > Date.now()
      ? t.previousSigningSecret
      : null;
  }
}
