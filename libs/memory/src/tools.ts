import { z } from 'zod';
import { defineTool, ToolError, type ToolContext, type ToolDefinition } from '@switchboard/tools';
import { RecallMode } from '@switchboard/contracts';
import type { MemorySearch } from './search';
import { MEMORY_GET_DEFAULT_CHARS, MEMORY_GET_MAX_CHARS, MEMORY_KINDS, MEMORY_MAX_TAGS } from './types';

export const MEMORY_SEARCH_TOOL = 'memory_search';
export const MEMORY_GET_TOOL = 'memory_get';

/** The agent the call runs as: memory is per agent, and a call outside an agent's turn has none. */
function scope(ctx: ToolContext): { tenantId: string; agentId: string } {
  if (!ctx.agentId)
    throw new ToolError('no_agent', 'memory is per agent and this call runs outside an agent');
  return { tenantId: ctx.tenantId, agentId: ctx.agentId };
}

/**
 * `memory_search` and `memory_get` (seed 002): search the agent's own memory, then read one record's
 * exact text by the `source_ref` a search returned. Read-only; the tenant and agent come from the
 * turn's context, never from the model, so a ref from elsewhere finds nothing. Agents get them only
 * when they name them in `tools`.
 */
export function memoryTools(memory: MemorySearch): ToolDefinition[] {
  const store = memory.store;
  const search = defineTool({
    name: MEMORY_SEARCH_TOOL,
    description:
      "Searches this agent's long-term memory (facts, past episodes, notes) by keywords and, when the agent " +
      'has an embedder, by meaning. Returns the best matches with a source_ref, kind, title, snippet, score, ' +
      'updated_at and path (fts, vector or both: which search found it); pass a source_ref to memory_get ' +
      'for the full text. Filters: kind, tags (all of them), since/until (creation time, ISO 8601).',
    schema: z
      .strictObject({
        query: z.string().min(1).max(1000).describe('Keywords or a question'),
        limit: z.int().min(1).max(20).optional().describe('How many results, 1 to 20 (default 8)'),
        kind: z.enum(MEMORY_KINDS).optional().describe('Only records of this kind'),
        tags: z
          .array(z.string().min(1).max(50))
          .min(1)
          .max(MEMORY_MAX_TAGS)
          .optional()
          .describe('Only records carrying every one of these tags'),
        since: z.iso
          .datetime({ offset: true })
          .optional()
          .describe('Only records created at or after (ISO 8601)'),
        until: z.iso.datetime({ offset: true }).optional().describe('Only records created before (ISO 8601)'),
        mode: RecallMode.optional().describe(
          "fts (keywords), vector (meaning) or hybrid (both); default the agent's setting",
        ),
      })
      .refine((v) => !(v.since && v.until && Date.parse(v.since) >= Date.parse(v.until)), {
        message: 'since must be before until',
        path: ['until'],
      }),
    sideEffect: 'read_only',
    timeoutMs: 5_000,
    needsApproval: false,
    async execute({ query, limit, kind, tags, since, until, mode }, ctx) {
      const r = await memory.search({
        ...scope(ctx),
        query,
        limit: limit ?? 8,
        kinds: kind ? [kind] : undefined,
        tags,
        since: since ? new Date(since) : undefined,
        until: until ? new Date(until) : undefined,
        mode,
      });
      if (r.embedder && r.embeddingTokens > 0)
        ctx.spend?.({ embedder: r.embedder, inputTokens: r.embeddingTokens });
      return {
        results: r.hits.map((h) => ({
          source_ref: h.sourceRef,
          kind: h.kind,
          title: h.title,
          snippet: h.snippet,
          score: h.score,
          updated_at: h.updatedAt,
          tags: h.tags,
          path: h.path,
        })),
        ...(r.warning ? { warning: r.warning } : {}),
      };
    },
  });

  const get = defineTool({
    name: MEMORY_GET_TOOL,
    description:
      "Returns the exact text of one record of this agent's memory, by the source_ref memory_search gave. " +
      `At most max_chars characters (default ${MEMORY_GET_DEFAULT_CHARS}); truncated tells whether more exists.`,
    schema: z.strictObject({
      source_ref: z.string().min(1).max(100).describe('A source_ref copied from a memory_search result'),
      max_chars: z
        .int()
        .min(1)
        .max(MEMORY_GET_MAX_CHARS)
        .optional()
        .describe(`Characters to return, 1 to ${MEMORY_GET_MAX_CHARS}`),
    }),
    sideEffect: 'read_only',
    timeoutMs: 5_000,
    needsApproval: false,
    async execute({ source_ref, max_chars }, ctx) {
      const doc = await store.get({ ...scope(ctx), sourceRef: source_ref, maxChars: max_chars });
      if (!doc) {
        throw new ToolError('not_found', 'no memory record of this agent has that source_ref', {
          recoveryHint: 'Use a source_ref exactly as memory_search returned it.',
        });
      }
      return {
        source_ref: doc.sourceRef,
        kind: doc.kind,
        title: doc.title,
        content: doc.content,
        truncated: doc.truncated,
        total_chars: doc.totalChars,
        provenance: doc.provenance,
        updated_at: doc.updatedAt,
      };
    },
  });

  return [search, get] as ToolDefinition[];
}
