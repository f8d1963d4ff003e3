import { StatusBadge } from '../../components/ui';
import { formatMs, type Waterfall as WaterfallData } from '../../lib/timeline';

/**
 * The turn as a waterfall: one row per part (queue wait, run, rounds, attempts, tool calls, approval
 * waits, child turns, hooks), its bar placed and sized in proportion to the turn's span. The bars are
 * decoration: each row says the same in words for screen readers.
 */
export function Waterfall({ data }: { data: WaterfallData }) {
  return (
    <section className="panel" aria-labelledby="tp-waterfall">
      <h2 id="tp-waterfall">Timeline</h2>
      <p className="muted small">Admission to the last recorded step: {formatMs(data.spanMs)}.</p>
      <ol className="tp-waterfall" data-testid="waterfall">
        {data.rows.map((r) => (
          <li key={r.key} className={`tp-row tp-kind-${r.kind}`} data-testid={`row-${r.key}`}>
            <span className="tp-sr-only">{r.description}</span>
            <span className={`tp-row-label tp-depth-${r.depth}`} aria-hidden="true">
              <span className="tp-row-name">{r.label}</span>
              {r.status ? <StatusBadge status={r.status} /> : null}
            </span>
            <span className="tp-track" aria-hidden="true">
              {r.startMs === null ? null : (
                <span
                  className={`tp-bar${r.open ? ' tp-bar-open' : ''}`}
                  style={{ marginLeft: `${r.offsetPct}%`, width: `${r.widthPct}%` }}
                />
              )}
            </span>
            <span className="tp-row-time small muted" aria-hidden="true">
              {r.startMs === null ? 'no timing' : `${formatMs(r.durationMs)}${r.open ? '+' : ''}`}
            </span>
          </li>
        ))}
      </ol>
    </section>
  );
}
