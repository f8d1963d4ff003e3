import type { Job, Queue } from 'bullmq';
import type { Admission } from '@switchboard/admission';
import {
  AppError,
  cronFireTimes,
  Jobs,
  SCHEDULE_SYNC_ID,
  SchedulePayload,
  type ScheduleJob,
} from '@switchboard/contracts';
import type { Db } from '@switchboard/database';
import type { Logger } from '@switchboard/observability';

/**
 * Schedules (docs/adr/0020): Postgres holds each schedule; a BullMQ job scheduler on the `schedules`
 * queue, whose id is the schedule id, is derived from it and makes one `fire` job per fire time
 * however many processes upsert it. A fire admits exactly one `timer_tick`: its admission's
 * Idempotency-Key is the (schedule, fire time) pair, so a retried or doubly-run fire admits once.
 */

/** The columns of a schedule the job scheduler is derived from. */
export interface ScheduleSpec {
  id: string;
  tenantId: string;
  cron: string;
  timezone: string;
  enabled: boolean;
}

/** The Idempotency-Key of the tick one fire admits. */
export const tickKey = (scheduleId: string, fireTime: Date): string =>
  `timer:${scheduleId}:${fireTime.getTime()}`;

/** The fire time a job scheduler's job stands for: its slot, `repeat:<scheduleId>:<millis>`. */
export function fireTimeOf(job: Pick<Job, 'id' | 'opts' | 'timestamp'>): Date {
  const slot = job.opts.prevMillis ?? Number(/:(\d+)$/.exec(String(job.id))?.[1]);
  return new Date(Number.isFinite(slot) ? slot : job.timestamp);
}

/** The job schedulers of the `schedules` queue, kept in line with Postgres. */
export class ScheduleScheduler {
  constructor(
    private readonly queue: Queue,
    private readonly db: Db,
    private readonly logger: Logger,
  ) {}

  /** Makes the job scheduler match the schedule: present with its cron and zone while enabled, absent otherwise. */
  async apply(schedule: ScheduleSpec): Promise<void> {
    if (!schedule.enabled) {
      await this.queue.removeJobScheduler(schedule.id);
      return;
    }
    const def = Jobs.schedule;
    const data: ScheduleJob = { kind: 'fire', scheduleId: schedule.id, tenantId: schedule.tenantId };
    // Upserting with an unchanged pattern keeps the scheduler's next fire (same job id, no second job).
    await this.queue.upsertJobScheduler(
      def.jobId(data),
      { pattern: schedule.cron, tz: schedule.timezone },
      {
        name: data.kind,
        data,
        opts: {
          attempts: def.attempts,
          backoff: def.backoff,
          removeOnComplete: { age: def.keepCompletedSeconds },
          removeOnFail: { age: def.keepFailedSeconds },
        },
      },
    );
  }

  async remove(scheduleId: string): Promise<void> {
    await this.queue.removeJobScheduler(scheduleId);
  }

  /** The periodic `sync` pass itself, every `everyMs` for the whole cluster (one job per interval). */
  async scheduleSync(everyMs: number): Promise<void> {
    const def = Jobs.schedule;
    const data: ScheduleJob = { kind: 'sync' };
    await this.queue.upsertJobScheduler(
      def.jobId(data),
      { every: everyMs },
      {
        name: data.kind,
        data,
        opts: {
          attempts: 1,
          removeOnComplete: { age: def.keepCompletedSeconds },
          removeOnFail: { age: def.keepFailedSeconds },
        },
      },
    );
  }

  /**
   * Postgres → Redis: every enabled schedule gets its job scheduler (created when missing, replaced
   * when its cron or zone differ) and every other one is removed. Heals a Redis that lost its data
   * and a gateway that committed a change but could not reach Redis.
   */
  async syncAll(batch = 500): Promise<{ upserted: number; removed: number }> {
    const existing = new Map((await this.queue.getJobSchedulers(0, -1)).map((s) => [s.key, s] as const));
    existing.delete(SCHEDULE_SYNC_ID);
    let upserted = 0;
    let after: string | undefined;
    for (;;) {
      const rows = await this.db.schedule.findMany({
        where: { enabled: true, ...(after ? { id: { gt: after } } : {}) },
        orderBy: { id: 'asc' },
        take: batch,
        select: { id: true, tenantId: true, cron: true, timezone: true, enabled: true },
      });
      for (const row of rows) {
        const current = existing.get(row.id);
        existing.delete(row.id);
        if (current && current.pattern === row.cron && (current.tz ?? 'UTC') === row.timezone) continue;
        await this.apply(row);
        upserted++;
      }
      if (rows.length < batch) break;
      after = rows[rows.length - 1].id;
    }
    // What is left has no enabled schedule behind it: deleted or paused.
    for (const key of existing.keys()) await this.queue.removeJobScheduler(key);
    if (upserted > 0 || existing.size > 0) {
      this.logger.info({ upserted, removed: existing.size }, 'schedules synced to their job schedulers');
    }
    return { upserted, removed: existing.size };
  }
}

export type FireOutcome = 'admitted' | 'replayed' | 'skipped';

/**
 * One fire of a schedule: reads the schedule from Postgres (the truth: a paused or deleted one admits
 * nothing, and its stale job scheduler goes) and admits one `timer_tick` keyed by the fire time. A
 * paused tenant's admission refuses it: the fire is skipped.
 */
export async function fireSchedule(
  deps: { db: Db; admission: Admission; scheduler: ScheduleScheduler; logger: Logger },
  job: { scheduleId: string; tenantId: string },
  fireTime: Date,
): Promise<FireOutcome> {
  const schedule = await deps.db.schedule.findFirst({
    where: { id: job.scheduleId, tenantId: job.tenantId },
  });
  if (!schedule?.enabled || !schedule.sessionId) {
    await deps.scheduler.remove(job.scheduleId);
    deps.logger.info({ scheduleId: job.scheduleId }, 'schedule fire skipped: schedule deleted or paused');
    return 'skipped';
  }
  const payload = SchedulePayload.parse(schedule.payload);
  const fireAt = fireTime.toISOString();
  let outcome: FireOutcome;
  try {
    const admitted = await deps.admission.admit({
      tenantId: schedule.tenantId,
      sessionId: schedule.sessionId,
      // Timer ticks are runtime-owned: authority runtime_instruction, trust trusted_system (SPEC §2).
      kind: 'timer_tick',
      origin: { kind: 'timer', scheduleId: schedule.id },
      body: { type: 'text', text: payload.text ?? `Scheduled tick (schedule ${schedule.id}, ${fireAt})` },
      deliverySurface: 'timer_scheduler',
      admissionContext: 'runtime_owned',
      metadata: { ...payload.metadata, scheduleId: schedule.id, fireTime: fireAt },
      idempotencyKey: tickKey(schedule.id, fireTime),
    });
    outcome = admitted.replayed ? 'replayed' : 'admitted';
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    if (err.code === 'tenant_paused') {
      // The operator paused the tenant (docs/adr/0030): this tick is skipped, not kept for later.
      deps.logger.info({ scheduleId: schedule.id }, 'schedule fire skipped: the tenant is paused');
      return 'skipped';
    }
    if (err.code === 'agent_stopped') {
      // The stopped boundary (docs/adr/0031): the tick is refused, nothing stored, not kept for later.
      deps.logger.info({ scheduleId: schedule.id }, 'schedule fire refused: the agent is stopped');
      return 'skipped';
    }
    if (err.code === 'not_found' || err.code === 'conflict') {
      // Its session is gone or closed: no retry can help; the tick is dropped and logged.
      deps.logger.warn({ scheduleId: schedule.id, err }, 'schedule fire dropped: its session cannot take it');
      return 'skipped';
    }
    // This fire was admitted before the payload changed: it stands, once. Anything else (in flight) is retried.
    if (err.code !== 'idempotency_key_reused') throw err;
    outcome = 'replayed';
  }
  await deps.db.schedule.updateMany({
    where: { id: schedule.id, OR: [{ lastRunAt: null }, { lastRunAt: { lt: fireTime } }] },
    data: { lastRunAt: fireTime },
  });
  return outcome;
}

/** The next fire time of an enabled schedule, null for a paused one or one that never fires again. */
export function nextRunAt(schedule: { cron: string; timezone: string; enabled: boolean }): Date | null {
  if (!schedule.enabled) return null;
  try {
    return cronFireTimes(schedule.cron, schedule.timezone, 1)[0] ?? null;
  } catch {
    return null;
  }
}
