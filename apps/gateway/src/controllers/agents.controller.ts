import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Patch, Post, Query } from '@nestjs/common';
import {
  AgentDetailResponse,
  AgentPageResponse,
  AgentResponse,
  AppError,
  newId,
  notFound,
  type CreateAgentRequest,
} from '@switchboard/contracts';
import type { Config } from '@switchboard/config';
import type { Db } from '@switchboard/database';
import { agentToolStatus, type SqlDb } from '@switchboard/store';
import type { ToolRegistry } from '@switchboard/tools';
import { TenantId } from '../auth/guard';
import { CreateAgentDto, PageQueryDto, UpdateAgentDto } from '../http/dto';
import { BODY_ERRORS, Operation, TenantApi } from '../http/openapi';
import { decodeCursor, encodeCursor, pathId, presentAgent } from '../http/presenters';
import { CONFIG, DB, TOOLS } from '@switchboard/platform';
import { GATEWAY_SQL } from './streams.controller';

@TenantApi('agents')
@Controller('v1/agents')
export class AgentsController {
  constructor(
    @Inject(DB) private readonly db: Db,
    @Inject(TOOLS) private readonly tools: ToolRegistry,
    @Inject(CONFIG) private readonly config: Config,
    @Inject(GATEWAY_SQL) private readonly sql: SqlDb,
  ) {}

  private checkTools(tools: string[] | undefined, path = 'tools') {
    const unknown = this.tools.unknown(tools ?? []);
    if (unknown.length > 0) {
      throw new AppError('validation_failed', `unknown tools: ${unknown.join(', ')}`, {
        issues: [{ path, message: `unknown tools: ${unknown.join(', ')}`, available: this.tools.names() }],
      });
    }
  }

  @Post()
  @HttpCode(201)
  @Operation({
    id: 'createAgent',
    summary: 'Create an agent',
    status: 201,
    schema: AgentResponse,
    errors: BODY_ERRORS,
  })
  async create(@TenantId() tenantId: string, @Body() body: CreateAgentDto): Promise<AgentResponse> {
    const b = body;
    this.checkTools(b.tools);
    this.checkTools(b.approvalRequired, 'approvalRequired');
    const row = await this.db.agent.create({
      data: {
        id: newId(),
        tenantId,
        name: b.name,
        archetype: b.archetype ?? 'orchestrator',
        tier: b.tier ?? 'chat',
        instructions: b.instructions ?? '',
        model: b.model ?? this.config.DEFAULT_MODEL,
        fallbackModels: b.fallbackModels ?? [],
        // No tools unless named: a tool added to the deployment is never enabled silently.
        tools: b.tools ?? [],
        allowedSubagents: b.allowedSubagents ?? [],
        approvalRequired: b.approvalRequired ?? [],
        budgets: b.budgets ?? {},
      },
    });
    return presentAgent(row);
  }

  @Get()
  @Operation({
    id: 'listAgents',
    summary: 'Agents of the tenant, by id',
    status: 200,
    schema: AgentPageResponse,
    errors: [400],
  })
  async list(@TenantId() tenantId: string, @Query() q: PageQueryDto): Promise<AgentPageResponse> {
    const after = decodeCursor<[string]>(q.cursor, ['string']);
    const limit = q.limit ?? 50;
    const rows = await this.db.agent.findMany({
      where: { tenantId, deletedAt: null, ...(after ? { id: { gt: after[0] } } : {}) },
      orderBy: { id: 'asc' },
      take: limit + 1,
    });
    const page = rows.slice(0, limit);
    return {
      data: page.map(presentAgent),
      nextCursor: rows.length > limit ? encodeCursor([page[page.length - 1].id]) : null,
    };
  }

  private async find(tenantId: string, id: string) {
    const row = await this.db.agent.findFirst({
      where: { id: pathId(id, 'agent'), tenantId, deletedAt: null },
    });
    if (!row) throw notFound('agent');
    return row;
  }

  @Get(':id')
  @Operation({
    id: 'getAgent',
    summary: 'An agent and its status',
    description:
      "`status.tools`: per tool, what the agent's calls did over its ended turns (calls, failures by " +
      'kind, latency), rolled up by the `learning` post-turn hook shortly after each turn ends.',
    status: 200,
    schema: AgentDetailResponse,
    errors: [404],
  })
  async get(@TenantId() tenantId: string, @Param('id') id: string): Promise<AgentDetailResponse> {
    const agent = await this.find(tenantId, id);
    const tools = await agentToolStatus(this.sql, { tenantId, agentId: agent.id });
    return { ...presentAgent(agent), status: { tools } };
  }

  @Patch(':id')
  @Operation({
    id: 'updateAgent',
    summary: 'Change fields of an agent',
    status: 200,
    schema: AgentResponse,
    errors: [...BODY_ERRORS, 404],
  })
  async update(
    @TenantId() tenantId: string,
    @Param('id') id: string,
    @Body() body: UpdateAgentDto,
  ): Promise<AgentResponse> {
    const agent = await this.find(tenantId, id);
    const b = body as Partial<CreateAgentRequest>;
    this.checkTools(b.tools);
    this.checkTools(b.approvalRequired, 'approvalRequired');
    const row = await this.db.agent.update({
      where: { id: agent.id },
      data: { ...b, ...(b.budgets ? { budgets: b.budgets } : {}) },
    });
    return presentAgent(row);
  }

  /** Soft delete: existing sessions keep their history; no new session can use the agent. */
  @Delete(':id')
  @HttpCode(204)
  @Operation({ id: 'deleteAgent', summary: 'Delete an agent (soft)', status: 204, errors: [404] })
  async remove(@TenantId() tenantId: string, @Param('id') id: string): Promise<void> {
    const agent = await this.find(tenantId, id);
    await this.db.agent.update({ where: { id: agent.id }, data: { deletedAt: new Date() } });
  }
}
