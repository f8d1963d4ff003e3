import type { Schedule } from '@prisma/client';
import { newId } from '@switchboard/contracts';
import type { Db, Prisma } from '@switchboard/database';

/** A new schedule; without `sessionId` it gets a session of its own, created with it. */
export interface NewSchedule {
  tenantId: string;
  agentId: string;
  sessionId?: string;
  cron: string;
  timezone: string;
  payload: Record<string, unknown>;
  enabled: boolean;
}

/** What a change may set; `cron` and `timezone` are the schedule's values after the change. */
export interface ScheduleChange {
  cron: string;
  timezone: string;
  payload?: Record<string, unknown>;
  enabled?: boolean;
}

/**
 * A tenant's schedules in Postgres, the truth the job schedulers in Redis follow (docs/adr/0020:
 * `ScheduleScheduler` brings them in line after each change).
 */
export class SchedulesRepository {
  constructor(private readonly db: Db) {}

  find(tenantId: string, id: string): Promise<Schedule | null> {
    return this.db.schedule.findFirst({ where: { id, tenantId } });
  }

  /** By id, after the cursor's id. */
  async page(
    tenantId: string,
    afterId: string | undefined,
    limit: number,
    /** Only these agents' (a key limited to agents, docs/adr/0066). */
    agentIds?: string[],
  ): Promise<{ rows: Schedule[]; more: boolean }> {
    const rows = await this.db.schedule.findMany({
      where: {
        tenantId,
        ...(agentIds ? { agentId: { in: agentIds } } : {}),
        ...(afterId !== undefined ? { id: { gt: afterId } } : {}),
      },
      orderBy: { id: 'asc' },
      take: limit + 1,
    });
    return { rows: rows.slice(0, limit), more: rows.length > limit };
  }

  /** The schedule, and its own session (titled after it) when it names none, in one transaction. */
  create(s: NewSchedule): Promise<Schedule> {
    const id = newId();
    return this.db.$transaction(async (tx) => {
      let sessionId = s.sessionId;
      if (sessionId === undefined) {
        sessionId = newId();
        await tx.session.create({
          data: {
            id: sessionId,
            tenantId: s.tenantId,
            agentId: s.agentId,
            title: `schedule ${id}`,
            metadata: { scheduleId: id },
          },
        });
      }
      return tx.schedule.create({
        data: {
          id,
          tenantId: s.tenantId,
          agentId: s.agentId,
          sessionId,
          cron: s.cron,
          timezone: s.timezone,
          payload: s.payload as Prisma.InputJsonValue,
          enabled: s.enabled,
        },
      });
    });
  }

  /** The changed schedule; undefined when it was deleted since it was read. */
  async update(id: string, change: ScheduleChange): Promise<Schedule | undefined> {
    return this.db.schedule
      .update({
        where: { id },
        data: {
          cron: change.cron,
          timezone: change.timezone,
          ...(change.payload ? { payload: change.payload as Prisma.InputJsonValue } : {}),
          ...(change.enabled !== undefined ? { enabled: change.enabled } : {}),
        },
      })
      .catch((err: unknown) => {
        // Prisma's "record to update not found".
        if ((err as { code?: unknown }).code === 'P2025') return undefined;
        throw err;
      });
  }

  /** False when the tenant had no such schedule. */
  async delete(tenantId: string, id: string): Promise<boolean> {
    const { count } = await this.db.schedule.deleteMany({ where: { id, tenantId } });
    return count > 0;
  }
}
