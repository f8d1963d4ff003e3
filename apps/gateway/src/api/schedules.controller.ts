import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Patch, Post, Query } from '@nestjs/common';
import type { Schedule } from '@prisma/client';
import type { Config } from '@switchboard/config';
import {
  AppError,
  cronError,
  isUuid,
  notFound,
  SchedulePageResponse,
  SchedulePayload,
  ScheduleResponse,
  shortestCronIntervalMs,
} from '@switchboard/contracts';
import type { Logger } from '@switchboard/observability';
import { CONFIG, LOGGER } from '@switchboard/platform';
import { withTimeout } from '@switchboard/queue';
import { nextRunAt, ScheduleScheduler, SchedulesRepository } from '@switchboard/schedules';
import { SessionsRepository } from '@switchboard/store';
import { AgentsRepository } from '@switchboard/subagents';
import { KeyAgents, TenantId } from '../platform/auth/guard';
import { CreateScheduleDto, PageQueryDto, UpdateScheduleDto } from './dto';
import { BODY_ERRORS, Operation, TenantApi } from '../platform/openapi';
import { decodeCursor, encodeCursor, pathId } from './presenters';

const presentSchedule = (s: Schedule): ScheduleResponse => ({
  id: s.id,
  agentId: s.agentId,
  // Set at creation (a standing session when none was given).
  sessionId: s.sessionId!,
  cron: s.cron,
  timezone: s.timezone,
  payload: s.payload as SchedulePayload,
  enabled: s.enabled,
  lastRunAt: s.lastRunAt?.toISOString() ?? null,
  nextRunAt: nextRunAt(s)?.toISOString() ?? null,
  createdAt: s.createdAt.toISOString(),
});

/**
 * Cron schedules that admit `timer_tick` messages (SPEC §3, docs/adr/0020). Postgres is the truth:
 * a change commits first, then the job scheduler in Redis follows; if Redis cannot be reached the
 * change still stands and the triage workers' sync pass brings the job scheduler in line.
 */
@TenantApi('schedules')
@Controller('v1/schedules')
export class SchedulesController {
  constructor(
    @Inject(SchedulesRepository) private readonly schedules: SchedulesRepository,
    @Inject(AgentsRepository) private readonly agents: AgentsRepository,
    @Inject(SessionsRepository) private readonly sessions: SessionsRepository,
    @Inject(ScheduleScheduler) private readonly scheduler: ScheduleScheduler,
    @Inject(CONFIG) private readonly config: Config,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /** The expression in its zone, held to SCHEDULE_MIN_INTERVAL_MS. */
  private checkTiming(cron: string, timezone: string): void {
    const error = cronError(cron, timezone);
    const shortest = error ? undefined : shortestCronIntervalMs(cron, timezone);
    const min = this.config.SCHEDULE_MIN_INTERVAL_MS;
    const message = error
      ? `invalid cron expression in ${timezone}: ${error}`
      : shortest! < min
        ? `fires every ${shortest} ms; schedules may fire at most once per ${min} ms`
        : undefined;
    if (message) throw new AppError('validation_failed', message, { issues: [{ path: 'cron', message }] });
  }

  /** Brings the job scheduler in line after a commit; a Redis that is down leaves it to the sync pass. */
  private async follow(schedule: Schedule | { id: string; deleted: true }): Promise<void> {
    try {
      const op = 'deleted' in schedule ? this.scheduler.remove(schedule.id) : this.scheduler.apply(schedule);
      op.catch(() => undefined);
      await withTimeout(op, 2000);
    } catch (err) {
      this.logger.warn({ err, scheduleId: schedule.id }, 'job scheduler not updated; the schedule sync will');
    }
  }

  private async find(tenantId: string, id: string): Promise<Schedule> {
    const row = await this.schedules.find(tenantId, pathId(id, 'schedule'));
    if (!row) throw notFound('schedule');
    return row;
  }

  @Post()
  @HttpCode(201)
  @Operation({
    id: 'createSchedule',
    summary: 'Create a cron schedule that admits timer_tick messages',
    description:
      'Each fire admits one `timer_tick` into `sessionId`, or into a session the schedule gets at creation.',
    status: 201,
    schema: ScheduleResponse,
    errors: [...BODY_ERRORS, 404, 409],
  })
  async create(@TenantId() tenantId: string, @Body() body: CreateScheduleDto): Promise<ScheduleResponse> {
    const timezone = body.timezone ?? 'UTC';
    this.checkTiming(body.cron, timezone);
    const agent = await this.agents.find(tenantId, body.agentId);
    if (!agent) throw notFound('agent');
    if (body.sessionId !== undefined) {
      const session = isUuid(body.sessionId) ? await this.sessions.find(tenantId, body.sessionId) : null;
      if (!session) throw notFound('session');
      if (session.agentId !== agent.id) {
        const message = 'the session belongs to another agent';
        throw new AppError('validation_failed', message, { issues: [{ path: 'sessionId', message }] });
      }
      if (session.status !== 'active') throw new AppError('conflict', 'session is closed');
    }
    const row = await this.schedules.create({
      tenantId,
      agentId: agent.id,
      sessionId: body.sessionId,
      cron: body.cron,
      timezone,
      payload: body.payload ?? {},
      enabled: body.enabled ?? true,
    });
    await this.follow(row);
    return presentSchedule(row);
  }

  @Get()
  @Operation({
    id: 'listSchedules',
    summary: 'Schedules of the tenant, by id',
    description:
      "The tenant's schedules by id, with their last and next fire times. Paged by `limit` (default 50, at most 200) and `cursor`.",
    status: 200,
    schema: SchedulePageResponse,
    errors: [400],
  })
  async list(
    @TenantId() tenantId: string,
    @Query() q: PageQueryDto,
    @KeyAgents() only: string[] | undefined,
  ): Promise<SchedulePageResponse> {
    const after = decodeCursor<[string]>(q.cursor, ['string']);
    const limit = q.limit ?? 50;
    // A key limited to agents (docs/adr/0066) lists only their schedules.
    const page = await this.schedules.page(tenantId, after?.[0], limit, only);
    return {
      data: page.rows.map(presentSchedule),
      nextCursor: page.more ? encodeCursor([page.rows[page.rows.length - 1].id]) : null,
    };
  }

  @Get(':id')
  @Operation({
    id: 'getSchedule',
    summary: 'A schedule',
    description:
      "A schedule: its cron expression, time zone, payload, whether it is enabled and when it fires next. 404 when it is not the calling tenant's.",
    status: 200,
    schema: ScheduleResponse,
    errors: [404],
  })
  async get(@TenantId() tenantId: string, @Param('id') id: string): Promise<ScheduleResponse> {
    return presentSchedule(await this.find(tenantId, id));
  }

  @Patch(':id')
  @Operation({
    id: 'updateSchedule',
    summary: 'Change a schedule: its expression, zone or payload; pause (enabled: false) or resume',
    description:
      "Changes a schedule's expression, time zone or payload, or pauses (`enabled: false`) and resumes it; the next fire time is recomputed. Absent fields are kept, so a repeat is harmless; 400 for an invalid cron expression or zone.",
    status: 200,
    schema: ScheduleResponse,
    errors: [...BODY_ERRORS, 404],
  })
  async update(
    @TenantId() tenantId: string,
    @Param('id') id: string,
    @Body() body: UpdateScheduleDto,
  ): Promise<ScheduleResponse> {
    const current = await this.find(tenantId, id);
    const cron = body.cron ?? current.cron;
    const timezone = body.timezone ?? current.timezone;
    if (body.cron !== undefined || body.timezone !== undefined) this.checkTiming(cron, timezone);
    const row = await this.schedules.update(current.id, {
      cron,
      timezone,
      payload: body.payload,
      enabled: body.enabled,
    });
    // Deleted since it was read.
    if (!row) throw notFound('schedule');
    await this.follow(row);
    return presentSchedule(row);
  }

  /** Stops the schedule for good; its session and the ticks already admitted stay. */
  @Delete(':id')
  @HttpCode(204)
  @Operation({
    id: 'deleteSchedule',
    summary: 'Delete a schedule',
    description:
      "Stops the schedule for good; its session and the ticks it already admitted stay. 404 when it is not the calling tenant's (or already deleted).",
    status: 204,
    errors: [404],
  })
  async remove(@TenantId() tenantId: string, @Param('id') id: string): Promise<void> {
    // One statement: a concurrent delete makes this one a 404, not a failed delete.
    if (!(await this.schedules.delete(tenantId, pathId(id, 'schedule')))) throw notFound('schedule');
    await this.follow({ id, deleted: true });
  }
}
