import type { Agent } from '@prisma/client';
import { isUuid, type CreateAgentRequest } from '@switchboard/contracts';
import { Prisma, type Db, type Tx } from '@switchboard/database';
import { recordAudit } from '@switchboard/store';
import { checkTierRules } from './tiers';
import { VERSIONED_FIELDS, type AgentConfig } from './agent-versions';

/** One page of agents by id, and whether another page follows. */
export interface AgentPage {
  rows: Agent[];
  more: boolean;
}

/** A new agent's columns. */
export type NewAgent = Pick<
  Agent,
  | 'id'
  | 'tenantId'
  | 'name'
  | 'archetype'
  | 'tier'
  | 'instructions'
  | 'model'
  | 'fallbackModels'
  | 'tools'
  | 'allowedSubagents'
  | 'approvalRequired'
  | 'toolResultCompression'
> & {
  budgets: Prisma.InputJsonValue;
  archivist?: Prisma.InputJsonValue;
  toolSelection?: Prisma.InputJsonValue;
  embedder?: string | null;
  memory?: Prisma.InputJsonValue;
  maxActionsPerHour?: number | null;
  scorers?: Prisma.InputJsonValue;
};

/** The fields a change may set: those of the request that creates one. */
export type AgentChange = Partial<CreateAgentRequest>;

/** Who made a change and why (docs/adr/0061): kept on the version it creates. */
export interface VersionAuthor {
  /** `api_key:<id>` or `operator`. */
  actor: string;
  note?: string | null;
}

/**
 * Records the agent's configuration as a new version when it differs from its current version's (or
 * always, `force`: a rollback), bumping `agents.version`; one statement, inside the change's
 * transaction. The configuration is `sb_agent_config()` of the row (migration
 * 20261211000000_agent_versions), the one definition of what a version holds. Returns the new
 * version, or null when nothing changed.
 */
export async function recordAgentVersion(
  tx: Tx,
  agentId: string,
  by: VersionAuthor,
  force = false,
): Promise<number | null> {
  const rows = await tx.$queryRaw<{ version: number }[]>(Prisma.sql`
    WITH a AS (SELECT g.id, g.tenant_id, g.version, sb_agent_config(g) AS cfg FROM agents g WHERE g.id = ${agentId}::uuid),
    bump AS (
      UPDATE agents g SET version = a.version + 1 FROM a
      WHERE g.id = a.id AND (${force}::boolean OR a.cfg IS DISTINCT FROM
        (SELECT v.config FROM agent_versions v WHERE v.agent_id = a.id AND v.version = a.version))
      RETURNING g.id, g.tenant_id, g.version)
    INSERT INTO agent_versions (tenant_id, agent_id, version, config, created_by, note)
    SELECT bump.tenant_id, bump.id, bump.version, a.cfg, ${by.actor}, ${by.note ?? null} FROM bump, a
    RETURNING version`);
  return rows[0]?.version ?? null;
}

/**
 * The tenant's agents (saved definitions, and the built-in archetypes a spawn materialised). Reads
 * see only agents not deleted. Every write that can break a tier rule (docs/adr/0025) runs inside
 * `checkTierRules`: the check and the write in one transaction under the tenant's tier lock.
 */
export class AgentsRepository {
  constructor(private readonly db: Db) {}

  /** The agent with this id, if it is the tenant's and not deleted (an id that is not a UUID finds none). */
  find(tenantId: string, id: string): Promise<Agent | null> {
    if (!isUuid(id)) return Promise.resolve(null);
    return this.db.agent.findFirst({ where: { id, tenantId, deletedAt: null } });
  }

  /** The agent a model name names: by name (the most recent when names repeat) or by id. */
  async idByModel(tenantId: string, model: string): Promise<string | undefined> {
    const agent = await this.db.agent.findFirst({
      where: { tenantId, deletedAt: null, OR: [{ name: model }, ...(isUuid(model) ? [{ id: model }] : [])] },
      orderBy: { createdAt: 'desc' },
      select: { id: true },
    });
    return agent?.id;
  }

  /**
   * The tenant's agent names for `GET /v1/models`, each with its most recent agent's creation (the one
   * `idByModel` picks), most recent first; at most `limit`.
   */
  async modelNames(
    tenantId: string,
    limit: number,
    /** Only these agents (a key limited to agents, docs/adr/0066). */
    agentIds?: string[],
  ): Promise<{ name: string; createdAt: Date }[]> {
    return this.db.agent.findMany({
      where: { tenantId, deletedAt: null, ...(agentIds ? { id: { in: agentIds } } : {}) },
      orderBy: { createdAt: 'desc' },
      distinct: ['name'],
      select: { name: true, createdAt: true },
      take: limit,
    });
  }

  /** By id, after the cursor's id. */
  async page(tenantId: string, afterId: string | undefined, limit: number): Promise<AgentPage> {
    const rows = await this.db.agent.findMany({
      where: { tenantId, deletedAt: null, ...(afterId !== undefined ? { id: { gt: afterId } } : {}) },
      orderBy: { id: 'asc' },
      take: limit + 1,
    });
    return { rows: rows.slice(0, limit), more: rows.length > limit };
  }

  /**
   * Creates the agent if the tier rules hold with it. The insert trigger writes its version 1
   * (docs/adr/0061); `by` names who made it there, and its creation is audited.
   */
  create(agent: NewAgent, by?: VersionAuthor): Promise<Agent> {
    return checkTierRules(
      this.db,
      agent.tenantId,
      { saved: { ...agent, createdAt: new Date() } },
      async (tx) => {
        const row = await tx.agent.create({ data: agent });
        if (by) {
          await tx.agentVersion.update({
            where: { agentId_version: { agentId: row.id, version: row.version } },
            data: { createdBy: by.actor, note: by.note ?? 'created' },
          });
          await recordAudit(tx, {
            tenantId: row.tenantId,
            actor: by.actor,
            action: 'agent.version_created',
            targetType: 'agent',
            targetId: row.id,
            details: { version: row.version },
          });
        }
        return row;
      },
    );
  }

  /**
   * Changes the agent. Only a change of name, tier or list can break a tier rule: other edits (an
   * agent saved before the rules whose list breaks them can still change its instructions) skip the
   * check and its lock.
   */
  update(agent: Agent, change: AgentChange, by?: VersionAuthor): Promise<Agent> {
    return this.change(agent, change, by ? { ...by, rollbackTo: undefined } : undefined);
  }

  /**
   * Rolls the agent back (docs/adr/0061): a new version whose configuration equals version `config`'s,
   * written even when the current one already equals it, audited `agent.rolled_back`.
   */
  rollback(
    agent: Agent,
    to: { version: number; config: AgentConfig },
    by: VersionAuthor,
    /**
     * A canary's promotion (docs/adr/0064): the new version is audited `agent.version_created` with
     * `promotedFrom`, and this runs in the same transaction with the version it made.
     */
    promotion?: (tx: Tx, version: number) => Promise<void>,
  ): Promise<Agent> {
    const change = Object.fromEntries(
      VERSIONED_FIELDS.filter((f) => f in to.config).map((f) => [f, to.config[f]]),
    ) as AgentChange;
    return this.change(agent, change, { ...by, rollbackTo: to.version, promotion });
  }

  private change(
    agent: Agent,
    change: AgentChange,
    by:
      | (VersionAuthor & {
          rollbackTo: number | undefined;
          promotion?: (tx: Tx, version: number) => Promise<void>;
        })
      | undefined,
  ): Promise<Agent> {
    const write = async (tx: Tx) => {
      const row = await tx.agent.update({
        where: { id: agent.id },
        data: change as Prisma.AgentUncheckedUpdateInput,
      });
      const rollbackTo = by?.rollbackTo;
      const version = await recordAgentVersion(
        tx,
        agent.id,
        by ?? { actor: 'operator' },
        rollbackTo !== undefined,
      );
      if (version === null) return row;
      const promotion = by?.promotion;
      await recordAudit(tx, {
        tenantId: agent.tenantId,
        actor: by?.actor ?? 'operator',
        action: rollbackTo !== undefined && !promotion ? 'agent.rolled_back' : 'agent.version_created',
        targetType: 'agent',
        targetId: agent.id,
        details: {
          version,
          previousVersion: row.version,
          ...(rollbackTo !== undefined ? { [promotion ? 'promotedFrom' : 'rolledBackTo']: rollbackTo } : {}),
          ...(by?.note ? { note: by.note } : {}),
        },
      });
      if (promotion) await promotion(tx, version);
      return { ...row, version };
    };
    const touchesTiers =
      change.name !== undefined || change.tier !== undefined || change.allowedSubagents !== undefined;
    if (!touchesTiers) return this.db.$transaction(write);
    const saved = {
      ...agent,
      ...(change.name !== undefined ? { name: change.name } : {}),
      ...(change.tier !== undefined ? { tier: change.tier } : {}),
      ...(change.allowedSubagents !== undefined ? { allowedSubagents: change.allowedSubagents } : {}),
    };
    return checkTierRules(this.db, agent.tenantId, { saved }, write);
  }

  /** Soft delete, if no other agent's list breaks without it. */
  async softDelete(agent: Agent): Promise<void> {
    await checkTierRules(this.db, agent.tenantId, { deletedId: agent.id }, (tx) =>
      tx.agent.update({ where: { id: agent.id }, data: { deletedAt: new Date() } }),
    );
  }
}
