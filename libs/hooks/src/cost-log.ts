import { isTerminal, newId, type PostTurnJob } from '@switchboard/contracts';
import { Prisma, type Db } from '@switchboard/database';
import type { Logger, Metrics } from '@switchboard/observability';

export interface HookContext {
  db: Db;
  logger: Logger;
  metrics: Metrics;
}

/**
 * The cost log hook: rolls the turn's ledger entries up into one cost log line
 * and records it as the hook's run. Idempotent per turn: a re-run finds the
 * record and writes nothing.
 */
export async function runCostLog(
  ctx: HookContext,
  job: PostTurnJob,
): Promise<'written' | 'already_done' | 'skipped'> {
  const { db } = ctx;
  const turn = await db.turn.findUnique({ where: { id: job.turnId } });
  if (!turn || turn.tenantId !== job.tenantId || !isTerminal(turn.status)) return 'skipped';
  const existing = await db.hookRun.findUnique({
    where: { turnId_hook: { turnId: turn.id, hook: 'cost-log' } },
  });
  if (existing) return 'already_done';

  const entries = await db.ledgerEntry.findMany({
    where: { turnId: turn.id },
    orderBy: { createdAt: 'asc' },
  });
  const total = entries.reduce((sum, e) => sum.add(e.costUsd), new Prisma.Decimal(0));
  const line = {
    turnId: turn.id,
    sessionId: turn.sessionId,
    agentId: turn.agentId,
    tenantId: turn.tenantId,
    status: turn.status,
    providerCalls: entries.length,
    inputTokens: entries.reduce((n, e) => n + e.inputTokens, 0),
    outputTokens: entries.reduce((n, e) => n + e.outputTokens, 0),
    cachedTokens: entries.reduce((n, e) => n + e.cachedTokens, 0),
    costUsd: total.toFixed(8),
    models: [...new Set(entries.map((e) => e.model))],
  };
  try {
    await db.hookRun.create({
      data: {
        id: newId(),
        tenantId: turn.tenantId,
        turnId: turn.id,
        hook: 'cost-log',
        status: 'completed',
        output: line,
        completedAt: new Date(),
      },
    });
  } catch (err) {
    if (err instanceof Prisma.PrismaClientKnownRequestError && err.code === 'P2002') return 'already_done';
    throw err;
  }
  for (const e of entries) {
    ctx.metrics.tokens.inc({ provider: e.provider, model: e.model, direction: 'input' }, e.inputTokens);
    ctx.metrics.tokens.inc({ provider: e.provider, model: e.model, direction: 'output' }, e.outputTokens);
    ctx.metrics.tokens.inc({ provider: e.provider, model: e.model, direction: 'cached' }, e.cachedTokens);
    ctx.metrics.costUsd.inc({ provider: e.provider, model: e.model }, Number(e.costUsd));
  }
  ctx.logger.info({ costLog: line }, 'turn cost');
  return 'written';
}
