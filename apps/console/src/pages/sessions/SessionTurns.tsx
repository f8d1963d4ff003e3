import { keepPreviousData, useInfiniteQuery } from '@tanstack/react-query';
import { useEffect } from 'react';
import { Link } from 'react-router';
import type { components } from '@switchboard/client';
import { unwrap, useApi } from '../../api';
import { ErrorBox, Loading, Money, StatusBadge, Time } from '../../components/ui';
import { shortId } from './ids';

export type SessionTurn = components['schemas']['Turn'];

/**
 * The session's turns, every page (GET /v1/sessions/:id/turns, oldest first), read again whenever
 * the stream journals a change to the transcript.
 */
export function useSessionTurns(sessionId: string, version: number) {
  const api = useApi();
  const q = useInfiniteQuery({
    queryKey: ['session-turns', sessionId, version],
    initialPageParam: undefined as string | undefined,
    queryFn: ({ pageParam, signal }) =>
      unwrap(
        api.GET('/v1/sessions/{id}/turns', {
          params: {
            path: { id: sessionId },
            query: { limit: 200, ...(pageParam ? { cursor: pageParam } : {}) },
          },
          signal,
        }),
      ),
    getNextPageParam: (last) => last.nextCursor ?? undefined,
    placeholderData: keepPreviousData,
  });
  const { hasNextPage, isFetchingNextPage, isPlaceholderData, fetchNextPage } = q;
  useEffect(() => {
    if (hasNextPage && !isFetchingNextPage && !isPlaceholderData) void fetchNextPage();
  }, [hasNextPage, isFetchingNextPage, isPlaceholderData, fetchNextPage]);
  return q;
}

/** At most 200 characters of an answer (cut on a code point). */
function preview(text: string | null): string {
  if (!text) return '';
  const chars = Array.from(text);
  return chars.length <= 200 ? text : `${chars.slice(0, 199).join('')}…`;
}

/** The turn timeline: each turn with its status, model, the start of its answer and its cost. */
export function SessionTurns({
  turns,
  error,
  pending,
  actions,
}: {
  turns: SessionTurn[];
  error: unknown;
  pending: boolean;
  actions?: (t: SessionTurn) => React.ReactNode;
}) {
  return (
    <section className="panel" aria-labelledby="session-turns">
      <h2 id="session-turns">Turns ({turns.length})</h2>
      {error ? <ErrorBox error={error} /> : null}
      {pending ? (
        <Loading what="Loading the turns" />
      ) : turns.length === 0 ? (
        <p className="empty">No turn yet.</p>
      ) : (
        <div className="table-scroll">
          <table aria-label="Turns of the session" className="session-turns">
            <thead>
              <tr>
                <th scope="col">#</th>
                <th scope="col">Turn</th>
                <th scope="col">Status</th>
                <th scope="col">Model</th>
                <th scope="col">Answer</th>
                <th scope="col">Cost</th>
                <th scope="col">Admitted</th>
                {actions ? <th scope="col">Actions</th> : null}
              </tr>
            </thead>
            <tbody>
              {turns.map((t) => (
                <tr
                  key={t.id}
                  data-testid={`turn-row-${t.seq}`}
                  className={t.rewoundAt ? 'turn-rewound' : undefined}
                >
                  <td>{t.seq}</td>
                  <td>
                    <Link to={`/turns/${t.id}`}>Turn {shortId(t.id)}</Link>
                    {t.copiedFromTurnId ? (
                      <span className="muted small" title="copied into this fork from the parent session">
                        {' '}
                        (copied)
                      </span>
                    ) : null}
                  </td>
                  <td>
                    <StatusBadge status={t.status} />
                    {t.rewoundAt ? (
                      <span className="badge badge-wait" title={`rewound ${t.rewoundAt}`}>
                        rewound
                      </span>
                    ) : null}
                  </td>
                  <td className="mono">{t.model ?? '—'}</td>
                  <td className="turn-preview">{preview(t.finalText)}</td>
                  <td>
                    <Money usd={t.costUsd} />
                  </td>
                  <td>
                    <Time at={t.createdAt} />
                  </td>
                  {actions ? <td className="turn-actions">{actions(t)}</td> : null}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
