import type { RedisConnection } from '@switchboard/queue';

/**
 * The hourly side-effect budget (seed 000 `max_actions_per_hour`, docs/adr/0058): every
 * side-effecting tool call that starts is counted in two rolling windows in Redis, the agent's and
 * the tenant's, and refused when either already holds its limit. One Lua script reads, decides and
 * counts, so two harness processes (or two calls of one wave) asking at once are served one after
 * the other: the budget is exact across processes, never overshot by a race. Time is Redis' own
 * clock, so hosts whose clocks differ agree on what left the window.
 */

/** Whose window is full. */
export type ActionBudgetScope = 'agent' | 'tenant';

/** What the budget says of one call. */
export type ActionBudgetDecision =
  | { allowed: true }
  | { allowed: false; scope: ActionBudgetScope; limit: number; windowMs: number; retryAfterMs: number };

/** One call to count: who makes it, its key (the same call asked twice is counted once), the limits. */
export interface ActionToCount {
  tenantId: string;
  /** Absent: counted for the tenant only. */
  agentId?: string;
  /** Unique per call: `<turnId>:<callId>`. */
  callKey: string;
  /** Null: that window is unlimited (the call is still counted in it). */
  agentLimit: number | null;
  tenantLimit: number | null;
}

export interface ActionBudgetOptions {
  /** The deployment's key prefix (QUEUE_PREFIX; carries the hash tag on a Redis Cluster). */
  prefix: string;
  /** The rolling window (ACTION_BUDGET_WINDOW_MS): an hour, shorter in tests. */
  windowMs: number;
}

/**
 * KEYS: the agent's window, the tenant's (sorted sets of call keys scored by their start, ms).
 * ARGV: window ms, call key, agent limit, tenant limit (-1: unlimited), whether to count for the agent.
 * Returns {1} when counted (or counted already), else {0, scope index (1 agent, 2 tenant), limit, retry ms}.
 */
const RESERVE = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window = tonumber(ARGV[1])
local member = ARGV[2]
local limits = { tonumber(ARGV[3]), tonumber(ARGV[4]) }
local first = 1
if ARGV[5] == '0' then first = 2 end
for i = first, 2 do redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now - window) end
-- A call counted already (a resumed run starting it again) is not counted twice.
if redis.call('ZSCORE', KEYS[2], member) then return {1} end
for i = first, 2 do
  local limit = limits[i]
  if limit >= 0 and redis.call('ZCARD', KEYS[i]) >= limit then
    local oldest = redis.call('ZRANGE', KEYS[i], 0, 0, 'WITHSCORES')
    local retry = window
    if oldest[2] then retry = tonumber(oldest[2]) + window - now end
    if retry < 1 then retry = 1 end
    return {0, i, limit, retry}
  end
end
for i = first, 2 do
  redis.call('ZADD', KEYS[i], now, member)
  redis.call('PEXPIRE', KEYS[i], window)
end
return {1}`;

/** KEYS: a window. ARGV: window ms. How many calls it holds now. */
const COUNT = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[1]))
return redis.call('ZCARD', KEYS[1])`;

export class ActionBudget {
  constructor(
    private readonly redis: RedisConnection,
    private readonly options: ActionBudgetOptions,
  ) {}

  /**
   * The two windows of a tenant, under the deployment's prefix, which on a Redis Cluster carries the
   * hash tag (docs/adr/0043): the script's keys share one slot.
   */
  keys(tenantId: string, agentId?: string): { agent: string; tenant: string } {
    const base = `${this.options.prefix}:actions:${tenantId}`;
    return { agent: `${base}:agent:${agentId ?? '-'}`, tenant: `${base}:tenant` };
  }

  /** Counts the call, or refuses it when the agent's or the tenant's window is full. */
  async reserve(a: ActionToCount): Promise<ActionBudgetDecision> {
    const keys = this.keys(a.tenantId, a.agentId);
    const raw = (await this.redis.eval(
      RESERVE,
      2,
      keys.agent,
      keys.tenant,
      this.options.windowMs,
      a.callKey,
      a.agentId ? (a.agentLimit ?? -1) : -1,
      a.tenantLimit ?? -1,
      a.agentId ? '1' : '0',
    )) as number[];
    if (raw[0] === 1) return { allowed: true };
    return {
      allowed: false,
      scope: raw[1] === 1 ? 'agent' : 'tenant',
      limit: Number(raw[2]),
      windowMs: this.options.windowMs,
      retryAfterMs: Number(raw[3]),
    };
  }

  /** Side-effecting calls started in the window now: the agent's (given one) or the tenant's. */
  async used(tenantId: string, agentId?: string): Promise<number> {
    const keys = this.keys(tenantId, agentId);
    const key = agentId ? keys.agent : keys.tenant;
    return Number(await this.redis.eval(COUNT, 1, key, this.options.windowMs));
  }
}
