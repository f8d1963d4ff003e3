import { useInfiniteQuery } from '@tanstack/react-query';
import { createColumnHelper } from '@tanstack/react-table';
import { Link } from 'react-router';
import { unwrap, useApi } from '../../api';
import { DataTable } from '../../components/DataTable';
import { ErrorBox, Loading, Page, StatusBadge, Time } from '../../components/ui';
import { countLines } from '../../lib/tenant-data';
import type { TenantDeletion } from './admin';

const col = createColumnHelper<TenantDeletion>();
const columns = [
  col.accessor('tenantName', {
    header: 'Tenant',
    cell: (c) => <Link to={`/operator/deletions/${c.row.original.id}`}>{c.getValue()}</Link>,
  }),
  col.accessor('status', {
    header: 'Status',
    cell: (c) => (
      <>
        <StatusBadge status={c.getValue()} />
        {c.getValue() === 'running' ? <span className="small muted"> {c.row.original.stage}</span> : null}
      </>
    ),
  }),
  col.accessor((d) => countLines(d.counts).total, {
    id: 'rows',
    header: 'Rows deleted',
    cell: (c) => <span data-testid="deletion-rows">{c.getValue()}</span>,
  }),
  col.accessor('redisKeys', { header: 'Redis keys' }),
  col.accessor('jobs', { header: 'Jobs' }),
  col.accessor('originals', { header: 'Originals' }),
  col.accessor('keyDestroyed', { header: 'Data key destroyed', cell: (c) => (c.getValue() ? 'yes' : 'no') }),
  col.accessor('requestedAt', { header: 'Requested', cell: (c) => <Time at={c.getValue()} /> }),
  col.accessor('completedAt', { header: 'Completed', cell: (c) => <Time at={c.getValue()} /> }),
];

/** Every tenant deletion, newest first, with what it deleted (kept after the tenant is gone). */
export default function DeletionsPage() {
  const api = useApi();
  const deletions = useInfiniteQuery({
    queryKey: ['operator', 'deletions'],
    initialPageParam: undefined as string | undefined,
    queryFn: ({ pageParam }) =>
      unwrap(api.GET('/v1/admin/tenant-deletions', { params: { query: { limit: 50, cursor: pageParam } } })),
    getNextPageParam: (last) => last.nextCursor ?? undefined,
    // A running deletion's counts grow: the list follows them.
    refetchInterval: (q) =>
      q.state.data?.pages.some((p) => p.data.some((d) => d.status === 'queued' || d.status === 'running'))
        ? 2_000
        : false,
  });
  const rows = deletions.data?.pages.flatMap((p) => p.data) ?? [];
  return (
    <Page title="Tenant deletions">
      <p className="small muted">
        Each deletion's receipt is also in the audit log as{' '}
        <Link to="/operator/audit?action=tenant.deleted">tenant.deleted</Link>.
      </p>
      {deletions.isPending ? (
        <Loading what="Loading deletions" />
      ) : deletions.isError ? (
        <ErrorBox error={deletions.error} />
      ) : (
        <>
          <DataTable
            data={rows}
            columns={columns}
            label="Tenant deletions"
            empty="No tenant was deleted."
            rowTestId={(d) => `deletion-${d.tenantId}`}
          />
          {deletions.hasNextPage ? (
            <p>
              <button
                type="button"
                onClick={() => void deletions.fetchNextPage()}
                disabled={deletions.isFetchingNextPage}
              >
                {deletions.isFetchingNextPage ? 'Loading…' : 'Load older deletions'}
              </button>
            </p>
          ) : null}
        </>
      )}
    </Page>
  );
}
