import type pg from 'pg';
import { sealJson } from '@switchboard/database';

/** A trigger as the webhook ingress reads it. */
export interface IngressTrigger {
  id: string;
  tenantId: string;
  name: string;
  signatureScheme: string;
  signingSecret: string | null;
  previousSigningSecret: string | null;
  previousSecretExpiresAt: Date | null;
  revokedAt: Date | null;
  /** The trigger's tenant is paused (docs/adr/0030): its deliveries are refused, nothing stored. */
  tenantPaused: boolean;
  /** The trigger's agent, and whether it is stopped (docs/adr/0031): its deliveries are refused, nothing stored. */
  agentId: string;
  agentStopped: boolean;
}

/** A delivery as the ingress stores it, before triage decides on it. */
export interface NewDelivery {
  id: string;
  tenantId: string;
  triggerId: string;
  deliveryId: string;
  payload: unknown;
  verified: boolean;
}

/**
 * The webhook ingress's statements (docs/adr/0019): the trigger a URL token names, and the delivery
 * stored once per (trigger, delivery id). Plain pg on this path, not Prisma: a Prisma model query
 * costs ~3 ms of CPU (docs/adr/0002).
 */
export class DeliveriesRepository {
  constructor(private readonly pool: pg.Pool) {}

  /** The trigger whose URL token has this hash, revoked or not, with its tenant's pause in the same read. */
  async triggerByTokenHash(tokenHash: string): Promise<IngressTrigger | undefined> {
    const { rows } = await this.pool.query<IngressTrigger>(
      `SELECT tr.id, tr.tenant_id AS "tenantId", tr.name, tr.signature_scheme AS "signatureScheme",
         tr.signing_secret AS "signingSecret", tr.previous_signing_secret AS "previousSigningSecret",
         tr.previous_secret_expires_at AS "previousSecretExpiresAt", tr.revoked_at AS "revokedAt",
         coalesce(tn.kill_switch, false) AS "tenantPaused", tr.agent_id AS "agentId",
         coalesce(ag.lifecycle = 'stopped', false) AS "agentStopped"
       FROM triggers tr LEFT JOIN tenants tn ON tn.id = tr.tenant_id
         LEFT JOIN agents ag ON ag.id = tr.agent_id AND ag.tenant_id = tr.tenant_id
       WHERE tr.token_hash = $1`,
      [tokenHash],
    );
    return rows[0];
  }

  /**
   * Stores the delivery; false when one with its (trigger, delivery id) is stored already. The
   * unique index makes a replay, even a concurrent one, write nothing.
   */
  async record(d: NewDelivery): Promise<boolean> {
    // The delivered body sealed for an encrypting tenant (docs/adr/0067); source, event type and the
    // kept headers stay plain. Prisma's reads (triage, the deliveries listing) open it.
    const payload =
      d.payload && typeof d.payload === 'object' && 'body' in d.payload
        ? { ...d.payload, body: await sealJson(d.tenantId, d.payload.body) }
        : d.payload;
    // The trigger's delivery tracking (seed 002, docs/adr/0060) in the same statement: counted only
    // when the delivery was stored, so a replay counts nothing.
    const inserted = await this.pool.query<{ id: string }>(
      `WITH ins AS (
         INSERT INTO trigger_deliveries (id, tenant_id, trigger_id, delivery_id, payload, verified)
         VALUES ($1, $2, $3, $4, $5::jsonb, $6)
         ON CONFLICT (trigger_id, delivery_id) DO NOTHING
         RETURNING id, created_at
       ), counted AS (
         UPDATE triggers SET delivery_count = delivery_count + 1,
           last_delivery_at = greatest(last_delivery_at, (SELECT created_at FROM ins))
         WHERE id = $3 AND EXISTS (SELECT 1 FROM ins)
       )
       SELECT id FROM ins`,
      [d.id, d.tenantId, d.triggerId, d.deliveryId, JSON.stringify(payload), d.verified],
    );
    return inserted.rowCount === 1;
  }

  /** The stored delivery with this (trigger, delivery id), and triage's decision on it so far. */
  async find(
    triggerId: string,
    deliveryId: string,
  ): Promise<{ id: string; decision: string | null } | undefined> {
    const { rows } = await this.pool.query<{ id: string; decision: string | null }>(
      'SELECT id, decision FROM trigger_deliveries WHERE trigger_id = $1 AND delivery_id = $2',
      [triggerId, deliveryId],
    );
    return rows[0];
  }
}
