import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { Link } from 'react-router';
import type { components } from '@switchboard/client';
import { unwrap, useApi } from '../../api';
import { ErrorBox, Json, Loading, Page, StatusBadge, Time } from '../../components/ui';
import { shortId } from '../sessions/ids';
import { useAgents } from '../sessions/useAgents';
import '../sessions/sessions.css';

type Approval = components['schemas']['Approval'];

/** Why the call needs a person: the policy that gated it (docs/adr: approvals), in words. */
const POLICY: Record<Approval['policy'], string> = {
  tool: 'the tool requires approval',
  agent: "the agent's approvalRequired lists it",
  tenant: "the tenant's settings require it",
  untrusted_input: 'the turn acts on untrusted input (external evidence)',
};

/**
 * Every pending approval across the tenant's sessions, live (refetched every 2 s), each with the
 * call's arguments and its provenance — the session and turn that asked, the tool, its effect class
 * and the policy that gated it; approve or reject with a reason (the gateway audits the decision).
 * Below, the recent decisions.
 */
export default function ApprovalsPage() {
  const api = useApi();
  const pending = useQuery({
    queryKey: ['approvals', 'pending'],
    queryFn: () => unwrap(api.GET('/v1/approvals', { params: { query: { status: 'pending', limit: 100 } } })),
    refetchInterval: 2_000,
  });
  const recent = useQuery({
    queryKey: ['approvals', 'recent'],
    queryFn: () => unwrap(api.GET('/v1/approvals', { params: { query: { limit: 100 } } })),
    refetchInterval: 2_000,
  });
  const decided = (recent.data?.data ?? []).filter((a) => a.status !== 'pending').slice(0, 50);

  return (
    <Page title="Approvals">
      <h2 className="section-title">Pending</h2>
      {pending.error ? <ErrorBox error={pending.error} /> : null}
      {pending.isPending ? (
        <Loading what="Loading approvals" />
      ) : pending.data && pending.data.data.length > 0 ? (
        <ul className="transcript" aria-label="Pending approvals">
          {pending.data.data.map((a) => (
            <PendingApproval key={a.id} a={a} />
          ))}
        </ul>
      ) : (
        <p className="empty">Nothing waits for a decision.</p>
      )}
      <h2 className="section-title">Recent decisions</h2>
      {recent.error ? <ErrorBox error={recent.error} /> : null}
      {decided.length === 0 ? (
        <p className="empty">No decisions yet.</p>
      ) : (
        <div className="table-scroll">
          <table aria-label="Recent decisions">
            <thead>
              <tr>
                <th scope="col">Tool</th>
                <th scope="col">Decision</th>
                <th scope="col">Reason</th>
                <th scope="col">Decided</th>
                <th scope="col">Session / turn</th>
              </tr>
            </thead>
            <tbody>
              {decided.map((a) => (
                <tr key={a.id} data-testid={`decided-${a.id}`}>
                  <td className="mono">{a.toolName}</td>
                  <td>
                    <StatusBadge status={a.status} />
                  </td>
                  <td>{a.reason ?? <span className="muted">—</span>}</td>
                  <td>
                    <Time at={a.decidedAt} />
                  </td>
                  <td>
                    <Refs a={a} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </Page>
  );
}

function Refs({ a }: { a: Approval }) {
  return (
    <span className="small">
      <Link to={`/sessions/${a.sessionId}`}>Session {shortId(a.sessionId)}</Link>
      {' · '}
      <Link to={`/turns/${a.turnId}`}>Turn {shortId(a.turnId)}</Link>
    </span>
  );
}

function PendingApproval({ a }: { a: Approval }) {
  const api = useApi();
  const queries = useQueryClient();
  const [reason, setReason] = useState('');
  const decide = useMutation({
    mutationFn: (decision: 'approve' | 'reject') =>
      unwrap(
        api.POST('/v1/approvals/{id}', {
          params: { path: { id: a.id } },
          body: { decision, ...(reason.trim() ? { reason: reason.trim() } : {}) },
        }),
      ),
    onSuccess: () => void queries.invalidateQueries({ queryKey: ['approvals'] }),
  });
  const submit = (e: FormEvent) => e.preventDefault();
  const reasonId = `reason-${a.id}`;
  return (
    <li className="entry" data-testid={`approval-${a.id}`} aria-label={`Approval of ${a.toolName}`}>
      <div className="entry-head small">
        <strong className="mono">{a.toolName}</strong>
        <span className="badge" title="effect class">
          {a.sideEffect.replaceAll('_', ' ')}
        </span>
        <span className="badge" title="policy">
          {a.policy.replaceAll('_', ' ')}
        </span>
        <span className="muted">
          asked <Time at={a.createdAt} />
        </span>
        <span className="muted">
          expires <Time at={a.expiresAt} />
        </span>
      </div>
      <p className="small">
        <AskingAgent turnId={a.turnId} /> Asked by the turn{' '}
        <Link to={`/turns/${a.turnId}`}>{shortId(a.turnId)}</Link> of session{' '}
        <Link to={`/sessions/${a.sessionId}`}>{shortId(a.sessionId)}</Link> (call{' '}
        <span className="mono">{a.callId}</span>): {POLICY[a.policy]}.
      </p>
      <Json value={a.arguments} label={`Arguments of ${a.toolName}`} />
      {decide.data ? (
        <p role="status">
          Decided: <StatusBadge status={decide.data.status} />
        </p>
      ) : (
        <form className="decision" onSubmit={submit}>
          <label htmlFor={reasonId} className="small">
            Reason
          </label>
          <input
            id={reasonId}
            value={reason}
            onChange={(e) => setReason(e.target.value)}
            placeholder="Why (recorded with the decision)"
          />
          <button
            type="button"
            className="primary"
            disabled={decide.isPending}
            onClick={() => decide.mutate('approve')}
          >
            Approve
          </button>
          <button
            type="button"
            className="danger"
            disabled={decide.isPending}
            onClick={() => decide.mutate('reject')}
          >
            Reject
          </button>
        </form>
      )}
      {decide.error ? <ErrorBox error={decide.error} /> : null}
    </li>
  );
}

/**
 * Which agent asked: the approval names its turn, the turn its agent (one read per pending approval,
 * cached; the approval answer itself carries no agent).
 */
function AskingAgent({ turnId }: { turnId: string }) {
  const api = useApi();
  const agents = useAgents();
  const turn = useQuery({
    queryKey: ['turn', turnId, 'agent'],
    queryFn: () => unwrap(api.GET('/v1/turns/{id}', { params: { path: { id: turnId } } })),
    staleTime: Infinity,
  });
  if (!turn.data) return null;
  const name = agents.data?.data.find((x) => x.id === turn.data.agentId)?.name ?? turn.data.agentId;
  return (
    <span>
      Agent <strong>{name}</strong>.
    </span>
  );
}
