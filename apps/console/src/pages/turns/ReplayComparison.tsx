import { useQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import type { components } from '@switchboard/client';
import { unwrap, useApi } from '../../api';
import { ErrorBox, Json, Loading, Money, StatusBadge } from '../../components/ui';
import { formatMs, isEnded } from '../../lib/timeline';
import { Fact } from './RoundView';

type Side = components['schemas']['TurnSummary'];

/**
 * A replay beside the turn it replayed (GET /v1/turns/:id/comparison, docs/adr/0054): final text,
 * tool calls (a replayed one was answered from the original's recorded result, not run again),
 * tokens, cost and latency; read again every 2 s until the replay ends.
 */
export function ReplayComparison({ turnId }: { turnId: string }) {
  const api = useApi();
  const q = useQuery({
    queryKey: ['turn-comparison', turnId],
    queryFn: () => unwrap(api.GET('/v1/turns/{id}/comparison', { params: { path: { id: turnId } } })),
    refetchInterval: (query) => (query.state.data && isEnded(query.state.data.replay.status) ? false : 2_000),
  });
  return (
    <section className="panel" aria-labelledby="tp-comparison">
      <h2 id="tp-comparison">Replay compared with the original</h2>
      {q.error ? <ErrorBox error={q.error} /> : null}
      {q.isPending ? (
        <Loading what="Loading the comparison" />
      ) : q.data ? (
        <>
          {q.data.diff ? (
            <p data-testid="comparison-diff">
              {q.data.diff.finalTextEqual ? 'Same final text' : 'Different final text'} ·{' '}
              {q.data.diff.toolCallsEqual ? 'same tool calls' : 'different tool calls'} · tokens{' '}
              {signed(q.data.diff.inputTokensDelta)} in / {signed(q.data.diff.outputTokensDelta)} out · cost{' '}
              {signed(Number(q.data.diff.costDeltaUsd))} USD · latency{' '}
              {q.data.diff.latencyDeltaMs === null ? '—' : `${signed(q.data.diff.latencyDeltaMs)} ms`}
            </p>
          ) : (
            <p className="muted">The replay is still running.</p>
          )}
          <div className="tp-compare">
            <SideView title="Original" side={q.data.original} />
            <SideView title="Replay" side={q.data.replay} />
          </div>
        </>
      ) : null}
    </section>
  );
}

const signed = (n: number) => (n > 0 ? `+${n}` : String(n));

function SideView({ title, side }: { title: string; side: Side }) {
  return (
    <article aria-label={title} data-testid={`comparison-${title.toLowerCase()}`}>
      <h3>
        {title} <StatusBadge status={side.status} />
      </h3>
      <p className="small">
        <Link to={`/turns/${side.turnId}`}>Open the turn</Link> ·{' '}
        <span className="mono">{side.model ?? '—'}</span>
      </p>
      <dl className="tp-facts">
        <Fact term="Tokens">
          {side.inputTokens} in, {side.outputTokens} out
        </Fact>
        <Fact term="Cost">
          <Money usd={side.costUsd} />
        </Fact>
        <Fact term="Latency">{side.latencyMs === null ? '—' : formatMs(side.latencyMs)}</Fact>
      </dl>
      <h4>Tool calls ({side.toolCalls.length})</h4>
      {side.toolCalls.length === 0 ? (
        <p className="empty">None.</p>
      ) : (
        <ol className="tp-calls">
          {side.toolCalls.map((c, i) => (
            <li key={i}>
              <strong className="mono">{c.name}</strong>{' '}
              <span className="badge">{c.sideEffect.replaceAll('_', ' ')}</span>{' '}
              <StatusBadge status={c.status} />
              {c.replayed ? <span className="badge badge-ok">replayed from the record</span> : null}
              <Json value={c.arguments} label={`Arguments of ${c.name}`} />
            </li>
          ))}
        </ol>
      )}
      <h4>Final text</h4>
      <p className="plain" data-testid={`final-${title.toLowerCase()}`}>
        {side.finalText ?? '—'}
      </p>
    </article>
  );
}
