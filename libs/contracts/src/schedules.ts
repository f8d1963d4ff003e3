import { parseExpression } from 'cron-parser';
import { z } from 'zod';
import { Metadata } from './api';

/**
 * Cron schedules that admit `timer_tick` messages (SPEC §3, docs/adr/0020). Expressions are read by
 * cron-parser, the same version BullMQ's job schedulers use, so what validates here is what fires.
 */

/** Whether `tz` names an IANA time zone this runtime knows (`Intl` is the source). */
export function isTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

/** The next `count` fire times of `cron` in `tz` after `from`; throws on an invalid expression or zone. */
export function cronFireTimes(cron: string, tz: string, count: number, from = new Date()): Date[] {
  const interval = parseExpression(cron, { tz, currentDate: from });
  const times: Date[] = [];
  for (let i = 0; i < count; i++) {
    if (!interval.hasNext()) break;
    times.push(interval.next().toDate());
  }
  return times;
}

/** Why `cron` is not a usable expression, or undefined when it is. */
export function cronError(cron: string, tz = 'UTC'): string | undefined {
  const fields = cron.trim().split(/\s+/).length;
  if (!cron.startsWith('@') && (fields < 5 || fields > 6)) {
    return 'a cron expression has 5 fields (minute first) or 6 (second first)';
  }
  try {
    if (cronFireTimes(cron, tz, 1).length === 0) return 'the expression never fires';
    return undefined;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}

/**
 * The shortest gap between consecutive fires among the next `samples` (a sample, not a proof: an
 * expression whose gaps vary is judged by its first ones, which covers steps and lists in practice).
 */
export function shortestCronIntervalMs(cron: string, tz: string, samples = 20): number {
  const times = cronFireTimes(cron, tz, samples);
  let shortest = Number.POSITIVE_INFINITY;
  for (let i = 1; i < times.length; i++) {
    shortest = Math.min(shortest, times[i].getTime() - times[i - 1].getTime());
  }
  return shortest;
}

export const CronExpression = z
  .string()
  .trim()
  .min(1)
  .max(200)
  .superRefine((cron, ctx) => {
    const error = cronError(cron);
    if (error) ctx.addIssue({ code: 'custom', message: `invalid cron expression: ${error}` });
  });

export const TimeZone = z
  .string()
  .min(1)
  .max(100)
  .refine(isTimeZone, { message: 'not an IANA time zone (e.g. "UTC", "Europe/Paris")' });

/** What each tick says: its text (a default names the schedule and fire time) and metadata. */
export const SchedulePayload = z.strictObject({
  text: z.string().min(1).max(100_000).optional(),
  metadata: Metadata.optional(),
});
export type SchedulePayload = z.infer<typeof SchedulePayload>;

export const CreateScheduleRequest = z.strictObject({
  agentId: z.string().min(1).max(100),
  /** The session ticks go to; without it the schedule gets a session of its own at creation. */
  sessionId: z.string().min(1).max(100).optional(),
  cron: CronExpression,
  timezone: TimeZone.optional(),
  payload: SchedulePayload.optional(),
  enabled: z.boolean().optional(),
});
export type CreateScheduleRequest = z.infer<typeof CreateScheduleRequest>;

/** Pause with `enabled: false`, resume with `enabled: true`. */
export const UpdateScheduleRequest = z
  .strictObject({
    cron: CronExpression.optional(),
    timezone: TimeZone.optional(),
    payload: SchedulePayload.optional(),
    enabled: z.boolean().optional(),
  })
  .refine((v) => Object.keys(v).length > 0, { message: 'at least one field is required' });
export type UpdateScheduleRequest = z.infer<typeof UpdateScheduleRequest>;
