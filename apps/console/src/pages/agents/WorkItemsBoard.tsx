import type { components } from '@switchboard/client';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { unwrap, useApi } from '../../api';
import { ErrorBox, Loading, StatusBadge, Time } from '../../components/ui';

type WorkItem = components['schemas']['WorkItem'];
const COLUMNS = [
  ['queued', 'Queued'],
  ['blocked', 'Blocked'],
  ['runnable', 'Runnable'],
  ['completed', 'Completed'],
] as const;

/** The agent's work items by the API's views (one query each), and an operator's enqueue. */
export function WorkItemsBoard({ agentId }: { agentId: string }) {
  const api = useApi();
  const queries = useQueryClient();
  const [objective, setObjective] = useState('');
  const [plan, setPlan] = useState('');
  const enqueue = useMutation({
    mutationFn: () =>
      unwrap(
        api.POST('/v1/agents/{id}/work-items', {
          params: { path: { id: agentId } },
          body: { objective, ...(plan.trim() ? { plan } : {}) },
        }),
      ),
    onSuccess: () => {
      setObjective('');
      setPlan('');
      return queries.invalidateQueries({ queryKey: ['work-items', agentId] });
    },
  });
  return (
    <>
      <div className="board" data-testid="work-items">
        {COLUMNS.map(([view, label]) => (
          <Column key={view} agentId={agentId} view={view} label={label} />
        ))}
      </div>
      <form
        className="panel form"
        aria-label="Enqueue a work item"
        onSubmit={(e) => {
          e.preventDefault();
          enqueue.mutate();
        }}
      >
        <h2>Enqueue a work item</h2>
        <label htmlFor="wi-objective">Objective</label>
        <textarea
          id="wi-objective"
          rows={2}
          value={objective}
          onChange={(e) => setObjective(e.target.value)}
        />
        <label htmlFor="wi-plan">Plan (optional)</label>
        <textarea id="wi-plan" rows={2} value={plan} onChange={(e) => setPlan(e.target.value)} />
        <div className="form-actions">
          <button type="submit" className="primary" disabled={enqueue.isPending}>
            Enqueue
          </button>
        </div>
        {enqueue.isError ? <ErrorBox error={enqueue.error} /> : null}
      </form>
    </>
  );
}

function Column({
  agentId,
  view,
  label,
}: {
  agentId: string;
  view: (typeof COLUMNS)[number][0];
  label: string;
}) {
  const api = useApi();
  const items = useQuery({
    queryKey: ['work-items', agentId, view],
    refetchInterval: 3000,
    queryFn: () =>
      unwrap(
        api.GET('/v1/agents/{id}/work-items', {
          params: { path: { id: agentId }, query: { view, limit: 50 } },
        }),
      ),
  });
  return (
    <section className="panel" aria-label={`${label} work items`}>
      <h3>
        {label} {items.data ? <span className="muted">({items.data.data.length})</span> : null}
      </h3>
      {items.isPending ? (
        <Loading />
      ) : items.isError ? (
        <ErrorBox error={items.error} />
      ) : items.data.data.length === 0 ? (
        <p className="empty">None.</p>
      ) : (
        <ul>
          {items.data.data.map((w) => (
            <Item key={w.id} item={w} />
          ))}
        </ul>
      )}
    </section>
  );
}

/** Objective, plan and blockers may come from the agent (model text): plain text only. */
function Item({ item: w }: { item: WorkItem }) {
  return (
    <li>
      <div>{w.objective}</div>
      <div className="small muted">
        <StatusBadge status={w.current ? 'current' : w.state} /> {w.planStatus.replaceAll('_', ' ')} · by{' '}
        {w.createdBy} · <Time at={w.createdAt} />
      </div>
      {w.blockedBy ? <div className="small">Blocked by: {w.blockedBy}</div> : null}
      {w.completionReport ? <div className="small">Report: {w.completionReport.text}</div> : null}
    </li>
  );
}
