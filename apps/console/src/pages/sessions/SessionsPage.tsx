import { keepPreviousData, useMutation, useQuery } from '@tanstack/react-query';
import { createColumnHelper } from '@tanstack/react-table';
import { useMemo, useState, type FormEvent } from 'react';
import { Link, useNavigate } from 'react-router';
import type { components } from '@switchboard/client';
import { unwrap, useApi } from '../../api';
import { DataTable } from '../../components/DataTable';
import { ErrorBox, Loading, Money, Page, StatusBadge, Time } from '../../components/ui';
import { shortId } from './ids';
import { agentNames, useAgents } from './useAgents';
import './sessions.css';

type Session = components['schemas']['Session'];
type Row = Session & { agentName: string; activity: string };

const column = createColumnHelper<Row>();
const columns = [
  column.accessor('title', {
    header: 'Session',
    cell: (c) => (
      <Link to={`/sessions/${c.row.original.id}`}>
        {c.getValue() || `Session ${shortId(c.row.original.id)}`}
      </Link>
    ),
  }),
  column.accessor('agentName', { header: 'Agent' }),
  column.accessor('status', { header: 'Status', cell: (c) => <StatusBadge status={c.getValue()} /> }),
  column.accessor('activity', { header: 'Last activity', cell: (c) => <Time at={c.getValue()} /> }),
  column.accessor((s) => Number(s.usage.costUsd), {
    id: 'cost',
    header: 'Cost',
    cell: (c) => <Money usd={c.row.original.usage.costUsd} />,
  }),
];

/** The most sessions the list reads (pages of 200). */
const MAX_SESSIONS = 1_000;

/**
 * The tenant's sessions, live (read again every 2 s), filtered by the API (`agentId`, `status`) and
 * shown by last activity. GET /v1/sessions pages by id (oldest first), so the list reads every page
 * up to MAX_SESSIONS to show the most recently active at the top.
 */
export default function SessionsPage() {
  const api = useApi();
  const agents = useAgents();
  const [agentId, setAgentId] = useState('');
  const [status, setStatus] = useState<'' | 'active' | 'closed'>('');
  const sessions = useQuery({
    queryKey: ['sessions', agentId, status],
    queryFn: async ({ signal }) => {
      const all: Session[] = [];
      let cursor: string | undefined;
      do {
        const page = await unwrap(
          api.GET('/v1/sessions', {
            params: {
              query: {
                limit: 200,
                ...(cursor ? { cursor } : {}),
                ...(agentId ? { agentId } : {}),
                ...(status ? { status } : {}),
              },
            },
            signal,
          }),
        );
        all.push(...page.data);
        cursor = page.nextCursor ?? undefined;
      } while (cursor && all.length < MAX_SESSIONS);
      return { data: all, more: cursor !== undefined };
    },
    refetchInterval: 2_000,
    placeholderData: keepPreviousData,
  });

  const names = useMemo(() => agentNames(agents.data?.data), [agents.data]);
  const rows = useMemo<Row[]>(
    () =>
      (sessions.data?.data ?? [])
        .map((s) => ({ ...s, agentName: names.get(s.agentId) ?? s.agentId, activity: s.lastActivityAt }))
        .sort((a, b) => b.activity.localeCompare(a.activity)),
    [sessions.data, names],
  );

  return (
    <Page title="Sessions">
      <NewSession agents={agents.data?.data ?? []} />
      <div className="toolbar" role="group" aria-label="Filters">
        <div>
          <label htmlFor="filter-agent">Agent</label>
          <select id="filter-agent" value={agentId} onChange={(e) => setAgentId(e.target.value)}>
            <option value="">All agents</option>
            {(agents.data?.data ?? []).map((a) => (
              <option key={a.id} value={a.id}>
                {a.name}
              </option>
            ))}
          </select>
        </div>
        <div>
          <label htmlFor="filter-status">Status</label>
          <select
            id="filter-status"
            value={status}
            onChange={(e) => setStatus(e.target.value as '' | 'active' | 'closed')}
          >
            <option value="">Any status</option>
            <option value="active">active</option>
            <option value="closed">closed</option>
          </select>
        </div>
      </div>
      {sessions.error ? <ErrorBox error={sessions.error} /> : null}
      {sessions.isPending ? (
        <Loading what="Loading sessions" />
      ) : (
        <DataTable
          data={rows}
          columns={columns}
          label="Sessions"
          empty={agentId || status ? 'No session matches these filters.' : 'No sessions yet.'}
          rowTestId={(s) => `session-${s.id}`}
        />
      )}
      {sessions.data?.more ? (
        <p className="muted small">
          Showing the {MAX_SESSIONS} oldest sessions by id; narrow by agent or status.
        </p>
      ) : null}
    </Page>
  );
}

/** Choose an agent, start a session with it (POST /v1/sessions), open it. */
function NewSession({ agents }: { agents: { id: string; name: string }[] }) {
  const api = useApi();
  const navigate = useNavigate();
  const [agentId, setAgentId] = useState('');
  const create = useMutation({
    mutationFn: (id: string) => unwrap(api.POST('/v1/sessions', { body: { agentId: id } })),
    onSuccess: (s) => void navigate(`/sessions/${s.id}`),
  });
  const chosen = agentId || agents[0]?.id || '';
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (chosen) create.mutate(chosen);
  };
  return (
    <form className="toolbar panel" onSubmit={submit} aria-label="New session">
      <div>
        <label htmlFor="new-session-agent">Agent for a new session</label>
        <select id="new-session-agent" value={chosen} onChange={(e) => setAgentId(e.target.value)}>
          {agents.map((a) => (
            <option key={a.id} value={a.id}>
              {a.name}
            </option>
          ))}
        </select>
      </div>
      <button type="submit" className="primary" disabled={!chosen || create.isPending}>
        New session
      </button>
      {create.error ? <ErrorBox error={create.error} /> : null}
    </form>
  );
}
