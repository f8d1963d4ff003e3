import { useQuery } from '@tanstack/react-query';
import { useEffect, useRef } from 'react';
import { unwrap, useApi } from '../../api';
import { ErrorBox, Json, Loading } from '../../components/ui';
import { asJson, SOURCE_LABEL, tokenShares, type RoundContext } from '../../lib/timeline';

/**
 * "What the model saw": the exact context of one round (GET /v1/turns/:id/rounds/:index/context) —
 * system prompt, tools offered, every message with its source and tokens, and the totals. All of it
 * is model, user or tool text: shown as plain text or <Json>, never as HTML.
 */
export function ContextViewer({
  turnId,
  index,
  onClose,
}: {
  turnId: string;
  index: number;
  onClose: () => void;
}) {
  const api = useApi();
  const heading = useRef<HTMLHeadingElement>(null);
  const q = useQuery({
    queryKey: ['round-context', turnId, index],
    queryFn: () =>
      unwrap(
        api.GET('/v1/turns/{id}/rounds/{index}/context', {
          params: { path: { id: turnId, index: String(index) } },
        }),
      ),
    // A recorded context never changes.
    staleTime: Infinity,
  });
  // Opening moves focus to the viewer, so keyboard and screen-reader users land on what they asked for.
  useEffect(() => heading.current?.focus(), []);
  const hid = `tp-context-${index}`;
  return (
    <section className="tp-context" aria-labelledby={hid} data-testid={`context-${index}`}>
      <header className="tp-context-head">
        <h4 id={hid} ref={heading} tabIndex={-1}>
          What the model saw: round {index + 1}
        </h4>
        <button type="button" onClick={onClose}>
          Close context
        </button>
      </header>
      {q.isPending ? <Loading what="Loading the context" /> : null}
      {q.error ? <ErrorBox error={q.error} /> : null}
      {q.data ? <ContextBody context={q.data} /> : null}
    </section>
  );
}

function ContextBody({ context: c }: { context: RoundContext }) {
  return (
    <>
      <p className="muted small">
        Recorded <time dateTime={c.recordedAt}>{new Date(c.recordedAt).toLocaleString()}</time>. Tokens are
        estimates (about four characters a token).
      </p>
      <div className="table-scroll">
        <table aria-label="Tokens per part">
          <thead>
            <tr>
              <th scope="col">Part</th>
              <th scope="col">Tokens</th>
              <th scope="col">Share</th>
            </tr>
          </thead>
          <tbody>
            {tokenShares(c.tokens).map((s) => (
              <tr key={s.part}>
                <td>{s.part}</td>
                <td>{s.tokens}</td>
                <td>
                  <span className="tp-share">
                    <span className="tp-share-bar" aria-hidden="true">
                      <span style={{ width: `${s.pct}%` }} />
                    </span>
                    {s.pct}%
                  </span>
                </td>
              </tr>
            ))}
            <tr>
              <th scope="row">total</th>
              <td>
                <strong>{c.tokens.total}</strong>
              </td>
              <td />
            </tr>
          </tbody>
        </table>
      </div>

      <h5>
        System prompt <span className="muted small">({c.tokens.system} tokens)</span>
      </h5>
      <pre className="tp-text" aria-label="System prompt" tabIndex={0}>
        {c.system}
      </pre>

      <h5>
        Tools offered ({c.tools.length}) <span className="muted small">({c.tokens.tools} tokens)</span>
      </h5>
      {c.tools.length === 0 ? (
        <p className="empty">No tools were offered.</p>
      ) : (
        <ul className="tp-tools">
          {c.tools.map((t) => (
            <li key={t.name}>
              <details>
                <summary>
                  <span className="mono">{t.name}</span>
                  {t.strict ? <span className="muted small"> (strict)</span> : null}
                </summary>
                <p className="tp-prose">{t.description}</p>
                <Json value={t.parameters} label={`Parameters of ${t.name}`} />
              </details>
            </li>
          ))}
        </ul>
      )}

      <h5>
        Messages ({c.messages.length}) <span className="muted small">({c.tokens.messages} tokens)</span>
      </h5>
      <ol className="tp-messages" aria-label="Messages">
        {c.messages.map((m, i) => {
          const json = m.content ? asJson(m.content) : null;
          return (
            <li key={i} className={`tp-message tp-role-${m.role}`} data-testid="context-message">
              <div className="tp-message-head small">
                <strong>{m.role}</strong>
                {m.name ? <span className="mono"> {m.name}</span> : null}
                <span className="tp-source">{SOURCE_LABEL[m.source] ?? m.source}</span>
                <span className="muted">{m.tokens} tokens</span>
                {m.toolCallId ? <span className="muted mono">answers {m.toolCallId}</span> : null}
              </div>
              {json !== null ? (
                <Json value={json} label={`Message ${i + 1} content`} />
              ) : m.content ? (
                <pre className="tp-text">{m.content}</pre>
              ) : null}
              {m.toolCalls?.length ? (
                <Json
                  value={m.toolCalls.map((t) => ({ ...t, arguments: asJson(t.arguments) ?? t.arguments }))}
                  label={`Tool calls of message ${i + 1}`}
                />
              ) : null}
            </li>
          );
        })}
      </ol>
    </>
  );
}
