import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import type { Config } from '@switchboard/config';
import type { Db } from '@switchboard/database';
import { withSpan, type Logger, type Metrics } from '@switchboard/observability';
import { CONFIG, DB, LOGGER, METRICS } from '@switchboard/platform';
import { sweepCanaries } from '@switchboard/subagents';

/**
 * The canary decision sweep (docs/adr/0064): every CANARY_EVAL_INTERVAL_MS after the last sweep ended,
 * each running canary's candidate and baseline mean online scores are compared and a candidate worse by
 * the margin is rolled back. Every hooks worker sweeps; a canary's row lock makes one of them evaluate it
 * at a time, and a rollback only ends a canary still running. 0 turns it off.
 */
@Injectable()
export class CanarySweepService implements OnApplicationBootstrap, OnApplicationShutdown {
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    @Inject(DB) private readonly db: Db,
    @Inject(LOGGER) private readonly logger: Logger,
    @Inject(METRICS) private readonly metrics: Metrics,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  onApplicationBootstrap(): void {
    if (this.config.CANARY_EVAL_INTERVAL_MS > 0) this.next();
  }

  onApplicationShutdown(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }

  private next(): void {
    if (this.stopped) return;
    this.timer = setTimeout(
      () => void this.sweep().finally(() => this.next()),
      this.config.CANARY_EVAL_INTERVAL_MS,
    );
    this.timer.unref();
  }

  /** One sweep; a failure (Postgres away) is logged and the next interval tries again. */
  async sweep(): Promise<void> {
    try {
      const results = await withSpan('canary sweep', {}, () => sweepCanaries(this.db));
      for (const r of results.filter((x) => x.rolledBack)) {
        this.metrics.canaryDecisions.inc({ outcome: 'rolled_back' });
        this.logger.warn(
          { agentId: r.agentId, tenantId: r.tenantId, ...r.observed },
          'canary rolled back: the candidate scored below the baseline by its margin',
        );
      }
    } catch (err) {
      this.logger.warn({ err }, 'canary sweep failed; the next interval retries');
    }
  }
}
