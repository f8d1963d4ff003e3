import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { Link } from 'react-router';
import type { components } from '@switchboard/client';
import { unwrap, useApi } from '../../api';
import { ErrorBox, Json, Loading, Page, StatusBadge, Time } from '../../components/ui';
import { askedBy, authorityBadge, type Provenance } from '../../lib/provenance';
import { shortId } from '../sessions/ids';
import '../sessions/sessions.css';
import './approvals.css';

type Approval = components['schemas']['Approval'];

/** Why the call needs a person: the policy that gated it (docs/adr: approvals), in words. */
const POLICY: Record<Approval['policy'], string> = {
  tool: 'the tool requires approval',
  agent: "the agent's approvalRequired lists it",
  tenant: "the tenant's settings require it",
  untrusted_input: 'the turn acts on untrusted input (external evidence)',
  replay_unrecorded_side_effect: 'a replay asks for a side effect its original did not make (docs/adr/0054)',
};

/**
 * Every pending approval across the tenant's sessions, live (refetched every 2 s), each with the
 * call's arguments and its provenance — who or what asked (the turn's input message: its kind,
 * origin and authority class, as the approval answer carries them), the agent, the session and
 * turn, the tool, its effect class and the policy that gated it; approve or reject with a reason
 * (the gateway audits the decision: `approval.decided`). Below, the recent decisions.
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
                <th scope="col">Asked by</th>
                <th scope="col">Decided by</th>
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
                    <Authority p={a.provenance} />
                  </td>
                  <td className="mono small">{a.decidedBy ?? <span className="muted">—</span>}</td>
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
  const external = a.provenance?.authorityClass === 'external_evidence';
  return (
    <li
      className={external ? 'entry entry-external' : 'entry'}
      data-testid={`approval-${a.id}`}
      aria-label={`Approval of ${a.toolName}`}
    >
      <div className="entry-head small">
        <strong className="mono">{a.toolName}</strong>
        <span className="badge" title="effect class">
          {a.sideEffect.replaceAll('_', ' ')}
        </span>
        <span className="badge" title="policy">
          {a.policy.replaceAll('_', ' ')}
        </span>
        <Authority p={a.provenance} />
        <span className="muted">
          asked <Time at={a.createdAt} />
        </span>
        <span className="muted">
          expires <Time at={a.expiresAt} />
        </span>
      </div>
      <AskedBy a={a} />
      <p className="small">
        From the turn <Link to={`/turns/${a.turnId}`}>{shortId(a.turnId)}</Link> of session{' '}
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

/** The authority class of what asked, as a badge; external evidence stands out. */
function Authority({ p }: { p: Provenance | null }) {
  if (!p) return <span className="muted small">unknown</span>;
  const b = authorityBadge(p.authorityClass);
  return (
    <span className={`badge badge-${b.tone}`} title={b.title} data-testid="authority-class">
      {b.label}
    </span>
  );
}

/**
 * Who or what asked: the agent, and the turn's input message (its kind and origin in words, its
 * trust). A call asked for by external content (a webhook body, a channel message) says so plainly.
 */
function AskedBy({ a }: { a: Approval }) {
  const p = a.provenance;
  return (
    <p className="small" data-testid="asked-by">
      Agent <strong>{a.agentName ?? a.agentId}</strong>
      {p ? (
        <>
          {' '}
          acting on {askedBy(p)} <span className="muted">(trust: {p.trust.replaceAll('_', ' ')})</span>.
          {p.authorityClass === 'external_evidence' ? (
            <strong className="external-flag"> Asked by external content.</strong>
          ) : null}
        </>
      ) : (
        <span className="muted">; its input message is no longer kept.</span>
      )}
    </p>
  );
}
