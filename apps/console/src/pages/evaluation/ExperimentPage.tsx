import { useQuery } from '@tanstack/react-query';
import { Link, useParams } from 'react-router';
import { unwrap, useApi } from '../../api';
import { ErrorBox, Loading, Money, Page, StatusBadge, Time } from '../../components/ui';

const score = (n: number | null) => (n === null ? '—' : n.toFixed(2));
const percent = (n: number | null) => (n === null ? '—' : `${Math.round(n * 100)}%`);

/**
 * An experiment's results (docs/adr/0063), the versions side by side: per version the mean score,
 * pass rate, cost and latency; per item each version's score and the winner. Refreshed while it runs.
 */
export default function ExperimentPage() {
  const { id = '' } = useParams();
  const api = useApi();
  const experiment = useQuery({
    queryKey: ['experiment', id],
    queryFn: () => unwrap(api.GET('/v1/experiments/{id}', { params: { path: { id } } })),
    refetchInterval: (q) => (q.state.data?.status === 'running' ? 2000 : false),
  });
  const datasetId = experiment.data?.datasetId ?? '';
  const items = useQuery({
    queryKey: ['dataset-items', datasetId],
    enabled: Boolean(datasetId),
    queryFn: () =>
      unwrap(
        api.GET('/v1/datasets/{id}/items', { params: { path: { id: datasetId }, query: { limit: 200 } } }),
      ),
  });
  if (experiment.isPending) return <Loading what="Loading the experiment" />;
  if (experiment.isError) return <ErrorBox error={experiment.error} />;
  const e = experiment.data;
  const inputs = new Map((items.data?.data ?? []).map((i) => [i.id, i.input]));
  const best = Math.max(...e.results.map((r) => r.meanScore ?? -1));
  // Two or more versions on the best mean: a tie, not several bests.
  const bestLabel = e.results.filter((r) => r.meanScore === best).length > 1 ? ' (tied)' : ' (best)';
  return (
    <Page
      title={
        <>
          Experiment <StatusBadge status={e.status} />
        </>
      }
    >
      <p className="muted small">
        <Link to={`/datasets/${e.datasetId}`}>Dataset</Link> on{' '}
        <Link to={`/agents/${e.agentId}`}>the agent</Link>, started <Time at={e.createdAt} />
        {e.completedAt ? (
          <>
            , completed <Time at={e.completedAt} />
          </>
        ) : null}
        .
      </p>
      <section className="panel" aria-labelledby="versions-h">
        <h2 id="versions-h">Versions</h2>
        <div className="table-scroll">
          <table aria-label="Results by version" data-testid="experiment-versions">
            <thead>
              <tr>
                <th scope="col">Version</th>
                <th scope="col">Mean score</th>
                <th scope="col">Pass rate</th>
                <th scope="col">Cost</th>
                <th scope="col">Mean latency</th>
                <th scope="col">Runs</th>
                <th scope="col">Scored</th>
                <th scope="col">Failed</th>
              </tr>
            </thead>
            <tbody>
              {e.results.map((r) => (
                <tr key={r.version} data-testid={`experiment-version-${r.version}`}>
                  <td>
                    v{r.version}
                    {r.meanScore !== null && r.meanScore === best ? bestLabel : ''}
                  </td>
                  <td>{score(r.meanScore)}</td>
                  <td>{percent(r.passRate)}</td>
                  <td>
                    <Money usd={r.costUsd} />
                  </td>
                  <td>{r.meanLatencyMs === null ? '—' : `${Math.round(r.meanLatencyMs)} ms`}</td>
                  <td>{r.runs}</td>
                  <td>{r.scored}</td>
                  <td>{r.failed}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </section>
      <section className="panel" aria-labelledby="items-h">
        <h2 id="items-h">Items</h2>
        <div className="table-scroll">
          <table aria-label="Results by item" data-testid="experiment-items">
            <thead>
              <tr>
                <th scope="col">Input</th>
                {e.versions.map((v) => (
                  <th scope="col" key={v}>
                    v{v}
                  </th>
                ))}
                <th scope="col">Winner</th>
              </tr>
            </thead>
            <tbody>
              {e.items.map((i) => (
                <tr key={i.datasetItemId} data-testid="experiment-item">
                  <td className="memory-text">{inputs.get(i.datasetItemId) ?? i.datasetItemId}</td>
                  {e.versions.map((v) => {
                    const run = i.byVersion[String(v)];
                    return (
                      <td key={v}>
                        {run?.turnId ? <Link to={`/turns/${run.turnId}`}>{score(run.score)}</Link> : '—'}
                        {run?.passed === true ? ' ✓' : run?.passed === false ? ' ✗' : ''}
                        {run?.status && run.status !== 'completed' ? (
                          <>
                            {' '}
                            <StatusBadge status={run.status} />
                          </>
                        ) : null}
                      </td>
                    );
                  })}
                  <td>{i.winner === null ? <span className="muted">—</span> : `v${i.winner}`}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </section>
    </Page>
  );
}
