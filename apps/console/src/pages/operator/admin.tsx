import type { components } from '@switchboard/client';
import { useQueryClient } from '@tanstack/react-query';
import { useNavigate } from 'react-router';
import { useAuth } from '../../auth';

/** The operator's view of the admin API (ADMIN_TOKEN): shared types and calls of pages/operator. */
export type OperatorTenant = components['schemas']['OperatorTenant'];
export type AuditEvent = components['schemas']['AuditEvent'];
export type AuditAction = AuditEvent['action'];
export type ApiKey = components['schemas']['ApiKey'];
export type QueueStats = components['schemas']['QueueStats'];
export type HarnessProcess = components['schemas']['HarnessProcess'];
export type TenantDeletion = components['schemas']['TenantDeletion'];
export type DataKeyList = components['schemas']['DataKeyList'];
export type EncryptionMode = DataKeyList['mode'];

export const AUDIT_ACTIONS: AuditAction[] = [
  'tenant.created',
  'tenant.settings_changed',
  'tenant.limits_changed',
  'tenant.paused',
  'tenant.resumed',
  'api_key.created',
  'api_key.revoked',
  'trigger.secret_rotated',
  'approval.decided',
  'turn.cancelled',
  'tenant.exported',
  'tenant.data_key_rotated',
  'tenant.retention_purged',
  'tenant.deletion_requested',
  'tenant.deleted',
];

/** The rate-limit buckets an operator may override (requests per minute; 0 = unlimited). */
export const RATE_BUCKETS = [
  ['admission', 'Admission'],
  ['reads', 'Reads'],
  ['writes', 'Writes'],
  ['webhooks', 'Webhooks'],
  ['admissionPerKey', 'Admission per key'],
  ['readsPerKey', 'Reads per key'],
  ['writesPerKey', 'Writes per key'],
] as const;
export type RateBucket = (typeof RATE_BUCKETS)[number][0];

/**
 * The operator opens a tenant's view: the tenant's routes then carry `X-Switchboard-Tenant` with
 * the admin token (api.tsx). The cache is cleared so no operator-wide answer shows under the
 * tenant's pages (and back).
 */
export function useOpenTenantView(): (tenant: { id: string; name: string }) => void {
  const { actAs } = useAuth();
  const queries = useQueryClient();
  const navigate = useNavigate();
  return (tenant) => {
    queries.clear();
    actAs({ id: tenant.id, name: tenant.name });
    void navigate('/sessions');
  };
}
