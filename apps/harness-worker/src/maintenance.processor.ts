import { Inject } from '@nestjs/common';
import { InjectQueue } from '@nestjs/bullmq';
import type { Job, Queue } from 'bullmq';
import { Admission, TurnSteering } from '@switchboard/admission';
import { Jobs, QueueName, type MaintenanceTask } from '@switchboard/contracts';
import { poolOf, type Db } from '@switchboard/database';
import { reconcileHooks } from '@switchboard/hooks';
import { RedisLivePublisher } from '@switchboard/live';
import type { Metrics } from '@switchboard/observability';
import {
  CIPHER,
  DB,
  METRICS,
  QueueProcessor,
  QueueWorker,
  REDIS,
  TASKS,
  type TenantCipher,
} from '@switchboard/platform';
import { consume, type RedisConnection } from '@switchboard/queue';
import {
  ApprovalStore,
  ClientToolStore,
  maintainPartitions,
  reencryptStale,
  purgeDueTranscripts,
  sqlDbFor,
  TurnStore,
  type SqlDb,
} from '@switchboard/store';
import type { TaskService } from '@switchboard/subagents';
import { OriginalsStore } from '@switchboard/tokenjuice/store';
import { flushIdleWakeHints } from '@switchboard/triage';
import { Approvals, ClientTools, reconcileTurns, sweepExpiredLeases } from '@switchboard/turns';
import { activateIdleAgents } from '@switchboard/work-items';

/** Turns younger than this are left alone: their own enqueue may still be in flight. */
export const RECONCILE_MIN_AGE_MS = 2000;

/**
 * Cluster-wide housekeeping jobs made by the job schedulers (`ReconcilerService`):
 * one job per interval for the whole cluster, run by whichever harness takes it.
 */
@QueueProcessor(QueueName.Maintenance, 1)
export class MaintenanceProcessor extends QueueWorker {
  constructor(
    @Inject(DB) private readonly db: Db,
    @InjectQueue(QueueName.Turns) private readonly turns: Queue,
    @InjectQueue(QueueName.PostTurn) private readonly postTurn: Queue,
    @InjectQueue(QueueName.Work) private readonly work: Queue,
    @Inject(METRICS) private readonly metrics: Metrics,
    @Inject(REDIS) private readonly redis: RedisConnection,
    @Inject(TASKS) private readonly tasks: TaskService,
    @Inject(CIPHER) private readonly cipher: TenantCipher,
  ) {
    super();
  }

  /** Expiry of approvals (docs/adr/0013): built on first use, when the worker's logger is set. */
  private approvals?: Approvals;
  /** Expiry of client tool waits (docs/adr/0047), by the same sweep. */
  private clientTools?: ClientTools;
  private admission?: Admission;
  private control?: TurnSteering;
  private sql?: SqlDb;
  private store?: TurnStore;
  private originals?: OriginalsStore;

  async process(job: Job): Promise<number> {
    return consume(Jobs.maintenance, job, (data) => this.run(data.task), this.metrics);
  }

  private async run(task: MaintenanceTask): Promise<number> {
    switch (task) {
      case 'leases': {
        // Sessions a dead worker held: freed, their next turn woken (docs/adr/0029).
        this.store ??= new TurnStore(sqlDbFor(poolOf(this.db), 'harness', this.metrics));
        return sweepExpiredLeases(this.store, this.turns, this.logger);
      }
      case 'tokenjuice': {
        // Originals of compacted tool results past their retention (docs/adr/0033).
        this.originals ??= new OriginalsStore(
          sqlDbFor(poolOf(this.db), 'tokenjuice', this.metrics),
          this.config.TOKENJUICE_RETENTION_HOURS * 3_600_000,
        );
        const deleted = await this.originals.sweep();
        if (deleted > 0) this.logger.info({ task, deleted }, 'expired tool-result originals deleted');
        return deleted;
      }
      case 'partitions': {
        // pg_partman's upkeep of the partitioned journal, transcript, ledger and hook runs (docs/adr/0044).
        this.sql ??= sqlDbFor(poolOf(this.db), 'harness', this.metrics);
        const done = await maintainPartitions(this.sql, this.config.PARTITION_RETENTION);
        if (done.ran || done.keys > 0) this.logger.info({ task, ...done }, 'partition maintenance ran');
        else if (done.reason === 'no_partman')
          this.logger.debug({ task }, 'partition maintenance: no pg_partman');
        return done.detached ?? 0;
      }
      case 'retention': {
        // Transcripts past their tenant's transcriptRetentionDays: content purged, cost lines kept (docs/adr/0068).
        const purged = await purgeDueTranscripts(poolOf(this.db));
        if (purged.sessions > 0) this.logger.info({ task, ...purged }, 'transcripts past retention purged');
        return purged.sessions;
      }
      case 'reconcile': {
        // Approvals past their time first: their turns resume with an ApprovalExpired result.
        this.approvals ??= new Approvals(
          new ApprovalStore(sqlDbFor(poolOf(this.db), 'harness', this.metrics)),
          this.turns,
          this.logger,
          new RedisLivePublisher(this.redis, { prefix: this.config.QUEUE_PREFIX, logger: this.logger }),
        );
        this.clientTools ??= new ClientTools(
          new ClientToolStore(sqlDbFor(poolOf(this.db), 'harness', this.metrics)),
          this.turns,
          this.logger,
          new RedisLivePublisher(this.redis, { prefix: this.config.QUEUE_PREFIX, logger: this.logger }),
        );
        const expired = (await this.approvals.expireDue()) + (await this.clientTools.expireDue());
        // Sub-agent tasks whose parent was not told of their end (a worker died between): told now.
        const reported = await this.tasks.reportDue();
        // Children left open under a cancelled parent (the cascade cut short): cancelled now (docs/adr/0025).
        this.control ??= new TurnSteering(sqlDbFor(poolOf(this.db), 'harness', this.metrics), {
          redis: this.redis,
          prefix: this.config.QUEUE_PREFIX,
          postTurnQueue: this.postTurn,
          turnsQueue: this.turns,
          live: new RedisLivePublisher(this.redis, { prefix: this.config.QUEUE_PREFIX, logger: this.logger }),
          logger: this.logger,
          metrics: this.metrics,
        });
        // Children left open under a parent that ended at its deadline or budget too (docs/adr/0055).
        const orphans = await this.control.cancelOrphans();
        const requeued = await reconcileTurns(this.db, this.turns, this.logger, {
          olderThanMs: RECONCILE_MIN_AGE_MS,
        });
        // Ended turns missing a post-turn hook's run: their jobs published again (docs/adr/0027).
        this.sql ??= sqlDbFor(poolOf(this.db), 'harness', this.metrics);
        const hooks = await reconcileHooks(this.sql, this.postTurn, this.logger, {
          graceMs: this.config.HOOKS_RECONCILE_GRACE_MS,
        });
        // Wake hints held while their session was busy become a system tick once it is idle (docs/adr/0018).
        this.admission ??= new Admission(this.db, this.turns, this.logger);
        const woken = await flushIdleWakeHints({
          db: this.db,
          admission: this.admission,
          logger: this.logger,
        });
        // Idle agents with runnable work or a due recheck whose `work` job was lost (docs/adr/0031).
        const activated = await activateIdleAgents({
          db: this.db,
          admission: this.admission,
          logger: this.logger,
          workQueue: this.work,
          maxIdleTicks: this.config.WORK_TICK_MAX_IDLE,
        });
        // Data-key rotation's background half (docs/adr/0067): a batch of content sealed under a
        // retired version re-sealed under the active one; nothing to do without a key provider.
        const reencrypted = this.cipher.available
          ? await reencryptStale(this.sql, this.cipher, 200, (tenantId, err) =>
              this.logger.warn({ task, tenantId, err }, 're-encryption of a tenant failed'),
            )
          : 0;
        this.logger.info(
          { task, requeued, expired, woken, reported, orphans, hooks, activated, reencrypted },
          'maintenance task ran',
        );
        return requeued;
      }
    }
  }
}
