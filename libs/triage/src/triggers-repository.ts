import type { Trigger, TriggerDelivery } from '@prisma/client';
import { newId } from '@switchboard/contracts';
import type { Db, Prisma, Tx } from '@switchboard/database';
import { recordAudit } from '@switchboard/store';

/** A new trigger's columns (its token hashed, its signing secret already sealed). */
export interface NewTrigger {
  tenantId: string;
  agentId: string;
  name: string;
  tokenHash: string;
  signatureScheme: string;
  signingSecret: string | null;
  deliveryMode: string;
  sessionId: string | null;
  rules: Prisma.InputJsonValue;
}

/** A tenant's triggers (docs/adr/0019): the webhook ingress's own lookup is `DeliveriesRepository`'s (`WebhookIngress`). */
export class TriggersRepository {
  constructor(private readonly db: Db) {}

  create(t: NewTrigger): Promise<Trigger> {
    return this.db.trigger.create({ data: { id: newId(), ...t } });
  }

  /** One page by id (time-ordered), `limit + 1` rows: the caller tells from the extra one whether more follow. */
  page(
    tenantId: string,
    o: { afterId?: string; limit: number; includeRevoked: boolean; agentIds?: string[] },
  ): Promise<Trigger[]> {
    return this.db.trigger.findMany({
      where: {
        tenantId,
        ...(o.agentIds ? { agentId: { in: o.agentIds } } : {}),
        ...(o.includeRevoked ? {} : { revokedAt: null }),
        ...(o.afterId !== undefined ? { id: { gt: o.afterId } } : {}),
      },
      orderBy: { id: 'asc' },
      take: o.limit + 1,
    });
  }

  find(tenantId: string, id: string): Promise<Trigger | null> {
    return this.db.trigger.findFirst({ where: { id, tenantId } });
  }

  /**
   * One page of a trigger's deliveries, newest first (ids are time-ordered), `limit + 1` rows: the
   * caller tells from the extra one whether more follow. Tenant-scoped as well as by trigger.
   */
  deliveries(
    tenantId: string,
    triggerId: string,
    o: { beforeId?: string; limit: number },
  ): Promise<TriggerDelivery[]> {
    return this.db.triggerDelivery.findMany({
      where: {
        tenantId,
        triggerId,
        ...(o.beforeId !== undefined ? { id: { lt: o.beforeId } } : {}),
      },
      orderBy: { id: 'desc' },
      take: o.limit + 1,
    });
  }

  /** Revokes the trigger; a revoked one is returned as it is. */
  revoke(trigger: Trigger): Promise<Trigger> {
    if (trigger.revokedAt) return Promise.resolve(trigger);
    return this.db.trigger.update({ where: { id: trigger.id }, data: { revokedAt: new Date() } });
  }

  /**
   * A new URL token (its hash): the old one stops working at once. The `trigger.secret_rotated`
   * entry commits with it (docs/adr/0030), naming what was replaced, never the token or its hash.
   */
  replaceToken(trigger: Trigger, tokenHash: string, actor: string): Promise<Trigger> {
    return this.db.$transaction(async (tx) => {
      const row = await tx.trigger.update({ where: { id: trigger.id }, data: { tokenHash } });
      await rotated(tx, row, actor, { replaced: 'url_token' });
      return row;
    });
  }

  /**
   * A new signing secret (sealed); the current one stays valid until `previousExpiresAt`, kept as
   * stored (sealed or not: it is only ever read back through the same box), or not at all without
   * one. The `trigger.secret_rotated` entry commits with it, without either secret.
   */
  replaceSecret(
    trigger: Trigger,
    signingSecret: string | null,
    previousExpiresAt: Date | null,
    actor: string,
  ): Promise<Trigger> {
    return this.db.$transaction(async (tx) => {
      const row = await tx.trigger.update({
        where: { id: trigger.id },
        data: {
          signingSecret,
          previousSigningSecret: previousExpiresAt ? trigger.signingSecret : null,
          previousSecretExpiresAt: previousExpiresAt,
        },
      });
      await rotated(tx, row, actor, {
        replaced: 'signing_secret',
        previousValidUntil: previousExpiresAt?.toISOString() ?? null,
      });
      return row;
    });
  }
}

/** The audit entry of a rotation. */
function rotated(tx: Tx, t: Trigger, actor: string, details: Record<string, unknown>): Promise<void> {
  return recordAudit(tx, {
    tenantId: t.tenantId,
    actor,
    action: 'trigger.secret_rotated',
    targetType: 'trigger',
    targetId: t.id,
    details: { name: t.name, scheme: t.signatureScheme, ...details },
  });
}
