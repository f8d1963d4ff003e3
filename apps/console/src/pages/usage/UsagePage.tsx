import type { components } from '@switchboard/client';
import { useQuery } from '@tanstack/react-query';
import { createColumnHelper } from '@tanstack/react-table';
import { useState } from 'react';
import { Link } from 'react-router';
import { Bar, BarChart, CartesianGrid, Legend, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts';
import { unwrap, useApi } from '../../api';
import { DataTable } from '../../components/DataTable';
import { ErrorBox, Loading, Money, Page } from '../../components/ui';
import { instantsOf, lastDays, usd, type DayRange } from '../../lib/usage-range';
import { useAgentNames } from '../agents/queries';
import '../agents/agents.css';

type Group = components['schemas']['Usage']['groups'][number];
type Day = components['schemas']['DailySpend']['days'][number];

/**
 * /usage: spend per day, agent and model with cache savings, as charts (recharts: this page is its
 * own lazy chunk, so the charting library is never in the first screen's JavaScript) and tables.
 */
export default function UsagePage() {
  const [draft, setDraft] = useState<DayRange>(() => lastDays(30));
  const [range, setRange] = useState<DayRange>(draft);
  const instants = instantsOf(range);
  return (
    <Page title="Usage">
      <form
        className="toolbar"
        aria-label="Date range"
        onSubmit={(e) => {
          e.preventDefault();
          setRange(draft);
        }}
      >
        <div>
          <label htmlFor="usage-from">From (UTC day)</label>
          <input
            id="usage-from"
            type="date"
            value={draft.from}
            onChange={(e) => setDraft((d) => ({ ...d, from: e.target.value }))}
          />
        </div>
        <div>
          <label htmlFor="usage-to">To (UTC day, inclusive)</label>
          <input
            id="usage-to"
            type="date"
            value={draft.to}
            onChange={(e) => setDraft((d) => ({ ...d, to: e.target.value }))}
          />
        </div>
        <button type="submit">Show</button>
      </form>
      {instants ? (
        <>
          <Daily range={range} />
          <div className="grid">
            <ByDimension dimension="agent" instants={instants} />
            <ByDimension dimension="model" instants={instants} />
          </div>
        </>
      ) : (
        <p className="error" role="alert">
          Choose both days.
        </p>
      )}
    </Page>
  );
}

function Daily({ range }: { range: DayRange }) {
  const api = useApi();
  const daily = useQuery({
    queryKey: ['usage-daily', range],
    queryFn: () => unwrap(api.GET('/v1/usage/daily', { params: { query: range } })),
  });
  const col = createColumnHelper<Day>();
  const columns = [
    col.accessor('day', { header: 'Day' }),
    col.accessor('costUsd', { header: 'Spend', cell: (c) => <Money usd={c.getValue()} /> }),
    col.accessor('cacheSavedUsd', { header: 'Cache savings', cell: (c) => <Money usd={c.getValue()} /> }),
    col.accessor('turns', { header: 'Turns' }),
    col.accessor('providerCalls', { header: 'Model calls' }),
    col.accessor('inputTokens', { header: 'Input tokens' }),
    col.accessor('cachedTokens', { header: 'Cached tokens' }),
    col.accessor('outputTokens', { header: 'Output tokens' }),
  ];
  if (daily.isPending) return <Loading what="Loading daily spend" />;
  if (daily.isError) return <ErrorBox error={daily.error} />;
  const t = daily.data.totals;
  const days = daily.data.days.filter((d) => d.providerCalls > 0 || usd(d.costUsd) > 0);
  return (
    <section className="panel" aria-labelledby="daily-h">
      <h2 id="daily-h">Spend per day</h2>
      <p data-testid="usage-totals">
        Total <Money usd={t.costUsd} /> · cache savings <Money usd={t.cacheSavedUsd} /> · {t.turns} turns ·{' '}
        {t.providerCalls} model calls
      </p>
      <Chart
        label="Spend and cache savings per day"
        data={daily.data.days.map((d) => ({
          name: d.day.slice(5),
          spend: usd(d.costUsd),
          saved: usd(d.cacheSavedUsd),
        }))}
      />
      <DataTable data={days} columns={columns} label="Spend per day" empty="No spend in this range." />
    </section>
  );
}

function ByDimension({
  dimension,
  instants,
}: {
  dimension: 'agent' | 'model';
  instants: { from: string; to: string };
}) {
  const api = useApi();
  const names = useAgentNames();
  const usage = useQuery({
    queryKey: ['usage', dimension, instants],
    queryFn: () => unwrap(api.GET('/v1/usage', { params: { query: { ...instants, groupBy: dimension } } })),
  });
  const nameOf = (g: Group) =>
    dimension === 'agent' ? (names.get(g.agentId ?? '') ?? g.agentId?.slice(0, 8) ?? '—') : (g.model ?? '—');
  const col = createColumnHelper<Group>();
  const columns = [
    col.accessor(nameOf, {
      id: 'name',
      header: dimension === 'agent' ? 'Agent' : 'Model',
      cell: (c) =>
        dimension === 'agent' && c.row.original.agentId ? (
          <Link to={`/agents/${c.row.original.agentId}`}>{c.getValue()}</Link>
        ) : (
          <span className="mono">{c.getValue()}</span>
        ),
    }),
    col.accessor('costUsd', { header: 'Spend', cell: (c) => <Money usd={c.getValue()} /> }),
    col.accessor('cacheSavedUsd', { header: 'Cache savings', cell: (c) => <Money usd={c.getValue()} /> }),
    col.accessor('entries', { header: 'Model calls' }),
    col.accessor('inputTokens', { header: 'Input tokens' }),
    col.accessor('cachedTokens', { header: 'Cached tokens' }),
    col.accessor('outputTokens', { header: 'Output tokens' }),
  ];
  const title = dimension === 'agent' ? 'Spend per agent' : 'Spend per model';
  return (
    <section className="panel" aria-labelledby={`by-${dimension}-h`}>
      <h2 id={`by-${dimension}-h`}>{title}</h2>
      {usage.isPending ? (
        <Loading />
      ) : usage.isError ? (
        <ErrorBox error={usage.error} />
      ) : (
        <>
          <Chart
            label={title}
            data={usage.data.groups.map((g) => ({
              name: nameOf(g),
              spend: usd(g.costUsd),
              saved: usd(g.cacheSavedUsd),
            }))}
          />
          <DataTable
            data={usage.data.groups}
            columns={columns}
            label={title}
            empty="No spend in this range."
            rowTestId={(g) => `usage-${dimension}-${nameOf(g)}`}
          />
        </>
      )}
    </section>
  );
}

/** Axis and tooltip money: small amounts (a few calls' worth) with two significant digits. */
const money = (v: unknown) => {
  const n = Number(v);
  return n === 0 ? '$0' : Math.abs(n) < 0.01 ? `$${n.toPrecision(2)}` : `$${n.toFixed(2)}`;
};

/** A bar chart of spend and cache savings; the table beside it carries the exact numbers. */
function Chart({ label, data }: { label: string; data: { name: string; spend: number; saved: number }[] }) {
  if (data.length === 0) return null;
  return (
    <figure className="chart" aria-label={label} role="img">
      <ResponsiveContainer width="100%" height="100%">
        <BarChart data={data} margin={{ top: 8, right: 8, bottom: 8, left: 8 }}>
          <CartesianGrid strokeDasharray="3 3" vertical={false} />
          <XAxis dataKey="name" tick={{ fontSize: 11 }} />
          <YAxis tickFormatter={money} tick={{ fontSize: 11 }} width={72} />
          <Tooltip formatter={money} />
          <Legend />
          <Bar dataKey="spend" name="Spend" fill="#2452c9" />
          <Bar dataKey="saved" name="Cache savings" fill="#1d7a3d" />
        </BarChart>
      </ResponsiveContainer>
    </figure>
  );
}
