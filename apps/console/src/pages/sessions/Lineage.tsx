import { useQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import { unwrap, useApi } from '../../api';
import { ErrorBox, Time } from '../../components/ui';
import { shortId } from './ids';

/**
 * Where the session comes from and what was forked from it (GET /v1/sessions/:id/lineage,
 * docs/adr/0053): its ancestors, nearest first, and its forks with the turn each was taken at.
 */
export function Lineage({ sessionId, version }: { sessionId: string; version: number }) {
  const api = useApi();
  const q = useQuery({
    queryKey: ['session-lineage', sessionId, version],
    queryFn: () => unwrap(api.GET('/v1/sessions/{id}/lineage', { params: { path: { id: sessionId } } })),
  });
  if (q.error) return <ErrorBox error={q.error} />;
  const l = q.data;
  if (!l || (l.ancestors.length === 0 && l.children.length === 0)) return null;
  return (
    <section className="panel" aria-labelledby="session-lineage">
      <h2 id="session-lineage">Lineage</h2>
      {l.ancestors.length > 0 ? (
        <p data-testid="lineage-parent">
          Forked from{' '}
          {l.ancestors.map((a, i) => (
            <span key={a.sessionId}>
              {i > 0 ? ', itself from ' : ''}
              {a.missing ? (
                <span className="muted">a deleted session</span>
              ) : (
                <Link to={`/sessions/${a.sessionId}`}>session {shortId(a.sessionId)}</Link>
              )}
              {forkPoint(a.forkedAtTurnSeq)}
            </span>
          ))}
        </p>
      ) : null}
      {l.children.length > 0 ? (
        <>
          <p>Forks of this session ({l.children.length}):</p>
          <ul data-testid="lineage-children">
            {l.children.map((c) => (
              <li key={c.sessionId}>
                <Link to={`/sessions/${c.sessionId}`}>session {shortId(c.sessionId)}</Link>
                {forkPoint(c.forkedAtTurnSeq)} · <Time at={c.createdAt} />
              </li>
            ))}
          </ul>
        </>
      ) : null}
    </section>
  );
}

/** Where a fork was taken: after a turn, or at the start (nothing copied). */
function forkPoint(seq: number | null): string {
  if (seq === null) return '';
  return seq === 0 ? ' at its start' : ` after turn #${seq}`;
}
