import { useInfiniteQuery, useQuery } from '@tanstack/react-query';
import { useSearchParams } from 'react-router';
import { unwrap, useApi } from '../../api';
import { ErrorBox, Loading, Page } from '../../components/ui';
import { AUDIT_ACTIONS, type AuditAction } from './admin';
import { AuditTable } from './AuditTable';

/**
 * The audit log of every tenant, newest first, narrowed by tenant and action (the filters the API
 * has). The filters live in the URL, so a filtered view can be linked (a tenant's page links here).
 */
export default function AuditPage() {
  const api = useApi();
  const [params, setParams] = useSearchParams();
  const tenantId = params.get('tenantId') || undefined;
  const rawAction = params.get('action');
  const action = AUDIT_ACTIONS.includes(rawAction as AuditAction) ? (rawAction as AuditAction) : undefined;

  // The tenant filter offers the first page of tenants by name; a linked id outside it still filters.
  const tenants = useQuery({
    queryKey: ['operator', 'tenants', 'names'],
    queryFn: () => unwrap(api.GET('/v1/admin/tenants', { params: { query: { limit: 200 } } })),
  });
  const events = useInfiniteQuery({
    queryKey: ['operator', 'audit', tenantId ?? null, action ?? null],
    initialPageParam: undefined as string | undefined,
    queryFn: ({ pageParam }) =>
      unwrap(
        api.GET('/v1/admin/audit-events', {
          params: { query: { tenantId, action, limit: 50, cursor: pageParam } },
        }),
      ),
    getNextPageParam: (last) => last.nextCursor ?? undefined,
  });

  const setFilter = (name: string, value: string) => {
    const next = new URLSearchParams(params);
    if (value) next.set(name, value);
    else next.delete(name);
    setParams(next, { replace: true });
  };
  const options = tenants.data?.data ?? [];
  const rows = events.data?.pages.flatMap((p) => p.data) ?? [];

  return (
    <Page title="Audit log">
      <form className="toolbar" aria-label="Filter the audit log" onSubmit={(e) => e.preventDefault()}>
        <div>
          <label htmlFor="audit-tenant">Tenant</label>
          <select
            id="audit-tenant"
            value={tenantId ?? ''}
            onChange={(e) => setFilter('tenantId', e.target.value)}
          >
            <option value="">All tenants</option>
            {tenantId && !options.some((t) => t.id === tenantId) ? (
              <option value={tenantId}>{tenantId}</option>
            ) : null}
            {options.map((t) => (
              <option key={t.id} value={t.id}>
                {t.name}
              </option>
            ))}
          </select>
        </div>
        <div>
          <label htmlFor="audit-action">Action</label>
          <select
            id="audit-action"
            value={action ?? ''}
            onChange={(e) => setFilter('action', e.target.value)}
          >
            <option value="">All actions</option>
            {AUDIT_ACTIONS.map((a) => (
              <option key={a} value={a}>
                {a}
              </option>
            ))}
          </select>
        </div>
      </form>
      {events.isPending ? (
        <Loading what="Loading the audit log" />
      ) : events.isError ? (
        <ErrorBox error={events.error} />
      ) : (
        <>
          <AuditTable
            events={rows}
            label="Audit log"
            tenantNames={new Map(options.map((t) => [t.id, t.name]))}
          />
          {events.hasNextPage ? (
            <p>
              <button
                type="button"
                onClick={() => void events.fetchNextPage()}
                disabled={events.isFetchingNextPage}
              >
                {events.isFetchingNextPage ? 'Loading…' : 'Load older entries'}
              </button>
            </p>
          ) : null}
        </>
      )}
    </Page>
  );
}
