import type { components } from '@switchboard/client';
import { useQueryClient } from '@tanstack/react-query';
import { useNavigate } from 'react-router';
import { useApi } from '../../api';
import { useAuth } from '../../auth';

/** The operator's view of the admin API (ADMIN_TOKEN): shared types and calls of pages/operator. */
export type OperatorTenant = components['schemas']['OperatorTenant'];
export type AuditEvent = components['schemas']['AuditEvent'];
export type AuditAction = AuditEvent['action'];
export type ApiKey = components['schemas']['ApiKey'];

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

/*
 * Routes being added on wt-platform, typed here by their contracts until the generated client
 * (libs/client/src/openapi.ts) has them; openapi-fetch is the same at run time either way.
 */
export interface QueueStats {
  name: string;
  waiting: number;
  active: number;
  delayed: number;
  failed: number;
  oldestWaitingMs: number | null;
}
export interface QueueStatsList {
  data: QueueStats[];
  boardUrl: string;
}
export interface HarnessProcess {
  processId: string;
  hostname: string;
  pid: number;
  startedAt: string;
  lastSeenAt: string;
  turnsInFlight: number;
  permitsInUse: number;
  permitLimit: number;
  maxConcurrency: number;
}
export interface ApiKeyList {
  data: ApiKey[];
  nextCursor?: string | null;
}
export type CreatedApiKey = ApiKey & { key: string };

type Answer = Promise<{ data?: unknown; error?: unknown; response: Response }>;
interface Init {
  params?: { path?: Record<string, string>; query?: Record<string, string | number | undefined> };
  body?: unknown;
}
interface LooseApi {
  GET(url: string, init?: Init): Answer;
  POST(url: string, init?: Init): Answer;
  DELETE(url: string, init?: Init): Answer;
}

/** The admin API with the routes above, before the generated client knows them. */
export function usePendingAdminApi(): LooseApi {
  return useApi() as unknown as LooseApi;
}
