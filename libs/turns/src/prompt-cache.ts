import { hash } from 'node:crypto';
import type { PromptCache } from '@switchboard/providers';
import type { TurnLoad } from '@switchboard/store';

/** Tools whose call makes the turn wait for a sub-agent (docs/adr/0024). */
const WAITING_TOOLS = new Set(['spawn_subagent', 'wait_subagent']);

/**
 * The provider prompt cache a turn's rounds ask for (docs/adr/0032).
 *
 * The key: one per tenant, agent and session, hashed (the provider sees no id of ours). A child turn
 * running its parent's agent shares its parent's key (`cacheSessionId` from the claim): same
 * instructions, tools and model, so the same prefix. Anthropic has no key, it matches prefixes by
 * content: a child with the parent's prefix reads the parent's entries there on its own.
 *
 * The retention: `long` (Anthropic 1 h, OpenAI 24 h) when the turn may wait before its next round —
 * a tool it is offered needs approval (the agent's or the tenant's list, or an MCP tool, docs/adr/0023),
 * it may wait for a sub-agent, or it resumes after decisions — else `short` (5 min), which costs
 * less to write (Anthropic: 1.25× the input rate against 2×).
 */
export function promptCacheFor(
  load: Pick<TurnLoad, 'turn' | 'agent' | 'decisions'>,
  offered: readonly string[],
  tenantApprovalRequired: readonly string[],
): PromptCache {
  const scope = load.turn.cacheSessionId ?? load.turn.sessionId;
  const key = `sb-${hash('sha256', `${load.turn.tenantId}:${load.agent.id}:${scope}`, 'hex').slice(0, 40)}`;
  const gated = new Set([...load.agent.approvalRequired, ...tenantApprovalRequired]);
  const mayWait =
    load.decisions.length > 0 ||
    offered.some((t) => gated.has(t) || WAITING_TOOLS.has(t) || t.includes('__'));
  return { key, retention: mayWait ? 'long' : 'short' };
}
