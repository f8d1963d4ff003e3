import { useQuery } from '@tanstack/react-query';
import { useRef, useState, type ReactNode } from 'react';
import { Link } from 'react-router';
import { unwrap, useApi } from '../../api';
import { ErrorBox, Json, Loading, Money, StatusBadge } from '../../components/ui';
import {
  approvalWaitMs,
  attemptKind,
  compactionText,
  formatBytes,
  formatMs,
  type TimelineChild,
  type TimelineRound,
  type TimelineToolCall,
} from '../../lib/timeline';
import { ContextViewer } from './ContextViewer';

/** One model round: its model, attempts (retries, fallbacks), tokens and cost, its tool calls, its context. */
export function RoundView({
  turnId,
  round: r,
  childrenOf,
}: {
  turnId: string;
  round: TimelineRound;
  childrenOf: (callId: string) => TimelineChild[];
}) {
  const [open, setOpen] = useState(false);
  const contextButton = useRef<HTMLButtonElement>(null);
  const n = r.index + 1;
  const hid = `tp-round-${r.index}`;
  return (
    <article className="panel tp-round" aria-labelledby={hid} data-testid={`round-${r.index}`}>
      <header className="tp-round-head">
        <h3 id={hid}>Round {n}</h3>
        <span className="mono tp-wrap">{r.model ?? 'no model answered'}</span>
        {r.contextRecorded ? (
          <button
            ref={contextButton}
            type="button"
            aria-label={`Context of round ${n}`}
            aria-expanded={open}
            onClick={() => setOpen((o) => !o)}
          >
            Context
          </button>
        ) : (
          // Rounds run before contexts were recorded (docs/adr/0045) have none to show.
          <span className="muted small tp-no-context">Context not recorded</span>
        )}
      </header>
      <dl className="tp-facts">
        <Fact term="Latency">{formatMs(r.latencyMs)}</Fact>
        <Fact term="Tokens">
          {r.usage
            ? `${r.usage.inputTokens} in (${r.usage.cachedTokens} cached, ${r.usage.cacheWriteTokens} cache write), ${r.usage.outputTokens} out`
            : '—'}
        </Fact>
        <Fact term="Cost">
          <Money usd={r.costUsd} />
          {r.cacheSavedUsd ? (
            <span className="muted small">
              {' '}
              (cache saved <Money usd={r.cacheSavedUsd} />)
            </span>
          ) : null}
        </Fact>
      </dl>

      <h4>Attempts ({r.attempts.length})</h4>
      {r.attempts.length === 0 ? (
        <p className="empty">No provider attempt recorded.</p>
      ) : (
        <div className="table-scroll">
          <table className="tp-nowrap" aria-label={`Attempts of round ${n}`}>
            <thead>
              <tr>
                <th scope="col">Attempt</th>
                <th scope="col">Model</th>
                <th scope="col">Outcome</th>
                <th scope="col">Failure</th>
                <th scope="col">Latency</th>
              </tr>
            </thead>
            <tbody>
              {r.attempts.map((a, i) => {
                const kind = attemptKind(r.attempts, i);
                const status = typeof a.status === 'number' ? ` (HTTP ${a.status})` : '';
                return (
                  <tr key={i} data-testid="attempt">
                    <td>
                      {a.attempt} of {a.maxAttempts}
                      {kind === 'first' ? null : <span className={`tp-tag tp-tag-${kind}`}>{kind}</span>}
                    </td>
                    <td className="mono">{a.model}</td>
                    <td>
                      <StatusBadge status={a.outcome} />
                    </td>
                    <td>{a.failureKind ? `${a.failureKind.replaceAll('_', ' ')}${status}` : '—'}</td>
                    <td>{formatMs(a.durationMs)}</td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}

      <h4>Tool calls ({r.toolCalls.length})</h4>
      {r.toolCalls.length === 0 ? (
        <p className="empty">The model called no tool in this round.</p>
      ) : (
        <ul className="tp-calls">
          {r.toolCalls.map((c) => (
            <ToolCallView key={c.callId} call={c} spawned={childrenOf(c.callId)} />
          ))}
        </ul>
      )}
      {open ? (
        <ContextViewer
          turnId={turnId}
          index={r.index}
          onClose={() => {
            setOpen(false);
            // Back where the keyboard was before the viewer opened.
            contextButton.current?.focus();
          }}
        />
      ) : null}
    </article>
  );
}

/** One term of a facts list (a <dl> of label/value pairs that wraps into columns). */
export function Fact({ term, children }: { term: string; children: ReactNode }) {
  return (
    <div>
      <dt>{term}</dt>
      <dd>{children}</dd>
    </div>
  );
}

const OUTCOME_NOTE: Partial<Record<TimelineToolCall['outcome'], string>> = {
  outcome_unknown:
    'Its worker stopped while this side-effecting call ran: the effect may or may not have happened.',
  awaiting_approval: 'Waiting for a person to approve or reject it.',
  awaiting_client_tool: 'The client runs this tool: waiting for it to send the result.',
  refused: 'A gate refused it before it ran.',
};

function ToolCallView({ call: c, spawned }: { call: TimelineToolCall; spawned: TimelineChild[] }) {
  return (
    <li className="tp-call" data-testid={`call-${c.callId}`}>
      <div className="tp-call-head">
        <strong className="mono tp-wrap">{c.name}</strong>
        <StatusBadge status={c.outcome} />
        {c.effectClass ? <span className="tp-tag">{c.effectClass.replaceAll('_', ' ')}</span> : null}
        <span className="muted small">{formatMs(c.durationMs)}</span>
      </div>
      {OUTCOME_NOTE[c.outcome] ? <p className="notice small">{OUTCOME_NOTE[c.outcome]}</p> : null}
      <dl className="tp-facts">
        <Fact term="Gates">
          {c.gates.length === 0
            ? 'none'
            : c.gates.map((g) => `${g.gate.replaceAll('_', ' ')}: ${g.outcome}`).join(', ')}
        </Fact>
        {c.approval?.kind === 'client_tool' ? (
          <Fact term="Client tool">
            <StatusBadge status={c.approval.status} /> {c.name}, run by the client, waited{' '}
            {formatMs(approvalWaitMs(c.approval))}
            {c.approval.decidedBy && c.approval.status === 'answered'
              ? `, answered via ${c.approval.decidedBy}`
              : ''}
          </Fact>
        ) : c.approval ? (
          <Fact term="Approval">
            <StatusBadge status={c.approval.status} /> {c.approval.policy} policy, waited{' '}
            {formatMs(approvalWaitMs(c.approval))}
            {c.approval.decidedBy ? `, by ${c.approval.decidedBy}` : ''}
            {c.approval.reason ? <span className="tp-wrap">: {c.approval.reason}</span> : null}
          </Fact>
        ) : null}
        <Fact term="Result">{compactionText(c)}</Fact>
        <Fact term="Call id">
          <span className="mono tp-wrap">{c.callId}</span>
        </Fact>
      </dl>
      {c.originalId ? <OriginalResult id={c.originalId} /> : null}
      <details>
        <summary>Arguments</summary>
        <Json value={c.arguments} label={`Arguments of ${c.name}`} />
      </details>
      {c.error !== null && c.error !== undefined ? (
        <details open>
          <summary>Error</summary>
          <Json value={c.error} label={`Error of ${c.name}`} />
        </details>
      ) : null}
      {spawned.length > 0 ? (
        <div className="tp-spawned">
          <h5>Child turns it spawned</h5>
          <ChildList items={spawned} />
        </div>
      ) : null}
    </li>
  );
}

/** A compacted result's original, fetched only when asked for, shown as plain text. */
function OriginalResult({ id }: { id: string }) {
  const api = useApi();
  const [shown, setShown] = useState(false);
  const q = useQuery({
    queryKey: ['tool-result', id],
    queryFn: () => unwrap(api.GET('/v1/tool-results/{id}', { params: { path: { id } } })),
    enabled: shown,
    staleTime: Infinity,
  });
  return (
    <div className="tp-original">
      <button type="button" aria-expanded={shown} onClick={() => setShown((s) => !s)}>
        {shown ? 'Hide original result' : 'Show original result'}
      </button>
      {shown && q.isPending ? <Loading what="Loading the original" /> : null}
      {shown && q.error ? <ErrorBox error={q.error} /> : null}
      {shown && q.data ? (
        <>
          <p className="muted small">
            {q.data.kind}, {formatBytes(q.data.bytes)}, kept until{' '}
            <time dateTime={q.data.expiresAt}>{new Date(q.data.expiresAt).toLocaleString()}</time>
          </p>
          <pre className="tp-text" aria-label="Original result" tabIndex={0}>
            {q.data.content}
          </pre>
        </>
      ) : null}
    </div>
  );
}

/** Child turns with their own cost and their roll-up (their own children's included), each a link. */
export function ChildList({ items }: { items: TimelineChild[] }) {
  return (
    <ul className="tp-children">
      {items.map((c) => (
        <li key={c.taskId} data-testid="child">
          <div className="tp-call-head">
            {c.childTurnId ? (
              <Link to={`/turns/${c.childTurnId}`}>Child turn: {c.agent}</Link>
            ) : (
              <span>Child: {c.agent} (no turn yet)</span>
            )}
            <StatusBadge status={c.childTurnStatus ?? c.taskStatus} />
            {c.blocking ? <span className="tp-tag">blocking</span> : null}
          </div>
          <p className="small">
            Cost <Money usd={c.costUsd} />, with its children <Money usd={c.totalCostUsd} />
            {c.completedAt ? (
              <span className="muted">
                {' '}
                · took {formatMs(Date.parse(c.completedAt) - Date.parse(c.createdAt))}
              </span>
            ) : null}
          </p>
        </li>
      ))}
    </ul>
  );
}
