import { z } from 'zod';
import {
  AppError,
  MEMORY_BLOCK_APPEND_TOOL,
  MEMORY_BLOCK_REPLACE_TOOL,
  MemoryBlockName,
} from '@switchboard/contracts';
import { defineTool, ToolError, type ToolContext, type ToolDefinition } from '@switchboard/tools';
import type { MemoryBlock, MemoryBlockStore } from './blocks';

/** The tenant and agent the call runs as: blocks are per agent, never named by the model. */
function scope(ctx: ToolContext): { tenantId: string; agentId: string } {
  if (!ctx.agentId)
    throw new ToolError('no_agent', 'memory blocks are per agent and this call runs outside an agent');
  return { tenantId: ctx.tenantId, agentId: ctx.agentId };
}

/** What an edit tells the model: the block as it is now (its text shows in the next turn's prompt). */
function result(b: MemoryBlock): Record<string, unknown> {
  return {
    block: b.name,
    version: b.version,
    chars: b.content.length,
    limit_chars: b.limitChars,
    content: b.content,
  };
}

/** The store's refusals as errors the model can act on. */
function toolError(e: unknown, block: string): never {
  if (!(e instanceof AppError)) throw e;
  if (e.code === 'not_found')
    throw new ToolError('not_found', `there is no memory block "${block}"`, {
      recoveryHint: 'Use a block name exactly as it appears in your memory blocks.',
    });
  if (e.code === 'conflict' && (e.details as { readOnly?: boolean } | undefined)?.readOnly)
    throw new ToolError('read_only', e.message, { recoveryHint: 'Leave this block as it is.' });
  if (e.code === 'conflict') throw new ToolError('ended', e.message);
  throw new ToolError('too_long', e.message, {
    details: e.details,
    recoveryHint: 'Shorten the text, or replace older text of the block with a summary first.',
  });
}

/**
 * `memory_block_replace` and `memory_block_append` (docs/adr/0051): the agent edits its own memory
 * blocks, which every later turn's system prompt shows. Each edit runs under the block's row lock
 * on the block as it is at that moment — another turn's edit since this turn began is never lost:
 * a replace whose old text is no longer there fails with the block's current text. Every edit is a
 * version (with its turn) and, as every tool call, a journaled event. Offered when the agent names
 * them in `tools`.
 */
export function memoryBlockTools(store: MemoryBlockStore): ToolDefinition[] {
  const block = MemoryBlockName.describe('The block name, as in your memory blocks');
  const common = {
    sideEffect: 'local_write' as const,
    timeoutMs: 5_000,
    needsApproval: false,
    // A resumed turn passes the same key: an edit already applied is not applied again.
    honoursIdempotencyKey: true,
  };

  const replace = defineTool({
    ...common,
    name: MEMORY_BLOCK_REPLACE_TOOL,
    description:
      'Replaces text in one of your memory blocks: old_text must occur exactly once in the block as it ' +
      'is now; new_text takes its place (empty new_text deletes it). Returns the block after the edit.',
    schema: z.strictObject({
      block,
      old_text: z.string().min(1).max(8_000).describe('Text of the block to replace, exactly as it is'),
      new_text: z.string().max(8_000).describe('The text to put in its place'),
    }),
    resourceKeys: (a) => [`memory_block:${a.block}`],
    async execute(args, ctx) {
      try {
        const b = await store.edit(scope(ctx), {
          name: args.block,
          turnId: ctx.turnId,
          callKey: ctx.idempotencyKey,
          mayCommit: () => ctx.writeGate.isOpen(),
          edit: (content) => {
            const at = content.indexOf(args.old_text);
            if (at < 0 || content.indexOf(args.old_text, at + 1) >= 0) {
              throw new ToolError(
                at < 0 ? 'text_not_found' : 'text_ambiguous',
                at < 0
                  ? `memory block "${args.block}" does not contain old_text (it may have changed since your turn began)`
                  : `old_text occurs more than once in memory block "${args.block}"`,
                {
                  details: { current: content },
                  recoveryHint:
                    at < 0
                      ? 'details.current is the block as it is now: pick old_text from it.'
                      : 'Include more of the surrounding text so old_text occurs once.',
                },
              );
            }
            return content.slice(0, at) + args.new_text + content.slice(at + args.old_text.length);
          },
        });
        return result(b);
      } catch (e) {
        return toolError(e, args.block);
      }
    },
  });

  const append = defineTool({
    ...common,
    name: MEMORY_BLOCK_APPEND_TOOL,
    description:
      'Appends text to one of your memory blocks, on a new line. Returns the block after the edit.',
    schema: z.strictObject({
      block,
      text: z.string().min(1).max(8_000).describe('The text to add at the end of the block'),
    }),
    resourceKeys: (a) => [`memory_block:${a.block}`],
    async execute(args, ctx) {
      try {
        const b = await store.edit(scope(ctx), {
          name: args.block,
          turnId: ctx.turnId,
          callKey: ctx.idempotencyKey,
          mayCommit: () => ctx.writeGate.isOpen(),
          edit: (content) => (content.length === 0 ? args.text : `${content}\n${args.text}`),
        });
        return result(b);
      } catch (e) {
        return toolError(e, args.block);
      }
    },
  });

  return [replace, append] as ToolDefinition[];
}
