import { createHash } from 'node:crypto';
import type { Agent, AgentCanary, Session } from '@prisma/client';
import { AppError, newId, notFound, type AuditAction, type StartCanaryRequest } from '@switchboard/contracts';
import { Prisma, type Db, type Tx } from '@switchboard/database';
import { recordAudit } from '@switchboard/store';
import { AgentsRepository, type VersionAuthor } from './agents-repository';
import type { AgentConfig } from './agent-versions';

/**
 * The canary (docs/adr/0064): while an agent's canary runs, each session created with POST
 * /v1/sessions is pinned to the candidate version when a stable hash of its id falls under
 * `sharePercent`, else to the baseline; a sweep in the hooks worker compares the two sides' mean online
 * score (turn_scores) and rolls the candidate back when it is worse by the margin; an operator promotes
 * (the candidate's configuration becomes the agent's, as a new version) or stops it.
 */

/** Defaults of a canary's decision rule. */
export const CANARY_DEFAULTS = { margin: 0.1, minScored: 20 } as const;

/** Running canaries one sweep evaluates, at most (the least recently evaluated first). */
export const CANARY_SWEEP_LIMIT = 100;

/** Score differences closer than this are equal (0.8 - 0.7 is 0.10000000000000009 in floating point). */
const EPSILON = 1e-9;

/**
 * Where a session id falls in [0, 100): the first 32 bits of its SHA-256 as a fraction of 2^32. Stable
 * (the same id always falls in the same place, in every process) and uniform over ids, whose UUIDv7
 * prefix is a timestamp (so the id itself is not).
 */
export function canaryBucket(sessionId: string): number {
  const h = createHash('sha256').update(sessionId).digest();
  return (h.readUInt32BE(0) / 2 ** 32) * 100;
}

/** Whether a session with this id goes to the candidate of a canary at `sharePercent`. */
export const inCanary = (sessionId: string, sharePercent: number): boolean =>
  canaryBucket(sessionId) < sharePercent;

/** Mean scores of the two sides, and how many scored turns each has, since the canary started. */
export interface CanaryObservation {
  baselineMean: number | null;
  candidateMean: number | null;
  n: { baseline: number; candidate: number };
}

export type CanaryOutcome = 'promoted' | 'rolled_back' | 'stopped';

/**
 * Creates a session of the agent pinned as the canary says (docs/adr/0064), else to `version` (the
 * agent's current version). The canary row is read `FOR SHARE` in the session's transaction: a
 * rollback (which updates the row) either waits for this session and then re-pins it, or has committed
 * before and this session goes to the baseline. One extra statement when the agent has no canary.
 */
export async function createSessionForAgent(
  db: Db,
  s: {
    tenantId: string;
    agentId: string;
    version: number;
    title: string | null;
    metadata: Record<string, unknown>;
  },
): Promise<Session> {
  return db.$transaction(async (tx) => {
    const [canary] = await tx.$queryRaw<
      { run_id: string; baseline_version: number; candidate_version: number; share_percent: number }[]
    >(Prisma.sql`
      SELECT run_id, baseline_version, candidate_version, share_percent FROM agent_canaries
      WHERE agent_id = ${s.agentId}::uuid AND tenant_id = ${s.tenantId}::uuid AND status = 'running'
      FOR SHARE`);
    const id = newId();
    const pin = canary
      ? inCanary(id, canary.share_percent)
        ? canary.candidate_version
        : canary.baseline_version
      : s.version;
    return tx.session.create({
      data: {
        id,
        tenantId: s.tenantId,
        agentId: s.agentId,
        title: s.title,
        metadata: s.metadata as Prisma.InputJsonValue,
        agentVersion: pin,
        canaryRunId: canary?.run_id ?? null,
      },
    });
  });
}

/**
 * The two sides' mean online score since the canary started: every `turn_scores` row of the agent with
 * that `agent_version` created since `started_at`, `status = 'scored'` with a score (scorers and
 * feedback alike; only `scorer`'s rows when the canary names one). `n` counts scored turns.
 */
export async function observeCanary(db: Db | Tx, c: AgentCanary): Promise<CanaryObservation> {
  const rows = await db.$queryRaw<{ version: number; mean: number | null; turns: bigint }[]>(Prisma.sql`
    SELECT agent_version AS version, avg(score)::float8 AS mean, count(DISTINCT turn_id) AS turns
    FROM turn_scores
    WHERE tenant_id = ${c.tenantId}::uuid AND agent_id = ${c.agentId}::uuid
      AND agent_version IN (${c.baselineVersion}::int, ${c.candidateVersion}::int)
      AND created_at >= ${c.startedAt} AND status = 'scored' AND score IS NOT NULL
      AND (${c.scorer}::text IS NULL OR scorer = ${c.scorer}::text)
    GROUP BY agent_version`);
  const side = (v: number) => rows.find((r) => r.version === v);
  const b = side(c.baselineVersion);
  const k = side(c.candidateVersion);
  return {
    baselineMean: b?.mean ?? null,
    candidateMean: k?.mean ?? null,
    n: { baseline: Number(b?.turns ?? 0), candidate: Number(k?.turns ?? 0) },
  };
}

/** The rule: both sides have `minScored` scored turns and the candidate's mean is below the baseline's by `margin`. */
export function candidateIsWorse(
  c: Pick<AgentCanary, 'margin' | 'minScored'>,
  o: CanaryObservation,
): boolean {
  if (o.n.baseline < c.minScored || o.n.candidate < c.minScored) return false;
  if (o.baselineMean === null || o.candidateMean === null) return false;
  return o.baselineMean - o.candidateMean >= c.margin - EPSILON;
}

const ACTIONS: Record<CanaryOutcome, AuditAction> = {
  promoted: 'agent.canary_promoted',
  rolled_back: 'agent.canary_rolled_back',
  stopped: 'agent.canary_stopped',
};

/**
 * Ends a running canary (the row still `running` with this run id, else nothing happens and null is
 * returned: someone else decided first): status, decision, audit; a rollback re-pins the sessions this
 * run pinned to the candidate (and not re-pinned since) to the baseline, clearing their system prompt so
 * their next turn renders the baseline's instructions.
 */
async function decide(
  tx: Tx,
  c: AgentCanary,
  outcome: CanaryOutcome,
  by: string,
  observed: CanaryObservation,
  extra: { promotedAs?: number } = {},
): Promise<AgentCanary | null> {
  const decision = { outcome, by, ...observed, ...extra };
  const ended = await tx.agentCanary.updateMany({
    where: { agentId: c.agentId, runId: c.runId, status: 'running' },
    data: { status: outcome, decision, decidedAt: new Date() },
  });
  if (ended.count === 0) return null;
  let repinned = 0;
  if (outcome === 'rolled_back') {
    repinned = await tx.$executeRaw(Prisma.sql`
      UPDATE sessions SET agent_version = ${c.baselineVersion}::int, system_prompt = NULL, updated_at = now()
      WHERE canary_run_id = ${c.runId}::uuid AND agent_version = ${c.candidateVersion}::int`);
  }
  await recordAudit(tx, {
    tenantId: c.tenantId,
    actor: by,
    action: ACTIONS[outcome],
    targetType: 'agent',
    targetId: c.agentId,
    details: {
      runId: c.runId,
      baselineVersion: c.baselineVersion,
      candidateVersion: c.candidateVersion,
      ...observed,
      ...extra,
      ...(outcome === 'rolled_back' ? { repinnedSessions: repinned } : {}),
    },
  });
  return tx.agentCanary.findUnique({ where: { agentId: c.agentId } });
}

/** One sweep's verdict on one canary. */
export interface CanarySweepResult {
  agentId: string;
  tenantId: string;
  observed: CanaryObservation;
  rolledBack: boolean;
}

/**
 * The decision sweep (the hooks worker, every CANARY_EVAL_INTERVAL_MS): each running canary, the least
 * recently evaluated first, is observed; the observation is stored (`observed`, shown on GET); a
 * candidate worse by the margin is rolled back. Several hooks workers may sweep at once: each canary's
 * evaluation takes its row lock (`FOR UPDATE SKIP LOCKED`), and a decision only ends a canary still running.
 */
export async function sweepCanaries(db: Db, limit = CANARY_SWEEP_LIMIT): Promise<CanarySweepResult[]> {
  const due = await db.agentCanary.findMany({
    where: { status: 'running' },
    orderBy: { evaluatedAt: { sort: 'asc', nulls: 'first' } },
    select: { agentId: true },
    take: limit,
  });
  const results: CanarySweepResult[] = [];
  for (const { agentId } of due) {
    const result = await db.$transaction(async (tx) => {
      const [locked] = await tx.$queryRaw<{ agent_id: string }[]>(Prisma.sql`
        SELECT agent_id FROM agent_canaries WHERE agent_id = ${agentId}::uuid AND status = 'running'
        FOR UPDATE SKIP LOCKED`);
      if (!locked) return null;
      const c = await tx.agentCanary.findUnique({ where: { agentId } });
      if (!c) return null;
      const observed = await observeCanary(tx, c);
      await tx.agentCanary.update({
        where: { agentId },
        data: { observed: { ...observed, at: new Date().toISOString() }, evaluatedAt: new Date() },
      });
      const worse = candidateIsWorse(c, observed);
      if (worse) await decide(tx, c, 'rolled_back', 'canary', observed);
      return { agentId, tenantId: c.tenantId, observed, rolledBack: worse };
    });
    if (result) results.push(result);
  }
  return results;
}

/**
 * The gateway's side: start, read, promote and stop an agent's canary. Every refusal happens before
 * anything is written.
 */
export class CanaryRepository {
  private readonly agents: AgentsRepository;

  constructor(private readonly db: Db) {
    this.agents = new AgentsRepository(db);
  }

  /** The agent's canary (the last one started), or null. */
  find(tenantId: string, agentId: string): Promise<AgentCanary | null> {
    return this.db.agentCanary.findFirst({ where: { agentId, tenantId } });
  }

  private async versionExists(tx: Tx, agent: Agent, version: number, path: string): Promise<void> {
    const found = await tx.agentVersion.findFirst({
      where: { agentId: agent.id, tenantId: agent.tenantId, version },
    });
    if (!found) {
      const message = `unknown agent version: ${version}`;
      throw new AppError('validation_failed', message, { issues: [{ path, message }] });
    }
  }

  /**
   * Starts a canary (audited `agent.canary_started`). 400 for a version the agent does not have or a
   * candidate equal to the baseline; 409 while another canary of the agent runs.
   */
  async start(agent: Agent, req: StartCanaryRequest, actor: string): Promise<AgentCanary> {
    const baseline = req.baselineVersion ?? agent.version;
    if (baseline === req.candidateVersion) {
      const message = `the candidate is the baseline (version ${baseline}): name another candidateVersion or baselineVersion`;
      throw new AppError('validation_failed', message, { issues: [{ path: 'candidateVersion', message }] });
    }
    return this.db.$transaction(async (tx) => {
      await this.versionExists(tx, agent, req.candidateVersion, 'candidateVersion');
      await this.versionExists(tx, agent, baseline, 'baselineVersion');
      // The agent's row lock orders two starts of its canary.
      await tx.$queryRaw(Prisma.sql`SELECT id FROM agents WHERE id = ${agent.id}::uuid FOR UPDATE`);
      const current = await tx.agentCanary.findUnique({ where: { agentId: agent.id } });
      if (current?.status === 'running') {
        throw new AppError(
          'conflict',
          `a canary of version ${current.candidateVersion} is running: promote or stop it first`,
          { runId: current.runId },
        );
      }
      const data = {
        tenantId: agent.tenantId,
        runId: newId(),
        baselineVersion: baseline,
        candidateVersion: req.candidateVersion,
        sharePercent: req.sharePercent,
        margin: req.margin ?? CANARY_DEFAULTS.margin,
        minScored: req.minScored ?? CANARY_DEFAULTS.minScored,
        scorer: req.scorer ?? null,
        status: 'running',
        decision: Prisma.DbNull,
        observed: Prisma.DbNull,
        createdBy: actor,
        startedAt: new Date(),
        evaluatedAt: null,
        decidedAt: null,
      };
      const row = await tx.agentCanary.upsert({
        where: { agentId: agent.id },
        create: { agentId: agent.id, ...data },
        update: data,
      });
      await recordAudit(tx, {
        tenantId: agent.tenantId,
        actor,
        action: 'agent.canary_started',
        targetType: 'agent',
        targetId: agent.id,
        details: {
          runId: row.runId,
          baselineVersion: row.baselineVersion,
          candidateVersion: row.candidateVersion,
          sharePercent: row.sharePercent,
          margin: row.margin,
          minScored: row.minScored,
          scorer: row.scorer,
        },
      });
      return row;
    });
  }

  private async running(tenantId: string, agentId: string): Promise<AgentCanary> {
    const c = await this.find(tenantId, agentId);
    if (!c) throw notFound('canary');
    if (c.status !== 'running') {
      throw new AppError('conflict', `the canary is not running (it was ${c.status.replace('_', ' ')})`, {
        status: c.status,
      });
    }
    return c;
  }

  /** Stops the running canary (audited `agent.canary_stopped`): sessions keep their pins. 404 none, 409 not running. */
  async stop(tenantId: string, agentId: string, actor: string): Promise<AgentCanary> {
    const c = await this.running(tenantId, agentId);
    const observed = await observeCanary(this.db, c);
    const row = await this.db.$transaction((tx) => decide(tx, c, 'stopped', actor, observed));
    if (!row) throw new AppError('conflict', 'the canary ended meanwhile', {});
    return row;
  }

  /**
   * Promotes the running canary (audited `agent.canary_promoted`): the agent's configuration becomes
   * the candidate's as a new version (the rollback mechanism of docs/adr/0061: a new version equal to
   * it), unless the candidate already is the agent's current version. 404 none, 409 not running.
   */
  async promote(agent: Agent, actor: string): Promise<{ canary: AgentCanary; agent: Agent }> {
    const c = await this.running(agent.tenantId, agent.id);
    const observed = await observeCanary(this.db, c);
    const candidate = await this.db.agentVersion.findFirst({
      where: { agentId: agent.id, version: c.candidateVersion },
    });
    if (!candidate) throw notFound('agent version');
    const by: VersionAuthor = { actor, note: `canary promotion of version ${c.candidateVersion}` };
    let row: AgentCanary | null = null;
    const promoted =
      agent.version === c.candidateVersion
        ? await this.db.$transaction(async (tx) => {
            row = await decide(tx, c, 'promoted', actor, observed, { promotedAs: agent.version });
            return agent;
          })
        : await this.agents.rollback(
            agent,
            { version: c.candidateVersion, config: candidate.config as AgentConfig },
            by,
            async (tx, version) => {
              row = await decide(tx, c, 'promoted', actor, observed, { promotedAs: version });
              if (!row) throw new AppError('conflict', 'the canary ended meanwhile', {});
            },
          );
    if (!row) throw new AppError('conflict', 'the canary ended meanwhile', {});
    return { canary: row, agent: promoted };
  }
}
