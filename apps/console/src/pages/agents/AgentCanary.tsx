import type { components } from '@switchboard/client';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { unwrap, useApi } from '../../api';
import { ErrorBox, Time } from '../../components/ui';

type Canary = components['schemas']['Canary'];

const mean = (v: number | null | undefined) => (v === null || v === undefined ? '—' : v.toFixed(3));

const STATUS: Record<Canary['status'], string> = {
  running: 'running',
  promoted: 'promoted',
  rolled_back: 'rolled back',
  stopped: 'stopped',
};

/**
 * The agent's canary (docs/adr/0064) on the Versions tab: which version is tried on what share of new
 * sessions against which, what the hooks worker's sweep last saw of both sides' mean scores, how it
 * ended; promote or stop a running one. Started through the API (PUT /v1/agents/:id/canary).
 */
export function AgentCanary({ agentId, canary: c }: { agentId: string; canary: Canary | null }) {
  const api = useApi();
  const queries = useQueryClient();
  const refresh = () => {
    void queries.invalidateQueries({ queryKey: ['agent-versions', agentId] });
    return queries.invalidateQueries({ queryKey: ['agent', agentId] });
  };
  const promote = useMutation({
    mutationFn: () =>
      unwrap(api.POST('/v1/agents/{id}/canary/promote', { params: { path: { id: agentId } } })),
    onSuccess: refresh,
  });
  const stop = useMutation({
    mutationFn: () => unwrap(api.DELETE('/v1/agents/{id}/canary', { params: { path: { id: agentId } } })),
    onSuccess: refresh,
  });
  if (!c) return null;
  const seen = c.decision ?? c.observed;
  return (
    <section className="panel" aria-labelledby="canary-h" data-testid="agent-canary">
      <h2 id="canary-h">Canary</h2>
      <p data-testid="canary-status">
        v{c.candidateVersion} on {c.sharePercent}% of new sessions against v{c.baselineVersion}:{' '}
        <strong>{STATUS[c.status]}</strong>
        {c.decidedAt ? (
          <>
            {' '}
            (<Time at={c.decidedAt} />
            {c.decision ? ` by ${c.decision.by}` : ''})
          </>
        ) : null}
      </p>
      <dl className="summary">
        <dt>Rolls back when</dt>
        <dd>
          the candidate&apos;s mean {c.scorer ? <span className="mono">{c.scorer}</span> : 'score'} is below
          the baseline&apos;s by {c.margin} once each has {c.minScored} scored turns
        </dd>
        <dt>Baseline mean</dt>
        <dd data-testid="canary-baseline">
          {mean(seen?.baselineMean)} over {seen?.n.baseline ?? 0} turns
        </dd>
        <dt>Candidate mean</dt>
        <dd data-testid="canary-candidate">
          {mean(seen?.candidateMean)} over {seen?.n.candidate ?? 0} turns
        </dd>
        <dt>Started</dt>
        <dd>
          <Time at={c.startedAt} />
        </dd>
      </dl>
      {c.status === 'running' ? (
        <div className="form-actions">
          <button
            type="button"
            disabled={promote.isPending || stop.isPending}
            onClick={() => promote.mutate()}
          >
            Promote v{c.candidateVersion}
          </button>
          <button type="button" disabled={promote.isPending || stop.isPending} onClick={() => stop.mutate()}>
            Stop the canary
          </button>
        </div>
      ) : null}
      {promote.isError ? <ErrorBox error={promote.error} /> : null}
      {stop.isError ? <ErrorBox error={stop.error} /> : null}
    </section>
  );
}
