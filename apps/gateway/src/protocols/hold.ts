import type { FastifyReply } from 'fastify';
import type { AdmittedTurn, AgentTurns, Held } from '@switchboard/agent-turns';
import { clientGone } from '../platform/sse';

/**
 * Holds an HTTP request until its turn settles (`AgentTurns.hold`, the one wait): the client going
 * away ends the hold (`left`; the turn goes on, and nothing is to be sent). Every protocol's waiting
 * route — POST /v1/sessions/:id/messages with `wait`, chat completions, Responses, LangGraph's
 * runs/wait and join — answers from the `Held` this returns, in its own wire shape.
 */
export async function holdRequest(
  turns: AgentTurns,
  reply: FastifyReply,
  t: Pick<AdmittedTurn, 'tenantId' | 'turnId' | 'watch' | 'subscribedBeforeAdmission'>,
  o: { deadline?: number; orPaused?: boolean; orClientTool?: boolean } = {},
): Promise<Held> {
  const gone = clientGone(reply);
  try {
    const held = await turns.hold(t, { ...o, signal: gone.signal });
    return gone.signal.aborted ? { settled: false, why: 'left' } : held;
  } finally {
    gone.release();
  }
}
