import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { unwrap, useApi } from '../../api';
import { ErrorBox, Loading, Page, StatusBadge, Time } from '../../components/ui';
import { describeError } from '../../lib/errors';
import { useAgents } from '../sessions/useAgents';

/** The versions typed as "1, 2": positive integers, or null when any part is not one. */
function parseVersions(text: string): number[] | null {
  const parts = text
    .split(/[\s,]+/)
    .map((p) => p.trim())
    .filter(Boolean);
  const versions = parts.map(Number);
  return versions.length > 0 && versions.every((v) => Number.isInteger(v) && v > 0) ? versions : null;
}

/**
 * One dataset (docs/adr/0063): its items (input, expected answer, rubric), a form to add one, its
 * experiments, and a form to run it on versions of an agent. Items are the tenant's own text, shown
 * as text.
 */
export default function DatasetPage() {
  const { id = '' } = useParams();
  const api = useApi();
  const queries = useQueryClient();
  const navigate = useNavigate();
  const agents = useAgents();
  const dataset = useQuery({
    queryKey: ['dataset', id],
    queryFn: () => unwrap(api.GET('/v1/datasets/{id}', { params: { path: { id } } })),
  });
  const items = useQuery({
    queryKey: ['dataset-items', id],
    queryFn: () =>
      unwrap(api.GET('/v1/datasets/{id}/items', { params: { path: { id }, query: { limit: 200 } } })),
  });
  const experiments = useQuery({
    queryKey: ['experiments', id],
    queryFn: () => unwrap(api.GET('/v1/experiments', { params: { query: { datasetId: id, limit: 50 } } })),
  });
  const [input, setInput] = useState('');
  const [expected, setExpected] = useState('');
  const add = useMutation({
    mutationFn: () =>
      unwrap(
        api.POST('/v1/datasets/{id}/items', {
          params: { path: { id } },
          body: { input, ...(expected ? { expected } : {}) },
        }),
      ),
    onSuccess: () => {
      setInput('');
      setExpected('');
      void queries.invalidateQueries({ queryKey: ['dataset', id] });
      return queries.invalidateQueries({ queryKey: ['dataset-items', id] });
    },
  });
  const [agentId, setAgentId] = useState('');
  const [versionsText, setVersionsText] = useState('');
  const versions = parseVersions(versionsText);
  const run = useMutation({
    mutationFn: () =>
      unwrap(api.POST('/v1/experiments', { body: { datasetId: id, agentId, versions: versions ?? [] } })),
    onSuccess: (e) => navigate(`/experiments/${e.id}`),
  });

  if (dataset.isPending) return <Loading what="Loading the dataset" />;
  if (dataset.isError) return <ErrorBox error={dataset.error} />;
  const agentList = agents.data?.data ?? [];
  const names = new Map(agentList.map((a) => [a.id, a.name]));
  return (
    <Page title={`Dataset ${dataset.data.name}`}>
      {dataset.data.description ? <p>{dataset.data.description}</p> : null}
      <div className="grid">
        <section className="panel" aria-labelledby="run-h">
          <h2 id="run-h">Run an experiment</h2>
          <form
            className="form"
            aria-label="Run an experiment"
            onSubmit={(e) => {
              e.preventDefault();
              run.mutate();
            }}
          >
            {run.isError ? (
              <div className="error" role="alert" data-testid="run-error">
                <p>Not started: {describeError(run.error)}</p>
              </div>
            ) : null}
            <div className="field">
              <label htmlFor="run-agent">Agent</label>
              <select id="run-agent" value={agentId} onChange={(e) => setAgentId(e.target.value)}>
                <option value="">(choose)</option>
                {agentList.map((a) => (
                  <option key={a.id} value={a.id}>
                    {a.name} (current v{a.version})
                  </option>
                ))}
              </select>
            </div>
            <div className="field">
              <label htmlFor="run-versions">Versions</label>
              <input
                id="run-versions"
                placeholder="1, 2"
                value={versionsText}
                onChange={(e) => setVersionsText(e.target.value)}
              />
            </div>
            <div className="form-actions">
              <button
                type="submit"
                className="primary"
                disabled={!agentId || !versions || dataset.data.itemCount === 0 || run.isPending}
              >
                Run on {dataset.data.itemCount} items
              </button>
            </div>
          </form>
        </section>
        <section className="panel" aria-labelledby="experiments-h">
          <h2 id="experiments-h">Experiments</h2>
          {experiments.isPending ? (
            <Loading what="Loading experiments" />
          ) : experiments.isError ? (
            <ErrorBox error={experiments.error} />
          ) : experiments.data.data.length === 0 ? (
            <p className="empty">None yet.</p>
          ) : (
            <ul>
              {experiments.data.data.map((e) => (
                <li key={e.id} data-testid="experiment-link">
                  <Link to={`/experiments/${e.id}`}>
                    {names.get(e.agentId) ?? e.agentId}: v{e.versions.join(' vs v')}
                  </Link>{' '}
                  <StatusBadge status={e.status} /> <Time at={e.createdAt} />
                </li>
              ))}
            </ul>
          )}
        </section>
      </div>
      <section className="panel" aria-labelledby="items-h">
        <h2 id="items-h">Items ({dataset.data.itemCount})</h2>
        <form
          className="form"
          aria-label="Add an item"
          onSubmit={(e) => {
            e.preventDefault();
            add.mutate();
          }}
        >
          {add.isError ? (
            <div className="error" role="alert" data-testid="item-error">
              <p>Not added: {describeError(add.error)}</p>
            </div>
          ) : null}
          <div className="field">
            <label htmlFor="item-input">Input</label>
            <textarea id="item-input" value={input} onChange={(e) => setInput(e.target.value)} />
          </div>
          <div className="field">
            <label htmlFor="item-expected">Expected answer</label>
            <input id="item-expected" value={expected} onChange={(e) => setExpected(e.target.value)} />
          </div>
          <div className="form-actions">
            <button type="submit" disabled={!input || add.isPending}>
              Add item
            </button>
          </div>
        </form>
        {items.isPending ? (
          <Loading what="Loading items" />
        ) : items.isError ? (
          <ErrorBox error={items.error} />
        ) : (
          <div className="table-scroll">
            <table aria-label="Dataset items">
              <thead>
                <tr>
                  <th scope="col">Input</th>
                  <th scope="col">Expected</th>
                  <th scope="col">Rubric</th>
                </tr>
              </thead>
              <tbody>
                {items.data.data.map((i) => (
                  <tr key={i.id} data-testid="dataset-item">
                    <td className="memory-text">{i.input}</td>
                    <td className="memory-text">
                      {i.expected ?? <span className="muted">—</span>}
                      {i.expected !== null && i.match !== 'exact' ? ` (${i.match})` : ''}
                    </td>
                    <td className="memory-text">{i.rubric ?? <span className="muted">—</span>}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>
    </Page>
  );
}
