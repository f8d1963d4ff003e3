import type { ReactNode } from 'react';
import { describeError } from '../lib/errors';
import { formatUsd } from '../lib/money';

/** A page: its heading (the document's h1), actions beside it, then its content. */
export function Page({
  title,
  actions,
  children,
}: {
  title: ReactNode;
  actions?: ReactNode;
  children: ReactNode;
}) {
  return (
    <section className="page">
      <header className="page-header">
        <h1>{title}</h1>
        {actions ? <div className="actions">{actions}</div> : null}
      </header>
      {children}
    </section>
  );
}

export function Loading({ what = 'Loading' }: { what?: string }) {
  return (
    <p className="loading" role="status">
      {what}…
    </p>
  );
}

export function ErrorBox({ error }: { error: unknown }) {
  return (
    <p className="error" role="alert">
      {describeError(error)}
    </p>
  );
}

/** A status as a coloured badge (colour by its meaning; the text says it too). */
export function StatusBadge({ status }: { status: string }) {
  const tone = /fail|error|reject|cancel|stopp|expired|outcome_unknown/.test(status)
    ? 'bad'
    : /await|pend|queued|paused|asleep|blocked|deferred/.test(status)
      ? 'wait'
      : /run|stream|active/.test(status)
        ? 'live'
        : 'ok';
  return <span className={`badge badge-${tone}`}>{status.replaceAll('_', ' ')}</span>;
}

/** USD as the API gives it (an exact decimal string), the exact value in its title. */
export function Money({ usd }: { usd: string | number | null | undefined }) {
  if (usd === null || usd === undefined) return <span className="muted">—</span>;
  return (
    <span className="money" title={`${String(usd)} USD`}>
      {formatUsd(usd)}
    </span>
  );
}

/** A timestamp: relative text, the exact time in its title. */
export function Time({ at }: { at: string | null | undefined }) {
  if (!at) return <span className="muted">—</span>;
  const date = new Date(at);
  return (
    <time dateTime={at} title={date.toISOString()}>
      {relative(date)}
    </time>
  );
}

export function relative(date: Date, now = Date.now()): string {
  const s = Math.round((now - date.getTime()) / 1000);
  const abs = Math.abs(s);
  const unit =
    abs < 60
      ? `${abs}s`
      : abs < 3600
        ? `${Math.floor(abs / 60)}m`
        : abs < 86400
          ? `${Math.floor(abs / 3600)}h`
          : `${Math.floor(abs / 86400)}d`;
  return s >= 0 ? `${unit} ago` : `in ${unit}`;
}

/** JSON (arguments, results) as escaped text in a scrollable block. */
export function Json({ value, label }: { value: unknown; label?: string }) {
  return (
    <pre className="json" aria-label={label} tabIndex={0}>
      {typeof value === 'string' ? value : JSON.stringify(value, null, 2)}
    </pre>
  );
}
