import type { AgentVersion } from '@prisma/client';
import { isUuid } from '@switchboard/contracts';
import type { Db } from '@switchboard/database';

/**
 * Versioned agent configuration (docs/adr/0061). Every field PATCH /v1/agents/:id can change that
 * shapes a turn is versioned: the keys of `sb_agent_config()` (migration 20261211000000_agent_versions),
 * which writes the snapshot. `name`, `tier` and `archetype` are the agent's identity and its place in
 * the delegation graph: they are not.
 */
export const VERSIONED_FIELDS = [
  'instructions',
  'model',
  'fallbackModels',
  'tools',
  'allowedSubagents',
  'approvalRequired',
  'budgets',
  'toolResultCompression',
  'archivist',
  'toolSelection',
  'embedder',
  'memory',
  'maxActionsPerHour',
  'scorers',
] as const;
export type VersionedField = (typeof VERSIONED_FIELDS)[number];

/** A version's stored configuration. */
export type AgentConfig = Partial<Record<VersionedField, unknown>>;

/** One changed value between two versions: a field (or a nested key, `budgets.maxUsd`), before and after. */
export interface ConfigChange {
  path: string;
  before: unknown;
  after: unknown;
}

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * Field by field: objects (budgets, memory, tool selection...) by their keys at any depth, arrays and
 * scalars as whole values; a missing key is `null`. In field order, then key order.
 */
export function diffConfigs(from: AgentConfig, to: AgentConfig): ConfigChange[] {
  const changes: ConfigChange[] = [];
  const walk = (path: string, a: unknown, b: unknown) => {
    if (isPlainObject(a) && isPlainObject(b)) {
      const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
      for (const k of keys) walk(`${path}.${k}`, a[k], b[k]);
      return;
    }
    if (JSON.stringify(a ?? null) !== JSON.stringify(b ?? null)) {
      changes.push({ path, before: a ?? null, after: b ?? null });
    }
  };
  for (const f of VERSIONED_FIELDS) walk(f, from[f], to[f]);
  return changes;
}

/** One page of versions, newest first. */
export interface AgentVersionPage {
  rows: AgentVersion[];
  more: boolean;
}

/** Reads of an agent's versions; the caller has found the agent (tenant scoped). */
export class AgentVersionsRepository {
  constructor(private readonly db: Db) {}

  /** Newest first, before the cursor's version. */
  async page(
    tenantId: string,
    agentId: string,
    before: number | undefined,
    limit: number,
  ): Promise<AgentVersionPage> {
    if (!isUuid(agentId)) return { rows: [], more: false };
    const rows = await this.db.agentVersion.findMany({
      where: { tenantId, agentId, ...(before !== undefined ? { version: { lt: before } } : {}) },
      orderBy: { version: 'desc' },
      take: limit + 1,
    });
    return { rows: rows.slice(0, limit), more: rows.length > limit };
  }

  find(tenantId: string, agentId: string, version: number): Promise<AgentVersion | null> {
    if (!isUuid(agentId)) return Promise.resolve(null);
    return this.db.agentVersion.findFirst({ where: { tenantId, agentId, version } });
  }
}
