import { Controller, HttpCode, Inject, Param, Post, Req, Res } from '@nestjs/common';
import { getQueueToken } from '@nestjs/bullmq';
import { ApiTags } from '@nestjs/swagger';
import type { Queue } from 'bullmq';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { HookDeliveryResponse, Jobs, QueueName, SlackChallengeResponse } from '@switchboard/contracts';
import type { Logger, Metrics } from '@switchboard/observability';
import type { Config } from '@switchboard/config';
import { CONFIG, LOGGER, METRICS, SecretBox } from '@switchboard/platform';
import { publish } from '@switchboard/queue';
import { DeliveriesRepository, WebhookIngress } from '@switchboard/triage';
import { Public } from '../platform/auth/guard';
import type { RawBodyRequest } from '../platform/body';
import { ApiErrors, Operation } from '../platform/openapi';
import { ApiRateLimits } from '../platform/rate-limit';

/**
 * The webhook ingress's route (docs/adr/0019): `POST /v1/hooks/{token}`, no API key (the URL's token
 * is the capability). The policy — token, rate limit, signature on the raw body, paused tenant and
 * stopped agent, deduplication by the sender's delivery id, the triage job before the 202 — is
 * `WebhookIngress` (libs/triage); this controller wires it and maps the request.
 */
@ApiTags('hooks')
@ApiErrors(500, 503)
@Public()
@Controller('v1/hooks')
export class HooksController {
  private readonly ingress: WebhookIngress;

  constructor(
    @Inject(DeliveriesRepository) deliveries: DeliveriesRepository,
    @Inject(getQueueToken(QueueName.Triage)) triage: Queue,
    @Inject(LOGGER) logger: Logger,
    @Inject(CONFIG) config: Config,
    @Inject(METRICS) metrics: Metrics,
    @Inject(ApiRateLimits) private readonly limits: ApiRateLimits,
  ) {
    const box = new SecretBox(config.TRIGGER_SECRET_KEY);
    this.ingress = new WebhookIngress({
      deliveries,
      enqueue: (job) => publish(triage, Jobs.triage, job).then(() => undefined),
      openSecret: (stored) => box.open(stored),
      count: (scheme, outcome) => metrics.webhookDeliveries.inc({ scheme, outcome }),
      logger,
    });
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
    const answer = await this.ingress.deliver({
      token,
      rawBody: req.rawBody,
      body: req.body,
      headers: req.headers,
      limit: (who) => this.limits.enforce('webhooks', who, reply),
    });
    reply.status(answer.status);
    return answer.body;
  }
}
