import { z } from 'zod';
import { PageQuery } from './api';
import { ApiSchemas } from './responses';

/**
 * Memory blocks (issue 33, docs/adr/0051): small named pieces of an agent's core memory, always in
 * its system prompt, edited by the operator over the API and by the agent with two tools.
 */

/** The agent's tools, by the names the model calls (offered when the agent names them in `tools`). */
export const MEMORY_BLOCK_REPLACE_TOOL = 'memory_block_replace';
export const MEMORY_BLOCK_APPEND_TOOL = 'memory_block_append';

/** A block's name: lower-case letters, digits and `_`, starting with a letter. */
export const MEMORY_BLOCK_NAME = /^[a-z][a-z0-9_]{0,39}$/;
/** A block's size bound (characters) when its writer gives none. */
export const MEMORY_BLOCK_DEFAULT_LIMIT = 2_000;
/** The largest size bound a block may have. */
export const MEMORY_BLOCK_MAX_LIMIT = 8_000;
/** Blocks per agent at most: together they bound what every turn's prompt carries. */
export const MEMORY_BLOCKS_PER_AGENT = 12;
export const MEMORY_BLOCK_DESCRIPTION_MAX = 500;

export const MemoryBlockName = z
  .string()
  .regex(MEMORY_BLOCK_NAME, 'a block name is 1 to 40 of a-z, 0-9 and _, starting with a letter');

/**
 * PUT /v1/agents/:id/blocks/:name: creates the block or replaces what is given of it. `content` is
 * required on creation; `expectedVersion` makes the write conditional (409 when the block is at
 * another version, or when it must not exist yet: 0).
 */
export const PutMemoryBlockRequest = z.strictObject({
  content: z.string().optional(),
  description: z.string().max(MEMORY_BLOCK_DESCRIPTION_MAX).optional(),
  limitChars: z.int().min(1).max(MEMORY_BLOCK_MAX_LIMIT).optional(),
  readOnly: z.boolean().optional(),
  expectedVersion: z.int().min(0).optional(),
});
export type PutMemoryBlockRequest = z.infer<typeof PutMemoryBlockRequest>;

/** GET /v1/agents/:id/blocks/:name/versions: newest first, paged by `cursor`. */
export const MemoryBlockVersionsQuery = PageQuery;

export const MemoryBlockWriter = z.enum(['operator', 'agent']);
export type MemoryBlockWriter = z.infer<typeof MemoryBlockWriter>;

export const MemoryBlockResponse = z
  .strictObject({
    name: z.string(),
    description: z.string(),
    content: z.string(),
    limitChars: z.int(),
    readOnly: z.boolean(),
    /** Bumped by every change; pass it as `expectedVersion` to write only over what was read. */
    version: z.int(),
    /** Who wrote the current text: an operator's is framed as instructions, an agent's as its notes. */
    writtenBy: MemoryBlockWriter,
    createdAt: z.iso.datetime({ offset: true }),
    updatedAt: z.iso.datetime({ offset: true }),
  })
  .register(ApiSchemas, { id: 'MemoryBlock' });
export type MemoryBlockResponse = z.infer<typeof MemoryBlockResponse>;

export const MemoryBlockListResponse = z
  .strictObject({ data: z.array(MemoryBlockResponse) })
  .register(ApiSchemas, { id: 'MemoryBlockList' });
export type MemoryBlockListResponse = z.infer<typeof MemoryBlockListResponse>;

export const MemoryBlockVersionResponse = z
  .strictObject({
    version: z.int(),
    content: z.string(),
    writtenBy: MemoryBlockWriter,
    /** The turn whose tool call wrote it; null for the operator's writes. */
    turnId: z.uuid().nullable(),
    createdAt: z.iso.datetime({ offset: true }),
  })
  .register(ApiSchemas, { id: 'MemoryBlockVersion' });
export type MemoryBlockVersionResponse = z.infer<typeof MemoryBlockVersionResponse>;

export const MemoryBlockVersionPageResponse = z
  .strictObject({ data: z.array(MemoryBlockVersionResponse), nextCursor: z.string().nullable() })
  .register(ApiSchemas, { id: 'MemoryBlockVersionPage' });
export type MemoryBlockVersionPageResponse = z.infer<typeof MemoryBlockVersionPageResponse>;
