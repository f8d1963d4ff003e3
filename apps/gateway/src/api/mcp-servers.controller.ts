import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Patch, Post, Query } from '@nestjs/common';
import type { OnApplicationShutdown } from '@nestjs/common';
import type { McpServer } from '@prisma/client';
import type { Config } from '@switchboard/config';
import { AppError, McpServerPageResponse, McpServerResponse, notFound } from '@switchboard/contracts';
import {
  approvalOf,
  describeMcpTool,
  McpClients,
  McpServersRepository,
  refusedServerUrl,
  storedTools,
} from '@switchboard/mcp';
import { CONFIG, SecretBox } from '@switchboard/platform';
import { HostAllowList } from '@switchboard/tools';
import { TenantId } from '../platform/auth/guard';
import { CreateMcpServerDto, PageQueryDto, UpdateMcpServerDto } from './dto';
import { BODY_ERRORS, Operation, TenantApi } from '../platform/openapi';
import { decodeCursor, encodeCursor, pathId } from './presenters';

/** A registration as the API shows it: the auth header's name, never its value. */
export const presentMcpServer = (s: McpServer): McpServerResponse => ({
  id: s.id,
  name: s.name,
  url: s.url,
  authHeader: s.authHeaderName,
  timeoutMs: s.timeoutMs,
  idempotencyKeys: s.idempotencyKeys,
  approval: approvalOf(s.approval),
  status: s.status === 'ok' ? 'ok' : 'unreachable',
  lastError: s.lastError,
  tools: storedTools(s).map((t) => describeMcpTool(s, t)),
  toolsFetchedAt: s.toolsFetchedAt?.toISOString() ?? null,
  createdAt: s.createdAt.toISOString(),
  updatedAt: s.updatedAt.toISOString(),
});

/**
 * A tenant's MCP servers (issue 11, docs/adr/0023): their tools reach agents that name them as
 * `<server>__<tool>`. Registering connects and lists the tools; a server that cannot be reached is
 * still registered, `unreachable`, and listed again by POST :id/refresh or by a worker whose cache
 * is stale. The auth header's value is sealed at rest and never returned.
 */
@TenantApi('mcp-servers')
@Controller('v1/mcp-servers')
export class McpServersController implements OnApplicationShutdown {
  private readonly secrets: SecretBox;
  private readonly clients: McpClients;
  private readonly allow: HostAllowList;

  constructor(
    @Inject(McpServersRepository) private readonly servers: McpServersRepository,
    @Inject(CONFIG) config: Config,
  ) {
    this.secrets = new SecretBox(config.MCP_SECRET_KEY);
    this.clients = new McpClients({ allowHosts: config.MCP_ALLOW_HOSTS });
    this.allow = new HostAllowList(config.MCP_ALLOW_HOSTS ?? []);
  }

  async onApplicationShutdown(): Promise<void> {
    await this.clients.close();
  }

  private open = (stored: string) => this.secrets.open(stored);

  /** Lists the tools and stores them; the gateway keeps no connection to a tenant's server after. */
  private async listTools(row: McpServer): Promise<McpServer> {
    try {
      return await this.servers.refresh(this.clients, row, this.open);
    } finally {
      this.clients.drop(row.id);
    }
  }

  private async find(tenantId: string, id: string): Promise<McpServer> {
    const row = await this.servers.find(tenantId, pathId(id, 'MCP server'));
    if (!row) throw notFound('MCP server');
    return row;
  }

  @Post()
  @HttpCode(201)
  @Operation({
    id: 'createMcpServer',
    summary: 'Register an MCP server: its tools become available to agents as <name>__<tool>',
    description:
      'Connects and lists the tools. A server that cannot be reached is still registered with status ' +
      '`unreachable` (see lastError). A URL on a private, loopback or link-local address is refused ' +
      'unless the deployment allows the host (MCP_ALLOW_HOSTS). The auth header value is never returned.',
    status: 201,
    schema: McpServerResponse,
    errors: [...BODY_ERRORS, 409],
  })
  async create(@TenantId() tenantId: string, @Body() body: CreateMcpServerDto): Promise<McpServerResponse> {
    const refused = await refusedServerUrl(body.url, this.allow);
    if (refused) {
      const message = `the URL is refused: ${refused}`;
      throw new AppError('validation_failed', message, { issues: [{ path: 'url', message }] });
    }
    const taken = () => new AppError('conflict', `an MCP server named "${body.name}" exists`);
    if (await this.servers.nameTaken(tenantId, body.name)) throw taken();
    const row = await this.servers.create({
      tenantId,
      name: body.name,
      url: body.url,
      authHeaderName: body.auth?.header ?? null,
      authHeaderValue: body.auth ? this.secrets.seal(body.auth.value) : null,
      timeoutMs: body.timeoutMs ?? 30_000,
      idempotencyKeys: body.idempotencyKeys ?? false,
      approval: body.approval ?? 'side_effects',
    });
    // The same name registered concurrently.
    if (row === 'name_taken') throw taken();
    return presentMcpServer(await this.listTools(row));
  }

  @Get()
  @Operation({
    id: 'listMcpServers',
    summary: "The tenant's MCP servers, by id",
    description:
      "The tenant's MCP servers by id, with their status and cached tool count; never the auth header. Paged by `limit` (default 50, at most 200) and `cursor`.",
    status: 200,
    schema: McpServerPageResponse,
    errors: [400],
  })
  async list(@TenantId() tenantId: string, @Query() q: PageQueryDto): Promise<McpServerPageResponse> {
    const after = decodeCursor<[string]>(q.cursor, ['string']);
    const limit = q.limit ?? 50;
    const page = await this.servers.page(tenantId, after?.[0], limit);
    return {
      data: page.rows.map(presentMcpServer),
      nextCursor: page.more ? encodeCursor([page.rows[page.rows.length - 1].id]) : null,
    };
  }

  @Get(':id')
  @Operation({
    id: 'getMcpServer',
    summary: 'An MCP server and its cached tools (namespaced names, side-effect classes)',
    description:
      "An MCP server with its cached tools (namespaced `<server>__<tool>` names, side-effect classes) and its last error. 404 when it is not the calling tenant's.",
    status: 200,
    schema: McpServerResponse,
    errors: [404],
  })
  async get(@TenantId() tenantId: string, @Param('id') id: string): Promise<McpServerResponse> {
    return presentMcpServer(await this.find(tenantId, id));
  }

  /**
   * Changes a registration's settings in place. `updated_at` moves, so workers reconnect (a new
   * timeout) and resolve the tools with the new approval setting at their next turn.
   */
  @Patch(':id')
  @Operation({
    id: 'updateMcpServer',
    summary: "Change an MCP server's settings: approval, timeoutMs, idempotencyKeys",
    description:
      'The name, URL and auth header are fixed (delete and register again). Workers apply the new ' +
      "settings when a turn (or a resumed turn) next resolves the server's tools.",
    status: 200,
    schema: McpServerResponse,
    errors: [...BODY_ERRORS, 404],
  })
  async update(
    @TenantId() tenantId: string,
    @Param('id') id: string,
    @Body() body: UpdateMcpServerDto,
  ): Promise<McpServerResponse> {
    const current = await this.find(tenantId, id);
    if (!(await this.servers.update(tenantId, current.id, body))) throw notFound('MCP server');
    return presentMcpServer(await this.find(tenantId, id));
  }

  @Post(':id/refresh')
  @HttpCode(200)
  @Operation({
    id: 'refreshMcpServer',
    summary: "List an MCP server's tools again and store them",
    description: 'Workers pick the new list up within MCP_TOOLS_TTL_MS.',
    status: 200,
    schema: McpServerResponse,
    errors: [404],
  })
  async refresh(@TenantId() tenantId: string, @Param('id') id: string): Promise<McpServerResponse> {
    return presentMcpServer(await this.listTools(await this.find(tenantId, id)));
  }

  /** Agents that name its tools keep their lists; those names are simply not available any more. */
  @Delete(':id')
  @HttpCode(204)
  @Operation({
    id: 'deleteMcpServer',
    summary: 'Delete an MCP server (soft)',
    description:
      "Deletes the registration (soft). Agents that name its tools keep their lists; those tools are simply not available any more. 404 when it is not the calling tenant's.",
    status: 204,
    errors: [404],
  })
  async remove(@TenantId() tenantId: string, @Param('id') id: string): Promise<void> {
    if (!(await this.servers.softDelete(tenantId, pathId(id, 'MCP server')))) throw notFound('MCP server');
  }
}
