import type { ToolCallRequest } from '@switchboard/providers';
import type { ToolRegistry } from '@switchboard/tools';

/**
 * Seed 001 4e: the calls of one model round, scheduled in waves. Read-only calls
 * whose resource keys are disjoint run together; any write, network or
 * destructive call (or one whose effects cannot be known: an unknown tool,
 * arguments that do not parse) runs alone; a read-only call whose keys overlap
 * the current wave's starts the next one. The calls' order is kept.
 */
export function planWaves(
  calls: ToolCallRequest[],
  tools: ToolRegistry,
  allowed: string[],
): ToolCallRequest[][] {
  const waves: ToolCallRequest[][] = [];
  let current: ToolCallRequest[] = [];
  let keys = new Set<string>();
  const flush = () => {
    if (current.length > 0) waves.push(current);
    current = [];
    keys = new Set();
  };
  for (const call of calls) {
    const readKeys = parallelKeys(call, tools, allowed);
    if (readKeys === null) {
      flush();
      waves.push([call]);
      continue;
    }
    if (readKeys.some((k) => keys.has(k))) flush();
    current.push(call);
    for (const k of readKeys) keys.add(k);
  }
  flush();
  return waves;
}

/** The resource keys of a call that may run in parallel, or null when it must run alone. */
function parallelKeys(call: ToolCallRequest, tools: ToolRegistry, allowed: string[]): string[] | null {
  const tool = allowed.includes(call.name) ? tools.get(call.name) : undefined;
  if (!tool || tool.sideEffect !== 'read_only') return null;
  let args: unknown;
  try {
    args = call.arguments.trim() === '' ? {} : JSON.parse(call.arguments);
  } catch {
    return null;
  }
  const parsed = tool.schema.safeParse(args);
  if (!parsed.success) return null;
  return tool.resourceKeys ? tool.resourceKeys(parsed.data) : [];
}
