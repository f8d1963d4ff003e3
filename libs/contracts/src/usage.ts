import { z } from 'zod';

/**
 * What GET /v1/usage can group the cost ledger by; `day` buckets are UTC calendar days; `kind` tells
 * chat calls from embeddings (issue 33).
 */
export const USAGE_DIMENSIONS = ['day', 'agent', 'session', 'model', 'kind'] as const;
export type UsageDimension = (typeof USAGE_DIMENSIONS)[number];

const DAY_MS = 24 * 3600 * 1000;
/** The widest window one request may sum: a year and a day (a leap year fits). */
export const USAGE_MAX_RANGE_DAYS = 366;
/** The window when `from` is absent: the 30 days before `to`. */
export const USAGE_DEFAULT_RANGE_DAYS = 30;

const Instant = z.iso
  .datetime({ offset: true })
  .transform((s) => new Date(s))
  .pipe(z.date());

const GroupBy = z
  .string()
  .max(100)
  .regex(new RegExp(`^(${USAGE_DIMENSIONS.join('|')})(,(${USAGE_DIMENSIONS.join('|')}))*$`), {
    message: `must be a comma list of ${USAGE_DIMENSIONS.join(', ')}`,
  })
  .describe('A comma list of day|agent|session|model|kind, each at most once (default: day).')
  .transform((s) => s.split(','))
  .pipe(
    z
      .array(z.enum(USAGE_DIMENSIONS))
      .refine((dims) => new Set(dims).size === dims.length, 'must not name a dimension twice'),
  );

/**
 * GET /v1/usage: the window `[from, to)` (ISO timestamps; `to` defaults to now, `from` to 30 days
 * before `to`, at most 366 days wide) and `groupBy`, a comma list of day|agent|session|model|kind
 * (default `day`).
 */
export const UsageQuery = z
  .strictObject({
    from: Instant.optional().describe('Start of the window, inclusive (default: 30 days before `to`).'),
    to: Instant.optional().describe(
      'End of the window, exclusive (default: now); at most 366 days after `from`.',
    ),
    groupBy: GroupBy.optional(),
  })
  .transform((q) => {
    const to = q.to ?? new Date();
    const from = q.from ?? new Date(to.getTime() - USAGE_DEFAULT_RANGE_DAYS * DAY_MS);
    return { from, to, groupBy: q.groupBy ?? (['day'] as UsageDimension[]) };
  })
  .refine((q) => q.from < q.to, { message: 'from must be before to', path: ['from'] })
  .refine((q) => q.to.getTime() - q.from.getTime() <= USAGE_MAX_RANGE_DAYS * DAY_MS, {
    message: `the window may span at most ${USAGE_MAX_RANGE_DAYS} days`,
    path: ['to'],
  });
export type UsageQuery = z.infer<typeof UsageQuery>;

/** A UTC calendar day, YYYY-MM-DD. */
const Day = z.iso.date();
const dayOf = (d: Date) => d.toISOString().slice(0, 10);

/**
 * GET /v1/usage/daily: the tenant's spend roll-up per UTC day over `from`..`to`, both inclusive
 * (`to` defaults to today, `from` to 29 days before `to`; at most 366 days).
 */
export const DailySpendQuery = z
  .strictObject({
    from: Day.optional().describe('First UTC day, inclusive (default: 29 days before `to`).'),
    to: Day.optional().describe(
      'Last UTC day, inclusive (default: today, UTC); at most 366 days after `from`.',
    ),
  })
  .transform((q) => {
    const to = q.to ?? dayOf(new Date());
    const from = q.from ?? dayOf(new Date(Date.parse(to) - (USAGE_DEFAULT_RANGE_DAYS - 1) * DAY_MS));
    return { from, to };
  })
  .refine((q) => q.from <= q.to, { message: 'from must not be after to', path: ['from'] })
  .refine((q) => Date.parse(q.to) - Date.parse(q.from) < USAGE_MAX_RANGE_DAYS * DAY_MS, {
    message: `the window may span at most ${USAGE_MAX_RANGE_DAYS} days`,
    path: ['to'],
  });
export type DailySpendQuery = z.infer<typeof DailySpendQuery>;
