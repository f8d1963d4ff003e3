import { Controller, Get, Header, Inject } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { HealthCheck, HealthCheckService, HealthIndicatorService } from '@nestjs/terminus';
import type IORedis from 'ioredis';
import type { Db } from '@switchboard/database';
import type { Metrics } from '@switchboard/observability';
import { Public } from '../auth/guard';
import { DB, METRICS, REDIS } from '@switchboard/platform';

/** Liveness, readiness and Prometheus metrics. */
@ApiExcludeController()
@Controller()
@Public()
export class OpsController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly indicator: HealthIndicatorService,
    @Inject(DB) private readonly db: Db,
    @Inject(REDIS) private readonly redis: IORedis,
    @Inject(METRICS) private readonly metrics: Metrics,
  ) {}

  @Get('healthz')
  healthz() {
    return { status: 'ok' };
  }

  @Get('readyz')
  @HealthCheck()
  readyz() {
    return this.health.check([
      () => this.probe('postgres', () => this.db.$queryRaw`SELECT 1`),
      () => this.probe('redis', () => this.redis.ping()),
    ]);
  }

  private async probe(key: string, fn: () => Promise<unknown>) {
    const check = this.indicator.check(key);
    try {
      await Promise.race([
        fn(),
        new Promise((_, reject) => setTimeout(() => reject(new Error('timeout')), 2000)),
      ]);
      return check.up();
    } catch (err) {
      return check.down({ message: (err as Error).message });
    }
  }

  @Get('metrics')
  @Header('content-type', 'text/plain; version=0.0.4; charset=utf-8')
  metricsText() {
    return this.metrics.registry.metrics();
  }
}
