import { useInfiniteQuery, useMutation, useQueryClient } from '@tanstack/react-query';
import { createColumnHelper } from '@tanstack/react-table';
import { useState, type FormEvent } from 'react';
import { Link } from 'react-router';
import { useApi, unwrap } from '../../api';
import { DataTable } from '../../components/DataTable';
import { ErrorBox, Loading, Money, Page, StatusBadge } from '../../components/ui';
import { useOpenTenantView, type OperatorTenant } from './admin';
import { OneTimeKey } from './OneTimeKey';

const col = createColumnHelper<OperatorTenant>();

/**
 * Every tenant with what an operator looks at first: turns running and queued, spend today against
 * its daily cap, pause, and its caps; from here its own page or its view (acting as the tenant).
 */
export default function TenantsPage() {
  const api = useApi();
  const open = useOpenTenantView();
  const tenants = useInfiniteQuery({
    queryKey: ['operator', 'tenants'],
    initialPageParam: undefined as string | undefined,
    queryFn: ({ pageParam }) =>
      unwrap(api.GET('/v1/admin/tenants', { params: { query: { limit: 50, cursor: pageParam } } })),
    getNextPageParam: (last) => last.nextCursor ?? undefined,
    // Counts and spend move while the operator watches.
    refetchInterval: 5_000,
  });

  const columns = [
    col.accessor('name', {
      header: 'Tenant',
      cell: (c) => <Link to={`/operator/tenants/${c.row.original.id}`}>{c.getValue()}</Link>,
    }),
    col.accessor('paused', {
      header: 'State',
      cell: (c) =>
        c.getValue() ? (
          <span title={c.row.original.pauseReason ?? undefined}>
            <StatusBadge status="paused" />
          </span>
        ) : (
          <StatusBadge status="active" />
        ),
    }),
    col.accessor((t) => t.turns.running, {
      id: 'running',
      header: 'Running',
      cell: (c) => <span data-testid="running">{c.getValue()}</span>,
    }),
    col.accessor((t) => t.turns.queued, {
      id: 'queued',
      header: 'Queued',
      cell: (c) => <span data-testid="queued">{c.getValue()}</span>,
    }),
    col.accessor((t) => t.turns.waiting, {
      id: 'waiting',
      header: 'Waiting',
      cell: (c) => <span data-testid="waiting">{c.getValue()}</span>,
    }),
    col.accessor((t) => Number(t.spentTodayUsd), {
      id: 'spend',
      header: 'Spend today',
      cell: (c) => <Money usd={c.row.original.spentTodayUsd} />,
    }),
    col.accessor('dailySpendLimitUsd', {
      header: 'Daily cap',
      cell: (c) =>
        c.getValue() === null ? <span className="muted">default</span> : <Money usd={c.getValue()} />,
    }),
    col.accessor('maxConcurrentTurns', {
      header: 'Concurrency cap',
      cell: (c) => c.getValue() ?? <span className="muted">default</span>,
    }),
    col.accessor('share', { header: 'Share' }),
    col.display({
      id: 'actions',
      header: 'Actions',
      cell: (c) => (
        <button
          type="button"
          aria-label={`Open tenant view of ${c.row.original.name}`}
          onClick={() => open(c.row.original)}
        >
          Open tenant view
        </button>
      ),
    }),
  ];

  const rows = tenants.data?.pages.flatMap((p) => p.data) ?? [];
  return (
    <Page title="Tenants">
      <CreateTenant />
      {tenants.isPending ? (
        <Loading what="Loading tenants" />
      ) : tenants.isError ? (
        <ErrorBox error={tenants.error} />
      ) : (
        <>
          <DataTable
            data={rows}
            columns={columns}
            label="Tenants"
            empty="No tenants yet: create the first one above."
            rowTestId={(t) => `tenant-${t.id}`}
          />
          {tenants.hasNextPage ? (
            <p>
              <button
                type="button"
                onClick={() => void tenants.fetchNextPage()}
                disabled={tenants.isFetchingNextPage}
              >
                {tenants.isFetchingNextPage ? 'Loading…' : 'Load more tenants'}
              </button>
            </p>
          ) : null}
        </>
      )}
    </Page>
  );
}

/** A new tenant with its first API key, which is shown once here and kept nowhere. */
function CreateTenant() {
  const api = useApi();
  const queries = useQueryClient();
  const [name, setName] = useState('');
  const [created, setCreated] = useState<{ name: string; key: string } | null>(null);
  const create = useMutation({
    mutationFn: (tenantName: string) => unwrap(api.POST('/v1/admin/tenants', { body: { name: tenantName } })),
    // The answer holds the key: dropped from the mutation cache as soon as nothing shows it.
    gcTime: 0,
    onSuccess: (res) => {
      setCreated({ name: res.tenant.name, key: res.apiKey.key });
      setName('');
      void queries.invalidateQueries({ queryKey: ['operator', 'tenants'] });
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (name.trim()) create.mutate(name.trim());
  };
  return (
    <>
      <form className="toolbar" onSubmit={submit} aria-label="Create a tenant">
        <div>
          <label htmlFor="new-tenant-name">New tenant name</label>
          <input
            id="new-tenant-name"
            value={name}
            maxLength={120}
            onChange={(e) => setName(e.target.value)}
          />
        </div>
        <button type="submit" className="primary" disabled={create.isPending || name.trim() === ''}>
          {create.isPending ? 'Creating…' : 'Create tenant'}
        </button>
      </form>
      {create.isError ? <ErrorBox error={create.error} /> : null}
      {created ? (
        <OneTimeKey
          label={`The first API key of ${created.name}`}
          secret={created.key}
          onDone={() => {
            setCreated(null);
            create.reset();
          }}
        />
      ) : null}
    </>
  );
}
