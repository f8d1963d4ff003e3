import { z } from 'zod';

/**
 * An MCP server's name, its tools' namespace (docs/adr/0023): lower-case letters, digits, `-` and
 * single `_` (never `__`, never at either end), so `<server>__<tool>` splits back at its first `__`.
 */
export const MCP_SERVER_NAME = /^(?=.{1,32}$)[a-z0-9-]+(?:_[a-z0-9-]+)*$/;

/** Headers the MCP transport sets itself: an auth header cannot replace them. */
const RESERVED_HEADERS = new Set([
  'accept',
  'connection',
  'content-length',
  'content-type',
  'host',
  'last-event-id',
  'mcp-protocol-version',
  'mcp-session-id',
  'transfer-encoding',
]);

export const McpAuthHeader = z.strictObject({
  /** The header's name, e.g. `Authorization`. */
  header: z
    .string()
    .regex(/^[A-Za-z0-9-]{1,64}$/, 'must be a header name (letters, digits, -)')
    .refine((h) => !RESERVED_HEADERS.has(h.toLowerCase()), 'is set by the MCP transport'),
  /** The header's value: stored as a secret, never shown again. */
  value: z
    .string()
    .min(1)
    .max(4096)
    .regex(/^[\t\x20-\x7e]*$/, 'must be printable ASCII'),
});

/**
 * Which of a server's tools need a human's approval before they run (docs/adr/0023): `side_effects`
 * (default) every tool that is not read-only; `destructive_only` only tools classed `destructive`;
 * `none` no tool of the server. The tenant's and the agent's `approvalRequired` lists still apply.
 */
export const McpApproval = z.enum(['side_effects', 'destructive_only', 'none']);
export type McpApproval = z.infer<typeof McpApproval>;

export const CreateMcpServerRequest = z.strictObject({
  name: z
    .string()
    .regex(MCP_SERVER_NAME, 'must be 1-32 of [a-z0-9_-], without "__" or a leading/trailing "_"'),
  url: z.url({ protocol: /^https?$/ }).max(2048),
  auth: McpAuthHeader.optional(),
  /** Longest a call (and a listing) may take, in ms (default 30000). */
  timeoutMs: z.number().int().min(100).max(120_000).optional(),
  /**
   * The server deduplicates side effects by the idempotency key sent in `_meta`: a call a crashed run
   * started is then run again with the same key (docs/adr/0004); else it is answered outcome_unknown.
   */
  idempotencyKeys: z.boolean().optional(),
  /** Which tools need approval (default `side_effects`). */
  approval: McpApproval.optional(),
});
export type CreateMcpServerRequest = z.infer<typeof CreateMcpServerRequest>;

/**
 * The settings of a registration that can change in place; the name (agents' tool names) and the URL
 * and secret (what was checked and listed) are fixed: delete and register again for those.
 */
export const UpdateMcpServerRequest = z
  .strictObject({
    timeoutMs: z.number().int().min(100).max(120_000).optional(),
    idempotencyKeys: z.boolean().optional(),
    approval: McpApproval.optional(),
  })
  .refine((b) => Object.keys(b).length > 0, { message: 'at least one field is required' });
export type UpdateMcpServerRequest = z.infer<typeof UpdateMcpServerRequest>;
