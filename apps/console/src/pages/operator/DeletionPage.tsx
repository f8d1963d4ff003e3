import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useParams } from 'react-router';
import { unwrap, useApi } from '../../api';
import { ErrorBox, Loading, Page, StatusBadge, Time } from '../../components/ui';
import { countLines } from '../../lib/tenant-data';
import { AuditTable } from './AuditTable';

const done = (status: string | undefined) => status === 'completed' || status === 'failed';

/**
 * One tenant deletion: followed while it runs (status, stage, rows so far), then its receipt — the
 * counts per table, Redis keys, jobs, originals, the data key — and the `tenant.deleted` audit entry.
 */
export default function DeletionPage() {
  const { id = '' } = useParams();
  const api = useApi();
  const queries = useQueryClient();
  const deletion = useQuery({
    queryKey: ['operator', 'deletion', id],
    queryFn: () => unwrap(api.GET('/v1/admin/tenant-deletions/{id}', { params: { path: { id } } })),
    refetchInterval: (q) => (done(q.state.data?.status) ? false : 1_000),
  });
  const completed = deletion.data?.status === 'completed';
  const receipt = useQuery({
    queryKey: ['operator', 'deletion', id, 'receipt'],
    enabled: completed,
    queryFn: async () => {
      const page = await unwrap(
        api.GET('/v1/admin/audit-events', { params: { query: { action: 'tenant.deleted', limit: 200 } } }),
      );
      return page.data.filter((e) => e.details.deletionId === id);
    },
  });
  const retry = useMutation({
    mutationFn: (tenantId: string) =>
      unwrap(api.DELETE('/v1/admin/tenants/{id}', { params: { path: { id: tenantId } } })),
    onSuccess: () => void queries.invalidateQueries({ queryKey: ['operator'] }),
  });
  if (deletion.isPending) return <Loading what="Loading the deletion" />;
  if (deletion.isError) {
    return (
      <Page title="Tenant deletion">
        <ErrorBox error={deletion.error} />
        <Link to="/operator/deletions">All deletions</Link>
      </Page>
    );
  }
  const d = deletion.data;
  const { total, tables } = countLines(d.counts);
  return (
    <Page title={`Deletion of ${d.tenantName}`} actions={<StatusBadge status={d.status} />}>
      <p className="small muted">
        <Link to="/operator/deletions">All deletions</Link> · tenant{' '}
        <span className="mono">{d.tenantId}</span>
      </p>
      <div className="grid">
        <section className="panel" aria-labelledby="progress-title">
          <h2 id="progress-title">{completed ? 'Receipt' : 'Progress'}</h2>
          <dl className="facts">
            <dt>Status</dt>
            <dd data-testid="deletion-status">{d.status}</dd>
            <dt>Stage</dt>
            <dd className="mono">{d.stage}</dd>
            <dt>Rows deleted</dt>
            <dd data-testid="deletion-total">{total}</dd>
            <dt>Redis keys</dt>
            <dd data-testid="deletion-redis">{d.redisKeys}</dd>
            <dt>Queued jobs</dt>
            <dd>{d.jobs}</dd>
            <dt>Stored originals</dt>
            <dd>{d.originals}</dd>
            <dt>Data key destroyed</dt>
            <dd data-testid="deletion-key">{d.keyDestroyed ? 'yes' : 'no'}</dd>
            <dt>Requested</dt>
            <dd>
              <Time at={d.requestedAt} />
            </dd>
            <dt>Started</dt>
            <dd>
              <Time at={d.startedAt} />
            </dd>
            <dt>Completed</dt>
            <dd>
              <Time at={d.completedAt} />
            </dd>
          </dl>
          {!done(d.status) ? (
            <p role="status" className="small muted">
              Deleting in batches; this page follows it.
            </p>
          ) : null}
          {d.status === 'failed' ? (
            <>
              <p className="error" role="alert">
                The deletion failed: {d.error ?? 'no reason recorded'}. Deleting again picks up what is left.
              </p>
              <button
                type="button"
                className="danger"
                disabled={retry.isPending}
                onClick={() => retry.mutate(d.tenantId)}
              >
                Delete again
              </button>
              {retry.isError ? <ErrorBox error={retry.error} /> : null}
            </>
          ) : null}
        </section>
        <section className="panel" aria-labelledby="tables-title">
          <h2 id="tables-title">Rows per table</h2>
          {tables.length === 0 ? (
            <p className="muted">None yet.</p>
          ) : (
            <table aria-label="Rows deleted per table">
              <thead>
                <tr>
                  <th scope="col">Table</th>
                  <th scope="col">Rows</th>
                </tr>
              </thead>
              <tbody>
                {tables.map(([table, n]) => (
                  <tr key={table} data-testid={`deleted-${table}`}>
                    <td className="mono">{table}</td>
                    <td>{n}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </section>
      </div>
      {completed ? (
        <section className="panel" aria-labelledby="receipt-title">
          <h2 id="receipt-title">Audit receipt</h2>
          {receipt.isPending ? (
            <Loading what="Loading the receipt" />
          ) : receipt.isError ? (
            <ErrorBox error={receipt.error} />
          ) : (
            <AuditTable events={receipt.data} label="Deletion receipt" showTenant={false} summaryOnly />
          )}
          <p>
            <Link to="/operator/audit?action=tenant.deleted">Every deletion receipt in the audit log</Link>
          </p>
        </section>
      ) : null}
    </Page>
  );
}
