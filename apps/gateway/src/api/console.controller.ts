import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { applyDecorators, Controller, Get, Inject, Req } from '@nestjs/common';
import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
import { ConsoleConfigResponse, notFound, WhoamiResponse } from '@switchboard/contracts';
import type { Config } from '@switchboard/config';
import { CONFIG } from '@switchboard/platform';
import { ApiKeysRepository, TenantsRepository } from '@switchboard/store';
import { AnyCredential, Public, type AuthedRequest } from '../platform/auth/guard';
import { ADMIN_AUTH, API_KEY_AUTH, ApiErrors, Operation } from '../platform/openapi';

/**
 * Switchboard's version, from the repository's package.json: found by walking up from this file (the
 * source tree, or a build's dist/ inside the image's /app), else from the working directory.
 */
function readVersion(): string {
  const candidates: string[] = [];
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    candidates.push(path.join(dir, 'package.json'));
    if (path.dirname(dir) === dir) break;
  }
  candidates.push(path.resolve('package.json'));
  for (const file of candidates) {
    if (!existsSync(file)) continue;
    try {
      const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'switchboard' && pkg.version) return pkg.version;
    } catch {
      // not a readable package.json: the next one up
    }
  }
  return 'unknown';
}

const VERSION = readVersion();

/** Either credential: the tenant's API key or the operator's ADMIN_TOKEN. */
const EitherCredential = () =>
  applyDecorators(AnyCredential(), ApiBearerAuth(API_KEY_AUTH), ApiBearerAuth(ADMIN_AUTH));

/**
 * What the web console (apps/console) asks before it shows anything: which credential it holds
 * (`whoami`, so one sign-in field takes a tenant key or ADMIN_TOKEN) and the deployment's settings
 * it links with (`console/config`). Clients other than the console may use them too.
 */
@ApiTags('console')
@ApiErrors(500, 503)
@Controller('v1')
export class ConsoleController {
  constructor(
    @Inject(CONFIG) private readonly config: Config,
    @Inject(ApiKeysRepository) private readonly keys: ApiKeysRepository,
    @Inject(TenantsRepository) private readonly tenants: TenantsRepository,
  ) {}

  @Get('whoami')
  @EitherCredential()
  @Operation({
    id: 'getWhoami',
    summary: 'What the credential is: a tenant API key, or the operator (acting as a tenant or not)',
    description:
      "For a tenant's API key: `kind: tenant` with the tenant and the key's id and display prefix. For ADMIN_TOKEN: `kind: operator`, with `actingTenantId` when the request names a tenant in `X-Switchboard-Tenant` (404 when there is no such tenant). 401 for a missing, wrong or revoked credential.",
    status: 200,
    schema: WhoamiResponse,
    errors: [400, 401, 404],
  })
  async whoami(@Req() req: AuthedRequest): Promise<WhoamiResponse> {
    if (req.operator) {
      if (!req.tenantId) return { kind: 'operator' };
      const tenant = await this.tenants.find(req.tenantId);
      if (!tenant) throw notFound('tenant');
      return { kind: 'operator', actingTenantId: tenant.id, actingTenantName: tenant.name };
    }
    const [tenant, key] = await Promise.all([
      this.tenants.find(req.tenantId!),
      this.keys.find(req.tenantId!, req.apiKeyId!),
    ]);
    if (!tenant || !key) throw notFound('api key');
    return {
      kind: 'tenant',
      tenantId: tenant.id,
      tenantName: tenant.name,
      keyId: key.id,
      keyPrefix: key.prefix,
    };
  }

  @Get('console/config')
  @Public()
  @Operation({
    id: 'getConsoleConfig',
    summary: "The deployment's settings the console links with (Jaeger's UI) and Switchboard's version",
    description:
      "No credentials: `jaegerUiUrl` (JAEGER_UI_URL; a trace id links to `<jaegerUiUrl>/trace/<id>`, null when unset) and Switchboard's `version`. Nothing secret.",
    status: 200,
    schema: ConsoleConfigResponse,
  })
  consoleConfig(): ConsoleConfigResponse {
    return { jaegerUiUrl: this.config.JAEGER_UI_URL?.replace(/\/+$/, '') ?? null, version: VERSION };
  }
}
