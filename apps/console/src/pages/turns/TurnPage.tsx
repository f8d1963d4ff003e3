import { useQuery } from '@tanstack/react-query';
import { useMemo } from 'react';
import { Link, useParams } from 'react-router';
import { unwrap, useApi } from '../../api';
import { ErrorBox, Json, Loading, Money, Page, StatusBadge } from '../../components/ui';
import { safeHref } from '../../lib/safe-url';
import { childrenByCall, formatMs, isEnded, waterfall, type TurnTimeline } from '../../lib/timeline';
import { TurnActions } from '../sessions/TurnActions';
import { ChildList, Fact, RoundView } from './RoundView';
import { ReplayComparison } from './ReplayComparison';
import { Waterfall } from './Waterfall';
import './turn.css';

/** After its end a turn's post-turn hooks still land; the page looks again for this long. */
const HOOKS_GRACE_MS = 60_000;

/**
 * One turn's story (GET /v1/turns/:id/timeline): admission, queue wait, claim, each model round with
 * its attempts and tool calls, child turns with their cost roll-up, post-turn hooks, the trace; and
 * for any round, the exact context the model saw. A running turn is read again every 2 s.
 */
export default function TurnPage() {
  const { id = '' } = useParams();
  const api = useApi();
  const q = useQuery({
    queryKey: ['turn-timeline', id],
    queryFn: () => unwrap(api.GET('/v1/turns/{id}/timeline', { params: { path: { id } } })),
    refetchInterval: (query) => {
      const t = query.state.data;
      if (!t) return false;
      if (!isEnded(t.turn.status)) return 2_000;
      const since = Date.now() - Date.parse(t.phases.endedAt ?? t.phases.admittedAt);
      return t.hooks.length === 0 && since < HOOKS_GRACE_MS ? 5_000 : false;
    },
  });
  const title = `Turn ${id.slice(0, 8)}`;
  if (q.isPending)
    return (
      <Page title={title}>
        <Loading what="Loading the turn" />
      </Page>
    );
  if (q.error)
    return (
      <Page title={title}>
        <ErrorBox error={q.error} />
      </Page>
    );
  return <Turn t={q.data} title={title} />;
}

function Turn({ t, title }: { t: TurnTimeline; title: string }) {
  const { turn, phases } = t;
  const api = useApi();
  // Where the turn sits in its session's history (seq, rewound, a replay of which turn): GET /v1/turns/:id.
  const place = useQuery({
    queryKey: ['turn', turn.id, turn.status],
    queryFn: () => unwrap(api.GET('/v1/turns/{id}', { params: { path: { id: turn.id } } })),
  });
  const running = !isEnded(turn.status);
  // While the turn runs, `now` moves the open bars; the refetch every 2 s re-renders.
  const data = useMemo(() => waterfall(t), [t]);
  const { byCall, unplaced } = useMemo(() => childrenByCall(t), [t]);
  const trace = safeHref(t.traceUrl);
  return (
    <Page
      title={
        <>
          {title} <StatusBadge status={turn.status} />
        </>
      }
      actions={
        <>
          <Link to={`/sessions/${turn.sessionId}`}>Back to the session</Link>
          {turn.parentTurnId ? <Link to={`/turns/${turn.parentTurnId}`}>Parent turn</Link> : null}
          {place.data?.replayOfTurnId ? (
            <Link to={`/turns/${place.data.replayOfTurnId}`}>The replayed turn</Link>
          ) : null}
        </>
      }
    >
      {place.data ? (
        <div className="tp-travel">
          {place.data.rewoundAt ? (
            <p className="notice" data-testid="turn-rewound">
              Rewound: this turn is left out of the session&apos;s history (kept here and in the journal).
            </p>
          ) : null}
          <TurnActions
            sessionId={turn.sessionId}
            turnId={turn.id}
            seq={place.data.seq}
            ended={!running}
            rewound={place.data.rewoundAt !== null}
          />
        </div>
      ) : null}
      {place.data?.replayOfTurnId ? <ReplayComparison turnId={turn.id} /> : null}
      <div className="tp">
        <section className="panel" aria-labelledby="tp-summary">
          <h2 id="tp-summary">Summary</h2>
          <dl className="tp-facts">
            <Fact term="Turn id">
              <span className="mono tp-wrap">{turn.id}</span>
            </Fact>
            <Fact term="Stop reason">{turn.stopReason?.replaceAll('_', ' ') ?? '—'}</Fact>
            <Fact term="Model">
              <span className="mono tp-wrap">{turn.model ?? '—'}</span>
            </Fact>
            <Fact term="Rounds / runs">
              {turn.iterations} rounds, {turn.runCount} {turn.runCount === 1 ? 'run' : 'runs'}
            </Fact>
            <Fact term="Admitted">
              <time dateTime={phases.admittedAt}>{new Date(phases.admittedAt).toLocaleString()}</time>
            </Fact>
            <Fact term="Queue wait">{phases.claimedAt ? formatMs(phases.queueWaitMs) : 'still queued'}</Fact>
            <Fact term="Run">{phases.endedAt ? formatMs(phases.runMs) : running ? 'running' : '—'}</Fact>
            <Fact term="Tokens">
              {turn.usage.inputTokens} in ({turn.usage.cachedTokens} cached, {turn.usage.cacheWriteTokens}{' '}
              cache write), {turn.usage.outputTokens} out
            </Fact>
            <Fact term="Cost">
              <Money usd={turn.costUsd} /> own + <Money usd={turn.childrenCostUsd} /> children ={' '}
              <strong>
                <Money usd={turn.totalCostUsd} />
              </strong>
              {turn.costStatus && turn.costStatus !== 'priced' ? (
                <span className="muted small"> ({turn.costStatus.replaceAll('_', ' ')})</span>
              ) : null}
            </Fact>
            <Fact term="Trace">
              {t.traceId ? (
                trace ? (
                  <a href={trace} target="_blank" rel="noopener noreferrer" className="mono tp-wrap">
                    {t.traceId}
                  </a>
                ) : (
                  <span className="mono tp-wrap">{t.traceId}</span>
                )
              ) : (
                '—'
              )}
            </Fact>
          </dl>
          {turn.cancelRequestedAt || turn.cancelReason ? (
            <p className="notice">
              {turn.status === 'cancelled' ? 'Cancelled' : 'Cancel requested'}
              {turn.cancelReason ? (
                <>
                  {' '}
                  (<span className="mono">{turn.cancelReason.replaceAll('_', ' ')}</span>)
                </>
              ) : null}
              {turn.cancelNote ? <span className="tp-wrap">: {turn.cancelNote}</span> : null}
            </p>
          ) : null}
          {turn.failure ? (
            <div role="note" className="tp-failure">
              <p className="error">
                Failed ({turn.failure.category}, {turn.failure.kind.replaceAll('_', ' ')}):{' '}
                <span className="tp-wrap">{turn.failure.brief}</span>
              </p>
              <details>
                <summary>Failure details</summary>
                <Json value={turn.failure} label="Failure details" />
              </details>
            </div>
          ) : null}
        </section>

        <Waterfall data={data} />

        <section aria-labelledby="tp-rounds">
          <h2 id="tp-rounds">Model rounds ({t.rounds.length})</h2>
          {t.rounds.length === 0 ? (
            <p className="empty">{running ? 'No model round yet.' : 'The turn made no model round.'}</p>
          ) : (
            t.rounds.map((r) => (
              <RoundView key={r.index} turnId={turn.id} round={r} childrenOf={(c) => byCall.get(c) ?? []} />
            ))
          )}
        </section>

        <section className="panel" aria-labelledby="tp-children">
          <h2 id="tp-children">Child turns ({t.children.length})</h2>
          {t.children.length === 0 ? (
            <p className="empty">This turn spawned no sub-agent.</p>
          ) : (
            <>
              <p>
                Their cost with their own children: <Money usd={turn.childrenCostUsd} />.
              </p>
              {unplaced.length < t.children.length ? (
                <p className="muted small">Each also appears under the tool call that spawned it.</p>
              ) : null}
              <ChildList items={t.children} />
            </>
          )}
        </section>

        <section className="panel" aria-labelledby="tp-hooks">
          <h2 id="tp-hooks">Post-turn hooks ({t.hooks.length})</h2>
          {t.hooks.length === 0 ? (
            <p className="empty">{running ? 'Hooks run once the turn ends.' : 'No post-turn hook ran.'}</p>
          ) : (
            <div className="table-scroll">
              <table className="tp-nowrap" aria-label="Post-turn hooks">
                <thead>
                  <tr>
                    <th scope="col">Hook</th>
                    <th scope="col">Status</th>
                    <th scope="col">Attempts</th>
                    <th scope="col">Took</th>
                  </tr>
                </thead>
                <tbody>
                  {t.hooks.map((h, i) => (
                    <tr key={i}>
                      <td className="mono">{h.hook}</td>
                      <td>
                        <StatusBadge status={h.status} />
                      </td>
                      <td>{h.attempts}</td>
                      <td>
                        {h.completedAt ? formatMs(Date.parse(h.completedAt) - Date.parse(h.createdAt)) : '—'}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </section>

        <section className="panel" aria-labelledby="tp-scores">
          <h2 id="tp-scores">Scores ({place.data?.scores?.length ?? 0})</h2>
          {(place.data?.scores?.length ?? 0) === 0 ? (
            <p className="empty">No score yet.</p>
          ) : (
            <div className="table-scroll">
              <table className="tp-nowrap" aria-label="Scores">
                <thead>
                  <tr>
                    <th scope="col">Scorer</th>
                    <th scope="col">Kind</th>
                    <th scope="col">Status</th>
                    <th scope="col">Score</th>
                    <th scope="col">Passed</th>
                    <th scope="col">Reason or label</th>
                    <th scope="col">By</th>
                  </tr>
                </thead>
                <tbody>
                  {(place.data?.scores ?? []).map((sc, i) => (
                    <tr key={i} data-testid="turn-score">
                      <td className="mono">{sc.scorer}</td>
                      <td>{sc.kind}</td>
                      <td>
                        <StatusBadge status={sc.status} />
                      </td>
                      <td>{sc.score === null ? '—' : sc.score.toFixed(2)}</td>
                      <td>{sc.passed === null ? '—' : sc.passed ? 'yes' : 'no'}</td>
                      <td>{sc.reason ?? sc.label ?? '—'}</td>
                      <td>{sc.givenBy ?? '—'}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </section>

        <section className="panel" aria-labelledby="tp-journal">
          <h2 id="tp-journal">Journal</h2>
          <details>
            <summary>{t.events.length} events, in order</summary>
            <ol className="tp-journal">
              {t.events.map((e) => (
                <li key={e.seq}>
                  <div className="small">
                    <span className="mono">#{e.seq}</span> <strong>{e.type}</strong>{' '}
                    <time className="muted" dateTime={e.at}>
                      {new Date(e.at).toLocaleTimeString()}
                    </time>
                  </div>
                  <Json value={e.data} label={`Event ${e.seq} data`} />
                </li>
              ))}
            </ol>
          </details>
        </section>
      </div>
    </Page>
  );
}
