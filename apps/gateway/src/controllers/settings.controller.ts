import { Body, Controller, Get, Inject, Patch } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiTags } from '@nestjs/swagger';
import { AppError, applySettingsUpdate, notFound } from '@switchboard/contracts';
import type { Config } from '@switchboard/config';
import { Prisma, type Db } from '@switchboard/database';
import type { ToolRegistry } from '@switchboard/tools';
import { CONFIG, DB, TOOLS } from '@switchboard/platform';
import { TenantId } from '../auth/guard';
import { SettingsResponseDto, UpdateSettingsDto } from '../http/dto';
import { presentSettings } from '../http/presenters';

/**
 * The calling tenant's settings: model routes (what `hint:<route>` resolves to) and blocked tools.
 * `defaultModel` is the deployment's DEFAULT_MODEL, what a hint resolves to when its route is unset.
 */
@ApiTags('settings')
@ApiBearerAuth()
@Controller('v1/settings')
export class SettingsController {
  constructor(
    @Inject(DB) private readonly db: Db,
    @Inject(TOOLS) private readonly tools: ToolRegistry,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  @Get()
  @ApiOkResponse({ type: SettingsResponseDto })
  async get(@TenantId() tenantId: string) {
    const tenant = await this.db.tenant.findUnique({ where: { id: tenantId }, select: { settings: true } });
    if (!tenant) throw notFound('tenant');
    return presentSettings(tenant.settings, this.config.DEFAULT_MODEL);
  }

  /** Merges `modelRoutes` per route (`null` removes one) and replaces `blockedTools`. */
  @Patch()
  @ApiOkResponse({ type: SettingsResponseDto })
  async update(@TenantId() tenantId: string, @Body() body: UpdateSettingsDto) {
    if (body.blockedTools) this.checkTools(body.blockedTools);
    const settings = await this.db.$transaction(async (tx) => {
      // Row lock: concurrent PATCHes merge one after the other instead of losing each other's routes.
      const [locked] = await tx.$queryRaw<{ settings: unknown }[]>`
        SELECT settings FROM tenants WHERE id = ${tenantId}::uuid FOR UPDATE`;
      if (!locked) throw notFound('tenant');
      const row = await tx.tenant.update({
        where: { id: tenantId },
        data: { settings: applySettingsUpdate(locked.settings, body) as Prisma.InputJsonValue },
        select: { settings: true },
      });
      return row.settings;
    });
    return presentSettings(settings, this.config.DEFAULT_MODEL);
  }

  private checkTools(tools: string[]) {
    const unknown = this.tools.unknown(tools);
    if (unknown.length > 0) {
      throw new AppError('validation_failed', `unknown tools: ${unknown.join(', ')}`, {
        issues: [
          {
            path: 'blockedTools',
            message: `unknown tools: ${unknown.join(', ')}`,
            available: this.tools.names(),
          },
        ],
      });
    }
  }
}
