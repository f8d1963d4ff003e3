import { useQuery } from '@tanstack/react-query';
import { unwrap, useApi } from '../../api';

/** The tenant's agents (first 200, by id): names for sessions and the "New session" choice. */
export function useAgents() {
  const api = useApi();
  return useQuery({
    queryKey: ['agents', 'names'],
    queryFn: () => unwrap(api.GET('/v1/agents', { params: { query: { limit: 200 } } })),
    staleTime: 30_000,
  });
}

/** agentId → name, for rows that show an agent. */
export function agentNames(agents: { id: string; name: string }[] | undefined): Map<string, string> {
  return new Map((agents ?? []).map((a) => [a.id, a.name]));
}
