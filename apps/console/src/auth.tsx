import { createContext, useCallback, useContext, useMemo, useState, type ReactNode } from 'react';

/**
 * Who is signed in. The credential lives in sessionStorage (this tab only, gone when it closes) and in
 * memory; never in a URL, a cookie or a log. An operator (ADMIN_TOKEN) may act as one tenant: its
 * requests then carry `X-Switchboard-Tenant`.
 */
export type Credential =
  | { kind: 'tenant'; token: string; label: string }
  | { kind: 'operator'; token: string; actingTenant?: { id: string; name: string } };

const STORAGE_KEY = 'sb.console.credential';

function stored(): Credential | null {
  try {
    const raw = sessionStorage.getItem(STORAGE_KEY);
    if (!raw) return null;
    const value = JSON.parse(raw) as Credential;
    return value && typeof value.token === 'string' && (value.kind === 'tenant' || value.kind === 'operator')
      ? value
      : null;
  } catch {
    return null;
  }
}

interface Auth {
  credential: Credential | null;
  /** Why the last credential was dropped (a 401), shown on the sign-in page. */
  notice: string | null;
  signIn: (credential: Credential) => void;
  signOut: (notice?: string) => void;
  /** The operator opens a tenant's view (or, with null, goes back to the operator's). */
  actAs: (tenant: { id: string; name: string } | null) => void;
}

const AuthContext = createContext<Auth | null>(null);

export function AuthProvider({ children }: { children: ReactNode }) {
  const [credential, setCredential] = useState<Credential | null>(stored);
  const [notice, setNotice] = useState<string | null>(null);

  const save = useCallback((next: Credential | null) => {
    if (next) sessionStorage.setItem(STORAGE_KEY, JSON.stringify(next));
    else sessionStorage.removeItem(STORAGE_KEY);
    setCredential(next);
  }, []);

  const auth = useMemo<Auth>(
    () => ({
      credential,
      notice,
      signIn: (c) => {
        setNotice(null);
        save(c);
      },
      signOut: (why) => {
        setNotice(why ?? null);
        save(null);
      },
      actAs: (tenant) => {
        if (credential?.kind !== 'operator') return;
        save({ kind: 'operator', token: credential.token, ...(tenant ? { actingTenant: tenant } : {}) });
      },
    }),
    [credential, notice, save],
  );
  return <AuthContext.Provider value={auth}>{children}</AuthContext.Provider>;
}

export function useAuth(): Auth {
  const auth = useContext(AuthContext);
  if (!auth) throw new Error('useAuth outside AuthProvider');
  return auth;
}

/** Whether the current credential sees a tenant's pages (a tenant key, or an operator acting as one). */
export function seesTenant(c: Credential | null): boolean {
  return c?.kind === 'tenant' || (c?.kind === 'operator' && c.actingTenant !== undefined);
}
