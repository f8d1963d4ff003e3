import {
  createParamDecorator,
  Inject,
  Injectable,
  SetMetadata,
  type CanActivate,
  type ExecutionContext,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { FastifyRequest } from 'fastify';
import { AppError } from '@switchboard/contracts';
import type { Config } from '@switchboard/config';
import { CONFIG } from '@switchboard/platform';
import { ApiKeysRepository, apiKeyActor } from '@switchboard/store';
import type { ErrorShapeConfig } from '../errors';
import { API_KEY_CACHE, type ApiKeyCache } from './key-cache';
import { KEY_USAGE, type KeyUsage } from './key-usage';
import { bearer, constantTimeEquals, hashApiKey } from './keys';

export type Access = 'public' | 'admin' | 'tenant';
const ACCESS = 'switchboard:access';
/** No credentials needed (health, metrics, docs). */
export const Public = () => SetMetadata(ACCESS, 'public' satisfies Access);
/** Guarded by ADMIN_TOKEN instead of an API key. */
export const AdminOnly = () => SetMetadata(ACCESS, 'admin' satisfies Access);

export interface AuthedRequest extends FastifyRequest {
  tenantId?: string;
  apiKeyId?: string;
}

/** The authenticated tenant of the request. */
export const TenantId = createParamDecorator((_: unknown, ctx: ExecutionContext): string => {
  const tenantId = ctx.switchToHttp().getRequest<AuthedRequest>().tenantId;
  if (!tenantId) throw new AppError('unauthorized', 'missing tenant');
  return tenantId;
});

/** The API key that made the request (who decided an approval). */
export const ApiKeyId = createParamDecorator(
  (_: unknown, ctx: ExecutionContext): string =>
    ctx.switchToHttp().getRequest<AuthedRequest>().apiKeyId ?? 'api',
);

/** Who made the request, as the audit log names it (docs/adr/0030): `api_key:<id>`. */
export const Actor = createParamDecorator((_: unknown, ctx: ExecutionContext): string => {
  const keyId = ctx.switchToHttp().getRequest<AuthedRequest>().apiKeyId;
  if (!keyId) throw new AppError('unauthorized', 'missing API key');
  return apiKeyActor(keyId);
});

/** Who may call the route: a tenant (an API key) unless marked otherwise. */
export const accessOf = (reflector: Reflector, ctx: ExecutionContext): Access =>
  reflector.getAllAndOverride<Access | undefined>(ACCESS, [ctx.getHandler(), ctx.getClass()]) ?? 'tenant';

/**
 * The operator's check: `token` must be ADMIN_TOKEN (compared in constant time); no ADMIN_TOKEN
 * disables the operator's routes. Throws a 401 `unauthorized`. The admin API and the queue board
 * (`/admin/queues`) share it.
 */
export function checkAdminToken(admin: string | undefined, token: string | undefined): void {
  if (!admin) throw new AppError('unauthorized', 'the admin API is disabled: set ADMIN_TOKEN');
  if (!token || !constantTimeEquals(token, admin)) throw new AppError('unauthorized', 'invalid admin token');
}

/**
 * The `x-api-key` header, on routes that accept it (the LangGraph adapter's: its SDK sends the key
 * there, docs/adr/0038).
 */
function apiKeyHeader(req: FastifyRequest): string | undefined {
  const config = req.routeOptions?.config as ErrorShapeConfig | undefined;
  if (!config?.apiKeyHeader) return undefined;
  const value = req.headers['x-api-key'];
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
}

/** Every route needs an API key unless marked otherwise. */
@Injectable()
export class AuthGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    @Inject(ApiKeysRepository) private readonly apiKeys: ApiKeysRepository,
    @Inject(CONFIG) private readonly config: Config,
    @Inject(API_KEY_CACHE) private readonly keys: ApiKeyCache,
    @Inject(KEY_USAGE) private readonly usage: KeyUsage,
  ) {}

  async canActivate(ctx: ExecutionContext): Promise<boolean> {
    const access = accessOf(this.reflector, ctx);
    if (access === 'public') return true;
    const req = ctx.switchToHttp().getRequest<AuthedRequest>();
    const token = bearer(req.headers.authorization) ?? apiKeyHeader(req);
    if (access === 'admin') {
      checkAdminToken(this.config.ADMIN_TOKEN, token);
      return true;
    }
    if (!token) throw new AppError('unauthorized', 'missing API key: send "Authorization: Bearer <key>"');
    const hash = hashApiKey(token);
    let key = this.keys.get(hash);
    if (!key) {
      const row = await this.apiKeys.byHash(hash);
      // Only valid keys are cached: a guessed or revoked key is looked up every time (docs/adr/0017).
      if (!row || row.revokedAt) throw new AppError('unauthorized', 'invalid or revoked API key');
      key = { keyId: row.id, tenantId: row.tenantId };
      this.keys.set(hash, key);
    }
    req.tenantId = key.tenantId;
    req.apiKeyId = key.keyId;
    this.usage.touch(key.keyId);
    return true;
  }
}
