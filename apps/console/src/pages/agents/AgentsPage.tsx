import { createColumnHelper } from '@tanstack/react-table';
import { Link } from 'react-router';
import { DataTable } from '../../components/DataTable';
import { ErrorBox, Loading, Page, StatusBadge, Time } from '../../components/ui';
import { useAgents, type AgentListItem } from './queries';
import './agents.css';

const col = createColumnHelper<AgentListItem>();

const columns = [
  col.accessor('name', {
    header: 'Name',
    cell: (c) => <Link to={`/agents/${c.row.original.id}`}>{c.getValue()}</Link>,
  }),
  col.accessor((a) => `${a.archetype} / ${a.tier}`, { id: 'archetype', header: 'Archetype / tier' }),
  col.accessor('model', { header: 'Model', cell: (c) => <span className="mono">{c.getValue()}</span> }),
  // The list answers each agent's lifecycle (read for the whole page in one statement).
  col.accessor((a) => a.lifecycle.state, {
    id: 'lifecycle',
    header: 'Status',
    cell: (c) => (
      <span title={c.row.original.lifecycle.why}>
        <StatusBadge status={c.getValue()} />
      </span>
    ),
  }),
  col.accessor((a) => a.tools.length, { id: 'tools', header: 'Tools' }),
  col.accessor('updatedAt', { header: 'Updated', cell: (c) => <Time at={c.getValue()} /> }),
];

export default function AgentsPage() {
  const agents = useAgents();
  return (
    <Page
      title="Agents"
      actions={
        <Link className="button primary" to="/agents/new">
          New agent
        </Link>
      }
    >
      {agents.isPending ? (
        <Loading what="Loading agents" />
      ) : agents.isError ? (
        <ErrorBox error={agents.error} />
      ) : (
        <>
          <DataTable
            data={agents.data.data}
            columns={columns}
            label="Agents"
            empty="No agents yet: create one with “New agent”."
            rowTestId={(a) => `agent-${a.name}`}
          />
          {agents.data.nextCursor ? (
            <p className="muted small">Showing the first {agents.data.data.length} agents.</p>
          ) : null}
        </>
      )}
    </Page>
  );
}
