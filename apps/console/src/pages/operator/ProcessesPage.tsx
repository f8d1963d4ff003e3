import { useQuery } from '@tanstack/react-query';
import { createColumnHelper } from '@tanstack/react-table';
import { unwrap, useApi } from '../../api';
import { DataTable } from '../../components/DataTable';
import { ErrorBox, Loading, Page, Time } from '../../components/ui';
import type { HarnessProcess } from './admin';

const col = createColumnHelper<HarnessProcess>();
const columns = [
  col.accessor('hostname', {
    header: 'Process',
    cell: (c) => (
      <span className="mono" title={c.row.original.processId}>
        {c.getValue()}:{c.row.original.pid}
      </span>
    ),
  }),
  col.accessor('turnsInFlight', { header: 'Turns in flight' }),
  col.accessor('permitsInUse', {
    header: 'Permits (in use / limit)',
    cell: (c) => `${c.getValue()} / ${c.row.original.permitLimit}`,
  }),
  col.accessor('maxConcurrency', { header: 'Max concurrency' }),
  col.accessor('startedAt', { header: 'Started', cell: (c) => <Time at={c.getValue()} /> }),
  col.accessor('lastSeenAt', { header: 'Last heartbeat', cell: (c) => <Time at={c.getValue()} /> }),
];

/**
 * The live harness worker processes from their heartbeats: turns each runs, and its adaptive
 * permits (docs/adr/0029) against HARNESS_CONCURRENCY. A process that stops beating drops out.
 */
export default function ProcessesPage() {
  const api = useApi();
  const processes = useQuery({
    queryKey: ['operator', 'processes'],
    queryFn: () => unwrap(api.GET('/v1/admin/processes')),
    refetchInterval: 2_000,
  });
  const rows = processes.data?.data ?? [];
  return (
    <Page title="Harness processes">
      {processes.isPending ? (
        <Loading what="Loading processes" />
      ) : processes.isError ? (
        <ErrorBox error={processes.error} />
      ) : (
        <>
          <p data-testid="process-totals">
            {rows.length} {rows.length === 1 ? 'process' : 'processes'},{' '}
            {rows.reduce((n, p) => n + p.turnsInFlight, 0)} turns in flight
          </p>
          <DataTable
            data={rows}
            columns={columns}
            label="Harness processes"
            empty="No harness worker is running (none has sent a heartbeat lately)."
            rowTestId={(p) => `process-${p.processId}`}
          />
        </>
      )}
    </Page>
  );
}
