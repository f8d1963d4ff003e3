import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Post, Query } from '@nestjs/common';
import type { Trigger, TriggerDelivery } from '@prisma/client';
import {
  AppError,
  defaultRotationGraceSeconds,
  IssuedTriggerResponse,
  notFound,
  TriggerDeliveryMode,
  TriggerDeliveryPageResponse,
  TriggerDeliveryResponse,
  TriggerListResponse,
  TriggerResponse,
} from '@switchboard/contracts';
import type { Prisma } from '@switchboard/database';
import type { Config } from '@switchboard/config';
import { CONFIG } from '@switchboard/platform';
import { SessionsRepository } from '@switchboard/store';
import { AgentsRepository } from '@switchboard/subagents';
import {
  generateSigningSecret,
  generateTriggerToken,
  schemeOf,
  TriageRules,
  TriggersRepository,
} from '@switchboard/triage';
import { Actor, KeyAgents, TenantId } from '../platform/auth/guard';
import { SecretBox } from '../ingress/secrets';
import { CreateTriggerDto, PageQueryDto, RotateTriggerDto, TriggersQueryDto } from './dto';
import { BODY_ERRORS, Operation, TenantApi } from '../platform/openapi';
import { decodeCursor, encodeCursor, pathId } from './presenters';

export const presentTrigger = (t: Trigger): TriggerResponse => {
  const mode = TriggerDeliveryMode.safeParse(t.deliveryMode);
  return {
    id: t.id,
    agentId: t.agentId,
    name: t.name,
    scheme: schemeOf(t),
    deliveryMode: mode.success ? mode.data : 'enqueue_message',
    sessionId: t.sessionId,
    rules: Array.isArray(t.rules) ? (t.rules as Record<string, unknown>[]) : [],
    previousSecretExpiresAt: t.previousSecretExpiresAt?.toISOString() ?? null,
    createdAt: t.createdAt.toISOString(),
    revokedAt: t.revokedAt?.toISOString() ?? null,
    deliveryCount: t.deliveryCount,
    lastDeliveryAt: t.lastDeliveryAt?.toISOString() ?? null,
  };
};

/** A string field of the stored payload (the ingress's envelope: `{source, eventType, headers, body}`). */
const payloadField = (payload: unknown, key: 'source' | 'eventType'): string | null => {
  const v = (payload as Record<string, unknown> | null)?.[key];
  return typeof v === 'string' ? v : null;
};

const presentDelivery = (d: TriggerDelivery): TriggerDeliveryResponse => ({
  id: d.id,
  triggerId: d.triggerId,
  deliveryId: d.deliveryId,
  source: payloadField(d.payload, 'source'),
  eventType: payloadField(d.payload, 'eventType'),
  verified: d.verified,
  decision: (d.decision as TriggerDeliveryResponse['decision']) ?? null,
  reason: d.reason,
  decisionSource: d.decisionSource,
  decisionModel: d.decisionModel,
  decisionCostUsd: d.decisionCostUsd.toString(),
  messageId: d.messageId,
  createdAt: d.createdAt.toISOString(),
  decidedAt: d.decidedAt?.toISOString() ?? null,
});

/** The path a sender posts to: the token is its only credential (docs/adr/0019). */
const hookPath = (token: string) => `/v1/hooks/${token}`;

/** The rules as triage reads them (libs/triage): a trigger never stores rules triage would ignore. */
function checkRules(rules: unknown): Prisma.InputJsonValue {
  const parsed = TriageRules.safeParse(rules);
  if (parsed.success) return parsed.data;
  throw new AppError('validation_failed', 'invalid triage rules', {
    issues: parsed.error.issues.map((i) => ({
      path: ['rules', ...i.path].join('.'),
      message: i.message,
      code: i.code,
    })),
  });
}

/**
 * External trigger capabilities (seed 002, SPEC §10, docs/adr/0019): a URL token and, for signed
 * schemes, a signing secret, both shown only when issued. Tenant-scoped: another tenant's trigger
 * is a 404.
 */
@TenantApi('triggers')
@Controller('v1/triggers')
export class TriggersController {
  private readonly secrets: SecretBox;

  constructor(
    @Inject(TriggersRepository) private readonly triggers: TriggersRepository,
    @Inject(AgentsRepository) private readonly agents: AgentsRepository,
    @Inject(SessionsRepository) private readonly sessions: SessionsRepository,
    @Inject(CONFIG) config: Config,
  ) {
    this.secrets = new SecretBox(config.TRIGGER_SECRET_KEY);
  }

  private sealed(secret: string | null | undefined): string | null {
    return secret ? this.secrets.seal(secret) : null;
  }

  @Post()
  @HttpCode(201)
  @Operation({
    id: 'createTrigger',
    summary: 'Create a trigger: its URL token and signing secret are shown once',
    description:
      "Creates a webhook trigger for one of the tenant's agents: deliveries to its URL are verified by the trigger's scheme (GitHub, Slack, Standard Webhooks, a plain token) and admitted as messages. Its URL token and signing secret are in this response only; 404 when the agent does not exist.",
    status: 201,
    schema: IssuedTriggerResponse,
    errors: [...BODY_ERRORS, 404],
  })
  async create(@TenantId() tenantId: string, @Body() body: CreateTriggerDto): Promise<IssuedTriggerResponse> {
    const rules = checkRules(body.rules);
    const agent = await this.agents.find(tenantId, body.agentId);
    if (!agent) throw notFound('agent');
    if (body.sessionId) {
      const session = await this.sessions.find(tenantId, body.sessionId);
      if (session?.agentId !== agent.id) throw notFound('session');
    }
    const { token, hash } = generateTriggerToken();
    const generated =
      body.scheme === 'github' || body.scheme === 'standard-webhooks'
        ? generateSigningSecret(body.scheme)
        : null;
    const row = await this.triggers.create({
      tenantId,
      agentId: agent.id,
      name: body.name,
      tokenHash: hash,
      signatureScheme: body.scheme,
      signingSecret: this.sealed(generated ?? body.signingSecret),
      deliveryMode: body.deliveryMode,
      sessionId: body.sessionId ?? null,
      rules,
    });
    return { ...presentTrigger(row), path: hookPath(token), signingSecret: generated };
  }

  @Get()
  @Operation({
    id: 'listTriggers',
    summary: "The tenant's triggers, by id; revoked ones with `includeRevoked=true`",
    description:
      "The tenant's triggers by id, without secrets; revoked ones only with `includeRevoked=true`. Paged by `limit` (default 50, at most 200) and `cursor`.",
    status: 200,
    schema: TriggerListResponse,
    errors: [400],
  })
  async list(
    @TenantId() tenantId: string,
    @Query() q: TriggersQueryDto,
    @KeyAgents() only: string[] | undefined,
  ): Promise<TriggerListResponse> {
    const after = decodeCursor<[string]>(q.cursor, ['string']);
    const limit = q.limit ?? 50;
    const rows = await this.triggers.page(tenantId, {
      afterId: after?.[0],
      limit,
      // A key limited to agents (docs/adr/0066) lists only their triggers.
      ...(only ? { agentIds: only } : {}),
      includeRevoked: q.includeRevoked === 'true',
    });
    const page = rows.slice(0, limit);
    return {
      data: page.map(presentTrigger),
      nextCursor: rows.length > limit ? encodeCursor([page[page.length - 1].id]) : null,
    };
  }

  @Get(':id')
  @Operation({
    id: 'getTrigger',
    summary: 'A trigger',
    description: "A trigger, without its secret or URL token. 404 when it is not the calling tenant's.",
    status: 200,
    schema: TriggerResponse,
    errors: [404],
  })
  async get(@TenantId() tenantId: string, @Param('id') id: string): Promise<TriggerResponse> {
    return presentTrigger(await this.find(tenantId, id));
  }

  /** What reached the trigger's URL and what triage made of it: the console's view of an input. */
  @Get(':id/deliveries')
  @Operation({
    id: 'listTriggerDeliveries',
    summary: "A trigger's webhook deliveries with triage's decision, newest first",
    description:
      "The deliveries stored for the trigger, newest first, each with triage's decision (null until decided: drop, notify, spawn_reactor or spawn_orchestrator), its reason and who decided (rule, model, cache, default), and the message it was admitted as. The delivered body is not included. Paged by `limit` (default 50, at most 200) and `cursor`; 404 when the trigger is not the calling tenant's.",
    status: 200,
    schema: TriggerDeliveryPageResponse,
    errors: [400, 404],
  })
  async deliveries(
    @TenantId() tenantId: string,
    @Param('id') id: string,
    @Query() q: PageQueryDto,
  ): Promise<TriggerDeliveryPageResponse> {
    const trigger = await this.find(tenantId, id);
    const before = decodeCursor<[string]>(q.cursor, ['string']);
    const limit = q.limit ?? 50;
    const rows = await this.triggers.deliveries(tenantId, trigger.id, { beforeId: before?.[0], limit });
    const page = rows.slice(0, limit);
    return {
      data: page.map(presentDelivery),
      nextCursor: rows.length > limit ? encodeCursor([page[page.length - 1].id]) : null,
    };
  }

  /** Revokes the capability: its URL answers 404 from now on. Revoking twice is harmless. */
  @Delete(':id')
  @Operation({
    id: 'revokeTrigger',
    summary: 'Revoke a trigger',
    description:
      'Revokes the trigger: its URL answers 404 from now on. Revoking twice is harmless and answers the trigger as it is.',
    status: 200,
    schema: TriggerResponse,
    errors: [404],
  })
  async revoke(@TenantId() tenantId: string, @Param('id') id: string): Promise<TriggerResponse> {
    const trigger = await this.find(tenantId, id);
    const row = await this.triggers.revoke(trigger);
    return presentTrigger(row);
  }

  /**
   * Rotates the credential (docs/adr/0019). Signed schemes get a new signing secret (Slack's is
   * given, as at creation); the previous one keeps verifying for `graceSeconds`. A `token` trigger
   * has no secret: its URL token is replaced, and the old URL stops working at once.
   */
  @Post(':id/rotate')
  @HttpCode(200)
  @Operation({
    id: 'rotateTrigger',
    summary: "Rotate a trigger's signing secret (or a token trigger's URL token)",
    description:
      "Rotates the trigger's credential (docs/adr/0019): a signed scheme gets a new signing secret, and the previous one keeps verifying for `graceSeconds`; a `token` trigger gets a new URL token and the old URL stops at once. The new secret or URL is in this response only; 409 for a revoked trigger.",
    status: 200,
    schema: IssuedTriggerResponse,
    errors: [...BODY_ERRORS, 404, 409],
  })
  async rotate(
    @TenantId() tenantId: string,
    @Actor() actor: string,
    @Param('id') id: string,
    @Body() body: RotateTriggerDto,
  ): Promise<IssuedTriggerResponse> {
    const trigger = await this.find(tenantId, id);
    if (trigger.revokedAt) throw new AppError('conflict', 'the trigger is revoked');
    const scheme = schemeOf(trigger);
    if ((scheme === 'slack') !== (body.signingSecret !== undefined)) {
      throw new AppError(
        'validation_failed',
        'signingSecret is required for slack triggers and refused for others',
        {
          issues: [
            { path: 'signingSecret', message: 'required for slack, refused otherwise', code: 'custom' },
          ],
        },
      );
    }
    if (scheme === 'token') {
      if (body.graceSeconds !== undefined) {
        throw new AppError('validation_failed', 'a token trigger has no secret to keep valid', {
          issues: [{ path: 'graceSeconds', message: 'refused for token triggers', code: 'custom' }],
        });
      }
      const { token, hash } = generateTriggerToken();
      const row = await this.triggers.replaceToken(trigger, hash, actor);
      return { ...presentTrigger(row), path: hookPath(token), signingSecret: null };
    }
    const generated = scheme === 'slack' ? null : generateSigningSecret(scheme);
    const grace = body.graceSeconds ?? defaultRotationGraceSeconds(scheme);
    const row = await this.triggers.replaceSecret(
      trigger,
      this.sealed(generated ?? body.signingSecret),
      grace > 0 ? new Date(Date.now() + grace * 1000) : null,
      actor,
    );
    return { ...presentTrigger(row), path: null, signingSecret: generated };
  }

  private async find(tenantId: string, id: string): Promise<Trigger> {
    const row = await this.triggers.find(tenantId, pathId(id, 'trigger'));
    if (!row) throw notFound('trigger');
    return row;
  }
}
