import type { Agent } from '@prisma/client';
import { isUuid, type CreateAgentRequest } from '@switchboard/contracts';
import type { Db, Prisma } from '@switchboard/database';
import { checkTierRules } from './tiers';

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
};

/** The fields a change may set: those of the request that creates one. */
export type AgentChange = Partial<CreateAgentRequest>;

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
  async modelNames(tenantId: string, limit: number): Promise<{ name: string; createdAt: Date }[]> {
    return this.db.agent.findMany({
      where: { tenantId, deletedAt: null },
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

  /** Creates the agent if the tier rules hold with it. */
  create(agent: NewAgent): Promise<Agent> {
    return checkTierRules(this.db, agent.tenantId, { saved: { ...agent, createdAt: new Date() } }, (tx) =>
      tx.agent.create({ data: agent }),
    );
  }

  /**
   * Changes the agent. Only a change of name, tier or list can break a tier rule: other edits (an
   * agent saved before the rules whose list breaks them can still change its instructions) skip the
   * check and its lock.
   */
  update(agent: Agent, change: AgentChange): Promise<Agent> {
    const write = (tx: Prisma.TransactionClient) =>
      tx.agent.update({ where: { id: agent.id }, data: change });
    const touchesTiers =
      change.name !== undefined || change.tier !== undefined || change.allowedSubagents !== undefined;
    if (!touchesTiers) return write(this.db);
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
