import { sql, type Sql } from './sql';

/**
 * The tenant's daily spend cap (SPEC §13, docs/adr/0026 addendum), read inside the statements that
 * already read the tenant row (the claim, every checkpoint): no statement of its own.
 */

/**
 * The tenant's cap as `numeric`, or NULL when it has none: the smaller of its own
 * `dailySpendLimitUsd` (PATCH /v1/settings) and the operator's (PATCH /v1/admin/tenants/:id, stored
 * as `operatorDailySpendLimitUsd`, docs/adr/0030): a tenant can lower its budget, never raise or
 * remove the operator's. LEAST ignores NULLs.
 */
const limitOf = (settings: Sql): Sql =>
  sql`LEAST(
    CASE WHEN jsonb_typeof(${settings} -> 'dailySpendLimitUsd') = 'number'
      THEN (${settings} ->> 'dailySpendLimitUsd')::numeric END,
    CASE WHEN jsonb_typeof(${settings} -> 'operatorDailySpendLimitUsd') = 'number'
      THEN (${settings} ->> 'operatorDailySpendLimitUsd')::numeric END)`;

/**
 * What the tenant spent today (UTC) apart from one turn: the cost-log hook's roll-up for today, plus
 * the cost of its turns not rolled up yet (in flight, or ended today and waiting for their hook). The
 * cost-log hook marks a turn `spend_rolled_up_at` in the statement that adds it to the roll-up, so no
 * turn counts twice or not at all; the partial index on turns not rolled up keeps the read small.
 * A turn still running since yesterday counts whole (its spend before midnight included).
 */
const spentTodayExcept = (tenantId: Sql, turnId: Sql | null): Sql => sql`(
  coalesce((SELECT d.cost_usd FROM tenant_spend_daily d
    WHERE d.tenant_id = ${tenantId} AND d.day = (now() AT TIME ZONE 'UTC')::date), 0)
  + coalesce((SELECT sum(o.cost_usd) FROM turns o
    WHERE o.tenant_id = ${tenantId} AND o.spend_rolled_up_at IS NULL
      ${turnId === null ? sql`` : sql`AND o.id <> ${turnId}`}
      AND (o.completed_at IS NULL
        OR o.completed_at >= date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')), 0))`;

/**
 * What one turn may still spend under the tenant's cap: the limit less what everything else of the
 * tenant spent today, as text (it may be zero or negative), or NULL for a tenant without a cap. The
 * CASE keeps the spend sub-selects from running at all for such a tenant.
 */
export const tenantCapUsd = (tenant: Sql, turnId: Sql): Sql =>
  sql`CASE WHEN ${limitOf(sql`${tenant}.settings`)} IS NOT NULL
    THEN (${limitOf(sql`${tenant}.settings`)} - ${spentTodayExcept(sql`${tenant}.id`, turnId)})::text END`;

/**
 * What the tenant spent today (UTC), every turn included, as `numeric`: the same sum the cap reads
 * (the roll-up plus turns not rolled up yet). The operator's tenant view shows it (docs/adr/0030).
 */
export const tenantSpentTodayUsd = (tenantId: Sql): Sql => spentTodayExcept(tenantId, null);
