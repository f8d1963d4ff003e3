import Ajv, { type ValidateFunction } from 'ajv';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { McpApproval } from '@switchboard/contracts';
import { ToolError, type SideEffect, type ToolDefinition } from '@switchboard/tools';
import { z } from 'zod';
import type { McpClients, McpConnection, McpToolEntry } from './clients';
import { mcpToolName, offerable, sideEffectOf } from './naming';

/** Where a side-effecting call's idempotency key goes in the MCP request's `_meta` (docs/adr/0023). */
export const IDEMPOTENCY_META_KEY = 'io.switchboard/idempotency-key';

/** The engine's own bound on a call: the SDK's request timeout (the server's) fires first, classified. */
const ENGINE_TIMEOUT_MARGIN_MS = 1_000;

/** Longest text of a tool's `isError` result shown to the model. */
const TOOL_ERROR_MAX_CHARS = 1_000;

const ajv = new Ajv({ strict: false, allErrors: false, validateSchema: false });
const validators = new Map<string, ValidateFunction | null>();

/** The compiled validator of an MCP input schema (cached by its text), or null when ajv cannot compile it. */
function validatorOf(schema: Record<string, unknown>): ValidateFunction | null {
  const { $schema: _ignored, ...rest } = schema;
  const key = JSON.stringify(rest);
  let v = validators.get(key);
  if (v === undefined) {
    try {
      v = ajv.compile(rest);
    } catch {
      // A schema ajv cannot read (an unknown draft feature): the server validates on its own.
      v = null;
    }
    if (validators.size > 1000) validators.clear();
    validators.set(key, v);
  }
  return v;
}

/**
 * The engine's argument check for an MCP tool: its JSON Schema, through ajv, reported as zod issues
 * so the engine's `invalid_arguments` answer reads the same as for a built-in.
 */
function argumentsSchema(inputSchema: Record<string, unknown>): z.ZodType<Record<string, unknown>> {
  return z.record(z.string(), z.unknown()).superRefine((value, ctx) => {
    const validate = validatorOf(inputSchema);
    if (!validate || validate(value)) return;
    for (const e of validate.errors ?? []) {
      ctx.addIssue({
        code: 'custom',
        message: `${e.message ?? 'invalid'}${e.params && 'additionalProperty' in e.params ? ` (${String(e.params.additionalProperty)})` : ''}`,
        path: e.instancePath.split('/').filter(Boolean),
      });
    }
  });
}

/**
 * Whether a tool of this class needs a human's approval under the server's setting (docs/adr/0023).
 * The tenant's and the agent's approvalRequired lists are applied by the engine on top.
 */
export function mcpNeedsApproval(sideEffect: SideEffect, approval: McpApproval): boolean {
  if (approval === 'none' || sideEffect === 'read_only') return false;
  return approval === 'side_effects' || sideEffect === 'destructive';
}

/** Whether a side-effecting call of this tool may be run again after a crash (ADR 0004). */
function honoursKey(entry: McpToolEntry, server: Pick<McpServerSettings, 'idempotencyKeys'>): boolean {
  return server.idempotencyKeys || entry.annotations?.idempotentHint === true;
}

export interface McpServerSettings {
  /** The server deduplicates side effects by the `_meta` idempotency key (a registration setting). */
  idempotencyKeys: boolean;
  /** Which tools need approval (a registration setting; `side_effects` when absent). */
  approval?: McpApproval;
}

/**
 * One MCP tool as the engine runs it (docs/adr/0023): named `<server>__<tool>`, its JSON Schema sent
 * to providers as is, its side-effect class from its annotations, and approval required as the
 * server's `approval` setting says (by default for anything not read-only). A side-effecting call
 * carries the turn's idempotency key in `_meta`, approved or not.
 */
export function mcpToolDefinition(
  conn: McpConnection,
  settings: McpServerSettings,
  entry: McpToolEntry,
  clients: McpClients,
  /**
   * The server refused the call (a protocol error, or an error result): the tool may have changed or
   * gone, so its list is worth listing again. Not called for timeouts or an unreachable server.
   */
  onRefused?: () => void,
): ToolDefinition {
  const sideEffect = sideEffectOf(entry.annotations);
  const { $schema: _ignored, ...parameters } = entry.inputSchema;
  return {
    name: mcpToolName(conn.name, entry.name),
    description: (entry.description ?? entry.annotations?.title ?? entry.name).slice(0, 1024),
    schema: argumentsSchema(entry.inputSchema),
    parameters: { type: 'object', ...parameters },
    sideEffect,
    timeoutMs: conn.timeoutMs + ENGINE_TIMEOUT_MARGIN_MS,
    needsApproval: mcpNeedsApproval(sideEffect, settings.approval ?? 'side_effects'),
    honoursIdempotencyKey: sideEffect !== 'read_only' && honoursKey(entry, settings),
    async execute(args, ctx) {
      const meta = sideEffect === 'read_only' ? undefined : { [IDEMPOTENCY_META_KEY]: ctx.idempotencyKey };
      const result = await clients
        .callTool(conn, entry.name, args as Record<string, unknown>, meta, ctx.signal)
        .catch((err: unknown) => {
          if (err instanceof ToolError && err.kind === 'mcp_protocol_error') onRefused?.();
          throw err;
        });
      if (result.isError) {
        onRefused?.();
        throw new ToolError('mcp_tool_error', toolErrorText(result), {
          details: { server: conn.name, tool: entry.name },
          retryable: false,
        });
      }
      return {
        content: result.content,
        ...(result.structuredContent ? { structuredContent: result.structuredContent } : {}),
      };
    },
  };
}

/**
 * A tool of a server the worker cannot list (down at registration and since): the agent named it,
 * so the model gets a classified `mcp_unavailable` instead of an unknown tool. It never reaches the
 * server, so it has no side effect to gate.
 */
export function unavailableToolDefinition(conn: McpConnection, tool: string, why: string): ToolDefinition {
  return {
    name: mcpToolName(conn.name, tool),
    description: `Unavailable: the MCP server "${conn.name}" could not be reached.`,
    schema: z.record(z.string(), z.unknown()),
    parameters: { type: 'object' },
    sideEffect: 'read_only',
    timeoutMs: 1_000,
    needsApproval: false,
    async execute() {
      throw new ToolError(
        'mcp_unavailable',
        `MCP server "${conn.name}" is unavailable: ${why}`.slice(0, 1000),
        {
          details: { server: conn.name },
          recoveryHint: 'retry later; the server may be down',
          retryable: true,
        },
      );
    },
  };
}

/** A stored `approval` column as the setting (the column's CHECK admits only these; anything else is the default). */
export function approvalOf(stored: string): McpApproval {
  const parsed = McpApproval.safeParse(stored);
  return parsed.success ? parsed.data : 'side_effects';
}

function toolErrorText(result: CallToolResult): string {
  const text = result.content
    .map((c) => (c.type === 'text' ? c.text : `[${c.type}]`))
    .join('\n')
    .trim();
  return (text || 'the tool reported an error').slice(0, TOOL_ERROR_MAX_CHARS);
}

/** What the API shows of a cached tool: the same classes the engine will apply. */
export function describeMcpTool(
  server: { name: string; idempotencyKeys: boolean; approval: string },
  entry: McpToolEntry,
) {
  const sideEffect = sideEffectOf(entry.annotations);
  return {
    name: mcpToolName(server.name, entry.name),
    tool: entry.name,
    description: entry.description ?? null,
    sideEffect,
    needsApproval: mcpNeedsApproval(sideEffect, approvalOf(server.approval)),
    honoursIdempotencyKey: sideEffect !== 'read_only' && honoursKey(entry, server),
    offered: offerable(server.name, entry.name),
    inputSchema: entry.inputSchema,
  };
}
