import { Controller, Get, Headers, Inject, Res, ServiceUnavailableException } from '@nestjs/common';
import { ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import { HealthCheck, HealthCheckService, HealthIndicatorService } from '@nestjs/terminus';
import type { FastifyReply } from 'fastify';
import { HealthResponse, ReadinessResponse } from '@switchboard/contracts';
import { pingDatabase, type Db } from '@switchboard/database';
import type { Metrics } from '@switchboard/observability';
import { Public } from '../platform/auth/guard';
import { ApiErrors, Operation, schemaRef } from '../platform/openapi';
import { DB, METRICS, REDIS } from '@switchboard/platform';
import type { RedisConnection } from '@switchboard/queue';

/** Liveness, readiness and Prometheus metrics. No credentials. */
@ApiTags('ops')
@ApiErrors(500)
@Controller()
@Public()
export class OpsController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly indicator: HealthIndicatorService,
    @Inject(DB) private readonly db: Db,
    @Inject(REDIS) private readonly redis: RedisConnection,
    @Inject(METRICS) private readonly metrics: Metrics,
  ) {}

  @Get('healthz')
  @Operation({
    id: 'getHealth',
    summary: 'Liveness',
    description:
      'Liveness: 200 while the process answers. It never checks a dependency (a restart would not bring Postgres back); no credentials.',
    status: 200,
    schema: HealthResponse,
  })
  healthz(): HealthResponse {
    return { status: 'ok' };
  }

  @Get('readyz')
  // Documented below from the contracts' schema instead of terminus' own description.
  @HealthCheck({ swaggerDocumentation: false })
  @Operation({
    id: 'getReadiness',
    summary: 'Readiness: Postgres and Redis answer',
    description:
      'Readiness: 200 when Postgres answers `SELECT 1` and Redis `PING`, 503 naming the failing check otherwise (and while the gateway drains after SIGTERM). No credentials.',
    status: 200,
    schema: ReadinessResponse,
  })
  @ApiResponse({ status: 503, description: 'A dependency is down', schema: schemaRef(ReadinessResponse) })
  async readyz(@Res({ passthrough: true }) reply: FastifyReply) {
    try {
      return await this.health.check([
        () => this.probe('postgres', () => pingDatabase(this.db)),
        () => this.probe('redis', () => this.redis.ping()),
      ]);
    } catch (err) {
      // Not ready is an answer, not a failure: 503 with the check result, which probes and operators read.
      if (!(err instanceof ServiceUnavailableException)) throw err;
      void reply.status(503);
      return err.getResponse();
    }
  }

  private async probe(key: string, fn: () => Promise<unknown>) {
    const check = this.indicator.check(key);
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        fn(),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error('timeout')), 2000);
        }),
      ]);
      return check.up();
    } catch (err) {
      return check.down({ message: (err as Error).message });
    } finally {
      clearTimeout(timer);
    }
  }

  @Get('metrics')
  @ApiOperation({
    operationId: 'getMetrics',
    summary: 'Prometheus metrics',
    description:
      "The gateway's metrics (HTTP requests, queue depth, the process). In the Prometheus text format by " +
      'default; in OpenMetrics, with exemplars linking latency buckets to traces, when the Accept header ' +
      'asks for `application/openmetrics-text` (as Prometheus does).',
  })
  @ApiResponse({
    status: 200,
    description: 'Prometheus text exposition format, or OpenMetrics when asked for',
    content: {
      'text/plain': { schema: { type: 'string' } },
      'application/openmetrics-text': { schema: { type: 'string' } },
    },
  })
  async metricsText(
    @Headers('accept') accept: string | undefined,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    const { contentType, body } = await this.metrics.expose(accept);
    void reply.header('content-type', contentType);
    return body;
  }
}
