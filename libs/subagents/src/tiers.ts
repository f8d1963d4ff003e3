import { AppError } from '@switchboard/contracts';
import type { Db, Tx } from '@switchboard/database';
import { archetype, maySpawn, TIERS, type Tier } from './archetypes';

/**
 * Tier rules checked when an agent definition is saved (seed 000 "Enforcement: loader-time";
 * docs/adr/0025-archetypes-and-tiers.md). Plain functions over the tenant's agents as they would be
 * after the save, so the same check covers the saved agent's own `allowedSubagents` and every other
 * agent whose list a rename, a tier change, a new override or a delete would break.
 */

/** What the check needs of an agent (the tenant's own, non-deleted, not built-in). */
export interface TierAgent {
  id: string;
  name: string;
  tier: string;
  allowedSubagents: string[];
  /** Same-name agents: the oldest is the one a name resolves to (as `resolveSubagent`). */
  createdAt: Date;
}

export interface TierIssue {
  /** The offending entry: `allowedSubagents.<i>`, or `tier`. */
  path: string;
  message: string;
}

/** An agent whose `allowedSubagents` the change would break. */
export interface BrokenReferrer {
  id: string;
  name: string;
  tier: string;
  subagent: string;
  message: string;
}

const isTier = (t: string): t is Tier => (TIERS as readonly string[]).includes(t);

/** Each name's tier as a spawn would resolve it: the tenant's oldest agent of that name, else the archetype. */
export function tierResolver(
  agents: readonly TierAgent[],
): (name: string) => { tier: string; source: string } | undefined {
  const byName = new Map<string, TierAgent>();
  for (const a of [...agents].sort(
    (x, y) => x.createdAt.getTime() - y.createdAt.getTime() || (x.id < y.id ? -1 : 1),
  )) {
    if (!byName.has(a.name)) byName.set(a.name, a);
  }
  return (name) => {
    const own = byName.get(name);
    if (own) return { tier: own.tier, source: 'agent' };
    const a = archetype(name);
    return a ? { tier: a.tier, source: 'archetype' } : undefined;
  };
}

/** The issues of one agent's `allowedSubagents` under its tier, against resolved names. */
export function subagentIssues(
  agent: Pick<TierAgent, 'tier' | 'allowedSubagents'>,
  resolve: ReturnType<typeof tierResolver>,
): TierIssue[] {
  const issues: TierIssue[] = [];
  if (!isTier(agent.tier)) return [{ path: 'tier', message: `tier must be one of ${TIERS.join(', ')}` }];
  if (agent.tier === 'worker' && agent.allowedSubagents.length > 0) {
    return [
      { path: 'allowedSubagents', message: 'a worker agent spawns nothing: allowedSubagents must be empty' },
    ];
  }
  const seen = new Set<string>();
  agent.allowedSubagents.forEach((name, i) => {
    const path = `allowedSubagents.${i}`;
    if (seen.has(name)) {
      issues.push({ path, message: `${name} is listed twice` });
      return;
    }
    seen.add(name);
    const child = resolve(name);
    if (!child) {
      issues.push({ path, message: `${name} is neither an agent of the tenant nor a built-in archetype` });
    } else if (!isTier(child.tier) || !maySpawn(agent.tier as Tier, child.tier)) {
      issues.push({
        path,
        message: `a ${agent.tier} agent may not spawn ${name} (${child.source}, tier ${child.tier}): ${rule(agent.tier as Tier)}`,
      });
    }
  });
  return issues;
}

function rule(t: Tier): string {
  if (t === 'chat') return 'chat may spawn reasoning or worker agents';
  if (t === 'reasoning') return 'reasoning may spawn worker agents';
  return 'a worker spawns nothing';
}

/**
 * The agents (other than `savedId`) whose lists hold under `before` but not under `after`: the
 * referrers a save would break. Agents already broken before the save are not the save's doing.
 */
export function brokenReferrers(
  before: readonly TierAgent[],
  after: readonly TierAgent[],
  savedId: string,
): BrokenReferrer[] {
  const was = tierResolver(before);
  const will = tierResolver(after);
  const out: BrokenReferrer[] = [];
  for (const a of after) {
    if (a.id === savedId || a.allowedSubagents.length === 0) continue;
    const prior = subagentIssues(a, was);
    const now = subagentIssues(a, will);
    for (const issue of now) {
      if (prior.some((p) => p.path === issue.path)) continue;
      const i = Number(issue.path.split('.')[1]);
      out.push({
        id: a.id,
        name: a.name,
        tier: a.tier,
        subagent: a.allowedSubagents[i] ?? '',
        message: issue.message,
      });
    }
  }
  return out;
}

/** The save being checked: a new or changed agent as it will be, or the id of an agent being deleted. */
export type TierChange = { saved: TierAgent } | { deletedId: string };

/**
 * Checks the tier rules for a save and runs `write` in the same transaction, under a per-tenant
 * advisory lock so two concurrent saves cannot each pass against the state the other changes.
 * The saved agent's own list: 400 (`validation_failed`, details.issues). Another agent's list it
 * would break: 409 (`conflict`, details.referrers).
 */
export async function checkTierRules<T>(
  db: Db,
  tenantId: string,
  change: TierChange,
  write: (tx: Tx) => Promise<T>,
): Promise<T> {
  return db.$transaction(async (tx) => {
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtextextended(${`agent-tiers:${tenantId}`}, 0))`;
    const before: TierAgent[] = await tx.agent.findMany({
      where: { tenantId, builtIn: false, deletedAt: null },
      select: { id: true, name: true, tier: true, allowedSubagents: true, createdAt: true },
    });
    let after: TierAgent[];
    let savedId: string;
    if ('saved' in change) {
      const s = change.saved;
      savedId = s.id;
      after = [...before.filter((a) => a.id !== s.id), s];
      const issues = subagentIssues(s, tierResolver(after));
      if (issues.length > 0) {
        throw new AppError('validation_failed', issues.map((i) => i.message).join('; '), { issues });
      }
    } else {
      savedId = change.deletedId;
      after = before.filter((a) => a.id !== change.deletedId);
    }
    const referrers = brokenReferrers(before, after, savedId);
    if (referrers.length > 0) {
      throw new AppError(
        'conflict',
        `this change breaks the allowedSubagents of ${[...new Set(referrers.map((r) => r.name))].join(', ')}`,
        { referrers },
      );
    }
    return write(tx);
  });
}

/** A built-in archetype's row follows the code: it is overridden by a tenant agent of its name, not edited. */
export function refuseBuiltIn<A extends { builtIn: boolean; name: string }>(agent: A): A {
  if (agent.builtIn) {
    throw new AppError(
      'conflict',
      `${agent.name} is a built-in archetype: create an agent named ${agent.name} to override it`,
    );
  }
  return agent;
}
