import type { SideEffect } from '@switchboard/tools';

/** Between an MCP server's name and its tool's in the name an agent lists: `<server>__<tool>`. */
export const MCP_SEPARATOR = '__';

export { MCP_SERVER_NAME } from '@switchboard/contracts';

/** What providers accept as a tool name (OpenAI's rule, the narrowest): longer or odder names are not offered. */
const PROVIDER_TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;

export function mcpToolName(server: string, tool: string): string {
  return `${server}${MCP_SEPARATOR}${tool}`;
}

/** `{server, tool}` of a namespaced name, or null for a built-in's name. */
export function splitMcpToolName(name: string): { server: string; tool: string } | null {
  const at = name.indexOf(MCP_SEPARATOR);
  if (at <= 0 || at + MCP_SEPARATOR.length >= name.length) return null;
  return { server: name.slice(0, at), tool: name.slice(at + MCP_SEPARATOR.length) };
}

/** Whether an agent's tool list names any MCP tool (a turn without one never looks MCP servers up). */
export function namesMcpTools(names: readonly string[]): boolean {
  return names.some((n) => n.includes(MCP_SEPARATOR));
}

/** Whether a server's tool can be offered to a model under its namespaced name. */
export function offerable(server: string, tool: string): boolean {
  return PROVIDER_TOOL_NAME.test(mcpToolName(server, tool));
}

/** MCP tool annotations (2025-03-26 spec): hints, all optional, none trusted for security. */
export interface McpToolAnnotations {
  title?: string;
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
}

/**
 * The side-effect class of an MCP tool from its annotations, with MCP's defaults for absent hints
 * (destructiveHint and openWorldHint default to true): read-only → `read_only`; a possibly destructive
 * tool → `destructive`; an additive tool reaching the outside world → `network`; else `local_write`.
 */
export function sideEffectOf(annotations: McpToolAnnotations = {}): SideEffect {
  if (annotations.readOnlyHint === true) return 'read_only';
  if (annotations.destructiveHint !== false) return 'destructive';
  if (annotations.openWorldHint !== false) return 'network';
  return 'local_write';
}
