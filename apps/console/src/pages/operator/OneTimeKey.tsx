import { useState } from 'react';

/**
 * A new API key, shown once: the API keeps only its hash, so this is the only time anyone sees it.
 * It lives in this component's state alone (never the query cache, storage or a URL) and is gone
 * when the operator dismisses it or leaves the page.
 */
export function OneTimeKey({ label, secret, onDone }: { label: string; secret: string; onDone: () => void }) {
  const [copied, setCopied] = useState<'yes' | 'no' | null>(null);
  const copy = () => {
    navigator.clipboard.writeText(secret).then(
      () => setCopied('yes'),
      () => setCopied('no'),
    );
  };
  return (
    <div className="panel notice" role="region" aria-label={label}>
      <p>
        <strong>{label}.</strong> Copy it now: it is shown only this once and cannot be shown again.
      </p>
      <input
        className="mono one-time-key"
        readOnly
        aria-label="New API key"
        data-testid="new-api-key"
        value={secret}
        onFocus={(e) => e.currentTarget.select()}
      />
      <div className="actions">
        <button type="button" onClick={copy}>
          Copy key
        </button>
        <button type="button" onClick={onDone}>
          Done, hide the key
        </button>
      </div>
      {copied ? (
        <p role="status" className="small muted">
          {copied === 'yes' ? 'Copied to the clipboard.' : 'Could not copy: select the key and copy it.'}
        </p>
      ) : null}
    </div>
  );
}
