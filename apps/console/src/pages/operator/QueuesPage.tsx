import { useQuery } from '@tanstack/react-query';
import { createColumnHelper } from '@tanstack/react-table';
import { unwrap, useApi } from '../../api';
import { DataTable } from '../../components/DataTable';
import { ErrorBox, Loading, Page } from '../../components/ui';
import { formatWait } from '../../lib/operator-form';
import type { QueueStats } from './admin';

const col = createColumnHelper<QueueStats>();
const columns = [
  col.accessor('name', { header: 'Queue', cell: (c) => <span className="mono">{c.getValue()}</span> }),
  col.accessor('waiting', { header: 'Waiting' }),
  col.accessor('active', { header: 'Active' }),
  col.accessor('delayed', { header: 'Delayed' }),
  col.accessor('failed', {
    header: 'Failed',
    cell: (c) => <span className={c.getValue() > 0 ? 'error' : undefined}>{c.getValue()}</span>,
  }),
  col.accessor((q) => q.oldestWaitingMs ?? -1, {
    id: 'oldest',
    header: 'Oldest wait',
    cell: (c) => formatWait(c.row.original.oldestWaitingMs),
  }),
];

/** Each BullMQ queue's depth and its oldest job's wait; every job is on the queue board (Bull Board). */
export default function QueuesPage() {
  const api = useApi();
  const queues = useQuery({
    queryKey: ['operator', 'queues'],
    queryFn: () => unwrap(api.GET('/v1/admin/queues')),
    refetchInterval: 2_000,
  });
  // Bull Board is outside the console: the browser asks for ADMIN_TOKEN there (Basic, any user name).
  const board = queues.data?.boardUrl ?? '/admin/queues';
  return (
    <Page
      title="Queues"
      actions={
        <a href={board} target="_blank" rel="noopener noreferrer">
          Open Bull Board
        </a>
      }
    >
      {queues.isPending ? (
        <Loading what="Loading queues" />
      ) : queues.isError ? (
        <ErrorBox error={queues.error} />
      ) : (
        <DataTable
          data={queues.data.data}
          columns={columns}
          label="Queues"
          rowTestId={(q) => `queue-${q.name}`}
        />
      )}
      <p className="small muted">
        Bull Board asks for the operator's ADMIN_TOKEN as the password (any user name).
      </p>
    </Page>
  );
}
