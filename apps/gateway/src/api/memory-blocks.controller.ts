import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Put, Query } from '@nestjs/common';
import {
  MemoryBlockListResponse,
  MemoryBlockResponse,
  MemoryBlockVersionPageResponse,
  notFound,
} from '@switchboard/contracts';
import { checkBlockName, MemoryBlockStore, type BlockScope } from '@switchboard/memory';
import type { SqlDb } from '@switchboard/store';
import { AgentsRepository } from '@switchboard/subagents';
import { TenantId } from '../platform/auth/guard';
import { BODY_ERRORS, Operation, TenantApi } from '../platform/openapi';
import { MemoryBlockVersionsQueryDto, PutMemoryBlockDto } from './dto';
import { decodeCursor, encodeCursor, pathId } from './presenters';
import { GATEWAY_SQL } from './streams.controller';

/**
 * An agent's memory blocks over HTTP (docs/adr/0051): list, read, create or change, delete, and a
 * block's versions. The agent must be the caller tenant's (else 404); the store filters every
 * statement by tenant and agent as well. Bad input is a 400 and writes nothing.
 */
@TenantApi('memory')
@Controller('v1/agents/:id/blocks')
export class MemoryBlocksController {
  private readonly store: MemoryBlockStore;

  constructor(
    @Inject(AgentsRepository) private readonly agents: AgentsRepository,
    @Inject(GATEWAY_SQL) sql: SqlDb,
  ) {
    this.store = new MemoryBlockStore(sql);
  }

  private async agent(tenantId: string, id: string): Promise<BlockScope> {
    const agent = await this.agents.find(tenantId, pathId(id, 'agent'));
    if (!agent) throw notFound('agent');
    return { tenantId, agentId: agent.id };
  }

  @Get()
  @Operation({
    id: 'listMemoryBlocks',
    summary: "The agent's memory blocks, by name",
    description:
      'Every block (at most 12 an agent), in the order the system prompt renders them, with its current text.',
    status: 200,
    schema: MemoryBlockListResponse,
    errors: [404],
  })
  async list(@TenantId() tenantId: string, @Param('id') id: string): Promise<MemoryBlockListResponse> {
    return { data: await this.store.list(await this.agent(tenantId, id)) };
  }

  @Get(':name')
  @Operation({
    id: 'getMemoryBlock',
    summary: 'One memory block',
    description: 'Its current text, settings and version. 404 when the agent or the block is unknown.',
    status: 200,
    schema: MemoryBlockResponse,
    errors: [404],
  })
  async get(
    @TenantId() tenantId: string,
    @Param('id') id: string,
    @Param('name') name: string,
  ): Promise<MemoryBlockResponse> {
    const block = await this.store.get(await this.agent(tenantId, id), name);
    if (!block) throw notFound('memory block');
    return block;
  }

  @Put(':name')
  @HttpCode(200)
  @Operation({
    id: 'putMemoryBlock',
    summary: 'Create a memory block, or change it',
    description:
      'Creates the block (`content` required; `limitChars` defaults to 2,000, at most 8,000) or replaces ' +
      'what is given of it; a write that changes nothing keeps the version. `expectedVersion` writes only ' +
      'over that version (0: only a new block), else 409. A text over the limit, a bad name or a 13th block: 400, nothing written.',
    status: 200,
    schema: MemoryBlockResponse,
    errors: [...BODY_ERRORS, 404, 409],
  })
  async put(
    @TenantId() tenantId: string,
    @Param('id') id: string,
    @Param('name') name: string,
    @Body() body: PutMemoryBlockDto,
  ): Promise<MemoryBlockResponse> {
    const scope = await this.agent(tenantId, id);
    checkBlockName(name);
    return (await this.store.put(scope, name, body)).block;
  }

  @Delete(':name')
  @HttpCode(204)
  @Operation({
    id: 'deleteMemoryBlock',
    summary: 'Delete a memory block and its versions',
    description: 'The next turn renders the prompt without it. 404 when the agent or the block is unknown.',
    status: 204,
    errors: [404],
  })
  async delete(
    @TenantId() tenantId: string,
    @Param('id') id: string,
    @Param('name') name: string,
  ): Promise<void> {
    if (!(await this.store.delete(await this.agent(tenantId, id), name))) throw notFound('memory block');
  }

  @Get(':name/versions')
  @Operation({
    id: 'listMemoryBlockVersions',
    summary: 'Every text a memory block held, newest first',
    description:
      'Version 1 is its creation; each change by the operator or the agent (with its turn) adds one. Paged by `cursor`.',
    status: 200,
    schema: MemoryBlockVersionPageResponse,
    errors: [400, 404],
  })
  async versions(
    @TenantId() tenantId: string,
    @Param('id') id: string,
    @Param('name') name: string,
    @Query() q: MemoryBlockVersionsQueryDto,
  ): Promise<MemoryBlockVersionPageResponse> {
    const before = decodeCursor<[number]>(q.cursor, ['number']);
    const page = await this.store.versions(await this.agent(tenantId, id), name, {
      limit: q.limit ?? 50,
      before: before?.[0],
    });
    if (!page) throw notFound('memory block');
    return {
      data: page.items,
      nextCursor: page.more ? encodeCursor([page.items[page.items.length - 1].version]) : null,
    };
  }
}
