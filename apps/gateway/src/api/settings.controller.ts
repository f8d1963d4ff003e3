import { Body, Controller, Get, Inject, Patch } from '@nestjs/common';
import { AppError, notFound, SettingsResponse } from '@switchboard/contracts';
import type { Config } from '@switchboard/config';
import { McpServersRepository, splitMcpToolName } from '@switchboard/mcp';
import { modelCapabilities, ROUTE_REQUIREMENTS } from '@switchboard/providers';
import { TenantsRepository } from '@switchboard/store';
import type { ToolRegistry } from '@switchboard/tools';
import { refusedNotifyUrl } from '@switchboard/triage';
import { CIPHER, CONFIG, TenantCipher, TOOLS } from '@switchboard/platform';
import { checkEncryptionSettings, presentEncryption } from './encryption';
import { Actor, TenantId } from '../platform/auth/guard';
import { UpdateSettingsDto } from './dto';
import { BODY_ERRORS, Operation, TenantApi } from '../platform/openapi';
import { presentSettings } from './presenters';

/**
 * The calling tenant's settings: model routes (what `hint:<route>` resolves to) and blocked tools.
 * `defaultModel` is the deployment's DEFAULT_MODEL, what a hint resolves to when its route is unset.
 */
@TenantApi('settings')
@Controller('v1/settings')
export class SettingsController {
  constructor(
    @Inject(TenantsRepository) private readonly tenants: TenantsRepository,
    @Inject(McpServersRepository) private readonly mcpServers: McpServersRepository,
    @Inject(TOOLS) private readonly tools: ToolRegistry,
    @Inject(CONFIG) private readonly config: Config,
    @Inject(CIPHER) private readonly cipher: TenantCipher,
  ) {}

  @Get()
  @Operation({
    id: 'getSettings',
    summary: "The tenant's settings",
    description:
      "The calling tenant's settings: model routes, blocked tools, tool schema mode, model prices, approval policy, default model, the completion-notify URL (never its secret), the daily spend cap and the encryption mode in force (docs/adr/0067).",
    status: 200,
    schema: SettingsResponse,
  })
  async get(@TenantId() tenantId: string): Promise<SettingsResponse> {
    const tenant = await this.tenants.settings(tenantId);
    if (!tenant) throw notFound('tenant');
    return presentSettings(
      tenant.settings,
      this.config.DEFAULT_MODEL,
      this.config.EVAL_DAILY_BUDGET_USD,
      presentEncryption(this.cipher, tenant.settings),
    );
  }

  /** Merges `modelRoutes` per route (`null` removes one) and replaces `blockedTools`. */
  @Patch()
  @Operation({
    id: 'updateSettings',
    summary: "Change the tenant's settings",
    description:
      "Changes the tenant's settings: `modelRoutes` is merged per route (`null` removes one) and `blockedTools` replaced when given. Applying the same change twice is harmless; answers the settings as they now are. " +
      'The `vision` route (the model turns with image input run on) must name a model that takes images: 400 otherwise. ' +
      '`encryption.mode` `on` or `strict` (docs/adr/0067) needs a key provider in the deployment: 400 otherwise, nothing changed.',
    status: 200,
    schema: SettingsResponse,
    errors: BODY_ERRORS,
  })
  async update(
    @TenantId() tenantId: string,
    @Actor() actor: string,
    @Body() body: UpdateSettingsDto,
  ): Promise<SettingsResponse> {
    if (body.blockedTools) await this.checkTools(tenantId, body.blockedTools, 'blockedTools');
    if (body.approvalRequired) await this.checkTools(tenantId, body.approvalRequired, 'approvalRequired');
    if (body.notifyUrl) await this.checkNotifyUrl(body.notifyUrl);
    if (body.modelRoutes) this.checkRouteCapabilities(body.modelRoutes);
    checkEncryptionSettings(this.cipher, body.encryption);
    // Under the tenant row's lock: concurrent PATCHes merge one after the other instead of losing each other's routes.
    // The audit entry (docs/adr/0030) names the fields changed, in the same transaction.
    const updated = await this.tenants.updateSettings(tenantId, body, actor);
    if (!updated) throw notFound('tenant');
    if (body.encryption) this.cipher.forgetMode(tenantId);
    return presentSettings(
      updated.settings,
      this.config.DEFAULT_MODEL,
      this.config.EVAL_DAILY_BUDGET_USD,
      presentEncryption(this.cipher, updated.settings),
    );
  }

  /**
   * A route's model must have the capability flags the route needs (docs/adr/0059): the `vision`
   * route serves turns with image input, so a model that does not take images is a 400.
   */
  private checkRouteCapabilities(routes: Record<string, string | null | undefined>) {
    const issues = Object.entries(routes).flatMap(([route, ref]) => {
      if (typeof ref !== 'string') return [];
      const caps = modelCapabilities(ref);
      const missing = (ROUTE_REQUIREMENTS[route] ?? []).filter((flag) => !caps[flag]);
      return missing.length === 0
        ? []
        : [
            {
              path: `modelRoutes.${route}`,
              message: `${ref} lacks the ${missing.join(', ')} capability the ${route} route needs`,
            },
          ];
    });
    if (issues.length > 0)
      throw new AppError('validation_failed', issues.map((i) => i.message).join('; '), { issues });
  }

  /** The send path's address rules, up front (OUTBOUND_WEBHOOK_ALLOW_HOSTS exempts a host). */
  private async checkNotifyUrl(url: string) {
    const refused = await refusedNotifyUrl(url, new Set(this.config.OUTBOUND_WEBHOOK_ALLOW_HOSTS ?? []));
    if (refused) {
      const message = `the URL is refused: ${refused}`;
      throw new AppError('validation_failed', message, { issues: [{ path: 'notifyUrl', message }] });
    }
  }

  /** Built-in names, and `server__tool` names of the tenant's MCP servers (docs/adr/0023). */
  private async checkTools(tenantId: string, tools: string[], path: string) {
    let unknown = this.tools.unknown(tools);
    if (unknown.some((t) => splitMcpToolName(t))) {
      const mcp = await this.mcpServers.unknownTools(tenantId, unknown);
      unknown = unknown.filter((t) => !splitMcpToolName(t) || mcp.includes(t));
    }
    if (unknown.length > 0) {
      throw new AppError('validation_failed', `unknown tools: ${unknown.join(', ')}`, {
        issues: [
          {
            path,
            message: `unknown tools: ${unknown.join(', ')}`,
            available: this.tools.names(),
          },
        ],
      });
    }
  }
}
