import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { unwrap, useApi } from '../../api';
import { ErrorBox, Loading } from '../../components/ui';

/** A share or a mean as shown: two decimals, or — when there is none. */
const num = (v: number | null) => (v === null ? '—' : v.toFixed(2));

/**
 * The agent's scores per version and UTC day (docs/adr/0062): each scorer's count, mean score and
 * pass rate over the last 30 days, feedback as scorer `feedback`; one scorer at a time when picked.
 */
export function AgentEvaluation({ agentId, scorers }: { agentId: string; scorers: string[] }) {
  const api = useApi();
  const [scorer, setScorer] = useState('');
  const scores = useQuery({
    queryKey: ['agent-scores', agentId, scorer],
    queryFn: () =>
      unwrap(
        api.GET('/v1/agents/{id}/scores', {
          params: { path: { id: agentId }, query: scorer ? { scorer } : {} },
        }),
      ),
  });
  const rows = scores.data?.data ?? [];
  return (
    <section className="panel" aria-labelledby="evaluation-h">
      <h2 id="evaluation-h">Evaluation</h2>
      <label>
        Scorer{' '}
        <select value={scorer} onChange={(e) => setScorer(e.target.value)} aria-label="Scorer">
          <option value="">every scorer</option>
          {[...scorers, 'feedback'].map((s) => (
            <option key={s} value={s}>
              {s}
            </option>
          ))}
        </select>
      </label>
      {scores.isPending ? <Loading what="Loading the scores" /> : null}
      {scores.isError ? <ErrorBox error={scores.error} /> : null}
      {scores.isSuccess && rows.length === 0 ? <p className="muted">No scores in the last 30 days.</p> : null}
      {rows.length > 0 ? (
        <div className="table-scroll">
          <table aria-label="Scores per version and day">
            <thead>
              <tr>
                <th scope="col">Version</th>
                <th scope="col">Day</th>
                <th scope="col">Scorer</th>
                <th scope="col">Source</th>
                <th scope="col">Scored</th>
                <th scope="col">Mean score</th>
                <th scope="col">Pass rate</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((r) => (
                <tr key={`${r.version ?? '-'}|${r.day}|${r.scorer}|${r.source}`} data-testid="agent-score">
                  <td>{r.version === null ? '—' : `v${r.version}`}</td>
                  <td>{r.day}</td>
                  <td>{r.scorer}</td>
                  <td>{r.source}</td>
                  <td>{r.count}</td>
                  <td>{num(r.meanScore)}</td>
                  <td>{num(r.passRate)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
    </section>
  );
}
