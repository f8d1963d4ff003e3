import { createSwitchboardClient, type SwitchboardClient } from '@switchboard/client';
import { QueryCache, QueryClient, MutationCache } from '@tanstack/react-query';
import { createContext, useContext, useMemo, type ReactNode } from 'react';
import { useAuth, type Credential } from './auth';
import { ApiError, apiErrorOf } from './lib/errors';

/**
 * The console is a client of the public HTTP API like any other: every call goes through the typed
 * client of libs/client (`api.GET('/v1/…')`, checked against the OpenAPI document at compile time).
 */
export function clientFor(credential: Credential): SwitchboardClient {
  return createSwitchboardClient({
    baseUrl: window.location.origin,
    apiKey: credential.token,
    headers:
      credential.kind === 'operator' && credential.actingTenant
        ? { 'x-switchboard-tenant': credential.actingTenant.id }
        : undefined,
  });
}

/** An openapi-fetch answer's data, or its error thrown as an ApiError. */
export async function unwrap<T>(
  call: Promise<{ data?: T; error?: unknown; response: Response }>,
): Promise<NonNullable<T>> {
  const { data, error, response } = await call;
  if (error !== undefined || !response.ok) throw apiErrorOf(response.status, error);
  return data as NonNullable<T>;
}

const ClientContext = createContext<SwitchboardClient | null>(null);

/** The typed client for whoever is signed in. */
export function ApiProvider({ children }: { children: ReactNode }) {
  const { credential } = useAuth();
  const client = useMemo(() => (credential ? clientFor(credential) : null), [credential]);
  return <ClientContext.Provider value={client}>{children}</ClientContext.Provider>;
}

export function useClient(): SwitchboardClient {
  const client = useContext(ClientContext);
  if (!client) throw new Error('useClient while signed out');
  return client;
}

/** The API of the signed-in credential: `const api = useApi(); unwrap(api.GET('/v1/agents'))`. */
export function useApi(): SwitchboardClient['api'] {
  return useClient().api;
}

/**
 * Queries retry only what may pass on a retry (a 5xx or a network error, twice); a 401 means the
 * credential was revoked or is wrong, and signs out with a notice instead of a broken page.
 */
export function createQueryClient(onUnauthorized: () => void): QueryClient {
  const on401 = (e: unknown) => {
    if (e instanceof ApiError && e.status === 401) onUnauthorized();
  };
  return new QueryClient({
    queryCache: new QueryCache({ onError: on401 }),
    mutationCache: new MutationCache({ onError: on401 }),
    defaultOptions: {
      queries: {
        staleTime: 2_000,
        refetchOnWindowFocus: false,
        retry: (count, e) => count < 2 && !(e instanceof ApiError && e.status < 500),
      },
    },
  });
}
