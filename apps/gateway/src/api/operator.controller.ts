import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Post, Query } from '@nestjs/common';
import { getQueueToken } from '@nestjs/bullmq';
import type { Queue } from 'bullmq';
import {
  ApiKeyListResponse,
  ApiKeyResponse,
  CreatedApiKeyResponse,
  HarnessProcessListResponse,
  notFound,
  QueueName,
  QueueStatsListResponse,
  type QueueStatsResponse,
} from '@switchboard/contracts';
import type { Config } from '@switchboard/config';
import { HARNESS_PROCESS_KIND, liveProcesses } from '@switchboard/live';
import { CONFIG, REDIS } from '@switchboard/platform';
import type { RedisConnection } from '@switchboard/queue';
import { ApiKeysRepository, OPERATOR_ACTOR, TenantsRepository } from '@switchboard/store';
import { AdminOnly } from '../platform/auth/guard';
import { KEY_REVOCATIONS, type KeyRevocations } from '../platform/auth/key-revocations';
import { AdminApi, BODY_ERRORS, Operation } from '../platform/openapi';
import { QUEUE_BOARD_PATH } from '../platform/queue-board';
import { TenantApiKeys } from './api-keys.controller';
import { CreateApiKeyDto, PageQueryDto } from './dto';
import { pathId } from './presenters';

/** Every queue the gateway has a handle on, by name (the board's list). */
export const OPERATOR_QUEUES = Symbol('OPERATOR_QUEUES');

/** The provider of OPERATOR_QUEUES: each of QueueName's BullMQ queues, as the module registered them. */
export const operatorQueuesProvider = {
  provide: OPERATOR_QUEUES,
  inject: Object.values(QueueName).map((name) => getQueueToken(name)),
  useFactory: (...queues: Queue[]): Queue[] => queues,
};

/** One queue's counts and its oldest waiting job's wait (ms), read from Redis. */
export async function queueStats(queue: Queue, now = Date.now()): Promise<QueueStatsResponse> {
  const [counts, oldest] = await Promise.all([
    queue.getJobCounts('waiting', 'prioritized', 'active', 'delayed', 'failed'),
    // Oldest first of each waiting list (plain and prioritized): at most one job of each.
    queue.getJobs(['wait', 'prioritized'], 0, 0, true),
  ]);
  // A job waits from when it was added, or from the end of its delay.
  const since = oldest
    .filter((job) => job)
    .map((job) => job.timestamp + (job.delay ?? 0))
    .reduce<number | null>((min, t) => (min === null || t < min ? t : min), null);
  return {
    name: queue.name as QueueName,
    waiting: (counts.waiting ?? 0) + (counts.prioritized ?? 0),
    active: counts.active ?? 0,
    delayed: counts.delayed ?? 0,
    failed: counts.failed ?? 0,
    oldestWaitingMs: since === null ? null : Math.max(0, now - since),
  };
}

/**
 * The operator's view of the deployment beside its tenants (ADMIN_TOKEN; the web console's operator
 * pages): a tenant's API keys, queue depths and waits, and the live harness processes.
 */
@AdminApi('admin')
@Controller('v1/admin')
export class OperatorController {
  private readonly keys: TenantApiKeys;

  constructor(
    @Inject(CONFIG) private readonly config: Config,
    @Inject(REDIS) private readonly redis: RedisConnection,
    @Inject(TenantsRepository) private readonly tenants: TenantsRepository,
    @Inject(OPERATOR_QUEUES) private readonly queues: Queue[],
    @Inject(ApiKeysRepository) apiKeys: ApiKeysRepository,
    @Inject(KEY_REVOCATIONS) revocations: KeyRevocations,
  ) {
    this.keys = new TenantApiKeys(apiKeys, revocations);
  }

  /** The tenant's id from the path; 404 when there is no such tenant. */
  private async tenant(id: string): Promise<string> {
    const tenantId = pathId(id, 'tenant');
    if (!(await this.tenants.find(tenantId))) throw notFound('tenant');
    return tenantId;
  }

  @Get('tenants/:id/api-keys')
  @AdminOnly()
  @Operation({
    id: 'listTenantApiKeys',
    summary: "A tenant's API keys, by id (revoked ones included)",
    description:
      "The tenant's API keys by id, revoked ones included, with their display prefix and last use; never the secret. Paged by `limit` (default 50, at most 200) and `cursor`; 404 for an unknown tenant.",
    status: 200,
    schema: ApiKeyListResponse,
    errors: [400, 404],
  })
  async listKeys(@Param('id') id: string, @Query() q: PageQueryDto): Promise<ApiKeyListResponse> {
    return this.keys.list(await this.tenant(id), q);
  }

  @Post('tenants/:id/api-keys')
  @AdminOnly()
  @HttpCode(201)
  @Operation({
    id: 'createTenantApiKey',
    summary: 'Create an API key for a tenant (the key is shown once)',
    description:
      'Creates an API key for the tenant, audited as `operator`; the secret `key` is in this response only. Each call makes a new key; 404 for an unknown tenant.',
    status: 201,
    schema: CreatedApiKeyResponse,
    errors: [...BODY_ERRORS, 404],
  })
  async createKey(@Param('id') id: string, @Body() body: CreateApiKeyDto): Promise<CreatedApiKeyResponse> {
    return this.keys.create(await this.tenant(id), OPERATOR_ACTOR, body);
  }

  @Delete('tenants/:id/api-keys/:keyId')
  @AdminOnly()
  @Operation({
    id: 'revokeTenantApiKey',
    summary: "Revoke a tenant's API key",
    description:
      "Revokes the key, audited as `operator`: it stops working at once on this gateway and on the others as soon as they hear of it (at the latest after API_KEY_CACHE_MS). Revoking twice is harmless; 404 for an unknown tenant or a key that is not the tenant's.",
    status: 200,
    schema: ApiKeyResponse,
    errors: [404],
  })
  async revokeKey(@Param('id') id: string, @Param('keyId') keyId: string): Promise<ApiKeyResponse> {
    return this.keys.revoke(await this.tenant(id), OPERATOR_ACTOR, keyId);
  }

  @Get('queues')
  @AdminOnly()
  @Operation({
    id: 'listQueues',
    summary: 'Each queue’s waiting, active, delayed and failed jobs, and its oldest waiting job’s wait',
    description:
      'Per BullMQ queue: jobs waiting (prioritized included), active, delayed and failed, and how long the oldest waiting job has waited (ms, null when none waits), read from Redis now. `boardUrl` is the queue board (Bull Board, ADMIN_TOKEN) with the jobs themselves.',
    status: 200,
    schema: QueueStatsListResponse,
  })
  async listQueues(): Promise<QueueStatsListResponse> {
    const now = Date.now();
    return {
      data: await Promise.all(this.queues.map((q) => queueStats(q, now))),
      boardUrl: QUEUE_BOARD_PATH,
    };
  }

  @Get('processes')
  @AdminOnly()
  @Operation({
    id: 'listProcesses',
    summary: 'Live harness worker processes: turns in flight and permits',
    description:
      'Every harness worker process whose heartbeat (every HARNESS_HEARTBEAT_MS) is younger than HARNESS_HEARTBEAT_TTL_MS, oldest first: host, pid, start, last beat, turns in flight, permits in use against the adaptive limit and HARNESS_CONCURRENCY. A killed process drops off within the TTL; one shut down cleanly at once.',
    status: 200,
    schema: HarnessProcessListResponse,
  })
  async listProcesses(): Promise<HarnessProcessListResponse> {
    return { data: await liveProcesses(this.redis, this.config.QUEUE_PREFIX, HARNESS_PROCESS_KIND) };
  }
}
