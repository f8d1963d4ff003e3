import type { components } from '@switchboard/client';
import { useQuery } from '@tanstack/react-query';
import { createColumnHelper } from '@tanstack/react-table';
import { useState } from 'react';
import { Link } from 'react-router';
import { unwrap, useApi } from '../../api';
import { DataTable } from '../../components/DataTable';
import { ErrorBox, Loading, Money, Page, StatusBadge, Time } from '../../components/ui';
import { useAgentNames } from '../agents/queries';
import '../agents/agents.css';

type Schedule = components['schemas']['Schedule'];
type Trigger = components['schemas']['Trigger'];
type Delivery = components['schemas']['TriggerDelivery'];

const AgentLink = ({ id, names }: { id: string; names: Map<string, string> }) => (
  <Link to={`/agents/${id}`}>{names.get(id) ?? id.slice(0, 8)}</Link>
);

/** /inputs: what starts turns besides messages: schedules, webhook triggers and their deliveries. */
export default function InputsPage() {
  const [trigger, setTrigger] = useState<Trigger | null>(null);
  return (
    <Page title="Inputs">
      <Schedules />
      <Triggers selected={trigger?.id} onSelect={setTrigger} />
      {trigger ? <Deliveries trigger={trigger} /> : null}
    </Page>
  );
}

function Schedules() {
  const api = useApi();
  const names = useAgentNames();
  const schedules = useQuery({
    queryKey: ['schedules'],
    refetchInterval: 10_000,
    queryFn: () => unwrap(api.GET('/v1/schedules', { params: { query: { limit: 200 } } })),
  });
  const col = createColumnHelper<Schedule>();
  const columns = [
    col.accessor('agentId', { header: 'Agent', cell: (c) => <AgentLink id={c.getValue()} names={names} /> }),
    col.accessor('cron', { header: 'Cron', cell: (c) => <span className="mono">{c.getValue()}</span> }),
    col.accessor('timezone', { header: 'Time zone' }),
    col.accessor('nextRunAt', { header: 'Next fire', cell: (c) => <Time at={c.getValue()} /> }),
    col.accessor('lastRunAt', { header: 'Last fire', cell: (c) => <Time at={c.getValue()} /> }),
    col.accessor('enabled', {
      header: 'Enabled',
      cell: (c) => <StatusBadge status={c.getValue() ? 'enabled' : 'disabled'} />,
    }),
    col.accessor((s) => s.payload.text ?? '', {
      id: 'text',
      header: 'Message',
      cell: (c) => <span className="small">{c.getValue()}</span>,
    }),
  ];
  return (
    <section className="panel" aria-labelledby="schedules-h">
      <h2 id="schedules-h">Schedules</h2>
      {schedules.isPending ? (
        <Loading what="Loading schedules" />
      ) : schedules.isError ? (
        <ErrorBox error={schedules.error} />
      ) : (
        <DataTable
          data={schedules.data.data}
          columns={columns}
          label="Schedules"
          empty="No schedules."
          rowTestId={(s) => `schedule-${s.id}`}
        />
      )}
    </section>
  );
}

function Triggers({ selected, onSelect }: { selected?: string; onSelect: (t: Trigger) => void }) {
  const api = useApi();
  const names = useAgentNames();
  const triggers = useQuery({
    queryKey: ['triggers'],
    queryFn: () => unwrap(api.GET('/v1/triggers', { params: { query: { limit: 200 } } })),
  });
  const col = createColumnHelper<Trigger>();
  const columns = [
    col.accessor('name', { header: 'Name' }),
    col.accessor('agentId', { header: 'Agent', cell: (c) => <AgentLink id={c.getValue()} names={names} /> }),
    col.accessor('scheme', { header: 'Scheme' }),
    col.accessor('deliveryMode', { header: 'Delivery', cell: (c) => c.getValue().replaceAll('_', ' ') }),
    // The URL's token is the trigger's credential: the API shows it once, when issued, never here.
    col.display({
      id: 'url',
      header: 'Ingress URL',
      cell: () => <span className="mono small">/v1/hooks/… (token shown once, at creation)</span>,
    }),
    col.accessor('createdAt', { header: 'Created', cell: (c) => <Time at={c.getValue()} /> }),
    col.display({
      id: 'deliveries',
      header: 'Deliveries',
      cell: (c) => (
        <button
          type="button"
          aria-pressed={selected === c.row.original.id}
          aria-label={`Deliveries of ${c.row.original.name}`}
          onClick={() => onSelect(c.row.original)}
        >
          Deliveries
        </button>
      ),
    }),
  ];
  return (
    <section className="panel" aria-labelledby="triggers-h">
      <h2 id="triggers-h">Triggers</h2>
      {triggers.isPending ? (
        <Loading what="Loading triggers" />
      ) : triggers.isError ? (
        <ErrorBox error={triggers.error} />
      ) : (
        <DataTable data={triggers.data.data} columns={columns} label="Triggers" empty="No triggers." />
      )}
    </section>
  );
}

function Deliveries({ trigger }: { trigger: Trigger }) {
  const api = useApi();
  const deliveries = useQuery({
    queryKey: ['deliveries', trigger.id],
    refetchInterval: 3000,
    queryFn: () =>
      unwrap(
        api.GET('/v1/triggers/{id}/deliveries', {
          params: { path: { id: trigger.id }, query: { limit: 100 } },
        }),
      ),
  });
  const col = createColumnHelper<Delivery>();
  const columns = [
    col.accessor('createdAt', { header: 'Received', cell: (c) => <Time at={c.getValue()} /> }),
    col.accessor((d) => d.eventType ?? '', { id: 'event', header: 'Event' }),
    col.accessor('verified', {
      header: 'Signature',
      cell: (c) => (c.getValue() ? 'verified' : 'unverified'),
    }),
    col.accessor((d) => d.decision ?? 'pending', {
      id: 'decision',
      header: 'Triage decision',
      cell: (c) => <StatusBadge status={c.getValue()} />,
    }),
    // Rule reasons are the tenant's; a model's reason is model text: plain text either way.
    col.accessor((d) => d.reason ?? '', { id: 'reason', header: 'Reason' }),
    col.accessor((d) => [d.decisionSource, d.decisionModel].filter(Boolean).join(' · '), {
      id: 'by',
      header: 'Decided by',
    }),
    col.accessor('decisionCostUsd', { header: 'Triage cost', cell: (c) => <Money usd={c.getValue()} /> }),
    col.accessor((d) => (d.messageId ? 'admitted' : ''), { id: 'message', header: 'Message' }),
  ];
  return (
    <section className="panel" aria-labelledby="deliveries-h">
      <h2 id="deliveries-h">Deliveries of {trigger.name}</h2>
      {deliveries.isPending ? (
        <Loading what="Loading deliveries" />
      ) : deliveries.isError ? (
        <ErrorBox error={deliveries.error} />
      ) : (
        <DataTable
          data={deliveries.data.data}
          columns={columns}
          label={`Deliveries of ${trigger.name}`}
          empty="Nothing delivered yet."
        />
      )}
    </section>
  );
}
