import type { components } from '@switchboard/client';
import { useQuery } from '@tanstack/react-query';
import { unwrap, useApi } from '../../api';

export type Agent = components['schemas']['Agent'];
export type AgentDetail = components['schemas']['AgentDetail'];
/** An agent of the list: the agent and its lifecycle. */
export type AgentListItem = components['schemas']['AgentListItem'];

/**
 * The tenant's agents (the first 200: a console list, not an export), shared by the agents, inputs
 * and usage pages, which name agents by id.
 */
export function useAgents() {
  const api = useApi();
  return useQuery({
    queryKey: ['agents'],
    queryFn: () => unwrap(api.GET('/v1/agents', { params: { query: { limit: 200 } } })),
  });
}

/** An agent with its status (lifecycle, tool statistics). */
export function useAgent(id: string | undefined, o: { refetchInterval?: number } = {}) {
  const api = useApi();
  return useQuery({
    queryKey: ['agent', id],
    enabled: Boolean(id),
    refetchInterval: o.refetchInterval,
    queryFn: () => unwrap(api.GET('/v1/agents/{id}', { params: { path: { id: id ?? '' } } })),
  });
}

/** Agent names by id, for pages that list other things by agent. */
export function useAgentNames(): Map<string, string> {
  const agents = useAgents();
  return new Map((agents.data?.data ?? []).map((a) => [a.id, a.name]));
}
