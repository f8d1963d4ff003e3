import { useState, type FormEvent } from 'react';
import { useNavigate } from 'react-router';
import { clientFor, unwrap } from '../api';
import { useAuth, type Credential } from '../auth';
import { ApiError, describeError } from '../lib/errors';

/**
 * Sign in with a tenant API key (the tenant's view) or the operator's ADMIN_TOKEN (the operator's
 * view). `GET /v1/whoami` says which the credential is; a revoked or wrong one is a 401, shown here
 * with the API's reason.
 */
export async function identify(token: string): Promise<Credential> {
  const who = await unwrap(clientFor({ kind: 'operator', token }).api.GET('/v1/whoami'));
  return who.kind === 'operator'
    ? { kind: 'operator', token }
    : { kind: 'tenant', token, label: `${who.tenantName} (${who.keyPrefix}…)` };
}

export function SignIn() {
  const { signIn, notice } = useAuth();
  const navigate = useNavigate();
  const [token, setToken] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  async function submit(e: FormEvent) {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const credential = await identify(token.trim());
      signIn(credential);
      await navigate(credential.kind === 'operator' ? '/operator/tenants' : '/sessions', { replace: true });
    } catch (err) {
      setError(
        err instanceof ApiError && err.status === 401
          ? 'That key or token was not accepted: it may be revoked or mistyped.'
          : describeError(err),
      );
    } finally {
      setBusy(false);
    }
  }

  return (
    <main className="sign-in">
      <form onSubmit={(e) => void submit(e)} aria-labelledby="sign-in-title">
        <h1 id="sign-in-title">Switchboard console</h1>
        <p>Sign in with a tenant API key, or with the operator's ADMIN_TOKEN.</p>
        {notice ? (
          <p className="notice" role="status">
            {notice}
          </p>
        ) : null}
        <label htmlFor="token">API key or admin token</label>
        <input
          id="token"
          name="token"
          type="password"
          autoComplete="off"
          required
          value={token}
          onChange={(e) => setToken(e.target.value)}
        />
        {error ? (
          <p className="error" role="alert">
            {error}
          </p>
        ) : null}
        <button type="submit" disabled={busy || token.trim() === ''}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
        <p className="muted small">
          The key is kept in this browser tab only and is forgotten when you sign out.
        </p>
      </form>
    </main>
  );
}
