import { z } from 'zod';
import type { ToolDefinition } from '@switchboard/tools';
import type { ClientToolDeclaration } from '../types';

/**
 * Client-side tools as the run's tool definitions (docs/adr/0047). A leaf (`TurnRun` builds them;
 * the gate that answers their calls is `client-tools.ts`).
 */

/** The declarations as tool definitions, a name the agent's own tools have left out. */
export function clientToolDefinitions(
  declared: readonly ClientToolDeclaration[],
  agentTools: readonly string[],
): Map<string, ToolDefinition> {
  const defs = new Map<string, ToolDefinition>();
  for (const d of declared) {
    if (agentTools.includes(d.name) || defs.has(d.name)) continue;
    defs.set(d.name, {
      name: d.name,
      description: d.description,
      // The client validates its own arguments; the model's JSON is handed over as written.
      schema: z.unknown(),
      parameters: d.parameters,
      // Its effect happens outside, in the client: later side effects of the round are held behind it.
      sideEffect: 'network',
      timeoutMs: 0,
      needsApproval: false,
      // The client's output is shown as it sent it (bounded by the result budget only).
      rawResult: true,
      execute() {
        return Promise.reject(new Error(`client tool "${d.name}" is run by the client`));
      },
    });
  }
  return defs;
}
